/*
 * tune_probe.c - prints what glibc's malloc settings in force did, so the
 * tests can tell that each of memkit tune's GLIBC_TUNABLES presets really
 * takes effect (glibc ignores a tunable it does not accept, silently):
 *   mmapped   a 1 MiB block came from mmap (the threshold is below 1 MiB)
 *   trimmed   freeing 64 MiB at the top of the heap gave it back (brk went down)
 *   arenas    arenas in use after 4 threads allocated at once (arena_max)
 *   tcache    more than 7 freed 32-byte blocks stayed in the thread's cache
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_barrier_t all_in;
static void *volatile held[4]; /* volatile: the compiler must not drop the malloc */

static void *hold_a_block(void *arg)
{
    int i = (int)(size_t)arg;

    held[i] = malloc(100);
    pthread_barrier_wait(&all_in); /* all four hold a block at once */
    free(held[i]);
    return NULL;
}

static int count_arenas(void)
{
    char *xml = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&xml, &len);
    int n = 0;

    malloc_info(0, f);
    fclose(f);
    for (const char *p = xml; (p = strstr(p, "<heap nr=")); p++)
        n++;
    free(xml);
    return n;
}

int main(void)
{
    enum { BLOCKS = 16384, SMALL = 300 };
    static void *p[BLOCKS];
    pthread_t t[4];

    /* mmap threshold: glibc marks mmapped chunks with bit 1 of the size word */
    void *big = malloc(1 << 20);
    int mmapped = (((size_t *)big)[-1] & 2) != 0;
    free(big);

    /* trim threshold */
    for (int i = 0; i < BLOCKS; i++)
        p[i] = malloc(4000);
    char *top = sbrk(0);
    for (int i = BLOCKS - 1; i >= 0; i--)
        free(p[i]);
    int trimmed = (char *)sbrk(0) < top;

    /* tcache count: freed blocks beyond it go to the fastbins, which mallinfo2 counts */
    for (int i = 0; i < SMALL; i++)
        p[i] = malloc(32);
    for (int i = 0; i < SMALL; i++)
        free(p[i]);
    size_t fast = mallinfo2().fsmblks;
    int tcache_big = fast < (SMALL - 7) * 48 / 2;

    pthread_barrier_init(&all_in, NULL, 4);
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, hold_a_block, (void *)(size_t)i);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);

    printf("mmapped=%d trimmed=%d arenas=%d tcache_big=%d\n", mmapped, trimmed,
           count_arenas(), tcache_big);
    return 0;
}
