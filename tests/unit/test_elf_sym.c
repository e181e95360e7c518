/*
 * test_elf_sym.c - the tracer's lookup of a loaded object's dynamic symbol
 * by name (src/preload/elf_sym.c), against what the dynamic linker and
 * dladdr1 say: libc's functions (and an IFUNC), a function this program
 * exports (-rdynamic), names an object lacks, addresses no object holds,
 * the bounds of the segment holding an address, and the code around libc's
 * malloc family (mk_elf_bracket: malloc.c's span, no other file's).
 */
#define _GNU_SOURCE
#include "../../src/preload/elf_sym.h"
#include "check.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Exported by the test program (linked -rdynamic). */
int elf_sym_probe(int x);
__attribute__((noinline, used)) int elf_sym_probe(int x)
{
    return x * 3 + 1;
}

/* `name`, defined at addr, as elf_sym.c finds it and as dladdr1 does. */
static void check_defined(const char *name, void *addr)
{
    mk_elf_sym_t at;
    int found = mk_elf_symbol_at(addr, name, &at);
    CHECK_MSG(found == MK_ELF_FOUND, "%s: found %d", name, found);
    if (found != MK_ELF_FOUND)
        return;
    CHECK_MSG(at.sym != NULL, "%s: no symbol", name);
    if (!at.sym)
        return;
    CHECK_MSG(at.sym->st_shndx != SHN_UNDEF, "%s: undefined", name);
    CHECK_MSG(at.base + at.sym->st_value == (uintptr_t)addr, "%s: at %#lx, not %p", name,
              (unsigned long)(at.base + at.sym->st_value), addr);
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    CHECK_MSG(dladdr1(addr, &info, (void **)&sym, RTLD_DL_SYMENT) && sym, "%s: dladdr1",
              name);
    if (sym)
        CHECK_MSG(sym->st_size == at.sym->st_size, "%s: size %lu, dladdr1 %lu", name,
                  (unsigned long)at.sym->st_size, (unsigned long)sym->st_size);
    uintptr_t lo, hi;
    CHECK_MSG(mk_elf_segment_of(addr, &lo, &hi) && lo <= (uintptr_t)addr &&
                  (uintptr_t)addr < hi,
              "%s: segment", name);
}

int main(void)
{
    /* libc's, found through its own hash table */
    check_defined("malloc", dlsym(RTLD_DEFAULT, "malloc"));
    check_defined("pthread_getattr_np", dlsym(RTLD_DEFAULT, "pthread_getattr_np"));
    check_defined("getenv", dlsym(RTLD_DEFAULT, "getenv"));
    /* An IFUNC: dlsym gives the implementation it picked (__strlen_avx2, say),
     * and the symbol strlen is the resolver, elsewhere: not a definition at
     * that address, as the shadowing check must read it. (Under a sanitizer
     * strlen is its interceptor, a plain definition.) */
    mk_elf_sym_t ifunc;
    void *impl = dlsym(RTLD_DEFAULT, "strlen");
    CHECK_MSG(mk_elf_symbol_at(impl, "strlen", &ifunc) == MK_ELF_FOUND,
              "strlen: no object");
    if (ifunc.sym && ELF64_ST_TYPE(ifunc.sym->st_info) == STT_GNU_IFUNC)
        CHECK_MSG(ifunc.base + ifunc.sym->st_value != (uintptr_t)impl,
                  "strlen: the IFUNC's resolver is where its choice is");
    else
        check_defined("strlen", impl);
    /* the program's own: its path is the loader's "" */
    check_defined("elf_sym_probe", (void *)elf_sym_probe);
    mk_elf_sym_t at;
    CHECK_MSG(mk_elf_symbol_at((void *)elf_sym_probe, "elf_sym_probe", &at) ==
                      MK_ELF_FOUND &&
                  at.path[0] == 0,
              "the program's path is not empty: %s", at.path);
    /* a name the object holding the address does not define */
    CHECK_MSG(mk_elf_symbol_at(dlsym(RTLD_DEFAULT, "malloc"), "no_such_symbol_here",
                               &at) == MK_ELF_FOUND &&
                  at.sym == NULL,
              "a missing name was found");
    /* an address no object holds: a heap block */
    void *heap = malloc(64);
    CHECK_MSG(mk_elf_symbol_at(heap, "malloc", &at) == MK_ELF_NO_OBJECT,
              "a heap address is in an object");
    uintptr_t lo, hi;
    CHECK_MSG(!mk_elf_segment_of(heap, &lo, &hi), "a heap address has a segment");
    free(heap);
    /* libc's own malloc family (not a sanitizer's interceptors): one span
     * that holds them all, and none of libc's other files' functions */
    void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
    CHECK_MSG(libc != NULL, "libc.so.6 is not loaded");
    if (libc) {
        const char *family[] = {"malloc",        "free",     "calloc",
                                "realloc",       "memalign", "malloc_usable_size",
                                "posix_memalign"};
        const void *fns[sizeof family / sizeof *family];
        int n = 0;
        for (size_t i = 0; i < sizeof family / sizeof *family; i++)
            if ((fns[n] = dlsym(libc, family[i])))
                n++;
        CHECK_MSG(n == (int)(sizeof family / sizeof *family),
                  "libc lacks its malloc family");
        CHECK_MSG(mk_elf_bracket(fns, n, &lo, &hi), "no span around libc's malloc");
        for (int i = 0; i < n; i++)
            CHECK_MSG((uintptr_t)fns[i] - lo < hi - lo, "%s outside [%#lx, %#lx)",
                      family[i], (unsigned long)lo, (unsigned long)hi);
        CHECK_MSG(hi - lo < (1u << 20), "the span is %lu bytes",
                  (unsigned long)(hi - lo));
        const char *others[] = {"fopen",          "qsort",         "getenv", "strlen",
                                "pthread_create", "timer_settime", "mtrace"};
        for (size_t i = 0; i < sizeof others / sizeof *others; i++) {
            mk_elf_sym_t o;
            void *f = dlsym(libc, others[i]);
            if (!f || mk_elf_symbol_at(f, others[i], &o) != MK_ELF_FOUND || !o.sym)
                continue;
            uintptr_t at_sym = o.base + o.sym->st_value; /* an IFUNC's resolver too */
            CHECK_MSG(at_sym - lo >= hi - lo && (uintptr_t)f - lo >= hi - lo,
                      "%s is inside malloc's span", others[i]);
        }
        /* functions of two objects: no span */
        const void *two[] = {fns[0], (const void *)elf_sym_probe};
        CHECK_MSG(!mk_elf_bracket(two, 2, &lo, &hi), "a span across two objects");
        dlclose(libc);
    }
    CHECK_EQ(elf_sym_probe(1), 4); /* called, so it is not dead code */
    return check_report("symbols by hash agree with the dynamic linker");
}
