/*
 * mixed.c - the `mixed` and `fifo-queue` workloads: a live set of blocks of
 * random sizes, churned one block at a time.
 *
 * mixed (larson-like): each operation frees a random member of a live set of
 * 10,000 blocks and mallocs a new one of 16-4096 bytes in its place.
 * fifo-queue (request contexts): a queue of 1,000 live blocks of 64-1024
 * bytes; each operation frees the oldest and mallocs a new one at the tail.
 *
 * fifo-queue is the pattern mk_fifo is for, and runs under it too.
 *
 * Frees and mallocs interleave, so a phase cannot be timed apart without
 * timing every call: alloc and free rates both report operations (one free
 * and one malloc) per second of the whole loop.
 */
#include "workload.h"

#include <memkit/fifo.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* xorshift64: the same sequence in every process, so allocators see the same
 * requests. */
static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static bool malloc_only(mk_bench_api api)
{
    return api == MK_API_MALLOC; /* sizes vary: no pool; order is random: no stack */
}

static bool malloc_or_fifo(mk_bench_api api)
{
    return api == MK_API_MALLOC || api == MK_API_MK_FIFO;
}

typedef struct churn {
    size_t live, min, max;
    bool fifo;
} churn_t;

/* The heap under test: malloc, or an mk_fifo when q is set. Inlined into the
 * loop, where the branch on q always goes the same way. */
static inline void *heap_alloc(mk_fifo_t *q, size_t n)
{
    return q ? mk_fifo_alloc(q, n) : malloc(n);
}

static inline void heap_free(mk_fifo_t *q, void *p)
{
    if (q)
        mk_fifo_free(q, p);
    else
        free(p);
}

static int churn_loop(const churn_t *c, mk_fifo_t *q, uint64_t ops, int rounds,
                      mk_bench_round *out)
{
    void **slot = calloc(c->live, sizeof *slot);
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    if (!slot)
        return -1;
    for (size_t i = 0; i < c->live; i++)
        if (!(slot[i] =
                  heap_alloc(q, c->min + next_random(&rng) % (c->max - c->min + 1))))
            return free(slot), -1;
    size_t head = 0;
    int rc = 0;
    for (int r = 0; r < rounds && rc == 0; r++) {
        double t0 = mk_bench_now();
        for (uint64_t i = 0; i < ops; i++) {
            size_t k;
            if (c->fifo) {
                k = head;
                head = head + 1 == c->live ? 0 : head + 1;
            } else {
                k = (size_t)(next_random(&rng) % c->live);
            }
            heap_free(q, slot[k]);
            size_t n = c->min + (size_t)(next_random(&rng) % (c->max - c->min + 1));
            if (!(slot[k] = heap_alloc(q, n))) {
                fprintf(stderr, "churn: malloc(%zu) failed\n", n);
                rc = -1;
                break;
            }
            ((char *)slot[k])[0] = (char)i; /* touch it, as a real user would */
        }
        double t = mk_bench_now() - t0;
        out[r] = (mk_bench_round){.allocs = ops, .frees = ops, .alloc_s = t, .free_s = t};
    }
    for (size_t i = 0; i < c->live; i++)
        heap_free(q, slot[i]);
    free(slot);
    return rc;
}

static int churn_run(const churn_t *c, mk_bench_api api, uint64_t ops, int rounds,
                     mk_bench_round *out)
{
    mk_fifo_t *q = NULL;
    int rc;

    if (api == MK_API_MK_FIFO && !(q = mk_fifo_create(NULL)))
        return -1;
    rc = churn_loop(c, q, ops, rounds, out);
    mk_fifo_destroy(q);
    return rc;
}

static int mixed_run(mk_bench_api api, uint64_t scale, int rounds, mk_bench_round *out)
{
    static const churn_t c = {.live = 10000, .min = 16, .max = 4096, .fifo = false};
    return churn_run(&c, api, scale, rounds, out);
}

static int fifo_run(mk_bench_api api, uint64_t scale, int rounds, mk_bench_round *out)
{
    static const churn_t c = {.live = 1000, .min = 64, .max = 1024, .fifo = true};
    return churn_run(&c, api, scale, rounds, out);
}

const mk_workload mk_workload_mixed = {
    .name = "mixed",
    .summary = "larson-like: free a random one of 10,000 live blocks, malloc 16-4096 "
               "bytes in its place (rates: operations/s)",
    .default_scale = 20000000,
    .quick_scale = 50000,
    .scale_unit = "operations",
    .supports = malloc_only,
    .run = mixed_run,
};

const mk_workload mk_workload_fifo_queue = {
    .name = "fifo-queue",
    .summary = "request contexts: a queue of 1,000 blocks of 64-1024 bytes, free the "
               "oldest, malloc at the tail (rates: operations/s)",
    .default_scale = 20000000,
    .quick_scale = 50000,
    .scale_unit = "operations",
    .supports = malloc_or_fifo,
    .run = fifo_run,
};
