/*
 * kv_table.h - an open-addressing hash table from a non-zero 64-bit key to
 * two 64-bit values, with linear probing and backward-shift deletion (no
 * tombstones, so probe runs stay short under churn). Header-only, with the
 * memory supplied by the caller: the tracer uses mmap (it must not malloc),
 * the analysis malloc. Used for the in-process summary's sites and live
 * blocks and for the replay's live blocks.
 *
 * Invariant: every key sits in the probe run that starts at its home slot,
 * with no empty slot between its home and itself.
 */
#ifndef MEMKIT_TRACE_KV_TABLE_H
#define MEMKIT_TRACE_KV_TABLE_H

#include "../mk_assert.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct mk_kv {
    uint64_t key; /* 0: an empty slot */
    uint64_t a, b;
} mk_kv_t;

typedef struct mk_kv_table {
    mk_kv_t *slots;
    size_t cap, used;            /* cap: 0 or a power of two; used <= 3/4 cap */
    void *(*alloc)(size_t size); /* must return zeroed memory */
    void (*release)(void *p, size_t size);
} mk_kv_table_t;

/* A key for a string or other bytes (FNV-1a): for tables keyed by names.
 * Two spellings may share a hash, so callers compare the bytes too. */
static inline uint64_t mk_hash_bytes(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* The home slot of a block address, for a table of cap slots (a power of
 * two). Blocks allocated one after another lie side by side, and their
 * slots do too within each 4 KiB page: its 256 granules of 16 bytes take
 * 256 consecutive slots, from a place the top bits of a hash of the page
 * pick, anywhere in the table. So a program that builds a large structure
 * finds its recent blocks' slots in cache, and no layout of the heap lines
 * up in the table (placing by granule alone made glibc's 64 MiB-aligned
 * arenas collide whole; starting runs at multiples of their length made
 * them collide whole too; the low bits of the hash put consecutive pages
 * on a lattice). */
static inline size_t mk_addr_home(uint64_t addr, size_t cap)
{
    unsigned bits = (unsigned)__builtin_ctzll(cap); /* cap > 1 */
    uint64_t page = ((addr >> 12) * 0x9e3779b97f4a7c15ull) >> (64 - bits);
    return (size_t)(page + ((addr >> 4) & 255)) & (cap - 1);
}

/* A block address's key: the top 24 bits of its page's hash (as
 * mk_addr_home's), then its granule in the page (8 bits). A table whose
 * slots keep the key, not the address, finds each one's home from the key
 * alone (mk_addr_key_home), so it grows and deletes without reading the
 * addresses, which lie elsewhere and cost a cache miss each. */
static inline uint32_t mk_addr_key(uint64_t addr)
{
    uint64_t page = (addr >> 12) * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(page >> 40) << 8 | (uint32_t)((addr >> 4) & 255);
}

/* mk_addr_home(addr, cap) == mk_addr_key_home(mk_addr_key(addr), cap) for
 * cap <= 2^24; beyond, the runs start on a lattice of 2^(bits - 24) slots. */
static inline size_t mk_addr_key_home(uint32_t key, size_t cap)
{
    unsigned bits = (unsigned)__builtin_ctzll(cap); /* 1 <= bits <= 32 */
    uint32_t start = (uint32_t)((uint64_t)(key & ~255u) >> (32 - bits));
    return (start + (key & 255)) & (cap - 1);
}

/* A key's home slot: mk_addr_home for a table of block addresses (the
 * mk_addr_* functions), a hash of the key for the others (mk_kv_*). A table
 * is used through one family only. */
static inline size_t mk_kv_home(uint64_t key, size_t cap, bool addresses)
{
    if (addresses)
        return mk_addr_home(key, cap);
    return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1);
}

static inline bool mk_kv_grow_as(mk_kv_table_t *t, bool addresses)
{
    size_t cap = t->cap ? t->cap * 2 : 1024;
    mk_kv_t *s = t->alloc(cap * sizeof *s);
    if (!s)
        return false;
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->slots[i].key)
            continue;
        size_t j = mk_kv_home(t->slots[i].key, cap, addresses);
        while (s[j].key)
            j = (j + 1) & (cap - 1);
        s[j] = t->slots[i];
    }
    if (t->slots)
        t->release(t->slots, t->cap * sizeof *t->slots);
    t->slots = s;
    t->cap = cap;
    return true;
}

