/*
 * bench.h - what the parts of `memkit bench` share: the allocators it knows,
 * one (workload, allocator) result, and one configuration's row of results.
 *
 *   cmd_bench.c     options, the plan of runs, the progress line, the driver
 *   bench_run.c     the child process side and running one pair in a child
 *   bench_output.c  the table, the JSON (docs/bench-json.md) and the HTML page
 */
#ifndef MEMKIT_CLI_BENCH_H
#define MEMKIT_CLI_BENCH_H

#include "cli.h"
#include "workload.h"

#define MK_BENCH_MAX_ROUNDS 100
_Static_assert(MK_BENCH_MAX_ROUNDS <= MK_STAT_MAX, "mk_stat_of takes every round");

typedef struct mk_bench_allocator {
    const char *name;
    mk_bench_api api;
    const char *soname;  /* drop-in library for LD_PRELOAD, or NULL */
    const char *package; /* Debian package that ships it */
    const char *planned; /* non-NULL: not built yet, and why */
    bool tuned;          /* glibc with the realtime settings */
} mk_bench_allocator;

extern const mk_bench_allocator mk_bench_allocators[];
extern const size_t mk_bench_n_allocators;

typedef struct mk_bench_result {
    const mk_bench_allocator *alloc;
    const char *status; /* "ok", "n/a", "skipped", "failed" */
    char reason[160];
    mk_stat alloc_rate, free_rate, alloc_s, free_s;
    /* single-call latencies: medians over rounds (max: the largest); 0 when
     * the workload does not time single calls */
    uint64_t p50_ns, p99_ns, p999_ns, max_ns;
    uint64_t free_p50_ns, free_p99_ns, free_p999_ns, free_max_ns; /* the same for free */
    uint64_t max_steps;     /* mk_tlsf: the most steps of any call, all rounds; 0: n/a */
    double first_to_steady; /* round 1's time / median of the others; 0: n/a */
    uint64_t peak_rss_bytes, minor_faults;
    mk_stat time_s;           /* a round's alloc and free phases together */
    uint64_t final_rss_bytes; /* patterns: RSS at a round's end, median; 0: n/a */
    double wall_s;
} mk_bench_result;

/* One configuration: a workload at one scale (and, for malloc-free, one
 * block size and thread count) under every allocator chosen. */
typedef struct mk_bench_config {
    const mk_workload *w;
    uint64_t scale;
    int rounds;
    uint64_t size, threads; /* malloc-free's configuration; 0 for the others */
    int n;                  /* results filled so far */
    bool runs[16];          /* allocator i is wanted and starts a child here */
    mk_bench_result res[16];
} mk_bench_config;

/* The child side: `memkit bench --child WORKLOAD ALLOCATOR SCALE ROUNDS`. */
int mk_bench_child(int argc, char **argv);

/* Why allocator a cannot run workload w here ("n/a" or "skipped", with the
 * reason in r), or NULL when it can. Decided without running anything. */
const char *mk_bench_unavailable(const mk_workload *w, const mk_bench_allocator *a,
                                 mk_bench_result *r);

/* Runs (w, a) in a fresh child process and fills r. */
void mk_bench_run_one(const mk_workload *w, const mk_bench_allocator *a, uint64_t scale,
                      int rounds, mk_bench_result *r);

void mk_bench_print_table(const mk_bench_config *c, FILE *out);
void mk_bench_print_json(const mk_bench_config *c, FILE *out);
/* Writes one self-contained page with every configuration's bar charts;
 * false on a write error. */
bool mk_bench_write_html(const mk_bench_config *c, int n, FILE *out);

#endif /* MEMKIT_CLI_BENCH_H */
