/* workloads.c - the registry of `memkit bench` workloads, and shared helpers. */
#include "workload.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

extern const mk_workload mk_workload_list;
extern const mk_workload mk_workload_realtime;
extern const mk_workload mk_workload_mixed;
extern const mk_workload mk_workload_fifo_queue;
extern const mk_workload mk_workload_producer_consumer;
extern const mk_workload mk_workload_list_contended;
extern const mk_workload mk_workload_malloc_free;
extern const mk_workload mk_workload_local_array;
extern const mk_workload mk_workload_pmr_vector;
extern const mk_workload mk_workload_pmr_map;
extern const mk_workload mk_workload_cxx_vector;
extern const mk_workload mk_workload_cxx_map;
extern const mk_workload mk_workload_cxx_string;
extern const mk_workload mk_workload_build_free_1k;
extern const mk_workload mk_workload_build_free_10k;
extern const mk_workload mk_workload_build_free_100k;
extern const mk_workload mk_workload_build_free_1m;
extern const mk_workload mk_workload_request_loop;
extern const mk_workload mk_workload_burst_idle;
extern const mk_workload mk_workload_sawtooth;
extern const mk_workload mk_workload_queue_drift;
extern const mk_workload mk_workload_xthread_queue;
extern const mk_workload mk_workload_mixed_tail;
extern const mk_workload mk_workload_steady_spikes;

const mk_workload *const mk_workloads[] = {
    &mk_workload_list,
    &mk_workload_list_contended,
    &mk_workload_malloc_free,
    &mk_workload_realtime,
    &mk_workload_mixed,
    &mk_workload_fifo_queue,
    &mk_workload_producer_consumer,
    &mk_workload_local_array,
    &mk_workload_pmr_vector,
    &mk_workload_pmr_map,
    &mk_workload_cxx_vector,
    &mk_workload_cxx_map,
    &mk_workload_cxx_string,
    &mk_workload_build_free_1k,
    &mk_workload_build_free_10k,
    &mk_workload_build_free_100k,
    &mk_workload_build_free_1m,
    &mk_workload_request_loop,
    &mk_workload_burst_idle,
    &mk_workload_sawtooth,
    &mk_workload_queue_drift,
    &mk_workload_xthread_queue,
    &mk_workload_mixed_tail,
    &mk_workload_steady_spikes,
    NULL,
};

const mk_workload *mk_workload_find(const char *name)
{
    for (int i = 0; mk_workloads[i]; i++)
        if (strcmp(mk_workloads[i]->name, name) == 0)
            return mk_workloads[i];
    return NULL;
}

double mk_bench_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

uint64_t mk_bench_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return (x > y) - (x < y);
}

/* The value at quantile q of sorted v: the nearest rank, never past the end. */
static uint64_t quantile(const uint64_t *v, size_t n, double q)
{
    size_t i = (size_t)(q * (double)n);
    return v[i < n ? i : n - 1];
}

void mk_bench_latencies(uint64_t *ns, size_t n, mk_bench_round *r)
{
    if (!n)
        return;
    qsort(ns, n, sizeof *ns, cmp_u64);
    r->p50_ns = quantile(ns, n, 0.50);
    r->p99_ns = quantile(ns, n, 0.99);
    r->p999_ns = quantile(ns, n, 0.999);
    r->max_ns = ns[n - 1];
}

/* ---- cycle counter and histogram ---- */

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>

uint64_t mk_bench_ticks(void)
{
    unsigned aux;

    return __rdtscp(&aux);
}
#else
uint64_t mk_bench_ticks(void)
{
    return mk_bench_now_ns();
}
#endif

double mk_bench_ns_per_tick(void)
{
    static double ns_per_tick;

    if (ns_per_tick == 0) {
        /* 20 ms of both clocks: enough for 0.1% here, and paid once. */
        uint64_t n0 = mk_bench_now_ns(), t0 = mk_bench_ticks(), n1, t1;
        do
            n1 = mk_bench_now_ns();
        while (n1 - n0 < 20000000);
        t1 = mk_bench_ticks();
        ns_per_tick = t1 > t0 ? (double)(n1 - n0) / (double)(t1 - t0) : 1.0;
    }
    return ns_per_tick;
}

static unsigned hist_bucket(uint64_t v)
{
    unsigned e;

    if (v < 64)
        return (unsigned)v;
    e = 63u - (unsigned)__builtin_clzll(v); /* 6 .. 63 */
    return 64 + (e - 6) * 32 + (unsigned)((v >> (e - 5)) & 31);
}

/* The smallest value of bucket b. */
static uint64_t hist_floor(unsigned b)
{
    unsigned e;

    if (b < 64)
        return b;
    e = (b - 64) / 32 + 6;
    return ((uint64_t)32 + (b - 64) % 32) << (e - 5);
}

void mk_bench_hist_add(mk_bench_hist *h, uint64_t ticks)
{
    h->bucket[hist_bucket(ticks)]++;
    h->count++;
    if (ticks > h->max)
        h->max = ticks;
}

void mk_bench_hist_merge(mk_bench_hist *d, const mk_bench_hist *s)
{
    d->count += s->count;
    if (s->max > d->max)
        d->max = s->max;
    for (unsigned b = 0; b < MK_BENCH_HIST_BUCKETS; b++)
        d->bucket[b] += s->bucket[b];
}

uint64_t mk_bench_hist_quantile(const mk_bench_hist *h, double q)
{
    uint64_t rank = (uint64_t)(q * (double)h->count), seen = 0;

    for (unsigned b = 0; b < MK_BENCH_HIST_BUCKETS; b++)
        if ((seen += h->bucket[b]) > rank)
            return hist_floor(b);
    return h->max;
}
