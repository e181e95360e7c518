/*
 * costs_slow.c - a program whose allocator time sits in a handful of calls:
 * one_slow() asks 4 times for 16 MiB of zeroed memory where the heap holds
 * 16 MiB just written and freed, so each calloc clears it (milliseconds),
 * while many_cheap() makes 250 times the calls at nanoseconds each. Timing
 * one call in 64 would catch none of the four most runs; memkit times every
 * slow call, so one_slow() must rank above many_cheap() by time with its
 * time in slow calls. And big_release() frees three 48 MiB blocks that
 * big_alloc() mapped and the program wrote: unmapping them is slow, and by
 * calling function that time is big_release()'s, where a profiler's call
 * graph puts it (tests/trace/run.sh, costs_slow).
 */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#define BIG (16u << 20)

static __attribute__((noinline)) void *one_slow(void)
{
    return calloc(1, BIG);
}

static __attribute__((noinline)) void *many_cheap(int i)
{
    return malloc(16 + (size_t)(i & 7));
}

static __attribute__((noinline)) void *big_alloc(void)
{
    return malloc(48u << 20); /* above the threshold set below: mapped */
}

static __attribute__((noinline)) void big_release(void *p)
{
    free(p);
}

static __attribute__((noinline)) void *setup(void)
{
    return malloc(BIG);
}

int main(void)
{
    /* from the heap, and kept there when freed: mapped or trimmed, the
     * block would come back from the kernel already zero */
    if (!mallopt(M_MMAP_THRESHOLD, 32 << 20) || !mallopt(M_TRIM_THRESHOLD, 1 << 30))
        return 2;
    for (int i = 0; i < 4; i++) {
        char *p = setup();
        if (!p)
            return 1;
        memset(p, 1, BIG); /* the program's writes: dirty pages */
        free(p);
        char *z = one_slow();
        if (!z || z[BIG / 2])
            return 1;
        free(z);
    }
    for (int i = 0; i < 3; i++) {
        char *b = big_alloc();
        if (!b)
            return 1;
        memset(b, 1, 48u << 20);
        big_release(b);
    }
    for (int i = 0; i < 1000; i++) {
        char *q = many_cheap(i);
        if (!q)
            return 1;
        q[0] = (char)i;
        free(q);
    }
    return 0;
}
