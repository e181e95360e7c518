/*
 * symbolize.c - offline symbolization with libdw (elfutils).
 *
 * Each module file gets a Dwfl session of its own, the file reported at
 * bias 0, kept for the whole run of memkit: an address of a trace becomes
 * (module file, address less the module's load bias), so a file's tables and
 * its separate debug information (found by libdw: build-id paths, .debug
 * directories) are read once however many traces name it and wherever each
 * process loaded it. A separate debug file with compressed sections (Debian's
 * libc6-dbg) costs tens of milliseconds to inflate: once per build id, as
 * the inflated copy is kept (debugcache.c), and memkit trace opens libc's
 * while the program runs (mk_symbolize_warm).
 */
#define _GNU_SOURCE
#include "symbolize.h"

#include "debugcache.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

#include <gelf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A function symbol at its address in the file (bias 0). */
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
    func_sym_t *syms;
    size_t n;
    bool loaded;
} module_syms_t;

/* A module file, opened once per run of memkit. One file may go by several
 * paths (/lib and /usr/lib, the loader's name and the kernel's): a path met
 * after the file is open is an alias of the entry opened first. */
typedef struct module_file {
    char *path;
    size_t alias_of; /* 1 + the index of the entry this path names; 0: none */
    dev_t dev;
    ino_t ino;
    Dwfl *dwfl;
    Dwfl_Module *mod; /* the file at bias 0 */
    Dwarf_Addr start; /* its lowest address: module+offset counts from here */
    module_syms_t syms;
} module_file_t;

/* Every file opened so far. files_lock is held for each lookup: the
 * report's symbolizer and memkit trace's warm-up thread may meet here. */
static module_file_t *files;
static size_t nfiles, files_cap;
static pthread_mutex_t files_lock = PTHREAD_MUTEX_INITIALIZER;

struct mk_symbolizer {
    const mk_trace_t *tr;
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
    .find_debuginfo = mk_debugcache_find,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &debuginfo_path,
};

/* The file at path, opened on first use (NULL when it cannot be read:
 * not cached, so a file that appears later is still found). Under files_lock. */
static module_file_t *file_of(const char *path)
{
    struct stat st;
    for (size_t i = 0; i < nfiles; i++)
        if (strcmp(files[i].path, path) == 0)
            return files[i].alias_of ? &files[files[i].alias_of - 1] : &files[i];
    if (stat(path, &st) != 0)
        return NULL;
    for (size_t i = 0; i < nfiles; i++) {
        if (files[i].alias_of || files[i].dev != st.st_dev || files[i].ino != st.st_ino)
            continue;
        char *copy = strdup(path);
        if (!copy || !mk_grow((void **)&files, &files_cap, nfiles + 1, sizeof *files)) {
            free(copy);
            return &files[i]; /* found all the same, by stat the next time too */
        }
        files[nfiles++] = (module_file_t){.path = copy, .alias_of = i + 1};
        return &files[i];
    }
    Dwfl *dwfl = dwfl_begin(&callbacks);
    if (!dwfl)
        return NULL;
    dwfl_report_begin(dwfl);
    Dwfl_Module *mod = dwfl_report_elf(dwfl, path, path, -1, 0, false);
    dwfl_report_end(dwfl, NULL, NULL);
    char *copy = mod ? strdup(path) : NULL;
    if (!copy || !mk_grow((void **)&files, &files_cap, nfiles + 1, sizeof *files)) {
        free(copy);
        dwfl_end(dwfl);
        return NULL;
    }
    module_file_t *f = &files[nfiles++];
    *f = (module_file_t){
        .path = copy, .dev = st.st_dev, .ino = st.st_ino, .dwfl = dwfl, .mod = mod};
    dwfl_module_info(mod, NULL, &f->start, NULL, NULL, NULL, NULL, NULL);
    return f;
}

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
    if (s)
        s->tr = tr;
    return s;
}

