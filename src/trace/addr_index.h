/*
 * addr_index.h - the per-thread index of live blocks that lets a trace name
 * a freed block by a small number instead of its address.
 *
 * Each thread keeps the blocks it allocated in a dense array (address by
 * index) plus a hash map (index by address). A free by the same thread names
 * the block's index, which costs about log2(live blocks) bits where an
 * address delta costs 20 or more. The writer (tracer) and the reader apply
 * exactly the same operations in the same order, so their indexes stay
 * identical; both sides use this one implementation.
 *
 *   add(a):    a already present (freed where this thread could not see):
 *              keep its index; else append it, unless the index is full.
 *   remove(i): the last entry moves into slot i (swap-remove).
 *
 * Memory comes from the caller's allocator (the tracer must not malloc).
 * The map is not kv_table.h's: its deletion must also update where[] for
 * every entry it shifts, which is what makes remove(i) lookup-free. A map
 * slot is 8 bytes, an index and a tag of the address: the address itself
 * is addr[index], read to confirm a tag that matches. The writer's map has
 * twice as many slots as the arrays have room for (a load of 1/8 to 1/2:
 * short probes in the tracer's hot path); a reader's may be lean, grown on
 * its own to a load of at most 3/4 (a parser's trace holds millions of live
 * blocks in one index, and the map is most of its memory). The map decides
 * no index, so the two sides may size theirs differently.
 */
#ifndef MEMKIT_TRACE_ADDR_INDEX_H
#define MEMKIT_TRACE_ADDR_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kv_table.h" /* mk_addr_home */

#define MK_INDEX_MAX (1u << 22) /* beyond this many live blocks, addresses are raw */

typedef void *(*mk_index_alloc_fn)(size_t size);
typedef void (*mk_index_free_fn)(void *p, size_t size);

typedef struct mk_addr_index {
    uint64_t *addr;  /* dense: addr[i] for i < n */
    uint8_t *cls;    /* and the size class each was allocated with */
    uint32_t *where; /* where[i]: the map slot that holds index i */
    uint32_t n, cap;
    struct mk_index_slot {
        uint32_t idx1; /* index + 1; 0: empty */
        uint32_t tag;  /* mk_index_tag of its address */
    } * map;
    uint32_t map_cap; /* power of two: 2 * cap, or if lean at least 4/3 n */
    bool lean;
    mk_index_alloc_fn alloc;
    mk_index_free_fn release;
} mk_addr_index_t;

/* A block's home slot keeps the heap's layout (mk_addr_home). */
static inline size_t mk_index_home(uint64_t addr, uint32_t cap)
{
    return mk_addr_home(addr, cap);
}

/* 32 bits of the address that its home slot does not already say. */
static inline uint32_t mk_index_tag(uint64_t addr)
{
    return (uint32_t)((addr * 0x9e3779b97f4a7c15ull) >> 32);
}

static inline struct mk_index_slot *mk_index_slot_of(const mk_addr_index_t *x,
                                                     uint64_t addr)
{
    if (!x->map_cap)
        return NULL;
    uint32_t tag = mk_index_tag(addr);
    for (size_t i = mk_index_home(addr, x->map_cap);; i = (i + 1) & (x->map_cap - 1)) {
        const struct mk_index_slot *s = &x->map[i];
        if (!s->idx1)
            return NULL;
        if (s->tag == tag && x->addr[s->idx1 - 1] == addr)
            return &x->map[i];
    }
}

/* The index of a live block, or -1. */
static inline int64_t mk_index_find(const mk_addr_index_t *x, uint64_t addr)
{
    const struct mk_index_slot *s = addr ? mk_index_slot_of(x, addr) : NULL;
    return s ? (int64_t)s->idx1 - 1 : -1;
}

static inline void mk_index_map_put(struct mk_index_slot *map, uint32_t cap,
                                    uint32_t *where, uint64_t addr, uint32_t idx)
{
    size_t i = mk_index_home(addr, cap);
    while (map[i].idx1)
        i = (i + 1) & (cap - 1);
    map[i].idx1 = idx + 1;
    map[i].tag = mk_index_tag(addr);
    where[idx] = (uint32_t)i;
}