/* Room for n keys in all without growing. A table filled in another
 * table's slot order must be reserved first: those keys come sorted by
 * their homes modulo the other's size, so in a smaller table they lap it,
 * the slots of the lap before get a second share, and the run at the lap's
 * front grows with every key (a compiler's 33,000 stacks: 900
 * instructions a put; test_kv_table). */
static inline bool mk_kv_reserve_as(mk_kv_table_t *t, size_t n, bool addresses)
{
    while (n * 4 > t->cap * 3)
        if (!mk_kv_grow_as(t, addresses))
            return false;
    return true;
}

/* Gives the table's slots back through its own release; empty after. */
static inline void mk_kv_release(mk_kv_table_t *t)
{
    if (t->slots)
        t->release(t->slots, t->cap * sizeof *t->slots);
    t->slots = NULL;
    t->cap = t->used = 0;
}

static inline mk_kv_t *mk_kv_find_as(const mk_kv_table_t *t, uint64_t key, bool addresses)
{
    if (!t->cap)
        return NULL;
    for (size_t i = mk_kv_home(key, t->cap, addresses);; i = (i + 1) & (t->cap - 1)) {
        if (t->slots[i].key == key)
            return &t->slots[i];
        if (!t->slots[i].key)
            return NULL;
    }
}

static inline mk_kv_t *mk_kv_put_as(mk_kv_table_t *t, uint64_t key, bool *fresh,
                                    bool addresses)
{
    MK_ASSERT(key != 0); /* 0 marks an empty slot */
    if ((t->used + 1) * 4 > t->cap * 3 && !mk_kv_grow_as(t, addresses))
        return NULL;
    for (size_t i = mk_kv_home(key, t->cap, addresses);; i = (i + 1) & (t->cap - 1)) {
        mk_kv_t *s = &t->slots[i];
        if (s->key == key) {
            *fresh = false;
            return s;
        }
        if (!s->key) {
            *s = (mk_kv_t){.key = key};
            t->used++;
            MK_ASSERT(t->used * 4 <= t->cap * 3); /* a probe always ends */
            *fresh = true;
            return s;
        }
    }
}

/* Backward-shift deletion (every table of linear probing here): may the
 * entry at slot i, whose home is `home`, move back into the hole? Not if its
 * home lies cyclically in (hole, i]: it would then sit before its home. */
static inline bool mk_probe_moves_back(size_t i, size_t home, size_t hole, size_t mask)
{
    return ((i - home) & mask) >= ((i - hole) & mask);
}

static inline void mk_kv_remove_as(mk_kv_table_t *t, mk_kv_t *s, bool addresses)
{
    size_t mask = t->cap - 1, hole = (size_t)(s - t->slots);
    MK_ASSERT(hole < t->cap && s->key && t->used > 0);
    for (size_t i = (hole + 1) & mask; t->slots[i].key; i = (i + 1) & mask) {
        size_t home = mk_kv_home(t->slots[i].key, t->cap, addresses);
        if (mk_probe_moves_back(i, home, hole, mask)) {
            t->slots[hole] = t->slots[i];
            hole = i;
        }
    }
    t->slots[hole].key = 0;
    t->used--;
}

/* The slot holding key, or NULL. */
static inline mk_kv_t *mk_kv_find(const mk_kv_table_t *t, uint64_t key)
{
    return mk_kv_find_as(t, key, false);
}

/* The slot holding key, made (values 0, *fresh set) if it was not there;
 * NULL when memory ran out. */
static inline mk_kv_t *mk_kv_put(mk_kv_table_t *t, uint64_t key, bool *fresh)
{
    return mk_kv_put_as(t, key, fresh, false);
}

static inline bool mk_kv_reserve(mk_kv_table_t *t, size_t n)
{
    return mk_kv_reserve_as(t, n, false);
}

/* Removes s, shifting later members of its probe run back. */
static inline void mk_kv_remove(mk_kv_table_t *t, mk_kv_t *s)
{
    mk_kv_remove_as(t, s, false);
}

/* The same for a table keyed by block addresses. */
static inline mk_kv_t *mk_addr_find(const mk_kv_table_t *t, uint64_t addr)
{
    return mk_kv_find_as(t, addr, true);
}

static inline mk_kv_t *mk_addr_put(mk_kv_table_t *t, uint64_t addr, bool *fresh)
{
    return mk_kv_put_as(t, addr, fresh, true);
}

static inline void mk_addr_remove(mk_kv_table_t *t, mk_kv_t *s)
{
    mk_kv_remove_as(t, s, true);
}

#endif /* MEMKIT_TRACE_KV_TABLE_H */
