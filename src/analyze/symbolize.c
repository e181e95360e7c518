/*
 * symbolize.c - offline symbolization with libdw (elfutils).
 *
 * Every module of the trace's map is reported to one Dwfl session at its
 * recorded load address; libdw finds separate debug info (build-id paths,
 * .debug directories) by itself.
 */
#define _GNU_SOURCE
#include "symbolize.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A function symbol at its address in the trace's address space. */
typedef struct func_sym {
    uint64_t addr, size;
    const char *name; /* in the module's string table: lives with the Dwfl */
    unsigned rank;    /* binding: 0 global, 1 weak, 2 local (the preferred name first) */
} func_sym_t;

/* One module's function symbols, sorted by address: loaded on the module's
 * first lookup, then searched by bisection. libdwfl's own lookup
 * (dwfl_module_addrname) scans the whole symbol table for every address:
 * quadratic on a C++ program (libLLVM exports ~44k symbols). */
typedef struct module_syms {
    Dwfl_Module *mod;
    func_sym_t *syms;
    size_t n;
} module_syms_t;

struct mk_symbolizer {
    Dwfl *dwfl;
    char *demangled[64]; /* the last names demangled, freed with the symbolizer */
    unsigned next;
    module_syms_t *mods; /* one per module looked up so far */
    size_t nmods, mods_cap;
    Dwfl_Module **changed; /* rebuilt since the trace: module+offset only */
    size_t nchanged, changed_cap;
};

static bool is_changed(const mk_symbolizer_t *s, const Dwfl_Module *mod)
{
    for (size_t i = 0; i < s->nchanged; i++)
        if (s->changed[i] == mod)
            return true;
    return false;
}

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

/* Is this the first note about path (one per module and run of memkit,
 * however many traces of a process tree name it)? */
static bool first_note_of(const char *path)
{
    static uint64_t noted[64];
    static unsigned n;
    uint64_t h = mk_hash_bytes(path, strlen(path));
    for (unsigned i = 0; i < n; i++)
        if (noted[i] == h)
            return false;
    if (n < 64)
        noted[n++] = h;
    return true;
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
        if (mod && !same_build(mod, m)) {
            /* its names would be another build's: never shown */
            if (mk_grow((void **)&s->changed, &s->changed_cap, s->nchanged + 1,
                        sizeof *s->changed))
                s->changed[s->nchanged++] = mod;
            if (first_note_of(m->path))
                fprintf(stderr,
                        "memkit: %s changed since the trace was taken; its frames are "
                        "shown as offsets\n",
                        m->path);
        }
    }
    dwfl_report_end(s->dwfl, NULL, NULL);
    return s;
}

void mk_symbolizer_free(mk_symbolizer_t *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nmods; i++)
        free(s->mods[i].syms);
    free(s->mods);
    free(s->changed);
    dwfl_end(s->dwfl);
    for (unsigned i = 0; i < 64; i++)
        free(s->demangled[i]);
    free(s);
}

static int by_addr_then_rank(const void *a, const void *b)
{
    const func_sym_t *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->size > y->size ? -1 : x->size < y->size; /* the wider first */
}

/* Is section shndx of elf executable code? */
static bool in_code(Elf *elf, GElf_Word shndx)
{
    GElf_Shdr shdr;
    Elf_Scn *scn = elf ? elf_getscn(elf, shndx) : NULL;
    return scn && gelf_getshdr(scn, &shdr) && (shdr.sh_flags & SHF_EXECINSTR);
}

/* Reads mod's function symbols into ms, sorted, one name per address. */
static void load_syms(Dwfl_Module *mod, module_syms_t *ms)
{
    int n = dwfl_module_getsymtab(mod);
    ms->mod = mod;
    ms->n = 0;
    ms->syms = n > 1 ? malloc((size_t)n * sizeof *ms->syms) : NULL;
    if (!ms->syms)
        return;
    for (int i = 1; i < n; i++) { /* 0 is the null symbol */
        GElf_Sym sym;
        GElf_Addr addr;
        GElf_Word shndx;
        Elf *elf = NULL;
        const char *name =
            dwfl_module_getsym_info(mod, i, &sym, &addr, &shndx, &elf, NULL);
        int type = name ? GELF_ST_TYPE(sym.st_info) : STT_NOTYPE;
        if (!name || !name[0] || shndx == SHN_UNDEF || shndx >= SHN_LORESERVE)
            continue;
        /* functions, and assembly's untyped labels in code (_dl_start_user) */
        if (type != STT_FUNC && type != STT_GNU_IFUNC &&
            !(type == STT_NOTYPE && in_code(elf, shndx)))
            continue;
        int bind = GELF_ST_BIND(sym.st_info);
        ms->syms[ms->n++] = (func_sym_t){
            .addr = addr,
            .size = sym.st_size,
            .name = name,
            .rank = bind == STB_GLOBAL ? 0
                    : bind == STB_WEAK ? 1
                                       : 2,
        };
    }
    qsort(ms->syms, ms->n, sizeof *ms->syms, by_addr_then_rank);
    size_t kept = 0; /* aliases at one address: the preferred one stays */
    for (size_t i = 0; i < ms->n; i++)
        if (!kept || ms->syms[kept - 1].addr != ms->syms[i].addr)
            ms->syms[kept++] = ms->syms[i];
    ms->n = kept;
}

