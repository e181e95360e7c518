/*
 * addr_index.h - the per-thread index of live blocks that lets a trace name
 * a freed block by a small number instead of its address.
 *
 * Each thread numbers the blocks it allocated densely, 0..n-1, and keeps
 * them in a hash map by address. A free by the same thread names
 * the block's index, which costs about log2(live blocks) bits where an
 * address delta costs 20 or more. The writer (tracer) and the reader apply
 * exactly the same operations in the same order, so their indexes stay
 * identical; both sides use this one implementation.
 *
 *   add(a):    a already present (freed where this thread could not see):
 *              keep its index; else append it. When the index is full
 *              (format version 4: MK_INDEX_CAP blocks), a block leaves
 *              first (mk_index_add says which), and its free will name its
 *              address; before version 4, a full index (MK_INDEX_MAX_V3)
 *              took no more blocks.
 *   remove(i): the last index takes number i (swap-remove).
 *
 * The bound keeps the tracer's index in cache whatever the program holds:
 * a parser's trace held 2.2M blocks live, and the unbounded index cost
 * each new block a cache miss at its first probe (1.1 last-level misses
 * per allocation) and the program the kernel's zeroing of the map's pages
 * at each growth; a reader keeps one index per thread besides its own
 * table of live blocks. What the bound costs is the frees of evicted
 * blocks, named by address, and their blocks' part in the reuse model.
 * Which block leaves depends on the map's layout, so in version 4 both
 * sides size their maps alike (sparse: the bound keeps a reader's small).
 *
 * Memory comes from the caller's allocator (the tracer must not malloc; it
 * maps pages, which come zeroed: then the map is not cleared). The map is not
 * kv_table.h's: its deletion must also update where[] for every entry it shifts, which is
 * what makes remove(i) lookup-free. A map slot is 8 bytes: the entry's index and size
 * class, and its address's key (mk_addr_key), from which its home follows
 * at any map size. So growing the map and a deletion's shifts read no
 * addresses, and a free reads two cache lines in a large index (the slot,
 * and addr[] to confirm the match), not four: a program that frees a
 * million live blocks in hash order (an interpreter's teardown) pays that
 * per free. The address lives in addr[], written in order as blocks come,
 * which keeps the map small for programs that build and never free.
 * The writer's map has twice as many slots as the arrays have room for (a
 * load of 1/8 to 1/2: short probes in the tracer's hot path); a reader of
 * versions 1 to 3 may be lean, grown on its own to a load of at most 3/4
 * (such a trace may hold millions of live blocks in one index, and the map
 * is most of its memory). Before version 4 the map decides no index, so the
 * two sides may size theirs differently; from version 4 it decides which
 * block a full index evicts, so both size theirs alike (above).
 *
 * Invariants: n <= cap <= max; for every i < n, map[where[i]]
 * holds index i and mk_addr_key(addr[i]); a slot is empty iff its meta is
 * 0; every entry sits in the probe run from its home with no empty slot
 * between (backward-shift deletion keeps it so).
 */
#ifndef MEMKIT_TRACE_ADDR_INDEX_H
#define MEMKIT_TRACE_ADDR_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kv_table.h" /* mk_addr_key, mk_addr_key_home, mk_probe_moves_back */

#define MK_INDEX_CAP    (1u << 16) /* version 4: blocks at most, then eviction */
#define MK_INDEX_MAX_V3 (1u << 22) /* versions 1-3: blocks at most, then no more */

typedef void *(*mk_index_alloc_fn)(size_t size);
typedef void (*mk_index_free_fn)(void *p, size_t size);
/* Resizes a block of alloc's from old_size to size, its contents kept
 * (NULL: failed, the block unchanged). Shrinking must not fail. */
typedef void *(*mk_index_resize_fn)(void *p, size_t old_size, size_t size);

typedef struct mk_index_slot {
    uint32_t key;  /* mk_addr_key of the address */
    uint32_t meta; /* index + 1 (low 24 bits; 0: an empty slot), size class
                    * (high 8) */
} mk_index_slot_t;

