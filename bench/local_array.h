/*
 * local_array.h - the local-array workload's call, shared by `memkit bench`
 * (local_array.c) and memkit-ceiling (ceiling.cc), so both time the same work.
 */
#ifndef MEMKIT_BENCH_LOCAL_ARRAY_H
#define MEMKIT_BENCH_LOCAL_ARRAY_H

#include <stdint.h>

#define INLINE_ENTRIES 8
#define BIG_ENTRIES    1000
#define BIG_EVERY      1000 /* one call in this many needs BIG_ENTRIES */

/* The stand-in for struct pollfd. */
typedef struct poll_entry {
    int fd;
    short events, revents;
} poll_entry;

/* What the call does with its array; the asm makes the array escape, so the
 * compiler cannot drop a malloc/free pair it would see as unused. */
static inline unsigned use_entries(poll_entry *e, unsigned n, unsigned seed)
{
    unsigned sum = 0;

    __asm__ volatile("" : : "r"(e) : "memory");
    for (unsigned i = 0; i < n; i++) {
        e[i].fd = (int)(seed + i);
        e[i].events = 1;
        e[i].revents = (short)((seed ^ i) & 1);
    }
    __asm__ volatile("" : : "r"(e) : "memory");
    for (unsigned i = 0; i < n; i++)
        sum += (unsigned)e[i].revents;
    return sum;
}

/* Entries needed by call i: 1,000 once per BIG_EVERY calls, else 1-8, changing
 * every 64 calls: a transfer's set of sockets stays the same over many waits. */
static inline unsigned entries_for(uint64_t i)
{
    return i % BIG_EVERY == BIG_EVERY - 1 ? BIG_ENTRIES
                                          : 1 + (unsigned)((i >> 6) * 5 % 8);
}

#endif /* MEMKIT_BENCH_LOCAL_ARRAY_H */