static module_syms_t *syms_of(mk_symbolizer_t *s, Dwfl_Module *mod)
{
    for (size_t i = 0; i < s->nmods; i++)
        if (s->mods[i].mod == mod)
            return &s->mods[i];
    if (!mk_grow((void **)&s->mods, &s->mods_cap, s->nmods + 1, sizeof *s->mods))
        return NULL;
    module_syms_t *ms = &s->mods[s->nmods++];
    load_syms(mod, ms);
    return ms;
}

/* The function containing addr: the last symbol starting at or below it
 * whose extent covers it (a few back, for a symbol nested in a wider one),
 * else the nearest sizeless one below, as libdwfl answers. */
static const char *function_at(mk_symbolizer_t *s, Dwfl_Module *mod, uint64_t addr)
{
    module_syms_t *ms = syms_of(s, mod);
    if (!ms || !ms->n || addr < ms->syms[0].addr)
        return ms ? NULL : dwfl_module_addrname(mod, addr);
    size_t lo = 0, hi = ms->n; /* invariant: syms[lo].addr <= addr < syms[hi].addr */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (ms->syms[mid].addr <= addr)
            lo = mid;
        else
            hi = mid;
    }
    for (size_t i = lo + 1, back = 0; i-- > 0 && back < 8; back++) {
        const func_sym_t *f = &ms->syms[i];
        if (addr < f->addr + f->size)
            return f->name;
        if (f->size == 0 && back == 0)
            return f->name;
    }
    return NULL;
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
    if (is_changed(s, mod))
        return;
    out->function = demangle(s, function_at(s, mod, addr));
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

static const char *base_name(const char *path)
{
    const char *slash = path ? strrchr(path, '/') : NULL;
    return slash ? slash + 1 : path;
}

/* An inlined function's name: its linkage name demangled, else its name. */
static const char *inlined_name(mk_symbolizer_t *s, Dwarf_Die *die)
{
    Dwarf_Attribute attr;
    const char *linkage = NULL;
    if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
        dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr))
        linkage = dwarf_formstring(&attr);
    return linkage ? demangle(s, linkage) : dwarf_diename(die);
}

/* Where an inlined call sits in its caller: DW_AT_call_file and _line. */
static void call_site(Dwarf_Die *inlined, Dwarf_Files *files, size_t nfiles,
                      mk_symbol_t *caller)
{
    Dwarf_Attribute attr;
    Dwarf_Word file = 0, line = 0;
    caller->file = NULL;
    caller->line = 0;
    if (!files || !dwarf_attr(inlined, DW_AT_call_file, &attr) ||
        dwarf_formudata(&attr, &file) != 0 || file >= nfiles)
        return;
    if (dwarf_attr(inlined, DW_AT_call_line, &attr))
        dwarf_formudata(&attr, &line);
    caller->file = base_name(dwarf_filesrc(files, file, NULL, NULL));
    caller->line = (int)line;
}

int mk_symbolize_inline(mk_symbolizer_t *s, uint64_t return_addr, mk_symbol_t *out,
                        int max)
{
    mk_symbol_t real;
    mk_symbolize(s, return_addr, &real);
    out[0] = real;
    if (!s || !return_addr || max < 2)
        return 1;
    Dwarf_Addr addr = return_addr - 1, bias;
    Dwfl_Module *mod = dwfl_addrmodule(s->dwfl, addr);
    Dwarf_Die *cu =
        mod && !is_changed(s, mod) ? dwfl_module_addrdie(mod, addr, &bias) : NULL;
    Dwarf_Die *scopes = NULL;
    int nscopes = cu ? dwarf_getscopes(cu, addr - bias, &scopes) : 0;
    /* Scopes run innermost first: lexical blocks and inlined subroutines,
     * then the subprogram that holds them. */
    int inl[64], k = 0;
    for (int i = 0; i < nscopes && k + 1 < max && k < 64; i++) {
        int tag = dwarf_tag(&scopes[i]);
        if (tag == DW_TAG_subprogram)
            break;
        if (tag == DW_TAG_inlined_subroutine)
            inl[k++] = i;
    }
    Dwarf_Files *files = NULL;
    size_t nfiles = 0;
    if (k && dwarf_getsrcfiles(cu, &files, &nfiles) != 0)
        files = NULL;
    /* Frame 0 keeps the address's own line; frame j > 0 (and the real
     * function after the inlined ones) sits at the call recorded on the DIE
     * of frame j - 1. */
    for (int j = 0; j < k; j++) {
        out[j] = real;
        out[j].function = inlined_name(s, &scopes[inl[j]]);
        if (j > 0)
            call_site(&scopes[inl[j - 1]], files, nfiles, &out[j]);
    }
    if (k) {
        out[k] = real;
        call_site(&scopes[inl[k - 1]], files, nfiles, &out[k]);
    }
    free(scopes);
    return k + 1;
}
