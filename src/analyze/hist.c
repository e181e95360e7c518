/*
 * hist.c - sparse histograms (hist.h): the move to a full table, merging,
 * reading.
 */
#include "hist.h"

#include <stdlib.h>
#include <string.h>

void mk_hist_spill(mk_hist_t *h, unsigned b, uint32_t w)
{
    uint32_t *all = calloc(MK_HIST_BUCKETS, sizeof *all);
    if (!all) {
        /* Out of memory: the count lands in the nearest bucket held, so
         * totals stay right and only the shape blurs. */
        int near = 0;
        for (int i = 1; i < MK_HIST_INLINE; i++)
            if (abs((int)h->bucket[i] - (int)b) < abs((int)h->bucket[near] - (int)b))
                near = i;
        h->count[near] += w;
        return;
    }
    for (int i = 0; i < MK_HIST_INLINE; i++)
        all[h->bucket[i]] += h->count[i];
    all[b] += w;
    memset(h, 0, sizeof *h);
    h->all = all;
}

void mk_hist_merge(mk_hist_t *d, const mk_hist_t *s)
{
    if (s->all) {
        for (unsigned b = 0; b < MK_HIST_BUCKETS; b++)
            if (s->all[b])
                mk_hist_add(d, b, s->all[b]);
        return;
    }
    for (int i = 0; i < MK_HIST_INLINE; i++)
        if (s->count[i])
            mk_hist_add(d, s->bucket[i], s->count[i]);
}

void mk_hist_counts(const mk_hist_t *h, uint32_t out[MK_HIST_BUCKETS])
{
    if (h->all) {
        memcpy(out, h->all, MK_HIST_BUCKETS * sizeof *out);
        return;
    }
    memset(out, 0, MK_HIST_BUCKETS * sizeof *out);
    for (int i = 0; i < MK_HIST_INLINE; i++)
        out[h->bucket[i]] += h->count[i]; /* a free place adds 0 */
}

uint64_t mk_hist_median(const uint32_t *counts)
{
    uint64_t total = 0, seen = 0;
    for (int i = 0; i < MK_HIST_BUCKETS; i++)
        total += counts[i];
    if (!total)
        return 0;
    for (int i = 0; i < MK_HIST_BUCKETS; i++) {
        seen += counts[i];
        if (seen * 2 >= total)
            return i == 0 ? 0 : (3ull << (i - 1)) / 2; /* middle of [2^(i-1), 2^i) */
    }
    return 0;
}

uint64_t mk_hist_median_of(const mk_hist_t *h)
{
    uint32_t counts[MK_HIST_BUCKETS];
    mk_hist_counts(h, counts);
    return mk_hist_median(counts);
}

void mk_hist_free(mk_hist_t *h)
{
    free(h->all);
    memset(h, 0, sizeof *h);
}
