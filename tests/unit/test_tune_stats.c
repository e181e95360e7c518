/*
 * test_tune_stats.c - the statistics of memkit tune (and bench's medians,
 * src/cli/stats.c): medians and the exact
 * one-sided Mann-Whitney p, against values from published tables and
 * from brute-force enumeration of every ordering.
 */
#include "check.h"

#include "../../src/cli/tune.h"

#include <math.h>

/* Brute force: every way of choosing which na of the na+nb ranks are a's,
 * counting those whose U is at least the observed one (no ties). */
static double brute_p(int na, int nb, int u_obs)
{
    int n = na + nb, hits = 0, total = 0;

    for (unsigned mask = 0; mask < 1u << n; mask++) {
        int u = 0, bs_above;

        if (__builtin_popcount(mask) != na)
            continue;
        /* rank r ascending; an a at rank r beats every b above it */
        for (int r = 0; r < n; r++) {
            if (!(mask >> r & 1))
                continue;
            bs_above = 0;
            for (int q = r + 1; q < n; q++)
                bs_above += !(mask >> q & 1);
            u += bs_above;
        }
        total++;
        hits += u >= u_obs;
    }
    return (double)hits / total;
}

static void check_close(double got, double want)
{
    CHECK(fabs(got - want) < 1e-9 * (want > 1 ? want : 1));
}

int main(void)
{
    double a[12], b[12];

    /* medians: odd, even, one value, none */
    double v[] = {5, 1, 4, 2, 3};
    mk_stat s = mk_stat_of(v, 5);
    CHECK(s.median == 3 && s.min == 1 && s.max == 5);
    s = mk_stat_of(v, 4);
    CHECK(s.median == 3 && s.min == 1 && s.max == 5);
    s = mk_stat_of(v, 1);
    CHECK(s.median == 5 && s.min == 5 && s.max == 5);
    s = mk_stat_of(v, 0);
    CHECK(s.median == 0);

    /* complete separation: 1 / C(na+nb, na) */
    for (int i = 0; i < 5; i++)
        a[i] = i, b[i] = 10 + i;
    check_close(mk_p_smaller(a, 5, b, 5), 1.0 / 252);
    check_close(mk_p_smaller(a, 3, b, 3), 1.0 / 20);
    check_close(mk_p_smaller(b, 5, a, 5), 1.0); /* the other direction */

    /* published critical value: n1 = n2 = 5, U <= 4 (here: a ahead in 21 of
     * the 25 pairs) has one-sided p 0.0476 */
    double a21[] = {1, 2, 3, 4, 9}, b21[] = {5, 6, 7, 8, 10};
    CHECK(fabs(mk_p_smaller(a21, 5, b21, 5) - 0.0476) < 0.0005);

    /* every ordering against brute force, unequal sizes up to 12 values */
    unsigned long long rng = test_seed();
    for (int trial = 0; trial < 300; trial++) {
        int na = 1 + (int)(rng_next(&rng) % 6), nb = 1 + (int)(rng_next(&rng) % 6);
        int u = 0;

        for (int i = 0; i < na; i++)
            a[i] = (double)(rng_next(&rng) % 1000000) + 0.25;
        for (int j = 0; j < nb; j++)
            b[j] = (double)(rng_next(&rng) % 1000000) + 0.75; /* never equal to an a */
        for (int i = 0; i < na; i++)
            for (int j = 0; j < nb; j++)
                u += a[i] < b[j];
        check_close(mk_p_smaller(a, na, b, nb), brute_p(na, nb, u));
    }

    /* all equal: U is half of all pairs; p must be large (no evidence) */
    for (int i = 0; i < 5; i++)
        a[i] = b[i] = 1;
    CHECK(mk_p_smaller(a, 5, b, 5) > 0.4);

    /* large samples stay finite and ordered */
    static double x[100], y[100];
    for (int i = 0; i < 100; i++)
        x[i] = i, y[i] = i + 0.5;
    double p = mk_p_smaller(x, 100, y, 100);
    CHECK(p > 0.2 && p < 0.8);
    for (int i = 0; i < 100; i++)
        y[i] = 1000 + i;
    CHECK(mk_p_smaller(x, 100, y, 100) < 1e-50);
    return check_report("test_tune_stats");
}
