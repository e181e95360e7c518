/*
 * ln_unit.h - the natural logarithm of a number in (0, 1], for --sample's
 * exponential draws, so that the tracer does not need libm: every traced
 * process loads the tracer's libraries, and one fewer saves each of them a
 * library's mapping, relocation and page faults.
 *
 * u = m 2^e with m in [sqrt(1/2), sqrt(2)), so ln u = e ln 2 + ln m, and
 * ln m = 2 atanh(s) = 2 (s + s^3/3 + s^5/5 + ...) with s = (m - 1)/(m + 1),
 * |s| < 0.172: each term is under 1/34 of the one before, and eleven terms
 * leave an error below 2^-60 of the result (tests/unit/test_ln_unit.c holds
 * it to libm's log within 4 ulp).
 */
#ifndef MEMKIT_PRELOAD_LN_UNIT_H
#define MEMKIT_PRELOAD_LN_UNIT_H

#include <stdint.h>
#include <string.h>

/* u in (0, 1], a normal number. */
static inline double mk_ln_unit(double u)
{
    uint64_t bits;
    memcpy(&bits, &u, sizeof bits);
    int e = (int)((bits >> 52) & 0x7ff) - 1023;
    bits = (bits & ((1ull << 52) - 1)) | (1023ull << 52); /* m in [1, 2) */
    double m;
    memcpy(&m, &bits, sizeof m);
    if (m > 1.4142135623730951) { /* into [sqrt(1/2), sqrt(2)): s stays small */
        m *= 0.5;
        e++;
    }
    double s = (m - 1) / (m + 1), s2 = s * s, term = s, sum = 0;
    for (int k = 1; k <= 21; k += 2) {
        sum += term / k;
        term *= s2;
    }
    return e * 0.69314718055994530942 + 2 * sum;
}

#endif /* MEMKIT_PRELOAD_LN_UNIT_H */
