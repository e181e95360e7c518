/*
 * test_slices.c - a site's time slices (src/analyze/slices.h) against a plain
 * array of MK_SLICE_FIELDS x MK_SLICES values: random puts, halvings (the
 * timeline's width doubling) and sums of one into another, some sites kept
 * to one slice (inline), others spread (moved to the array); every value
 * and the invariant of the inline form compared after every step.
 *
 * MEMKIT_TEST_SEED replays a failure; MEMKIT_TEST_STEPS sets the length.
 */
#include "../../src/analyze/slices.h"
#include "check.h"

#define NSITES 12

typedef struct model {
    mk_slices_t s;
    double v[MK_SLICE_FIELDS][MK_SLICES];
    unsigned spread; /* how many slices its puts go to */
} model_t;

static bool same(const model_t *m)
{
    for (int f = 0; f < MK_SLICE_FIELDS; f++)
        for (int i = 0; i < MK_SLICES; i++)
            if (mk_slices_get(&m->s, i, f) != m->v[f][i])
                return false;
    return true;
}

/* Inline, every value is in the one slice; no value yet: one is 0. */
static bool form_ok(const model_t *m)
{
    if (m->s.all)
        return m->s.one == MK_SLICE_MANY;
    int used = -1;
    for (int f = 0; f < MK_SLICE_FIELDS; f++)
        for (int i = 0; i < MK_SLICES; i++)
            if (m->v[f][i] != 0) {
                if (used >= 0 && used != i)
                    return false;
                used = i;
            }
    return m->s.one == 0 ? used < 0 : used < 0 || m->s.one == used + 1;
}

int main(void)
{
    uint64_t seed = test_seed_or(0x511ce5ull);
    int steps = test_steps(200000);
    uint64_t rng = seed;
    model_t m[NSITES];
    memset(m, 0, sizeof m);
    for (int i = 0; i < NSITES; i++)
        m[i].spread = i < NSITES / 2 ? 1 : 1 + (unsigned)i * 3; /* 1, or 19 to 34 */

    CHECK(same(&m[0]) && form_ok(&m[0])); /* a zeroed site has no value */
    int spread = 0, inline_kept = 0, bad = 0;
    for (int step = 0; step < steps && !bad; step++) {
        uint64_t r = xorshift64(&rng);
        int k = (int)(r % NSITES);
        model_t *x = &m[k];
        if ((r >> 8) % 512 == 0) { /* the timeline doubles: every site halves */
            for (int j = 0; j < NSITES; j++) {
                mk_slices_halve(&m[j].s);
                for (int f = 0; f < MK_SLICE_FIELDS; f++) {
                    for (int i = 0; i < MK_SLICES / 2; i++)
                        m[j].v[f][i] = m[j].v[f][2 * i] + m[j].v[f][2 * i + 1];
                    for (int i = MK_SLICES / 2; i < MK_SLICES; i++)
                        m[j].v[f][i] = 0;
                }
            }
        } else if ((r >> 8) % 64 == 1) { /* a roll-up: another site added in */
            model_t *y = &m[(k + 1 + (int)((r >> 16) % (NSITES - 1))) % NSITES];
            CHECK(mk_slices_add(&x->s, &y->s));
            for (int f = 0; f < MK_SLICE_FIELDS; f++)
                for (int i = 0; i < MK_SLICES; i++)
                    x->v[f][i] += y->v[f][i];
        } else if ((r >> 8) % 4096 == 2) { /* freed: as new */
            mk_slices_free(&x->s);
            memset(x->v, 0, sizeof x->v);
        } else {
            /* the first slice of a one-slice site is its index's; a value
             * past 2^24 would stop a float */
            int i = (int)((k + (r >> 20) % x->spread) % MK_SLICES);
            int f = (int)((r >> 30) % MK_SLICE_FIELDS);
            double v = f == MK_SLICE_BYTES ? (double)((r >> 34) % (1u << 26))
                                           : 1 + (double)((r >> 34) % 3);
            CHECK(mk_slices_put(&x->s, i, f, v));
            x->v[f][i] += v;
        }
        spread += x->s.all != NULL;
        inline_kept += x->s.one && x->s.one != MK_SLICE_MANY;
        if (!same(x) || !form_ok(x)) {
            fprintf(stderr, "step %d, site %d: differs from the model (seed %#llx)\n",
                    step, k, (unsigned long long)seed);
            bad = 1;
        }
    }
    CHECK(!bad);
    CHECK(spread > 0 && inline_kept > 0); /* both forms were used */
    for (int i = 0; i < NSITES; i++) {
        mk_slices_free(&m[i].s);
        CHECK(m[i].s.all == NULL && m[i].s.one == 0);
    }
    return check_report("test_slices");
}
