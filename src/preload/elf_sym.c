/*
 * elf_sym.c - a loaded object's dynamic symbol by name (elf_sym.h).
 *
 * The GNU hash table (DT_GNU_HASH): nbuckets, the index of the first hashed
 * symbol, the bloom filter's size in words and its shift, the bloom words,
 * the buckets, then one 32-bit hash per hashed symbol, in symbol order. A
 * bucket holds the first symbol of its chain; a chain's hashes keep all but
 * their low bit, which marks the chain's last symbol.
 */
#define _GNU_SOURCE
#include "elf_sym.h"

#include <stdbool.h>
#include <string.h>

typedef struct lookup {
    const void *addr;
    const char *name;
    mk_elf_sym_t *out;
    enum mk_elf_found found;
} lookup_t;

/* The address a dynamic entry points at. glibc relocates these pointers in
 * place, but not the vDSO's, whose page is read-only: those are below the
 * bias. */
static uintptr_t dyn_ptr(const struct dl_phdr_info *info, ElfW(Addr) ptr)
{
    return ptr < info->dlpi_addr ? info->dlpi_addr + ptr : ptr;
}

static uint32_t gnu_hash(const char *name)
{
    uint32_t h = 5381;
    for (const unsigned char *c = (const unsigned char *)name; *c; c++)
        h = h * 33 + *c;
    return h;
}

/* The object's dynamic section, NULL if it has none. */
static const ElfW(Dyn) * dynamic_of(const struct dl_phdr_info *info)
{
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            return (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    return NULL;
}

/* The object's GNU hash table, dynamic symbols and their names (each NULL
 * if absent). */
static void dyn_tables(const struct dl_phdr_info *info, const ElfW(Dyn) * dyn,
                       const uint32_t **gh, const ElfW(Sym) * *symtab,
                       const char **strtab)
{
    *gh = NULL;
    *symtab = NULL;
    *strtab = NULL;
    for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
        if (dyn->d_tag == DT_GNU_HASH)
            *gh = (const uint32_t *)dyn_ptr(info, dyn->d_un.d_ptr);
        else if (dyn->d_tag == DT_SYMTAB)
            *symtab = (const ElfW(Sym) *)dyn_ptr(info, dyn->d_un.d_ptr);
        else if (dyn->d_tag == DT_STRTAB)
            *strtab = (const char *)dyn_ptr(info, dyn->d_un.d_ptr);
    }
}

/* `name` in the object's hash table; NULL if absent, and *no_hash set when
 * the object has no such table. */
static const ElfW(Sym) * gnu_lookup(const struct dl_phdr_info *info,
                                    const ElfW(Dyn) * dyn, const char *name,
                                    bool *no_hash)
{
    const uint32_t *gh;
    const ElfW(Sym) * symtab;
    const char *strtab;

    dyn_tables(info, dyn, &gh, &symtab, &strtab);
    if (!gh || !symtab || !strtab) {
        *no_hash = true;
        return NULL;
    }
    uint32_t nbuckets = gh[0], symoffset = gh[1], bloom_words = gh[2];
    if (!nbuckets)
        return NULL;
    /* The bloom filter is skipped: the names asked for are mostly there. */
    const uint32_t *buckets =
        (const uint32_t *)((const ElfW(Addr) *)(gh + 4) + bloom_words);
    const uint32_t *chain = buckets + nbuckets;
    uint32_t h = gnu_hash(name);
    uint32_t i = buckets[h % nbuckets];
    if (i < symoffset)
        return NULL; /* an empty bucket */
    for (;; i++) {
        uint32_t ch = chain[i - symoffset];
        if ((ch | 1) == (h | 1) && strcmp(strtab + symtab[i].st_name, name) == 0)
            return &symtab[i];
        if (ch & 1)
            return NULL;
    }
}

/* The loaded segment of the object that holds addr, NULL if none does. */
static const ElfW(Phdr) * segment_holding(const struct dl_phdr_info *info, uintptr_t addr)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && addr - (info->dlpi_addr + ph->p_vaddr) < ph->p_memsz)
            return ph;
    }
    return NULL;
}

