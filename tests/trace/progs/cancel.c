/*
 * cancel.c - a thread cancelled with deferred cancellation while it only
 * calls malloc, which is no cancellation point: the request waits, the
 * thread finishes, and it prints "worker finished" untraced. Traced, the
 * tracer's own write() of a record (600,000 mallocs fill two) must not act
 * on it: same output, and every malloc in the trace.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define WORKER_MALLOCS 600000

static volatile int go;

static void *worker(void *arg)
{
    (void)arg;
    while (!go) /* no cancellation point here */
        ;
    for (int i = 0; i < WORKER_MALLOCS; i++) /* nor here: only malloc */
        if (!malloc(16))
            abort();
    return NULL;
}

int main(void)
{
    pthread_t t;
    void *result;
    if (pthread_create(&t, NULL, worker, NULL) != 0)
        return 1;
    pthread_cancel(t); /* pending until the thread reaches a cancellation point */
    go = 1;
    pthread_join(t, &result);
    printf("worker %s\n", result == PTHREAD_CANCELED ? "cancelled" : "finished");
    return 0;
}
