/*
 * costs_slow.c - a program whose allocator time sits in a handful of calls:
 * one_slow() asks 4 times for 16 MiB of zeroed memory where the heap holds
 * 16 MiB just written and freed, so each calloc clears it (milliseconds),
 * while many_cheap() makes 250 times the calls at nanoseconds each. Timing
 * one call in 64 would catch none of the four most runs; memkit times every
 * slow call, so one_slow() must rank first by time with its time in slow
 * calls (tests/trace/run.sh, costs_slow).
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
    for (int i = 0; i < 1000; i++) {
        char *q = many_cheap(i);
        if (!q)
            return 1;
        q[0] = (char)i;
        free(q);
    }
    return 0;
}
