/*
 * turns.c SEED - three threads take turns, in an order drawn from SEED, at
 * bursts of mallocs and frees on one shared pool of blocks: each burst leans
 * towards allocating or towards freeing, and a thread frees blocks others
 * allocated, so threads' shares of the live totals rise, fall and go below
 * zero. Turns are handed over under a mutex, so the process's live totals
 * follow one order and the full trace's peak is exact; --summary-only's
 * peak, sampled per thread, must be at most its stated bound under it (16
 * KiB and 64 blocks per allocating thread: four here, as the main thread
 * allocates in pthread_create) and never over it.
 *
 * Sizes are mostly under 2 KiB, some of 64-100 KB (past the live-size
 * table's 16-bit slots, into its overflow map).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "../../xorshift.h"

enum { THREADS = 3, TURNS = 3000, POOL = 4000, DONE = -1, QUIT = -2 };

static void *pool[POOL];
static int pool_used;
static uint64_t rng;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int turn = DONE; /* whose turn, DONE (main's) or QUIT */

static uint64_t next_random(void)
{
    return xorshift64(&rng);
}

static size_t random_size(void)
{
    uint64_t r = next_random();
    if (r % 50 == 0)
        return 64000 + (size_t)(r >> 8) % 36000;
    return 1 + (size_t)(r >> 8) % 2048;
}

/* One burst: 1-64 calls, each a malloc with the burst's leaning chance. */
static void burst(void)
{
    int calls = 1 + (int)(next_random() % 64);
    uint64_t lean = 20 + next_random() % 61; /* percent of calls that allocate */
    for (int i = 0; i < calls; i++) {
        if (pool_used < POOL && (pool_used == 0 || next_random() % 100 < lean)) {
            void *p = malloc(random_size());
            if (!p)
                abort();
            pool[pool_used++] = p;
        } else {
            int k = (int)(next_random() % (uint64_t)pool_used);
            free(pool[k]);
            pool[k] = pool[--pool_used];
        }
    }
}

static void *worker(void *arg)
{
    int me = (int)(intptr_t)arg;
    pthread_mutex_lock(&lock);
    for (;;) {
        while (turn != me && turn != QUIT)
            pthread_cond_wait(&changed, &lock);
        if (turn == QUIT)
            break;
        burst();
        turn = DONE;
        pthread_cond_broadcast(&changed);
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

int main(int argc, char **argv)
{
    rng = argc > 1 ? strtoull(argv[1], NULL, 10) * 0x9e3779b97f4a7c15ull + 1 : 1;
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i) != 0)
            return 1;
    pthread_mutex_lock(&lock);
    for (int n = 0; n < TURNS; n++) {
        turn = (int)(next_random() % THREADS);
        pthread_cond_broadcast(&changed);
        while (turn != DONE)
            pthread_cond_wait(&changed, &lock);
    }
    turn = QUIT;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < THREADS; i++)
        if (pthread_join(t[i], NULL) != 0)
            return 1;
    while (pool_used > 0)
        free(pool[--pool_used]);
    return 0;
}
