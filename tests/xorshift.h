/*
 * xorshift.h - the tests' random numbers: xorshift64, seeded by each test so
 * that a failure repeats exactly. No allocation, no state of its own: the
 * trace test programs, whose allocation counts are exact, can use it too.
 */
#ifndef MEMKIT_TESTS_XORSHIFT_H
#define MEMKIT_TESTS_XORSHIFT_H

#include <stdint.h>

/* The next number of the sequence in *state (never 0 if the seed is not). */
static inline uint64_t xorshift64(uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

#endif /* MEMKIT_TESTS_XORSHIFT_H */