static int in_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    lookup_t *l = arg;

    (void)size;
    if (!segment_holding(info, (uintptr_t)l->addr))
        return 0; /* on to the next object */
    const ElfW(Dyn) *dyn = dynamic_of(info);
    bool no_hash = !dyn;
    l->out->path = info->dlpi_name ? info->dlpi_name : "";
    l->out->base = info->dlpi_addr;
    l->out->sym = dyn ? gnu_lookup(info, dyn, l->name, &no_hash) : NULL;
    l->found = no_hash ? MK_ELF_NO_HASH : MK_ELF_FOUND;
    return 1;
}

enum mk_elf_found mk_elf_symbol_at(const void *addr, const char *name, mk_elf_sym_t *out)
{
    lookup_t l = {.addr = addr, .name = name, .out = out, .found = MK_ELF_NO_OBJECT};
    dl_iterate_phdr(in_object, &l);
    return l.found;
}

typedef struct segment {
    uintptr_t addr, lo, hi;
} segment_t;

static int segment_in_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    segment_t *seg = arg;
    (void)size;
    const ElfW(Phdr) *ph = segment_holding(info, seg->addr);
    if (!ph)
        return 0;
    seg->lo = info->dlpi_addr + ph->p_vaddr;
    seg->hi = seg->lo + ph->p_memsz;
    return 1;
}

bool mk_elf_segment_of(const void *addr, uintptr_t *lo, uintptr_t *hi)
{
    segment_t seg = {.addr = (uintptr_t)addr};
    if (!dl_iterate_phdr(segment_in_object, &seg))
        return false;
    *lo = seg.lo;
    *hi = seg.hi;
    return true;
}

typedef struct bracket {
    const void *const *fns;
    int n;
    uintptr_t lo, hi;
    bool ok;
} bracket_t;

/* The number of dynamic symbols a GNU hash table covers: past the last
 * bucket's chain (symbols before symoffset are not hashed, and counted). */
static uint32_t gnu_count(const uint32_t *gh)
{
    uint32_t nbuckets = gh[0], symoffset = gh[1], bloom_words = gh[2];
    const uint32_t *buckets =
        (const uint32_t *)((const ElfW(Addr) *)(gh + 4) + bloom_words);
    const uint32_t *chain = buckets + nbuckets;
    uint32_t last = 0;
    for (uint32_t b = 0; b < nbuckets; b++)
        if (buckets[b] > last)
            last = buckets[b];
    if (last < symoffset)
        return symoffset;
    while (!(chain[last - symoffset] & 1))
        last++;
    return last + 1;
}

static int bracket_in_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    bracket_t *b = arg;
    (void)size;
    const ElfW(Phdr) *ph = segment_holding(info, (uintptr_t)b->fns[0]);
    if (!ph)
        return 0;
    uintptr_t seg_lo = info->dlpi_addr + ph->p_vaddr, seg_hi = seg_lo + ph->p_memsz;
    uintptr_t min = UINTPTR_MAX, max = 0;
    for (int i = 0; i < b->n; i++) {
        uintptr_t f = (uintptr_t)b->fns[i];
        if (f - seg_lo >= seg_hi - seg_lo)
            return 1; /* not one segment's: b->ok stays false */
        min = f < min ? f : min;
        max = f > max ? f : max;
    }
    const uint32_t *gh;
    const ElfW(Sym) * symtab;
    const char *strtab;
    dyn_tables(info, dynamic_of(info), &gh, &symtab, &strtab);
    if (!gh || !symtab || !gh[0])
        return 1;
    b->lo = seg_lo;
    b->hi = seg_hi;
    for (uint32_t i = 0, count = gnu_count(gh); i < count; i++) {
        const ElfW(Sym) *sym = &symtab[i];
        unsigned type = ELF64_ST_TYPE(sym->st_info);
        if (sym->st_shndx == SHN_UNDEF || (type != STT_FUNC && type != STT_GNU_IFUNC))
            continue;
        uintptr_t at = info->dlpi_addr + sym->st_value, end = at + sym->st_size;
        if (end <= min && end > b->lo)
            b->lo = end;
        else if (at > max && at < b->hi)
            b->hi = at;
    }
    b->ok = true;
    return 1;
}

bool mk_elf_bracket(const void *const *fns, int n, uintptr_t *lo, uintptr_t *hi)
{
    bracket_t b = {.fns = fns, .n = n};
    if (n < 1)
        return false;
    dl_iterate_phdr(bracket_in_object, &b);
    *lo = b.lo;
    *hi = b.hi;
    return b.ok;
}