void mk_symbolizer_free(mk_symbolizer_t *s)
{
    if (!s)
        return;
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

/* Sorts as by_addr_then_rank, stably (as glibc's qsort, a merge sort): a
 * radix sort on the address bytes that differ, then an insertion sort within
 * each run of one address (aliases: a few). qsort's calls of the comparison
 * were a fifth of the summary memkit trace prints on a clang compile. */
static void sort_syms(func_sym_t *syms, size_t n)
{
    func_sym_t *tmp = n > 1 ? malloc(n * sizeof *tmp) : NULL;
    if (!tmp) {
        qsort(syms, n, sizeof *syms, by_addr_then_rank);
        return;
    }
    uint64_t any = 0, every = ~(uint64_t)0;
    for (size_t i = 0; i < n; i++) {
        any |= syms[i].addr;
        every &= syms[i].addr;
    }
    func_sym_t *from = syms, *to = tmp;
    for (unsigned shift = 0; shift < 64; shift += 8) {
        if (!(((any ^ every) >> shift) & 0xff))
            continue; /* every address has this byte: the pass keeps the order */
        size_t at[257] = {0};
        for (size_t i = 0; i < n; i++)
            at[((from[i].addr >> shift) & 0xff) + 1]++;
        for (int b = 0; b < 256; b++)
            at[b + 1] += at[b];
        for (size_t i = 0; i < n; i++)
            to[at[(from[i].addr >> shift) & 0xff]++] = from[i];
        func_sym_t *was = from;
        from = to;
        to = was;
    }
    if (from != syms)
        memcpy(syms, from, n * sizeof *syms);
    free(tmp);
    for (size_t i = 1; i < n; i++) { /* within one address: rank, the wider first */
        func_sym_t x = syms[i];
        size_t j = i;
        for (; j > 0 && by_addr_then_rank(&syms[j - 1], &x) > 0; j--)
            syms[j] = syms[j - 1];
        syms[j] = x;
    }
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
    ms->loaded = true;
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
    sort_syms(ms->syms, ms->n);
    size_t kept = 0; /* aliases at one address: the preferred one stays */
    for (size_t i = 0; i < ms->n; i++)
        if (!kept || ms->syms[kept - 1].addr != ms->syms[i].addr)
            ms->syms[kept++] = ms->syms[i];
    ms->n = kept;
}

/* The function containing addr: the last symbol starting at or below it
 * whose extent covers it (a few back, for a symbol nested in a wider one),
 * else the nearest sizeless one below, as libdwfl answers. */
static const char *function_at(module_file_t *f, uint64_t addr)
{
    module_syms_t *ms = &f->syms;
    if (!ms->loaded)
        load_syms(f->mod, ms);
    if (!ms->n || addr < ms->syms[0].addr)
        return ms->syms ? NULL : dwfl_module_addrname(f->mod, addr);
    size_t lo = 0, hi = ms->n; /* invariant: syms[lo].addr <= addr < syms[hi].addr */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (ms->syms[mid].addr <= addr)
            lo = mid;
        else
            hi = mid;
    }
    for (size_t i = lo + 1, back = 0; i-- > 0 && back < 8; back++) {
        const func_sym_t *sym = &ms->syms[i];
        if (addr < sym->addr + sym->size)
            return sym->name;
        if (sym->size == 0 && back == 0)
            return sym->name;
    }
    return NULL;
}

static const char *base_name(const char *path)
{
    const char *slash = path ? strrchr(path, '/') : NULL;
    return slash ? slash + 1 : path;
}

/* Where addr lies: its file (NULL when the file cannot be read or was
 * rebuilt since the trace: module+offset only) and the address in it. */
static module_file_t *locate(const mk_symbolizer_t *s, uint64_t addr, uint64_t *in_file,
                             mk_symbol_t *out, uint64_t return_addr)
{
    const mk_module_t *m = mk_trace_module_at(s->tr, addr);
    if (!m)
        return NULL;
    out->module = m->name;
    out->offset = return_addr - m->base;
    if (m->path[0] != '/')
        return NULL; /* the vdso and such have no file */
    module_file_t *f = file_of(m->path);
    if (!f)
        return NULL;
    out->offset = return_addr - m->base - f->start;
    if (!same_build(f->mod, m)) {
        if (first_note_of(m->path))
            fprintf(stderr,
                    "memkit: %s changed since the trace was taken; its frames are "
                    "shown as offsets\n",
                    m->path);
        return NULL; /* its names would be another build's: never shown */
    }
    *in_file = addr - m->base;
    return f;
}

