/*
 * stackquery.c - threads whose first allocation is made inside
 * pthread_getattr_np(pthread_self()), as a Java VM's, a garbage collector's
 * and a language runtime's new threads are. glibc holds the thread's own
 * lock while it allocates there (the affinity mask; for the main thread
 * also its /proc/self/maps stream), so a tracer that asks for the thread's
 * stack bounds from inside that allocation waits on itself forever.
 * Each thread then allocates FIVE blocks and frees them; the main thread
 * does the same after its own query. Threads run two at a time, so later
 * ones take over the tracer states of ended ones (and their stack caches).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 8
#define FIVE    5

static size_t query_and_allocate(void)
{
    pthread_attr_t attr;
    void *lo = NULL;
    size_t len = 0;
    if (pthread_getattr_np(pthread_self(), &attr) != 0)
        return 0;
    pthread_attr_getstack(&attr, &lo, &len);
    pthread_attr_destroy(&attr);
    for (int i = 0; i < FIVE; i++) {
        void *volatile p = malloc(100);
        free(p);
    }
    return len;
}

static void *thread_main(void *arg)
{
    (void)arg;
    return (void *)query_and_allocate();
}

int main(void)
{
    size_t main_len = query_and_allocate();
    int sized = 0;
    for (int i = 0; i < THREADS; i += 2) {
        pthread_t t[2];
        for (int j = 0; j < 2; j++)
            if (pthread_create(&t[j], NULL, thread_main, NULL) != 0)
                return 1;
        for (int j = 0; j < 2; j++) {
            void *len;
            pthread_join(t[j], &len);
            sized += len != NULL;
        }
    }
    printf("%d of %d threads and the main thread (%s) know their stacks\n", sized,
           THREADS, main_len ? "yes" : "no");
    return 0;
}
