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
#include <stddef.h>
#include <stdint.h>

typedef struct mk_bench_round {
    uint64_t allocs, frees; /* calls made in this round */
    double alloc_s, free_s; /* seconds spent in the allocation and the free phase */
    /* Latencies of single allocation calls in this round, in ns (each call
     * timed on its own, the clock's ~20-40 ns included); all 0 when the
     * workload does not time single calls. */
    uint64_t p50_ns, p99_ns, p999_ns, max_ns;
    /* The same for single free calls, where the workload times them. */
    uint64_t free_p50_ns, free_p99_ns, free_p999_ns, free_max_ns;
    /* An allocator that counts its own work per call (mk_tlsf): the most steps
     * any single call took in this round; 0 when not reported. */
    uint64_t max_steps;
    /* Resident bytes of the process at the round's end (patterns; 0: not taken). */
    uint64_t final_rss;
} mk_bench_round;

typedef enum mk_bench_api {
    MK_API_MALLOC, /* malloc/free of whatever allocator the process has */
    MK_API_MK_STACK,
    MK_API_MK_POOL,
    MK_API_MK_FIFO,
    MK_API_MK_RING,
    MK_API_MK_TLSF,
    MK_API_MK_LOCALBUF,  /* local buffers (memkit/localbuf.h): no allocator object */
    MK_API_BUMP_CEILING, /* no allocator: a pointer bump over memory faulted in
                          * before the clock starts, the loop's ceiling */
} mk_bench_api;

typedef struct mk_workload {
    const char *name;
    const char *summary;    /* one line for --list */
    uint64_t default_scale; /* the published size */
    uint64_t quick_scale;   /* for --quick: a fraction of a second */
    const char *scale_unit; /* what scale counts, e.g. "nodes" */
    int default_rounds;     /* rounds per process when --rounds is not given; 0: 3 */
    /* Which libmemkit allocators fit the pattern (others show as n/a). */
    bool (*supports)(mk_bench_api api);
    /* Runs the workload; returns 0, or -1 with a message on stderr. */
    int (*run)(mk_bench_api api, uint64_t scale, int rounds, mk_bench_round *out);
    /* "patterns" for the shapes of `memkit bench patterns` (bench/patterns.c):
     * selected by that name, not run by a plain `memkit bench`, and reported by
     * a round's whole time (alloc_s) and RSS; NULL for the others. */
    const char *group;
} mk_workload;

/* All workloads, NULL-terminated. */
extern const mk_workload *const mk_workloads[];

const mk_workload *mk_workload_find(const char *name);

/* Monotonic time in seconds. */
double mk_bench_now(void);

/* Monotonic time in ns, for timing single calls. */
uint64_t mk_bench_now_ns(void);

/* Fills r's percentiles from n single-call latencies (sorts ns in place). */
void mk_bench_latencies(uint64_t *ns, size_t n, mk_bench_round *r);

/* The cycle counter, for timing single calls where clock_gettime's 20-40 ns would
 * swamp them (x86: rdtscp, which waits for the calls before it; elsewhere the
 * monotonic clock in ns). mk_bench_ns_per_tick calibrates it once per process. */
uint64_t mk_bench_ticks(void);
double mk_bench_ns_per_tick(void);

/* A latency histogram: exact below 64 ticks, then 32 steps per power of two (at
 * most 3% off), so millions of calls cost a few KiB. */
#define MK_BENCH_HIST_BUCKETS (64 + 58 * 32)
typedef struct mk_bench_hist {
    uint64_t count, max;
    uint32_t bucket[MK_BENCH_HIST_BUCKETS];
} mk_bench_hist;

void mk_bench_hist_add(mk_bench_hist *h, uint64_t ticks);
/* Adds s's samples to d. */
void mk_bench_hist_merge(mk_bench_hist *d, const mk_bench_hist *s);
/* The value (in ticks) below which a fraction q of the samples fall. */
uint64_t mk_bench_hist_quantile(const mk_bench_hist *h, double q);

#endif /* MEMKIT_BENCH_WORKLOAD_H */
