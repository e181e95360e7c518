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
 *
 * Format 3 puts a cache in front of the rings, because a ring's newest entry
 * is the wrong guess whenever the allocator's per-thread cache of that size
 * was full at the free: glibc keeps 7 chunks per size in its tcache (LIFO)
 * and sends the rest to a fastbin (chunks of up to 128 bytes, LIFO) or its
 * bins. So per class the model keeps the frees that would have found room
 * in such a cache, and for the fastbin classes the ones that overflowed. An
 * allocation is predicted as the cache's newest, and the candidates are the
 * cache (newest first) followed by the ring. When the cache is empty and
 * the allocation takes the newest overflowed free, the model refills the
 * cache from the overflow the way glibc's malloc refills its tcache from a
 * fastbin (which reverses their order). A wrong guess repairs the model:
 * what was cached above the block taken went elsewhere. On the tracer
 * benchmark this names 90% of the allocations that find a cached block
 * with one bit (format.h, HIT), and takes the address streams from 3.65 to
 * about 2.2 bits per iteration. Other allocators' thread caches are LIFO
 * too; where they hold more than 7, more guesses are wrong, and their
 * traces come out 0.2-0.5% larger than with the rings alone.
 */
#ifndef MEMKIT_TRACE_REUSE_H
#define MEMKIT_TRACE_REUSE_H

#include <stdint.h>
#include <string.h>

#define MK_REUSE_DEPTH      32
#define MK_REUSE_MISS       MK_REUSE_DEPTH      /* code: not predicted */
#define MK_REUSE_UNKNOWN    (MK_REUSE_MISS + 1) /* a ring place not looked for */
#define MK_REUSE_RECENT     4096                /* frees back a miss can be named by */
#define MK_REUSE_WHERE      8192 /* the writer's address -> free number map */
#define MK_REUSE_CACHE      7    /* glibc's tcache: 7 chunks per size */
#define MK_REUSE_FAST       8    /* classes up to this one have an overflow */
#define MK_REUSE_FAST_DEPTH 128  /* (glibc's fastbins: chunks <= 128 bytes) */

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
    /* Format 3's cache: per class, cache[c][0..ncache[c]) with the newest
     * last; and the overflow of the small classes, a ring newest first
     * (entry k at (fast_head + k) % MK_REUSE_FAST_DEPTH) that drops its
     * oldest when full. Entries may be stale (the block was reused another
     * way): a stale guess is a wrong guess, and writer and reader keep the
     * same model, so it costs bits, never correctness. */
    uint64_t cache[256][MK_REUSE_CACHE];
    uint8_t ncache[256];
    uint64_t fast[MK_REUSE_FAST + 1][MK_REUSE_FAST_DEPTH];
    uint8_t fast_head[MK_REUSE_FAST + 1], fast_n[MK_REUSE_FAST + 1];
} mk_reuse_t;

#define MK_REUSE_AT(r, c, k) ((r)->addr[c][((r)->head[c] + (k)) & (MK_REUSE_DEPTH - 1)])

static inline void mk_reuse_reset(mk_reuse_t *r)
{
    memset(r->n, 0, sizeof r->n);
    memset(r->ncache, 0, sizeof r->ncache);
    memset(r->fast_n, 0, sizeof r->fast_n);
    r->frees = 0;
}

static inline unsigned mk_reuse_where_slot(uint64_t addr)
{
    return (unsigned)(((addr >> 4) * 0x9e3779b97f4a7c15ull) >> 51); /* 13 bits */
}

#define MK_REUSE_FAST_AT(r, c, k)                                                        \
    ((r)->fast[c][((r)->fast_head[c] + (k)) & (MK_REUSE_FAST_DEPTH - 1)])

/* A block of class c was freed; when the ring is full the oldest drops out.
 * It goes to the cache if that has room, else to the overflow if c has one. */