/* A map of map_cap slots for the entries there are. */
static inline bool mk_index_remap(mk_addr_index_t *x, uint32_t map_cap)
{
    struct mk_index_slot *map = x->alloc(map_cap * sizeof *map);
    if (!map)
        return false;
    memset(map, 0, map_cap * sizeof *map);
    for (uint32_t i = 0; i < x->n; i++)
        mk_index_map_put(map, map_cap, x->where, x->addr[i], i);
    if (x->map)
        x->release(x->map, x->map_cap * sizeof *x->map);
    x->map = map;
    x->map_cap = map_cap;
    return true;
}

static inline bool mk_index_grow(mk_addr_index_t *x)
{
    /* From 64: a reader holds one index per thread of the trace, and
     * programs may run thousands of short threads. */
    uint32_t cap = x->cap ? x->cap * 2 : 64;
    uint64_t *addr = x->alloc(cap * sizeof *addr);
    uint8_t *cls = x->alloc(cap);
    uint32_t *where = x->alloc(cap * sizeof *where);
    if (!addr || !cls || !where) {
        if (addr)
            x->release(addr, cap * sizeof *addr);
        if (cls)
            x->release(cls, cap);
        if (where)
            x->release(where, cap * sizeof *where);
        return false;
    }
    if (x->n) {
        memcpy(addr, x->addr, x->n * sizeof *addr);
        memcpy(cls, x->cls, x->n);
        memcpy(where, x->where, x->n * sizeof *where);
    }
    if (x->addr) {
        x->release(x->addr, x->cap * sizeof *x->addr);
        x->release(x->cls, x->cap);
        x->release(x->where, x->cap * sizeof *x->where);
    }
    x->addr = addr;
    x->cls = cls;
    x->where = where;
    x->cap = cap;
    /* where[] is the map's: a failed remap leaves the old map whole */
    if (!x->lean || !x->map)
        return mk_index_remap(x, x->lean ? cap : cap * 2);
    return true;
}

/* Adds a block. Returns false only when memory ran out: then the two sides
 * would disagree, so the writer stops and the reader stops reading. */
static inline bool mk_index_add(mk_addr_index_t *x, uint64_t addr, unsigned cls)
{
    struct mk_index_slot *s = addr ? mk_index_slot_of(x, addr) : NULL;
    if (s)
        x->cls[s->idx1 - 1] =
            (uint8_t)cls; /* a stale entry takes the new block's class */
    if (!addr || s || x->n >= MK_INDEX_MAX)
        return true;
    if (x->n == x->cap && !mk_index_grow(x))
        return false;
    if (x->lean && (x->n + 1) * 4ull > x->map_cap * 3ull &&
        !mk_index_remap(x, x->map_cap * 2))
        return false;
    x->cls[x->n] = (uint8_t)cls;
    x->addr[x->n] = addr;
    mk_index_map_put(x->map, x->map_cap, x->where, addr, x->n);
    x->n++;
    return true;
}

/* Removes the block at index i (i < n), with no lookup: where[] knows its
 * map slot. */
static inline void mk_index_remove(mk_addr_index_t *x, uint32_t i)
{
    uint32_t mask = x->map_cap - 1;
    /* Backward-shift deletion: no tombstones, probe runs stay short. */
    size_t hole = x->where[i];
    for (size_t j = (hole + 1) & mask; x->map[j].idx1; j = (j + 1) & mask) {
        size_t home = mk_index_home(x->addr[x->map[j].idx1 - 1], x->map_cap);
        if (mk_probe_moves_back(j, home, hole, mask)) {
            x->map[hole] = x->map[j];
            x->where[x->map[hole].idx1 - 1] = (uint32_t)hole;
            hole = j;
        }
    }
    x->map[hole].idx1 = 0;
    uint32_t last = --x->n;
    if (i != last) {
        x->addr[i] = x->addr[last];
        x->cls[i] = x->cls[last];
        x->where[i] = x->where[last];
        x->map[x->where[i]].idx1 = i + 1;
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
        x->release(x->cls, x->cap);
        x->release(x->where, x->cap * sizeof *x->where);
        x->release(x->map, x->map_cap * sizeof *x->map);
    }
    x->addr = NULL;
    x->cls = NULL;
    x->where = NULL;
    x->map = NULL;
    x->n = x->cap = x->map_cap = 0;
}

#endif /* MEMKIT_TRACE_ADDR_INDEX_H */
