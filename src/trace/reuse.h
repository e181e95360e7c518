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
 */
#ifndef MEMKIT_TRACE_REUSE_H
#define MEMKIT_TRACE_REUSE_H

#include <stdint.h>
#include <string.h>

#define MK_REUSE_DEPTH 32
#define MK_REUSE_MISS  MK_REUSE_DEPTH /* code: not predicted */

/* Each class is a ring of MK_REUSE_DEPTH: entry k (0 = newest) sits at
 * (head + k) % DEPTH, so a free is one store and taking entry j moves j
 * entries (j is nearly always tiny). */
typedef struct mk_reuse {
    uint64_t addr[256][MK_REUSE_DEPTH];
    uint8_t head[256], n[256];
} mk_reuse_t;

#define MK_REUSE_AT(r, c, k) ((r)->addr[c][((r)->head[c] + (k)) & (MK_REUSE_DEPTH - 1)])

static inline void mk_reuse_reset(mk_reuse_t *r)
{
    memset(r->n, 0, sizeof r->n);
}

/* A block of class c was freed; when the ring is full the oldest drops out. */
static inline void mk_reuse_free(mk_reuse_t *r, unsigned c, uint64_t addr)
{
    r->head[c] = (uint8_t)((r->head[c] - 1) & (MK_REUSE_DEPTH - 1));
    r->addr[c][r->head[c]] = addr;
    if (r->n[c] < MK_REUSE_DEPTH)
        r->n[c]++;
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
