/*
 * churn.c - the tracer benchmark's workload: each iteration frees a random
 * slot of a 10,000-block live set and mallocs 8-256 bytes into it.
 *
 * usage: churn [ITERATIONS [THREADS [LIVE]]]   (default 20,000,000, 1, 10,000)
 * Each thread runs ITERATIONS/THREADS iterations on its own live set of
 * LIVE blocks, so the 2-thread run does the same total work as the 1-thread
 * run (bench/report/threads.sh gives LIVE/THREADS each, to hold the live
 * blocks of the whole run equal too).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Every thread starts its loop when all are made: the threads run at once,
 * as a server's do, not one after another as they are created. */
static pthread_barrier_t start;

typedef struct job {
    uint64_t iterations, seed, checksum;
    size_t live;
} job_t;

static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13; /* xorshift64: cheap next to malloc */
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void *run(void *arg)
{
    job_t *j = arg;
    void **slot = calloc(j->live, sizeof *slot);
    if (!slot)
        abort();
    pthread_barrier_wait(&start);
    for (uint64_t i = 0; i < j->iterations; i++) {
        uint64_t r = next_random(&j->seed);
        size_t k = (size_t)(r % j->live), size = 8 + (size_t)((r >> 32) % 249);
        free(slot[k]);
        slot[k] = malloc(size);
        if (!slot[k])
            abort();
        *(volatile char *)slot[k] = (char)i; /* touch it, as real code would */
    }
    for (size_t k = 0; k < j->live; k++) {
        j->checksum += (uintptr_t)slot[k] & 0xff;
        free(slot[k]);
    }
    free(slot);
    return NULL;
}

int main(int argc, char **argv)
{
    uint64_t iterations = argc > 1 ? strtoull(argv[1], NULL, 10) : 20000000;
    int threads = argc > 2 ? atoi(argv[2]) : 1;
    long live = argc > 3 ? atol(argv[3]) : 10000;
    pthread_t tid[64];
    job_t jobs[64];

    if (threads < 1 || threads > 64) {
        fprintf(stderr, "churn: THREADS must be 1-64\n");
        return 2;
    }
    if (live < 1) {
        fprintf(stderr, "churn: LIVE must be 1 or more\n");
        return 2;
    }
    pthread_barrier_init(&start, NULL, (unsigned)threads);
    for (int t = 0; t < threads; t++) {
        jobs[t] = (job_t){iterations / (uint64_t)threads,
                          0x9e3779b97f4a7c15ull + (uint64_t)t, 0, (size_t)live};
        if (pthread_create(&tid[t], NULL, run, &jobs[t]) != 0) {
            fprintf(stderr, "churn: cannot create a thread\n");
            return 1;
        }
    }
    for (int t = 0; t < threads; t++)
        pthread_join(tid[t], NULL);
    return 0;
}
