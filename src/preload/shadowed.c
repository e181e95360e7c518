/*
 * shadowed.c - which allocation functions reach memkit at all.
 *
 * The dynamic linker searches the main program before the preloaded
 * libraries. A program that defines malloc/free itself (Chromium's
 * PartitionAlloc shim, a statically linked jemalloc or tcmalloc) keeps its
 * own: memkit's hooks for them are never called, and what does reach memkit
 * (libc's strdup, say) is freed by the program's free, unseen. Counts from
 * such a trace would read as a program that barely allocates and leaks what
 * it strdups. So the trace says which functions were shadowed, and by which
 * object (a NOTES record, written once after the module map), and the
 * reports say so instead of printing leaks that are not.
 */
#define _GNU_SOURCE
#include "elf_sym.h"
#include "modules.h"

#include "output.h"

#include <dlfcn.h>
#include <errno.h> /* program_invocation_name */
#include <link.h>
#include <string.h>

/* The NOTES payload, found once at start-up (a fork child only writes it
 * again: the loader's lock may be held by a thread the fork left behind). */
static uint8_t notes[4096];
static size_t notes_len;
static bool malloc_shadowed; /* names[0] or names[1] below */

/* Does the object holding f define `name` there? Sets *by to its path. A
 * non-PIE executable that takes malloc's address has a canonical PLT entry
 * (python3): dlsym answers with it, an undefined symbol with a value, but
 * it jumps to ours. Only a definition shadows. */
static bool defined_at(void *f, const char *name, const char **by)
{
    mk_elf_sym_t at;
    enum mk_elf_found found = mk_elf_symbol_at(f, name, &at);
    if (found == MK_ELF_FOUND) {
        /* the program by its own name, as dladdr says it */
        *by = at.path[0] ? at.path : program_invocation_name;
        return at.sym && at.sym->st_shndx != SHN_UNDEF &&
               at.base + at.sym->st_value == (uintptr_t)f;
    }
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (found == MK_ELF_NO_OBJECT || !dladdr1(f, &info, (void **)&sym, RTLD_DL_SYMENT) ||
        !sym || sym->st_shndx == SHN_UNDEF || !info.dli_sname ||
        strcmp(info.dli_sname, name) != 0)
        return false;
    *by = info.dli_fname;
    return true;
}

void mk_shadowed_find(void)
{
    static const char *const names[] = {"malloc",  "free",  "calloc",
                                        "realloc", "_Znwm", "_ZdlPv"};
    uint8_t *p = notes;
    const char *by = NULL;
    size_t n = 0;
    uint8_t flags = 0;

    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        void *f = dlsym(RTLD_DEFAULT, names[i]);
        const char *object = NULL;
        if (!f || mk_in_tracer(f) || !defined_at(f, names[i], &object))
            continue; /* ours, not defined anywhere (new/delete in C programs),
                       * or a canonical PLT entry */
        flags |= (uint8_t)(1u << i);
        if (!by)
            by = object && object[0] ? object : "the program";
        n++;
    }
    malloc_shadowed = flags & 3;
    if (!n)
        return;
    /* NOTES: varint flags (bit i: names[i] is shadowed), then the path of
     * the first object found defining one. */
    size_t len = strnlen(by, sizeof notes - 32);
    p = mk_put_varint(p, flags);
    p = mk_put_varint(p, len);
    memcpy(p, by, len);
    p += len;
    notes_len = (size_t)(p - notes);
}

bool mk_shadowed_malloc(void)
{
    return malloc_shadowed;
}

void mk_shadowed_write(void)
{
    if (notes_len)
        mk_output_record(NULL, MK_REC_NOTES, notes, notes_len);
}