_Static_assert(MK_INDEX_MAX_V3 < (1u << 24) && MK_INDEX_CAP <= MK_INDEX_MAX_V3,
               "an index + 1 fits the slot's 24 bits");

typedef struct mk_addr_index {
    uint64_t *addr;  /* dense: addr[i] for i < n */
    uint32_t *where; /* where[i]: the map slot that holds index i */
    uint32_t n, cap;
    mk_index_slot_t *map;
    uint32_t map_cap; /* power of two: 2 * cap, or if lean at least 4/3 n */
    uint32_t max;     /* blocks at most (mk_index_set_version) */
    bool evicts;      /* when full (version 4) */
    bool lean;
    bool zeroed; /* alloc's memory comes zeroed */
    mk_index_alloc_fn alloc;
    mk_index_free_fn release;
    /* NULL: the arrays grow by alloc, copy and release. A mapping that grows
     * by mremap keeps its pages: a copy faults in fresh ones, which for an
     * index of millions cost the traced program more than the copy. */
    mk_index_resize_fn resize;
} mk_addr_index_t;

static inline uint32_t mk_slot_idx(const mk_index_slot_t *s)
{
    return (s->meta & 0xffffffu) - 1;
}

static inline unsigned mk_slot_cls(const mk_index_slot_t *s)
{
    return s->meta >> 24;
}

/* Gives a slot a new index + 1, its class kept. The moved entry of a
 * swap-remove lies anywhere in the map: a cache miss in a large one, which
 * a read-modify-write of meta made the free wait for (perf: 62% of the
 * free hook's samples on perl's teardown). Stores of the three low bytes
 * need no load, so the miss is the store buffer's. */
static inline void mk_slot_renumber(mk_index_slot_t *s, uint32_t idx1)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    unsigned char *b = (unsigned char *)&s->meta;
    uint16_t lo = (uint16_t)idx1;
    memcpy(b, &lo, sizeof lo);
    b[2] = (unsigned char)(idx1 >> 16);
#else
    s->meta = (s->meta & 0xff000000u) | idx1;
#endif
}

static inline mk_index_slot_t *mk_index_slot_of(const mk_addr_index_t *x, uint64_t addr)
{
    if (!x->map_cap)
        return NULL;
    uint32_t key = mk_addr_key(addr);
    for (size_t i = mk_addr_key_home(key, x->map_cap);; i = (i + 1) & (x->map_cap - 1)) {
        mk_index_slot_t *s = &x->map[i];
        if (!s->meta)
            return NULL;
        if (s->key == key && x->addr[mk_slot_idx(s)] == addr)
            return s;
    }
}

/* The first empty slot of key's probe run. */
static inline size_t mk_index_empty_slot(const mk_index_slot_t *map, uint32_t cap,
                                         uint32_t key)
{
    size_t i = mk_addr_key_home(key, cap);
    while (map[i].meta)
        i = (i + 1) & (cap - 1);
    return i;
}

/* An entry into slot i, empty and in its key's probe run; where[] follows. */
static inline void mk_index_put_at(mk_index_slot_t *map, uint32_t *where, size_t i,
                                   uint32_t key, uint32_t meta)
{
    map[i] = (mk_index_slot_t){.key = key, .meta = meta};
    where[mk_slot_idx(&map[i])] = (uint32_t)i;
}

static inline void mk_index_map_put(mk_index_slot_t *map, uint32_t cap, uint32_t *where,
                                    uint32_t key, uint32_t meta)
{
    mk_index_put_at(map, where, mk_index_empty_slot(map, cap, key), key, meta);
}

/* A map of map_cap slots for the entries there are. The old map is read in
 * slot order and homes come from keys: a key's home keeps the heap's
 * layout at every size, so the entries land in the new map in nearly the
 * same order and both maps stream. (Placing them in index order, from
 * addr[], missed the cache on the new map for each entry: growing a
 * writer's map to millions of entries cost more than recording them.) */
