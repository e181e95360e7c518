/*
 * malloc_free.c - the `malloc-free` workload: the C++ book's
 * microbenchmark. A background of 32,768 live blocks, then malloc(S)/free
 * pairs in an unrolled loop, on T threads at once; items (pairs) per second.
 * S and T come from `memkit bench malloc-free --size S --threads T`; without
 * them memkit bench sweeps S = 32, 64, 128, 256 and T = 1 .. cores (see
 * cmd_bench.c), handing each to the child as MEMKIT_BENCH_SIZE and
 * MEMKIT_BENCH_THREADS.
 *
 * mk_pool fits one size on one thread (the pool is not thread-safe).
 */
#include "workload.h"

#include <memkit/pool.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define BACKGROUND 32768

static size_t env_size(const char *name, size_t fallback)
{
    const char *v = getenv(name);
    long n = v ? strtol(v, NULL, 10) : 0;
    return n > 0 ? (size_t)n : fallback;
}

static bool mf_supports(mk_bench_api api)
{
    return api == MK_API_MALLOC ||
           (api == MK_API_MK_POOL && env_size("MEMKIT_BENCH_THREADS", 1) == 1);
}

typedef struct job {
    mk_bench_api api;
    mk_pool_t *pool;
    size_t size;
    uint64_t pairs;
    int failed;
} job_t;

/* Eight pairs per iteration, as the book's unrolled loop: the compiler must
 * not drop them, so each block is written through a volatile pointer. */
static void *pairs(void *arg)
{
    job_t *j = arg;
    for (uint64_t i = 0; i < j->pairs; i += 8) {
        for (int k = 0; k < 8; k++) {
            char *volatile p =
                j->api == MK_API_MK_POOL ? mk_pool_alloc(j->pool) : malloc(j->size);
            if (!p) {
                j->failed = 1;
                return NULL;
            }
            p[0] = (char)k;
            if (j->api == MK_API_MK_POOL)
                mk_pool_free(j->pool, p);
            else
                free(p);
        }
    }
    return NULL;
}

static int mf_run(mk_bench_api api, uint64_t scale, int rounds, mk_bench_round *out)
{
    size_t size = env_size("MEMKIT_BENCH_SIZE", 64);
    int threads = (int)env_size("MEMKIT_BENCH_THREADS", 1);
    mk_pool_t *pool = NULL;
    void **bg = calloc(BACKGROUND, sizeof *bg);
    int rc = bg ? 0 : -1;

    if (api == MK_API_MK_POOL &&
        !(pool = mk_pool_create(&(mk_pool_config_t){.item_size = size})))
        rc = -1;
    for (int i = 0; i < BACKGROUND && rc == 0; i++)
        if (!(bg[i] = api == MK_API_MK_POOL ? mk_pool_alloc(pool) : malloc(size)))
            rc = -1;
    if (threads > 64)
        threads = 64;
    for (int r = 0; r < rounds && rc == 0; r++) {
        job_t jobs[64];
        pthread_t tid[64];
        int started = 0;
        double t0 = mk_bench_now();
        for (int t = 0; t < threads; t++) {
            jobs[t] = (job_t){api, pool, size, scale / (uint64_t)threads / 8 * 8, 0};
            if (t == 0 || pthread_create(&tid[t], NULL, pairs, &jobs[t]) == 0)
                started++;
            else
                jobs[t].failed = 1;
        }
        pairs(&jobs[0]); /* the main thread is thread 0 */
        for (int t = 1; t < started; t++)
            pthread_join(tid[t], NULL);
        double s = mk_bench_now() - t0;
        uint64_t done = 0;
        for (int t = 0; t < threads; t++) {
            rc |= jobs[t].failed ? -1 : 0;
            done += jobs[t].pairs;
        }
        out[r] =
            (mk_bench_round){.allocs = done, .frees = done, .alloc_s = s, .free_s = s};
    }
    if (rc)
        fprintf(stderr, "malloc-free: an allocation failed\n");
    for (int i = 0; bg && i < BACKGROUND; i++) {
        if (!bg[i])
            break;
        if (api == MK_API_MK_POOL)
            mk_pool_free(pool, bg[i]);
        else
            free(bg[i]);
    }
    free(bg);
    mk_pool_destroy(pool);
    return rc;
}

const mk_workload mk_workload_malloc_free = {
    .name = "malloc-free",
    .summary = "the C++ book's loop: malloc(S)/free pairs over 32,768 live blocks, "
               "S 32-256, 1..cores threads (rates: pairs/s)",
    .default_scale = 100000000,
    .quick_scale = 200000,
    .scale_unit = "pairs",
    .supports = mf_supports,
    .run = mf_run,
};
