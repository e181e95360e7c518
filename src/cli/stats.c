/*
 * stats.c - the statistics of `memkit bench` and `memkit tune`: medians with
 * their range (both), and the exact Mann-Whitney U test that decides whether
 * one tune candidate's runs beat another's beyond noise. No assumption of normal
 * timings: run times are skewed (a run is never faster than the machine
 * allows, often slower), so the test uses only the order of the values.
 */
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

mk_stat mk_stat_of(const double *v, int n)
{
    double s[MK_STAT_MAX];

    if (n == 0)
        return (mk_stat){0, 0, 0};
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    return (mk_stat){
        .median = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2,
        .min = s[0],
        .max = s[n - 1],
    };
}

/* The number of ways U takes each value when na values and nb values are
 * ordered at random is the coefficient list of the Gaussian binomial
 * [na+nb choose na]_q, built one factor (1 - q^(nb+i)) / (1 - q^i) at a time:
 * each partial product is itself [nb+i choose i]_q, so it stays a polynomial. */
double mk_p_smaller(const double *a, int na, const double *b, int nb)
{
    int deg = na * nb;
    long double *w = calloc((size_t)deg + 1, sizeof *w), total = 0, tail = 0;
    double u = 0;

    if (!w || na == 0 || nb == 0) {
        free(w);
        return 1;
    }
    for (int i = 0; i < na; i++)
        for (int j = 0; j < nb; j++)
            u += a[i] < b[j] ? 1 : a[i] == b[j] ? 0.5 : 0;
    w[0] = 1;
    for (int i = 1; i <= na; i++) {
        int top = i * nb; /* degree of [nb+i choose i]_q */
        for (int k = top; k >= nb + i; k--)
            w[k] -= w[k - nb - i];
        for (int k = i; k <= top; k++)
            w[k] += w[k - i];
    }
    /* Ties count half, so U may be a half-integer: the tail from its floor
     * is the conservative (larger) p. */
    for (int k = 0; k <= deg; k++) {
        total += w[k];
        if (k >= (int)floor(u))
            tail += w[k];
    }
    free(w);
    return total > 0 ? (double)(tail / total) : 1;
}
