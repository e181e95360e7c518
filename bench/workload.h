/*
 * workload.h - the interface between `memkit bench` and its workloads.
 *
 * A workload runs inside a child process that `memkit bench` starts for one
 * allocator (drop-in allocators are LD_PRELOADed into that child, so "glibc",
 * "jemalloc", "tcmalloc" and "mimalloc" all mean "call malloc/free"; libmemkit's
 * allocators are called directly). It performs `rounds` rounds at `scale` and fills
 * one mk_bench_round per round. Rates and medians are computed by the parent.
 */
#ifndef MEMKIT_BENCH_WORKLOAD_H
#define MEMKIT_BENCH_WORKLOAD_H

#include <stdbool.h>
#include <stdint.h>

typedef struct mk_bench_round {
    uint64_t allocs, frees; /* calls made in this round */
    double alloc_s, free_s; /* seconds spent in the allocation and the free phase */
} mk_bench_round;

typedef enum mk_bench_api {
    MK_API_MALLOC, /* malloc/free of whatever allocator the process has */
    MK_API_MK_STACK,
    MK_API_MK_POOL,
} mk_bench_api;

typedef struct mk_workload {
    const char *name;
    const char *summary;    /* one line for --list */
    uint64_t default_scale; /* the published size */
    uint64_t quick_scale;   /* for --quick: a fraction of a second */
    const char *scale_unit; /* what scale counts, e.g. "nodes" */
    /* Which libmemkit allocators fit the pattern (others show as n/a). */
    bool (*supports)(mk_bench_api api);
    /* Runs the workload; returns 0, or -1 with a message on stderr. */
    int (*run)(mk_bench_api api, uint64_t scale, int rounds, mk_bench_round *out);
} mk_workload;

/* All workloads, NULL-terminated. */
extern const mk_workload *const mk_workloads[];

const mk_workload *mk_workload_find(const char *name);

/* Monotonic time in seconds. */
double mk_bench_now(void);

#endif /* MEMKIT_BENCH_WORKLOAD_H */
