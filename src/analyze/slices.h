/*
 * slices.h - one site's calls, bytes and allocator time in each of the run's
 * MK_SLICES time slices: what a range selected on the HTML page sums.
 *
 * Most stacks of a large program make a few calls (33,537 stacks in a clang
 * compile, most of them with one to three), all in one slice: a site keeps
 * that slice inline and takes an array only when a second slice comes.
 * Doubles: a busy site's bytes in one slice pass 2^24 (a float would stop
 * counting there), and its calls stay exact up to 2^53.
 *
 * Invariants: one == 0 (a zeroed struct) and all == NULL: no value yet;
 * 1 <= one <= MK_SLICES: every value is in one_v, slice one - 1's; one ==
 * MK_SLICE_MANY: every value is in all (MK_SLICE_FIELDS rows of MK_SLICES).
 */
#ifndef MEMKIT_ANALYZE_SLICES_H
#define MEMKIT_ANALYZE_SLICES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MK_SLICES 32
enum { MK_SLICE_CALLS, MK_SLICE_BYTES, MK_SLICE_NS, MK_SLICE_FIELDS };
#define MK_SLICE_MANY 255
_Static_assert(MK_SLICES < MK_SLICE_MANY, "a slice number fits one's byte");

typedef struct mk_slices {
    uint8_t one;                   /* 1 + the one slice; 0: none; MK_SLICE_MANY */
    double one_v[MK_SLICE_FIELDS]; /* its values */
    double *all;                   /* MK_SLICE_FIELDS x MK_SLICES, or NULL */
} mk_slices_t;

/* Adds v to field f of slice i; false when the array cannot be had. */
static inline bool mk_slices_put(mk_slices_t *s, int i, int f, double v)
{
    if (s->one == 0)
        s->one = (uint8_t)(i + 1);
    if (s->one == i + 1) {
        s->one_v[f] += v;
        return true;
    }
    if (!s->all) {
        s->all = calloc(MK_SLICE_FIELDS * MK_SLICES, sizeof *s->all);
        if (!s->all)
            return false;
        for (int k = 0; k < MK_SLICE_FIELDS; k++)
            s->all[k * MK_SLICES + s->one - 1] = s->one_v[k];
        s->one = MK_SLICE_MANY;
    }
    s->all[f * MK_SLICES + i] += v;
    return true;
}

/* Field f of slice i. */
static inline double mk_slices_get(const mk_slices_t *s, int i, int f)
{
    if (s->all)
        return s->all[f * MK_SLICES + i];
    return s->one == i + 1 ? s->one_v[f] : 0;
}

/* The slices become half as many, each pair one (the timeline doubled
 * its buckets' width). */
static inline void mk_slices_halve(mk_slices_t *s)
{
    if (s->one && s->one != MK_SLICE_MANY)
        s->one = (uint8_t)((s->one - 1) / 2 + 1);
    for (int f = 0; s->all && f < MK_SLICE_FIELDS; f++) {
        double *r = s->all + f * MK_SLICES;
        for (int i = 0; i < MK_SLICES / 2; i++)
            r[i] = r[2 * i] + r[2 * i + 1];
        memset(r + MK_SLICES / 2, 0, sizeof *r * (MK_SLICES / 2));
    }
}

/* Field f of every slice, times k (the times scaled to another measure). */
static inline void mk_slices_scale(mk_slices_t *s, int f, double k)
{
    if (s->all)
        for (int i = 0; i < MK_SLICES; i++)
            s->all[f * MK_SLICES + i] *= k;
    else
        s->one_v[f] *= k;
}

/* d += s, slice by slice. */
static inline bool mk_slices_add(mk_slices_t *d, const mk_slices_t *s)
{
    if (!s->one) /* no value (every report but the page's) */
        return true;
    for (int i = 0; i < MK_SLICES; i++) {
        if (!s->all && s->one != i + 1)
            continue;
        for (int f = 0; f < MK_SLICE_FIELDS; f++) {
            double v = mk_slices_get(s, i, f);
            if (v != 0 && !mk_slices_put(d, i, f, v))
                return false;
        }
    }
    return true;
}

static inline void mk_slices_free(mk_slices_t *s)
{
    free(s->all);
    memset(s, 0, sizeof *s);
}

#endif /* MEMKIT_ANALYZE_SLICES_H */
