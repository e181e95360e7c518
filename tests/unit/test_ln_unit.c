/*
 * test_ln_unit.c - the tracer's own logarithm (src/preload/ln_unit.h),
 * which --sample's exponential draws use in place of libm's log, against
 * libm: within 4 ulp over the whole range the draws take (2^-53 to 1),
 * at 1 exactly 0, and at the range's edges and the split at sqrt(1/2).
 */
#include "../../src/preload/ln_unit.h"
#include "check.h"

#include <math.h>

static void check_at(double u)
{
    double want = log(u), got = mk_ln_unit(u);
    double ulp = nextafter(fabs(want), INFINITY) - fabs(want);
    CHECK_MSG(fabs(got - want) <= 4 * ulp, "ln(%.17g): %.17g, libm %.17g", u, got, want);
}

int main(void)
{
    uint64_t rng = test_seed();
    CHECK(mk_ln_unit(1.0) == 0.0);
    check_at(0x1p-53);
    check_at(0.5);
    check_at(0.70710678118654752);
    check_at(0.70710678118654757);
    check_at(nextafter(1.0, 0));
    for (int i = 0; i < 200000; i++) {
        /* as the draw makes them: 53 random bits, never 0 */
        uint64_t x = xorshift64(&rng);
        check_at((double)(x >> 11 | 1) * 0x1p-53);
        /* and small ones, a few bits */
        check_at((double)((x >> 11) % 1000 + 1) * 0x1p-53);
    }
    return check_report("test_ln_unit");
}
