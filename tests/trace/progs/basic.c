/*
 * basic.c - every C allocation function a known number of times, no stdio
 * (so libc allocates nothing of its own). The tracer must count exactly:
 *   malloc 12, calloc 3, realloc 5 (a chain: NULL -> 16 -> 32 -> 64 -> 128,
 *   then realloc(p, 0)), reallocarray 1, strdup 2, strndup 1, wcsdup 1,
 *   posix_memalign 1, aligned_alloc 1, memalign 1, valloc 1, pvalloc 1,
 *   free 23 of live blocks + free(NULL) once; leaks: 2 blocks of 100 bytes.
 * Built with -fno-builtin: the compiler must not turn realloc(NULL, n) into
 * malloc or drop free(NULL).
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

static void *keep[64];
static int nkeep;

static void hold(void *p)
{
    if (!p)
        abort();
    keep[nkeep++] = p;
}

int main(void)
{
    for (int i = 0; i < 10; i++)
        hold(malloc(16 + (size_t)i)); /* 10 mallocs */
    for (int i = 0; i < 3; i++)
        hold(calloc(4, 8)); /* 3 callocs */
    void *volatile none = NULL;
    void *r = realloc(none, 16); /* realloc 1 */
    r = realloc(r, 32);          /* 2 */
    r = realloc(r, 64);          /* 3 */
    r = realloc(r, 128);         /* 4 */
    if (realloc(r, 0) != NULL)   /* 5: frees r, returns NULL */
        abort();
    hold(reallocarray(none, 4, 16)); /* reallocarray 1 */
    hold(strdup("memkit"));          /* strdup 2 */
    hold(strdup("trace"));
    hold(strndup("abcdefgh", 3)); /* strndup 1 */
    hold(wcsdup(L"wide"));        /* wcsdup 1 */
    void *a;
    if (posix_memalign(&a, 64, 100) != 0)
        abort();
    hold(a);
    hold(aligned_alloc(64, 128));
    hold(memalign(32, 50));
    hold(valloc(10));
    hold(pvalloc(10));
    free(none);
    /* Leak the first two 100-byte blocks; free everything else. */
    void *leak1 = malloc(100), *leak2 = malloc(100); /* mallocs 11, 12 */
    (void)leak1;
    (void)leak2;
    for (int i = 0; i < nkeep; i++)
        free(keep[i]);
    return 0;
}
