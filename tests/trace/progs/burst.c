/*
 * burst.c - a second thread allocates 100 blocks of 100,000 bytes, then frees
 * them, while the main thread waits: within a few events, so only
 * --summary-only's sample on growth (16 KiB above the thread's low point)
 * catches the peak. The full trace's peak is the exact one.
 */
#include <pthread.h>
#include <stdlib.h>

enum { N = 100, SIZE = 100000 };

static void *burst(void *arg)
{
    static void *block[N];
    (void)arg;
    for (int i = 0; i < N; i++)
        if (!(block[i] = malloc(SIZE)))
            abort();
    for (int i = 0; i < N; i++)
        free(block[i]);
    return NULL;
}

int main(void)
{
    void *mine = malloc(1000); /* the main thread has recorded: two threads */
    pthread_t t;
    if (pthread_create(&t, NULL, burst, NULL) != 0 || pthread_join(t, NULL) != 0)
        return 1;
    free(mine);
    return 0;
}