static inline void mk_reuse_free(mk_reuse_t *r, unsigned c, uint64_t addr)
{
    if (r->ncache[c] < MK_REUSE_CACHE) {
        r->cache[c][r->ncache[c]++] = addr;
    } else if (c <= MK_REUSE_FAST) {
        r->fast_head[c] = (uint8_t)((r->fast_head[c] - 1) & (MK_REUSE_FAST_DEPTH - 1));
        r->fast[c][r->fast_head[c]] = addr;
        if (r->fast_n[c] < MK_REUSE_FAST_DEPTH)
            r->fast_n[c]++;
    }
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

/* ---- format 3: the cache in front of the rings ---- */

/* Whether class c's cache holds a guess (the reader then reads a HIT bit). */
static inline unsigned mk_reuse_cached(const mk_reuse_t *r, unsigned c)
{
    return r->ncache[c];
}

/* The guess: the newest block in class c's cache (mk_reuse_cached != 0). */
static inline uint64_t mk_reuse_guess(const mk_reuse_t *r, unsigned c)
{
    return r->cache[c][r->ncache[c] - 1];
}

/* Where addr is in class c's cache (the newest if twice), or -1. */
static inline int mk_reuse_in_cache(const mk_reuse_t *r, unsigned c, uint64_t addr)
{
    for (int k = r->ncache[c] - 1; k >= 0; k--)
        if (r->cache[c][k] == addr)
            return k;
    return -1;
}

/* The position of addr among class c's candidates: the cache newest first,
 * then the ring (whose entries may repeat the cache's: skipping those would
 * cost a scan of the cache per ring entry, for codes a little smaller), or
 * MK_REUSE_MISS if it is not among the first MK_REUSE_DEPTH of them. Sets
 * *ring_j for mk_reuse_claim: addr's place in the ring, if it looked. */
static inline unsigned mk_reuse_locate(const mk_reuse_t *r, unsigned c, uint64_t addr,
                                       unsigned *ring_j)
{
    unsigned nc = r->ncache[c];
    int k = mk_reuse_in_cache(r, c, addr);
    *ring_j = MK_REUSE_UNKNOWN;
    if (k >= 0)
        return nc - 1 - (unsigned)k;
    unsigned j = *ring_j = mk_reuse_find(r, c, addr);
    return j < MK_REUSE_DEPTH - nc ? nc + j : MK_REUSE_MISS;
}

/* Candidate pos of class c (the reverse of mk_reuse_locate): 1 and *addr,
 * or 0 if there are not that many. */
static inline int mk_reuse_candidate(const mk_reuse_t *r, unsigned c, unsigned pos,
                                     uint64_t *addr)
{
    unsigned nc = r->ncache[c];
    if (pos < nc)
        *addr = r->cache[c][nc - 1 - pos];
    else if (pos - nc < r->n[c])
        *addr = MK_REUSE_AT(r, c, pos - nc);
    else
        return 0;
    return 1;
}

/* Takes the newest block off class c's overflow (fast_n[c] != 0). */
static inline uint64_t mk_reuse_fast_pop(mk_reuse_t *r, unsigned c)
{
    uint64_t addr = MK_REUSE_FAST_AT(r, c, 0);
    r->fast_head[c] = (uint8_t)((r->fast_head[c] + 1) & (MK_REUSE_FAST_DEPTH - 1));
    r->fast_n[c]--;
    return addr;
}

/* A block of class c was allocated at addr (not NULL), however it was
 * named: the ring lets go of it, and the cache learns from what the
 * allocator did (see the top of this file). ring_j is mk_reuse_find's
 * answer for addr when the caller has it (a second scan of the ring is most
 * of the cost of a miss), else MK_REUSE_UNKNOWN. */
static inline void mk_reuse_claim(mk_reuse_t *r, unsigned c, uint64_t addr,
                                  unsigned ring_j)
{
    unsigned j = ring_j != MK_REUSE_UNKNOWN ? ring_j : mk_reuse_find(r, c, addr);
    if (j != MK_REUSE_MISS)
        mk_reuse_take(r, c, j);
    if (r->ncache[c]) {
        /* Taken from the cache at k: what was cached above it went elsewhere
         * (the allocator's cache was fuller than the model's). Not in the
         * cache at all: none of it is. */
        int k = mk_reuse_in_cache(r, c, addr);
        r->ncache[c] = (uint8_t)(k >= 0 ? k : 0);
    } else if (c <= MK_REUSE_FAST && r->fast_n[c] && MK_REUSE_FAST_AT(r, c, 0) == addr) {
        /* The newest overflowed block: glibc takes it from the fastbin and
         * moves the next ones to the tcache, the last moved on top. */
        mk_reuse_fast_pop(r, c);
        while (r->ncache[c] < MK_REUSE_CACHE && r->fast_n[c])
            r->cache[c][r->ncache[c]++] = mk_reuse_fast_pop(r, c);
    }
}

#endif /* MEMKIT_TRACE_REUSE_H */