static inline bool mk_index_remap(mk_addr_index_t *x, uint32_t map_cap)
{
    mk_index_slot_t *map = x->alloc(map_cap * sizeof *map);
    if (!map)
        return false;
    if (!x->zeroed)
        memset(map, 0, map_cap * sizeof *map);
    for (uint32_t j = 0; j < x->map_cap; j++)
        if (x->map[j].meta)
            mk_index_map_put(map, map_cap, x->where, x->map[j].key, x->map[j].meta);
    if (x->map)
        x->release(x->map, x->map_cap * sizeof *x->map);
    x->map = map;
    x->map_cap = map_cap;
    return true;
}

/* The dense arrays at cap entries, by resize: both or neither. */
static inline bool mk_index_resize_arrays(mk_addr_index_t *x, uint32_t cap)
{
    uint64_t *addr = x->resize(x->addr, x->cap * sizeof *addr, cap * sizeof *addr);
    if (!addr)
        return false;
    uint32_t *where = x->resize(x->where, x->cap * sizeof *where, cap * sizeof *where);
    if (!where) { /* shrinking back cannot fail */
        x->addr = x->resize(addr, cap * sizeof *addr, x->cap * sizeof *addr);
        return false;
    }
    x->addr = addr;
    x->where = where;
    return true;
}

/* The dense arrays at cap entries, by alloc, copy and release. */
static inline bool mk_index_copy_arrays(mk_addr_index_t *x, uint32_t cap)
{
    uint64_t *addr = x->alloc(cap * sizeof *addr);
    uint32_t *where = x->alloc(cap * sizeof *where);
    if (!addr || !where) {
        if (addr)
            x->release(addr, cap * sizeof *addr);
        if (where)
            x->release(where, cap * sizeof *where);
        return false;
    }
    if (x->n) {
        memcpy(addr, x->addr, x->n * sizeof *addr);
        memcpy(where, x->where, x->n * sizeof *where);
    }
    if (x->addr) {
        x->release(x->addr, x->cap * sizeof *x->addr);
        x->release(x->where, x->cap * sizeof *x->where);
    }
    x->addr = addr;
    x->where = where;
    return true;
}

/* The format's bound (format.h, version 4): an index must be set to its
 * trace's version before its first add, the same on both sides. From
 * version 4 its map is sparse on both sides, since eviction reads it. */
static inline void mk_index_set_version(mk_addr_index_t *x, uint32_t version)
{
    x->evicts = version >= 4;
    x->max = x->evicts ? MK_INDEX_CAP : MK_INDEX_MAX_V3;
    if (x->evicts)
        x->lean = false;
}

static inline bool mk_index_grow(mk_addr_index_t *x)
{
    /* From 64: a reader holds one index per thread of the trace, and
     * programs may run thousands of short threads. */
    uint32_t cap = x->cap ? x->cap * 2 : 64;
    bool ok = x->resize && x->addr ? mk_index_resize_arrays(x, cap)
                                   : mk_index_copy_arrays(x, cap);
    if (!ok)
        return false;
    x->cap = cap;
    /* where[] is the map's: a failed remap leaves the old map whole */
    if (!x->lean || !x->map)
        return mk_index_remap(x, x->lean ? cap : cap * 2);
    return true;
}

/* The slot of index i (i < n). */
static inline mk_index_slot_t *mk_index_slot_at(const mk_addr_index_t *x, uint32_t i)
{
    return &x->map[x->where[i]];
}

static inline void mk_index_remove_slot(mk_addr_index_t *x, mk_index_slot_t *s);

/* Adds a block. Returns false only when memory ran out: then the two sides
 * would disagree, so the writer stops and the reader stops reading.
 * The room is made first, so that one probe from the address's home finds
 * either its stale entry or the empty slot it goes into: a new block's
 * first probe may miss the cache, and is taken once. Growing before knowing
 * whether the address is new changes no index. */