static void symbolize_locked(mk_symbolizer_t *s, uint64_t return_addr, mk_symbol_t *out,
                             module_file_t **file, uint64_t *in_file)
{
    /* The call instruction ends just before the return address. */
    uint64_t addr = return_addr ? return_addr - 1 : 0;
    memset(out, 0, sizeof *out);
    out->offset = return_addr;
    *file = NULL;
    if (!s || !addr)
        return;
    module_file_t *f = locate(s, addr, in_file, out, return_addr);
    if (!f)
        return;
    *file = f;
    out->function = demangle(s, function_at(f, *in_file));
    Dwfl_Line *line = dwfl_module_getsrc(f->mod, *in_file);
    if (line) {
        int lineno = 0;
        const char *src = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);
        if (src) {
            out->file = base_name(src);
            out->line = lineno;
        }
    }
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
static void call_site(Dwarf_Die *inlined, Dwarf_Files *srcs, size_t nsrcs,
                      mk_symbol_t *caller)
{
    Dwarf_Attribute attr;
    Dwarf_Word file = 0, line = 0;
    caller->file = NULL;
    caller->line = 0;
    if (!srcs || !dwarf_attr(inlined, DW_AT_call_file, &attr) ||
        dwarf_formudata(&attr, &file) != 0 || file >= nsrcs)
        return;
    if (dwarf_attr(inlined, DW_AT_call_line, &attr))
        dwarf_formudata(&attr, &line);
    caller->file = base_name(dwarf_filesrc(srcs, file, NULL, NULL));
    caller->line = (int)line;
}

static int symbolize_inline_locked(mk_symbolizer_t *s, uint64_t return_addr,
                                   mk_symbol_t *out, int max)
{
    mk_symbol_t real;
    module_file_t *f;
    uint64_t addr;
    symbolize_locked(s, return_addr, &real, &f, &addr);
    out[0] = real;
    if (!f || max < 2)
        return 1;
    Dwarf_Addr bias;
    Dwarf_Die *cu = dwfl_module_addrdie(f->mod, addr, &bias);
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
    Dwarf_Files *srcs = NULL;
    size_t nsrcs = 0;
    if (k && dwarf_getsrcfiles(cu, &srcs, &nsrcs) != 0)
        srcs = NULL;
    /* Frame 0 keeps the address's own line; frame j > 0 (and the real
     * function after the inlined ones) sits at the call recorded on the DIE
     * of frame j - 1. */
    for (int j = 0; j < k; j++) {
        out[j] = real;
        out[j].function = inlined_name(s, &scopes[inl[j]]);
        if (j > 0)
            call_site(&scopes[inl[j - 1]], srcs, nsrcs, &out[j]);
    }
    if (k) {
        out[k] = real;
        call_site(&scopes[inl[k - 1]], srcs, nsrcs, &out[k]);
    }
    free(scopes);
    return k + 1;
}

int mk_symbolize_inline(mk_symbolizer_t *s, uint64_t return_addr, mk_symbol_t *out,
                        int max)
{
    pthread_mutex_lock(&files_lock);
    int k = symbolize_inline_locked(s, return_addr, out, max);
    pthread_mutex_unlock(&files_lock);
    return k;
}

void mk_symbolize_warm(const char *path)
{
    pthread_mutex_lock(&files_lock);
    module_file_t *f = file_of(path);
    Dwarf_Addr bias;
    /* the symbol table and the DWARF (a compressed debug file not yet in
     * the cache is inflated into it here), with its address ranges: the
     * first line lookup reads them all (4 ms of libc6-dbg's) */
    if (f) {
        if (!f->syms.loaded)
            load_syms(f->mod, &f->syms);
        Dwarf *dw = dwfl_module_getdwarf(f->mod, &bias);
        Dwarf_Aranges *ranges;
        size_t n;
        if (dw)
            dwarf_getaranges(dw, &ranges, &n);
    }
    pthread_mutex_unlock(&files_lock);
}
