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

const mk_workload *const mk_workloads[] = {
    &mk_workload_list,
    &mk_workload_list_contended,
    &mk_workload_malloc_free,
    &mk_workload_realtime,
    &mk_workload_mixed,
    &mk_workload_fifo_queue,
    &mk_workload_producer_consumer,
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
