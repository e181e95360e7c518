/*
 * fake_clock.h - replaces the retention policy's clock (src/alloc/retain.c) with
 * one the test moves, so decay is tested without sleeping.
 */
#ifndef MEMKIT_TESTS_FAKE_CLOCK_H
#define MEMKIT_TESTS_FAKE_CLOCK_H

#include <stdint.h>

extern uint64_t (*mk__retain_clock)(void);

static uint64_t fake_clock_ns = 1;

static uint64_t fake_clock_now(void)
{
    return fake_clock_ns;
}

static inline void fake_clock_install(void)
{
    mk__retain_clock = fake_clock_now;
}

static inline void fake_clock_advance_ms(uint64_t ms)
{
    fake_clock_ns += ms * 1000000u;
}

#endif /* MEMKIT_TESTS_FAKE_CLOCK_H */
