/*
 * growth.c - which sites' live bytes grow across a trace's snapshots: the
 * leak candidates of a program that never exits (report.h, mk_report_growth).
 *
 * Each stack's live bytes at every growth point (profile.h: the snapshots of
 * a --sample trace, else even times over the run) are fitted with a least-
 * squares line; a site ranks by its slope, in bytes per second. A site that
 * churns holds about the same bytes at every point and fits a slope near 0;
 * one whose blocks pile up fits the rate at which they do. The fit uses every
 * point, so one snapshot taken in a burst moves it little.
 */
#define _GNU_SOURCE
#include "report.h"

#include <stdlib.h>

/* The least-squares slope of y over the points' times, in bytes per second. */
static double slope_of(const uint64_t *t, const uint64_t *y, size_t n)
{
    double mt = 0, my = 0, sxy = 0, sxx = 0;
    for (size_t i = 0; i < n; i++) {
        mt += (double)t[i] / 1e9;
        my += (double)y[i];
    }
    mt /= (double)n;
    my /= (double)n;
    for (size_t i = 0; i < n; i++) {
        double dt = (double)t[i] / 1e9 - mt;
        sxy += dt * ((double)y[i] - my);
        sxx += dt * dt;
    }
    return sxx > 0 ? sxy / sxx : 0;
}

static int by_slope(const void *x, const void *y)
{
    const mk_growth_row_t *a = x, *b = y;
    if (a->slope != b->slope)
        return a->slope < b->slope ? 1 : -1;
    return a->stack < b->stack ? -1 : a->stack > b->stack;
}

size_t mk_report_growth(const mk_report_t *r, mk_growth_row_t **out)
{
    const mk_growth_t *g = &r->prof.growth;
    *out = NULL;
    if (g->n < 2)
        return 0;
    mk_growth_row_t *rows = calloc(r->nsites ? r->nsites : 1, sizeof *rows);
    if (!rows)
        return 0;
    size_t n = 0;
    for (size_t i = 0; i < r->nsites; i++) {
        const mk_stack_agg_t *a = r->sites[i].agg;
        if (!a->growth)
            continue;
        double slope = slope_of(g->times, a->growth, g->n);
        if (slope <= 0)
            continue;
        mk_growth_row_t *gr = &rows[n++];
        gr->stack = r->sites[i].stack;
        gr->row = &r->sites[i];
        gr->slope = slope;
        gr->first = a->growth[0];
        gr->last = a->growth[g->n - 1];
        for (size_t k = 1; k < g->n; k++)
            gr->rises += a->growth[k] > a->growth[k - 1];
    }
    qsort(rows, n, sizeof *rows, by_slope);
    *out = rows;
    return n;
}
