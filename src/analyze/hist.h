/*
 * hist.h - a stack's histogram of sizes or lifetimes, by powers of two,
 * sparse while it can be.
 *
 * A report holds an aggregate per stack (tens of thousands in a compiler's
 * trace, more in a build's merged report) and most stacks see one to three
 * size or lifetime buckets: a histogram keeps up to MK_HIST_INLINE buckets
 * in place (24 bytes) and moves to a full table of MK_HIST_BUCKETS counts
 * (192 bytes) only at the next distinct bucket.
 *
 * Invariant: while all is NULL, the buckets of the nonzero counts are
 * distinct; a zero count is a free place. A zeroed mk_hist_t is empty.
 */
#ifndef MEMKIT_ANALYZE_HIST_H
#define MEMKIT_ANALYZE_HIST_H

#include <stdbool.h>
#include <stdint.h>

/* Bucket b holds values in [2^(b-1), 2^b), bucket 0 the value 0. */
#define MK_HIST_BUCKETS 48
#define MK_HIST_INLINE  4

static inline unsigned mk_hist_bucket(uint64_t v)
{
    unsigned b = v ? 64u - (unsigned)__builtin_clzll(v) : 0;
    return b < MK_HIST_BUCKETS ? b : MK_HIST_BUCKETS - 1;
}

typedef struct mk_hist {
    uint32_t *all; /* MK_HIST_BUCKETS counts, or NULL while in place */
    uint32_t count[MK_HIST_INLINE];
    uint8_t bucket[MK_HIST_INLINE]; /* count[i]'s bucket */
} mk_hist_t;

/* Moves h to its full table and adds w to bucket b (hist.c). */
void mk_hist_spill(mk_hist_t *h, unsigned b, uint32_t w);

/* Adds w to bucket b (b < MK_HIST_BUCKETS, w > 0). */
static inline void mk_hist_add(mk_hist_t *h, unsigned b, uint32_t w)
{
    if (h->all) {
        h->all[b] += w;
        return;
    }
    for (int i = 0; i < MK_HIST_INLINE; i++)
        if (h->count[i] && h->bucket[i] == b) {
            h->count[i] += w;
            return;
        }
    for (int i = 0; i < MK_HIST_INLINE; i++)
        if (!h->count[i]) {
            h->bucket[i] = (uint8_t)b;
            h->count[i] = w;
            return;
        }
    mk_hist_spill(h, b, w);
}

/* Adds every count of s to d. */
void mk_hist_merge(mk_hist_t *d, const mk_hist_t *s);

/* The counts of h, every bucket, into out. */
void mk_hist_counts(const mk_hist_t *h, uint32_t out[MK_HIST_BUCKETS]);

/* The middle of the bucket holding the median, 0 for an empty histogram
 * (counts: MK_HIST_BUCKETS of them). */
uint64_t mk_hist_median(const uint32_t *counts);
uint64_t mk_hist_median_of(const mk_hist_t *h);

/* Frees h's full table; h is empty after. */
void mk_hist_free(mk_hist_t *h);

#endif /* MEMKIT_ANALYZE_HIST_H */
