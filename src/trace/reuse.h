/*
 * reuse.h - the model that predicts which freed block an allocation gets
 * back, so a trace can name it with a small number (format.h, NEWADDR).
 *
 * Per size class, the record's latest frees, newest first: allocators hand
 * back what was freed moments ago in the same size class (glibc's tcache and
 * fastbins, jemalloc's and tcmalloc's thread caches are all LIFO). A poor
 * prediction costs a few bits, never correctness. Writer and reader share
 * this code, so their models stay identical.
 *
 * (A closer copy of glibc, a 7-entry cache plus overflow with refills, was
 * tried: on the tracer benchmark it predicted worse, because glibc
 * coalesces and splits the larger chunks anyway.)
 *
 * What the classes miss is mostly a block freed earlier in another class:
 * glibc merged it with a free neighbour and split it again for another size.
 * Those are named by how many frees ago they were freed (format 2: 1 is
 * the latest), which costs about 11 bits where an address delta costs 22.
 */
#ifndef MEMKIT_TRACE_REUSE_H
#define MEMKIT_TRACE_REUSE_H

#include <stdint.h>
#include <string.h>

#define MK_REUSE_DEPTH  32
#define MK_REUSE_MISS   MK_REUSE_DEPTH /* code: not predicted */
#define MK_REUSE_RECENT 4096           /* frees back a miss can be named by */
#define MK_REUSE_WHERE  8192           /* the writer's address -> free number map */

/* Each class is a ring of MK_REUSE_DEPTH: entry k (0 = newest) sits at
 * (head + k) % DEPTH, so a free is one store and taking entry j moves j
 * entries (j is nearly always tiny). */
typedef struct mk_reuse {
    uint64_t addr[256][MK_REUSE_DEPTH];
    uint8_t head[256], n[256];
    /* Every class's frees: free number k at recent[k % MK_REUSE_RECENT]. */
    uint64_t recent[MK_REUSE_RECENT];
    uint32_t frees; /* frees in the record so far */
    /* The writer's way back from an address: 1 + the free number it was last
     * seen at, by a hash of it; a hint that mk_reuse_recent_find checks
     * against recent[], so it is never reset and may be stale or clobbered. */
    uint32_t where[MK_REUSE_WHERE];
} mk_reuse_t;

#define MK_REUSE_AT(r, c, k) ((r)->addr[c][((r)->head[c] + (k)) & (MK_REUSE_DEPTH - 1)])

static inline void mk_reuse_reset(mk_reuse_t *r)
{
    memset(r->n, 0, sizeof r->n);
    r->frees = 0;
}

static inline unsigned mk_reuse_where_slot(uint64_t addr)
{
    return (unsigned)(((addr >> 4) * 0x9e3779b97f4a7c15ull) >> 51); /* 13 bits */
}

/* A block of class c was freed; when the ring is full the oldest drops out. */
static inline void mk_reuse_free(mk_reuse_t *r, unsigned c, uint64_t addr)
{
    r->head[c] = (uint8_t)((r->head[c] - 1) & (MK_REUSE_DEPTH - 1));
    r->addr[c][r->head[c]] = addr;
    if (r->n[c] < MK_REUSE_DEPTH)
        r->n[c]++;
    r->recent[r->frees % MK_REUSE_RECENT] = addr;
    r->where[mk_reuse_where_slot(addr)] = ++r->frees; /* 1 + its free number */
}

/* How many frees ago addr was freed in this record (1 = the latest), or 0 if
 * not within the last MK_REUSE_RECENT. Free number k is still in recent[] if
 * frees - k <= MK_REUSE_RECENT; the slot then holds exactly free k, so a
 * stale or clobbered hint fails the comparison rather than lying. */
static inline uint32_t mk_reuse_recent_find(const mk_reuse_t *r, uint64_t addr)
{
    uint32_t k1 = r->where[mk_reuse_where_slot(addr)]; /* 1 + free number */
    if (k1 == 0 || k1 > r->frees || r->frees - (k1 - 1) > MK_REUSE_RECENT ||
        r->recent[(k1 - 1) % MK_REUSE_RECENT] != addr)
        return 0;
    return r->frees - (k1 - 1);
}

/* The block freed d frees ago (1 <= d <= mk_reuse_recent_count). */
static inline uint64_t mk_reuse_recent(const mk_reuse_t *r, uint32_t d)
{
    return r->recent[(r->frees - d) % MK_REUSE_RECENT];
}

static inline uint32_t mk_reuse_recent_count(const mk_reuse_t *r)
{
    return r->frees < MK_REUSE_RECENT ? r->frees : MK_REUSE_RECENT;
}

/* The position of addr among class c's candidates, or MK_REUSE_MISS. */
static inline unsigned mk_reuse_find(const mk_reuse_t *r, unsigned c, uint64_t addr)
{
    for (unsigned j = 0; j < r->n[c]; j++)
        if (MK_REUSE_AT(r, c, j) == addr)
            return j;
    return MK_REUSE_MISS;
}

/* Takes candidate j of class c (j < mk_reuse_count) and returns it. */
static inline uint64_t mk_reuse_take(mk_reuse_t *r, unsigned c, unsigned j)
{
    uint64_t addr = MK_REUSE_AT(r, c, j);
    for (unsigned k = j; k > 0; k--) /* the newer ones move one step older */
        MK_REUSE_AT(r, c, k) = MK_REUSE_AT(r, c, k - 1);
    r->head[c] = (uint8_t)((r->head[c] + 1) & (MK_REUSE_DEPTH - 1));
    r->n[c]--;
    return addr;
}

static inline unsigned mk_reuse_count(const mk_reuse_t *r, unsigned c)
{
    return r->n[c];
}

#endif /* MEMKIT_TRACE_REUSE_H */
