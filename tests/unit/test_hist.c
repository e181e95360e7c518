/*
 * test_hist.c - sparse histograms (src/analyze/hist.h) against a plain array
 * of MK_HIST_BUCKETS counts: random adds and merges, some histograms kept to
 * a few buckets (in place), others spread (moved to a full table); counts,
 * medians and the invariant of distinct buckets compared after every step.
 *
 * MEMKIT_TEST_SEED replays a failure; MEMKIT_TEST_STEPS sets the length.
 */
#include "../../src/analyze/hist.h"
#include "check.h"

#define NHIST 16

typedef struct model {
    mk_hist_t h;
    uint32_t counts[MK_HIST_BUCKETS]; /* wrapping as the histogram's do */
    unsigned spread;                  /* how many buckets its values come from */
} model_t;

/* In place, the nonzero counts' buckets are distinct; a histogram of no
 * more buckets than fit in place is in place (it moves only for a fifth). */
static bool inline_ok(const mk_hist_t *h, const uint32_t *counts)
{
    int used = 0;
    for (int b = 0; b < MK_HIST_BUCKETS; b++)
        used += counts[b] != 0;
    if (h->all)
        return used > MK_HIST_INLINE;
    for (int i = 0; i < MK_HIST_INLINE; i++)
        for (int j = i + 1; j < MK_HIST_INLINE; j++)
            if (h->count[i] && h->count[j] && h->bucket[i] == h->bucket[j])
                return false;
    return true;
}

static bool same_counts(const model_t *m)
{
    uint32_t got[MK_HIST_BUCKETS];
    mk_hist_counts(&m->h, got);
    for (int b = 0; b < MK_HIST_BUCKETS; b++)
        if (got[b] != m->counts[b])
            return false;
    return true;
}

static uint64_t model_median(const model_t *m)
{
    return mk_hist_median(m->counts);
}

int main(void)
{
    uint64_t seed = test_seed_or(0x5eed4157ull);
    int steps = test_steps(200000);
    uint64_t rng = seed;
    model_t m[NHIST];
    memset(m, 0, sizeof m);
    for (int i = 0; i < NHIST; i++)
        m[i].spread = 1 + (unsigned)(i % 8) * (i < NHIST / 2 ? 1 : 6); /* 1 to 43 */

    /* the empty histogram */
    CHECK_EQ(mk_hist_median_of(&m[0].h), 0);
    CHECK(same_counts(&m[0]));

    int spilled = 0, bad = 0;
    for (int step = 0; step < steps && !bad; step++) {
        uint64_t r = xorshift64(&rng);
        int i = (int)(r % NHIST);
        model_t *x = &m[i];
        if ((r >> 8) % 64 == 0) { /* merge another into x */
            model_t *y = &m[(i + 1 + (int)((r >> 16) % (NHIST - 1))) % NHIST];
            mk_hist_merge(&x->h, &y->h);
            for (int b = 0; b < MK_HIST_BUCKETS; b++)
                x->counts[b] += y->counts[b];
        } else if ((r >> 8) % 4096 == 1) { /* start over */
            mk_hist_free(&x->h);
            memset(x->counts, 0, sizeof x->counts);
        } else {
            unsigned b = (unsigned)((r >> 20) % x->spread) * 7 % MK_HIST_BUCKETS;
            uint32_t w = 1 + (uint32_t)((r >> 40) % 3);
            mk_hist_add(&x->h, b, w);
            x->counts[b] += w;
        }
        spilled += x->h.all != NULL;
        if (!same_counts(x) || !inline_ok(&x->h, x->counts) ||
            mk_hist_median_of(&x->h) != model_median(x)) {
            fprintf(stderr,
                    "step %d, histogram %d: differs from the model (seed %#llx)\n", step,
                    i, (unsigned long long)seed);
            bad = 1;
        }
    }
    CHECK(!bad);
    CHECK(spilled > 0); /* the full tables were used */
    for (int i = 0; i < NHIST; i++) {
        mk_hist_free(&m[i].h);
        CHECK(m[i].h.all == NULL && mk_hist_median_of(&m[i].h) == 0);
    }
    return check_report("test_hist");
}
