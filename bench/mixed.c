/*
 * mixed.c - the `mixed` and `fifo-queue` workloads: a live set of blocks of
 * random sizes, churned one block at a time.
 *
 * mixed (larson-like, and the TLSF issue's workload): each operation frees a
 * random member of a live set of 100,000 blocks and allocates a new one of
 * 16-4096 bytes in its place. Every 8th operation's free and malloc are timed on
 * their own with the cycle counter, for p50/p99/p99.9 latencies of each.
 * fifo-queue (request contexts): a queue of 1,000 live blocks of 64-1024 bytes;
 * each operation frees the oldest and allocates a new one at the tail.
 *
 * mixed runs under malloc and mk_tlsf (the general-purpose allocator with a
 * bounded worst case); fifo-queue under malloc and mk_fifo (its pattern).
 *
 * Frees and mallocs interleave, so a phase cannot be timed apart without
 * timing every call: alloc and free rates both report operations (one free
 * and one malloc) per second of the whole loop.
 */
#include "heap.h"

#include <memkit/fifo.h>
#include <memkit/tlsf.h>

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

static bool malloc_or_tlsf(mk_bench_api api)
{
    return api == MK_API_MALLOC || api == MK_API_MK_TLSF;
}

static bool malloc_or_fifo(mk_bench_api api)
{
    return api == MK_API_MALLOC || api == MK_API_MK_FIFO;
}

typedef struct churn {
    size_t live, min, max;
    bool fifo;  /* free the oldest (else a random one) */
    bool timed; /* time every 8th operation's calls */
} churn_t;

/* Converts a histogram of ticks into a round's percentiles in ns. */
static void percentiles(const mk_bench_hist *h, uint64_t *p50, uint64_t *p99,
                        uint64_t *p999, uint64_t *max)
{
    double k = mk_bench_ns_per_tick();

    *p50 = (uint64_t)((double)mk_bench_hist_quantile(h, 0.50) * k);
    *p99 = (uint64_t)((double)mk_bench_hist_quantile(h, 0.99) * k);
    *p999 = (uint64_t)((double)mk_bench_hist_quantile(h, 0.999) * k);
    *max = (uint64_t)((double)h->max * k);
    if (*max == 0)
        *max = 1; /* "measured", even when every call took less than a ns */
}

static int churn_round(const churn_t *c, const mk_bench_heap *h, void **slot,
                       size_t *head, uint64_t *rng, uint64_t ops, mk_bench_round *out)
{
    static mk_bench_hist alloc_h, free_h;
    size_t span = c->max - c->min + 1;

    memset(&alloc_h, 0, sizeof alloc_h);
    memset(&free_h, 0, sizeof free_h);
    double t0 = mk_bench_now();
    for (uint64_t i = 0; i < ops; i++) {
        size_t k, n = c->min + (size_t)(next_random(rng) % span);
        if (c->fifo) {
            k = *head;
            *head = *head + 1 == c->live ? 0 : *head + 1;
        } else {
            k = (size_t)(next_random(rng) % c->live);
        }
        if (c->timed && (i & 7) == 0) {
            uint64_t a = mk_bench_ticks();
            mk_bench_heap_free(h, slot[k]);
            uint64_t b = mk_bench_ticks();
            slot[k] = mk_bench_heap_alloc(h, n, MK_MALLOC_ALIGN);
            uint64_t e = mk_bench_ticks();
            mk_bench_hist_add(&free_h, b - a);
            mk_bench_hist_add(&alloc_h, e - b);
        } else {
            mk_bench_heap_free(h, slot[k]);
            slot[k] = mk_bench_heap_alloc(h, n, MK_MALLOC_ALIGN);
        }
        if (!slot[k]) {
            fprintf(stderr, "churn: allocation of %zu bytes failed\n", n);
            return -1;
        }
        ((char *)slot[k])[0] = (char)i; /* touch it, as a real user would */
    }
    double t = mk_bench_now() - t0;
    *out = (mk_bench_round){.allocs = ops, .frees = ops, .alloc_s = t, .free_s = t};
    if (c->timed) {
        percentiles(&alloc_h, &out->p50_ns, &out->p99_ns, &out->p999_ns, &out->max_ns);
        percentiles(&free_h, &out->free_p50_ns, &out->free_p99_ns, &out->free_p999_ns,
                    &out->free_max_ns);
    }
    if (h->api == MK_API_MK_TLSF) {
        mk_tlsf_stats_t s;
        mk_tlsf_stats(h->tlsf, &s);
        out->max_steps = s.max_call_steps;
    }
    return 0;
}

static int churn_loop(const churn_t *c, const mk_bench_heap *h, uint64_t ops, int rounds,
                      mk_bench_round *out)
{
    void **slot = calloc(c->live, sizeof *slot);
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    size_t head = 0;
    int rc = 0;

    if (!slot)
        return -1;
    if (c->timed)
        mk_bench_ns_per_tick(); /* calibrate before the clock runs */
    for (size_t i = 0; i < c->live; i++)
        if (!(slot[i] = mk_bench_heap_alloc(
                  h, c->min + next_random(&rng) % (c->max - c->min + 1),
                  MK_MALLOC_ALIGN))) {
            while (i > 0)
                mk_bench_heap_free(h, slot[--i]);
            free(slot);
            return -1;
        }
    for (int r = 0; r < rounds && rc == 0; r++)
        rc = churn_round(c, h, slot, &head, &rng, ops, &out[r]);
    for (size_t i = 0; i < c->live; i++)
        mk_bench_heap_free(h, slot[i]);
    free(slot);
    return rc;
}

static int churn_run(const churn_t *c, mk_bench_api api, uint64_t ops, int rounds,
                     mk_bench_round *out)
{
    mk_bench_heap h = {.api = api};
    int rc;

    if (api == MK_API_MK_FIFO && !(h.fifo = mk_fifo_create(NULL)))
        return -1;
    /* The live set is about 200 MB: start with 256 MiB and grow by 64 MiB. */
    if (api == MK_API_MK_TLSF &&
        !(h.tlsf = mk_tlsf_create(&(mk_tlsf_config_t){.initial_size = (size_t)256 << 20,
                                                      .grow_size = (size_t)64 << 20,
                                                      .flags = MK_TLSF_GROW})))
        return -1;
    rc = churn_loop(c, &h, ops, rounds, out);
    mk_fifo_destroy(h.fifo);
    mk_tlsf_destroy(h.tlsf);
    return rc;
}

static int mixed_run(mk_bench_api api, uint64_t scale, int rounds, mk_bench_round *out)
{
    static const churn_t c = {.live = 100000, .min = 16, .max = 4096, .timed = true};
    return churn_run(&c, api, scale, rounds, out);
}

static int fifo_run(mk_bench_api api, uint64_t scale, int rounds, mk_bench_round *out)
{
    static const churn_t c = {.live = 1000, .min = 64, .max = 1024, .fifo = true};
    return churn_run(&c, api, scale, rounds, out);
}

const mk_workload mk_workload_mixed = {
    .name = "mixed",
    .summary = "larson-like: free a random one of 100,000 live blocks, allocate 16-4096 "
               "bytes in its place; malloc and free latencies (rates: operations/s)",
    .default_scale = 10000000,
    .quick_scale = 50000,
    .scale_unit = "operations",
    .supports = malloc_or_tlsf,
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
