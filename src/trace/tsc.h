/*
 * tsc.h - the fenced cycle-counter span that times one allocator call: the
 * tracer's hooks (src/preload/) and memkit replay's child read calls with
 * the same instrument, so a replay's time and a traced run's compare.
 *
 * The first fence keeps earlier work from running into the span, the
 * second keeps the call from starting before the read; rdtscp waits for
 * the call to finish and the last fence keeps later work out. What an empty
 * span reads is the median of back-to-back pairs (mk_tsc_empty): one pair
 * preempted must not decide it, and the minimum is below what a span
 * around real work costs.
 */
#ifndef MEMKIT_TRACE_TSC_H
#define MEMKIT_TRACE_TSC_H

#include <stdint.h>
#include <x86intrin.h>

static inline uint64_t mk_fenced_begin(void)
{
    _mm_lfence();
    uint64_t t = __rdtsc();
    _mm_lfence();
    return t;
}

static inline uint64_t mk_fenced_end(void)
{
    unsigned aux;
    uint64_t t = __rdtscp(&aux);
    _mm_lfence();
    return t;
}

/* The median of MK_TSC_PAIRS empty spans. An insertion sort: nothing
 * allocates (the tracer calls it inside its hooks' set-up). */
#define MK_TSC_PAIRS 256
static inline uint64_t mk_tsc_empty(void)
{
    uint64_t pair[MK_TSC_PAIRS];

    for (int i = 0; i < MK_TSC_PAIRS; i++) {
        uint64_t t0 = mk_fenced_begin(), d = mk_fenced_end() - t0;
        int k = i;
        for (; k > 0 && pair[k - 1] > d; k--)
            pair[k] = pair[k - 1];
        pair[k] = d;
    }
    return pair[MK_TSC_PAIRS / 2];
}

#endif /* MEMKIT_TRACE_TSC_H */
