/*
 * symbolize.c - offline symbolization with libdw (elfutils).
 *
 * Every module of the trace's map is reported to one Dwfl session at its
 * recorded load address; libdw finds separate debug info (build-id paths,
 * .debug directories) by itself.
 */
#define _GNU_SOURCE
#include "symbolize.h"

#include <elfutils/libdwfl.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mk_symbolizer {
    Dwfl *dwfl;
    char *demangled[64]; /* the last names demangled, freed with the symbolizer */
    unsigned next;
};

/* The C++ runtime's demangler (libstdc++ is linked for it). */
extern char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

/* A readable name for a C++ symbol; the result lives until 64 more names
 * have been demangled, or the symbolizer is freed. */
static const char *demangle(mk_symbolizer_t *s, const char *name)
{
    int status = 0;
    if (!name || name[0] != '_' || name[1] != 'Z')
        return name;
    char *d = __cxa_demangle(name, NULL, NULL, &status);
    if (status != 0 || !d)
        return name;
    free(s->demangled[s->next]);
    s->demangled[s->next] = d;
    s->next = (s->next + 1) % 64;
    return d;
}

static char *debuginfo_path;

static const Dwfl_Callbacks callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &debuginfo_path,
};

/* True if the file on disk still has the build id the trace recorded. */
static bool same_build(Dwfl_Module *mod, const mk_module_t *m)
{
    const unsigned char *id;
    GElf_Addr vaddr;
    int n = dwfl_module_build_id(mod, &id, &vaddr);
    if (m->build_id_len == 0 || n <= 0)
        return true; /* nothing to compare */
    return (size_t)n == m->build_id_len && memcmp(id, m->build_id, (size_t)n) == 0;
}

mk_symbolizer_t *mk_symbolizer_new(const mk_trace_t *tr)
{
    mk_symbolizer_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->dwfl = dwfl_begin(&callbacks);
    if (!s->dwfl) {
        free(s);
        return NULL;
    }
    dwfl_report_begin(s->dwfl);
    for (size_t i = 0; i < tr->nmodules; i++) {
        const mk_module_t *m = &tr->modules[i];
        bool seen = false;
        /* Snapshots repeat modules; report each (path, base) once. */
        for (size_t j = 0; j < i && !seen; j++)
            seen = tr->modules[j].base == m->base &&
                   strcmp(tr->modules[j].path, m->path) == 0;
        if (seen || m->path[0] != '/')
            continue; /* the vdso and such have no file */
        Dwfl_Module *mod = dwfl_report_elf(s->dwfl, m->path, m->path, -1, m->base, false);
        if (mod && !same_build(mod, m))
            fprintf(stderr,
                    "memkit: %s changed since the trace was taken; its frames are "
                    "shown as offsets\n",
                    m->path);
    }
    dwfl_report_end(s->dwfl, NULL, NULL);
    return s;
}

void mk_symbolizer_free(mk_symbolizer_t *s)
{
    if (!s)
        return;
    dwfl_end(s->dwfl);
    for (unsigned i = 0; i < 64; i++)
        free(s->demangled[i]);
    free(s);
}

void mk_symbolize(mk_symbolizer_t *s, uint64_t return_addr, mk_symbol_t *out)
{
    /* The call instruction ends just before the return address. */
    Dwarf_Addr addr = return_addr ? return_addr - 1 : 0;
    memset(out, 0, sizeof *out);
    out->offset = return_addr;
    if (!s || !addr)
        return;
    Dwfl_Module *mod = dwfl_addrmodule(s->dwfl, addr);
    if (!mod)
        return;
    Dwarf_Addr start;
    const char *name = dwfl_module_info(mod, NULL, &start, NULL, NULL, NULL, NULL, NULL);
    if (name) {
        const char *slash = strrchr(name, '/');
        out->module = slash ? slash + 1 : name;
        out->offset = return_addr - start;
    }
    out->function = demangle(s, dwfl_module_addrname(mod, addr));
    Dwfl_Line *line = dwfl_module_getsrc(mod, addr);
    if (line) {
        int lineno = 0;
        const char *file = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);
        if (file) {
            const char *slash = strrchr(file, '/');
            out->file = slash ? slash + 1 : file;
            out->line = lineno;
        }
    }
}

const char *mk_symbol_format(const mk_symbol_t *sym, char *buf, size_t cap)
{
    if (sym->function && sym->file)
        snprintf(buf, cap, "%s at %s:%d (%s)", sym->function, sym->file, sym->line,
                 sym->module ? sym->module : "?");
    else if (sym->function)
        snprintf(buf, cap, "%s (%s)", sym->function, sym->module ? sym->module : "?");
    else if (sym->module)
        snprintf(buf, cap, "%s+0x%" PRIx64, sym->module, sym->offset);
    else
        snprintf(buf, cap, "0x%" PRIx64, sym->offset);
    return buf;
}
