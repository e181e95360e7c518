/*
 * exitrace.c - the main thread exits just as 64 threads make their first
 * allocations, half of them starting a thread each as they end (which takes
 * over an ended thread's state): the exit's flush meets states being made
 * and states being taken. It once met a state whose streams were not yet
 * set (14 runs in 100 hung in zstd). The argument is the delay between the
 * threads' release and the exit, in microseconds.
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#define THREADS 64

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t go = PTHREAD_COND_INITIALIZER;
static pthread_attr_t detached;
static int started, released;

static void *work(void *again)
{
    pthread_mutex_lock(&lock);
    started++;
    while (!released)
        pthread_cond_wait(&go, &lock);
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < 10; i++) {
        void *volatile p = malloc(40);
        free(p);
    }
    pthread_t t;
    if (again && pthread_create(&t, &detached, work, NULL) != 0)
        abort();
    return NULL;
}

int main(int argc, char **argv)
{
    long delay_us = argc > 1 ? atol(argv[1]) : 0;
    pthread_attr_init(&detached);
    pthread_attr_setdetachstate(&detached, PTHREAD_CREATE_DETACHED);
    for (int i = 0; i < THREADS; i++) {
        pthread_t t;
        if (pthread_create(&t, &detached, work, i % 2 ? &detached : NULL) != 0)
            return 1;
    }
    for (int n = 0; n < THREADS;) {
        struct timespec nap = {0, 100000};
        nanosleep(&nap, NULL);
        pthread_mutex_lock(&lock);
        n = started;
        pthread_mutex_unlock(&lock);
    }
    pthread_mutex_lock(&lock);
    released = 1;
    pthread_cond_broadcast(&go);
    pthread_mutex_unlock(&lock);
    struct timespec nap = {0, delay_us * 1000};
    nanosleep(&nap, NULL);
    exit(0);
}
