/*
 * climb.c - two threads take turns, a barrier between steps, so that the
 * process's peak comes when one thread climbs back to where it had fallen
 * from: B allocates a little (two threads have recorded: the peak is
 * sampled); A mallocs 1 MB and frees it; B mallocs 1 MB; A mallocs 1 MB
 * again, and both are live (the peak, 2 MB). A peak sampled on growth since a
 * thread's last sample misses it, as A's share is no higher than when it last
 * sampled; --summary-only samples on a rise above the lowest point since, and
 * finds it. The full trace's peak is the exact one.
 */
#include <pthread.h>
#include <stdlib.h>

enum { SIZE = 1000000 };

static pthread_barrier_t step;

static void *other(void *arg)
{
    (void)arg;
    void *little = malloc(100);
    pthread_barrier_wait(&step); /* B has recorded: A climbs and falls */
    pthread_barrier_wait(&step); /* A has fallen back */
    void *b = malloc(SIZE);
    if (!b)
        abort();
    pthread_barrier_wait(&step); /* B is up: A climbs */
    pthread_barrier_wait(&step); /* A is up: the peak has been */
    free(b);
    free(little);
    return NULL;
}

int main(void)
{
    pthread_t t;
    if (pthread_barrier_init(&step, NULL, 2) != 0 ||
        pthread_create(&t, NULL, other, NULL) != 0)
        return 1;
    pthread_barrier_wait(&step);
    void *a = malloc(SIZE);
    if (!a)
        abort();
    free(a);
    pthread_barrier_wait(&step);
    pthread_barrier_wait(&step);
    a = malloc(SIZE);
    if (!a)
        abort();
    pthread_barrier_wait(&step);
    if (pthread_join(t, NULL) != 0)
        return 1;
    free(a);
    return 0;
}