static inline bool mk_index_add(mk_addr_index_t *x, uint64_t addr, unsigned cls)
{
    if (!addr)
        return true;
    if (x->n == x->cap && x->n < x->max && !mk_index_grow(x))
        return false;
    if (x->lean && (x->n + 1) * 4ull > x->map_cap * 3ull &&
        !mk_index_remap(x, x->map_cap * 2))
        return false;
    uint32_t key = mk_addr_key(addr), mask = x->map_cap - 1;
    size_t i = mk_addr_key_home(key, x->map_cap);
    for (; x->map[i].meta; i = (i + 1) & mask) {
        mk_index_slot_t *s = &x->map[i];
        if (s->key == key && x->addr[mk_slot_idx(s)] == addr) {
            s->meta = (s->meta & 0xffffffu) | (uint32_t)cls << 24; /* stale: new class */
            return true;
        }
    }
    if (x->n >= x->max) {
        if (!x->evicts)
            return true;
        /* Full: the block in the nearest used slot before i leaves. It
         * ends its run (the slots after it up to i are empty), so its
         * removal shifts nothing: a block at a random place could shift a
         * whole run, and a dense heap's page-local runs are long (perl's
         * hash: over 1,000 instructions per eviction). Its home is near the new
         * block's, so it is a block of a nearby page: no better or worse a
         * guess at what is freed last than any other. The probe then
         * starts again (in cache), since the freed slot may lie in the new
         * block's run. */
        size_t v = i;
        do
            v = (v - 1) & mask;
        while (!x->map[v].meta);
        mk_index_remove_slot(x, &x->map[v]);
        i = mk_index_empty_slot(x->map, x->map_cap, key);
    }
    /* i is empty: the map's load stays below 1 */
    MK_ASSERT(!x->map[i].meta && x->n < x->cap && x->n < x->map_cap);
    x->addr[x->n] = addr;
    mk_index_put_at(x->map, x->where, i, key, (x->n + 1) | (uint32_t)cls << 24);
    x->n++;
    return true;
}

/* Removes the entry in slot s (from mk_index_slot_of or mk_index_slot_at),
 * with no lookup. */
static inline void mk_index_remove_slot(mk_addr_index_t *x, mk_index_slot_t *s)
{
    uint32_t mask = x->map_cap - 1, i = mk_slot_idx(s);
    MK_ASSERT(s->meta && x->n > 0 && i < x->n && x->where[i] == (uint32_t)(s - x->map));
    /* Backward-shift deletion: no tombstones, probe runs stay short. */
    size_t hole = (size_t)(s - x->map);
    for (size_t j = (hole + 1) & mask; x->map[j].meta; j = (j + 1) & mask) {
        size_t home = mk_addr_key_home(x->map[j].key, x->map_cap);
        if (mk_probe_moves_back(j, home, hole, mask)) {
            x->map[hole] = x->map[j];
            x->where[mk_slot_idx(&x->map[hole])] = (uint32_t)hole;
            hole = j;
        }
    }
    x->map[hole].meta = 0;
    uint32_t last = --x->n;
    if (i != last) { /* the last index takes number i */
        x->addr[i] = x->addr[last];
        x->where[i] = x->where[last];
        mk_slot_renumber(&x->map[x->where[i]], i + 1);
    }
}

/* Empties the index, keeping its memory for the next owner. */
static inline void mk_index_clear(mk_addr_index_t *x)
{
    if (x->map)
        memset(x->map, 0, x->map_cap * sizeof *x->map);
    x->n = 0;
}

static inline void mk_index_free(mk_addr_index_t *x)
{
    if (x->addr) {
        x->release(x->addr, x->cap * sizeof *x->addr);
        x->release(x->where, x->cap * sizeof *x->where);
    }
    if (x->map)
        x->release(x->map, x->map_cap * sizeof *x->map);
    x->addr = NULL;
    x->where = NULL;
    x->map = NULL;
    x->n = x->cap = x->map_cap = 0;
}

#endif /* MEMKIT_TRACE_ADDR_INDEX_H */
