/*
 * heapview.c - for memkit trace --mallopt and the end-of-run glibc heap view:
 * one 1 MiB block (mmapped under glibc's default 128 KiB threshold, from the
 * heap under mmap_threshold=33554432), then 20,000 blocks of 1000 bytes all
 * freed (given back to the system by default, kept under trim_threshold=-1).
 * Exits with status 5 so the tests see the status come through.
 */
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    enum { N = 20000 };
    static void *p[N];
    char *big = malloc(1 << 20);

    big[0] = 1;
    for (int i = 0; i < N; i++)
        p[i] = malloc(1000);
    for (int i = 0; i < N; i++) /* in order: the last ones merge into the top */
        free(p[i]);
    printf("%d\n", big[0]); /* big stays live until exit */
    return 5;
}
