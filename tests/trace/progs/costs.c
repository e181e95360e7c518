/*
 * costs.c - a program whose allocator time is known to sit at one site:
 * many_cheap() makes 100 times the calls of few_costly(), but each of
 * few_costly()'s blocks is mapped and unmapped by the kernel (mmap's
 * threshold held at 64 KiB), which costs microseconds where a small
 * malloc/free costs nanoseconds. memkit's measured allocator time must rank
 * few_costly() first (tests/trace/run.sh, costs).
 */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

static __attribute__((noinline)) void *few_costly(void)
{
    return malloc(1 << 20);
}

static __attribute__((noinline)) void *many_cheap(int i)
{
    return malloc(16 + (size_t)(i & 7));
}

int main(void)
{
    /* a fixed threshold: glibc would otherwise raise it after the first
     * free of a mapped block and serve the rest from its heap */
    if (!mallopt(M_MMAP_THRESHOLD, 64 << 10))
        return 2;
    for (int i = 0; i < 300; i++) {
        char *p = few_costly();
        if (!p)
            return 1;
        p[0] = (char)i; /* one page touched: the program's, not the allocator's */
        free(p);
    }
    for (int i = 0; i < 30000; i++) {
        char *q = many_cheap(i);
        if (!q)
            return 1;
        q[0] = (char)i;
        free(q);
    }
    return 0;
}
