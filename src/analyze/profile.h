/*
 * profile.h - the analysis core: allocation events in time order in, totals,
 * per-stack aggregates, the peak, lifetimes, orders of release and what is
 * live at the end out. Streaming: memory grows with live blocks and stacks,
 * never with the length of the input.
 *
 * Two inputs feed it: a memkit trace (mk_profile_build walks it) and a curl
 * memdebug log (memdebug.c turns its lines into the same events, one
 * "stack" per file:line).
 *
 * Counts follow curl's memanalyze where it has a word for them (Mallocs,
 * Reallocs, Callocs, Strdups, Wcsdups, Frees, Allocations, Maximum allocated,
 * Total allocated), with its definitions: Frees counts frees of live blocks
 * only (not free(NULL), unknown or double frees). memkit sees every
 * allocation of the process, so Maximum allocated covers all kinds.
 */
#ifndef MEMKIT_ANALYZE_PROFILE_H
#define MEMKIT_ANALYZE_PROFILE_H

#include "../trace/kv_table.h"
#include "../trace/reader.h"
#include "hist.h"
#include "slices.h"

/* Allocations smaller than this cost more in bookkeeping than they carry. */
#define MK_TINY_SIZE 32

/* The live blocks of one stack in allocation order (their serial numbers),
 * to tell whether frees come in LIFO or FIFO order. Bounded: a
 * stack with more live blocks than this forgets its oldest. */
#define MK_ORDER_WINDOW 256

typedef struct mk_order_window {
    uint64_t *seq;           /* a ring, oldest at seq[head]; ascending */
    uint32_t head, len, cap; /* cap: 0 or a power of two <= MK_ORDER_WINDOW */
} mk_order_window_t;

typedef struct mk_stack_agg {
    uint32_t stack;        /* its stack id */
    uint64_t calls, bytes; /* allocating calls from this stack, bytes asked */
    uint64_t frees;        /* its blocks freed (or reallocated away) */
    uint64_t min_size, max_size;
    uint64_t tiny;                    /* calls for < MK_TINY_SIZE bytes */
    uint64_t live_blocks, live_bytes; /* now, during the replay */
    uint64_t max_live_blocks;         /* its own high-water mark */
    uint64_t peak_bytes, peak_blocks; /* held at the heap's peak */
    uint64_t snap_bytes, snap_blocks; /* see profile.c: peak snapshots */
    uint64_t snap_epoch;
    uint32_t first_thread;                 /* the first allocating thread + 1 */
    bool multi_thread;                     /* allocated by more than one thread */
    uint64_t leaked_blocks, leaked_bytes;  /* live at the end */
    uint64_t lifetime_ns;                  /* sum over freed blocks */
    uint64_t temporaries;                  /* freed before the thread's next allocation */
    uint64_t lifo_frees, fifo_frees;       /* frees of its youngest / oldest live block */
    uint64_t ordered_frees;                /* frees the order window could judge */
    uint64_t cross_thread;                 /* freed by another thread */
    uint64_t realloc_grows, realloc_steps; /* grew a block; grew one grown before */
    mk_hist_t size_hist;
    mk_hist_t life_hist;     /* ns */
    mk_order_window_t order; /* its live blocks, for lifo/fifo_frees */
    /* A sampled trace: the variances of the calls and bytes estimates (the
     * Horvitz-Thompson estimator's, sum of (1 - p) / p^2 x value^2). */
    double calls_var, bytes_var;
    uint64_t samples; /* the sampled events behind the estimates */
    /* The allocator's time of its calls (allocations and reallocs from this
     * stack) and of its blocks' frees, in ns: measured in the traced run
     * (mk_profile_t.timed), a sampled trace's weighted like its calls. */
    double alloc_ns;
    double slow_ns; /* the part of alloc_ns in slow calls (format.h) */
    /* The time of the calls made from this stack: its allocations' and the
     * frees it called (a free that carries a time names its caller's stack,
     * format 6): where perf's call graph puts the allocator's time. */
    double call_ns;
    double call_slow_ns; /* the part of call_ns in slow calls */
    uint64_t *growth;    /* live bytes at each growth point (mk_profile_t.growth),
                          * NULL while it had none at any */
    /* With opts.slices: its calls, bytes and allocator ns in each of
     * MK_SLICES time slices, the timeline's buckets MK_SLICE_WIDTH at a
     * time (slices.h). */
    mk_slices_t slices;
} mk_stack_agg_t;

/* The heap over time: fixed buckets whose width doubles as the input grows. */
#define MK_TIMELINE 256
/* The page's time slices (slices.h): so many of the timeline's buckets. */
#define MK_SLICE_WIDTH (MK_TIMELINE / MK_SLICES)

typedef struct mk_timeline_bucket {
    uint64_t allocs;     /* allocating calls in the bucket */
    uint64_t bytes;      /* bytes they asked */
    uint64_t max_live;   /* highest live bytes in the bucket */
    uint64_t end_live;   /* live bytes at its end */
    uint64_t max_blocks; /* highest live blocks */
} mk_timeline_bucket_t;

/* Which events count: a stack passes or not (the caller decides once per
 * stack: report.c memoizes it), a thread, and a time window. */
typedef bool (*mk_stack_filter_fn)(void *ctx, uint32_t stack);

typedef struct mk_profile_opts {
    mk_stack_filter_fn stack_pass; /* NULL: every stack */
    void *filter_ctx;
    int64_t thread;          /* only this thread (as numbered in the trace); -1: all */
    uint64_t from_ns, to_ns; /* window, to_ns 0: to the end */
    bool growth;             /* keep each stack's live bytes at the trace's
                              * snapshots (or MK_GROWTH_POINTS even times) */
    bool summary_first;      /* a trace with a SUMMARY beside its events
                              * (MK_TF_SITE_STACKS): read that, skip the events */
    bool counts_only;        /* with summary_first: the totals alone, so the
                              * EVENTS records are not even decompressed */
    bool slices;             /* each stack's calls, bytes and time per slice
                              * (mk_stack_agg_t.slices: the HTML page's) */
} mk_profile_opts_t;

/* Growth points when a trace has no snapshots: even times over its run. */
#define MK_GROWTH_POINTS 8
/* Snapshots kept at most: more are thinned to every k-th. */
#define MK_GROWTH_MAX 256

typedef struct mk_growth {
    uint64_t *times; /* ns since the start, ascending */
    size_t n, next;  /* points; the next the replay takes */
    bool snapshots;  /* the points are the trace's own snapshots */
} mk_growth_t;

typedef struct mk_thread_state mk_thread_state_t;
typedef struct mk_block mk_block_t;

/* The replay's live blocks by address, open addressing with linear probing
 * from a home that keeps the heap's layout (as mk_addr_home). A slot holds a
 * block record's index + 1 (0: empty) and the address's key, which its
 * home follows from at any table size (mk_addr_key: growing the table reads
 * no block record); the address is in the record. 8
 * bytes a slot, where a kv_table.h slot is 24: a parser's trace has
 * millions of live blocks. */
typedef struct mk_live_slot {
    uint32_t block1, key;
} mk_live_slot_t;

typedef struct mk_live_table {
    mk_live_slot_t *slots;
    size_t cap, used; /* cap: 0 or a power of two <= 2^32; used <= 3/4 cap */
} mk_live_table_t;

/* What the kernel let the traced run sample (mk_profile_t.cpu_sampling),
 * in order: several processes' is the best of theirs. */
enum {
    MK_CPU_SAMPLING_NONE,
    MK_CPU_SAMPLING_REFUSED,
    MK_CPU_SAMPLING_USER,
    MK_CPU_SAMPLING_USER_KERNEL
};

/* CPU samples enough to say a share: in the allocator, to be preferred to
 * timed calls; in all, to say anything (profile.c's take_samples). */
#define MK_ONCPU_ENOUGH 20

typedef struct mk_profile {
    uint64_t calls[MK_K_COUNT]; /* every counted call, by kind */
    uint64_t bytes[MK_K_COUNT]; /* requested bytes, by kind */
    /* memanalyze's numbers */
    uint64_t mallocs, reallocs, callocs, strdups, wcsdups, frees, allocations;
    uint64_t max_allocated, total_allocated;
    /* memkit's own */
    uint64_t news, deletes, aligned, allocation_calls;
    uint64_t live_bytes, live_blocks, peak_blocks;
    uint64_t peak_time; /* when max_allocated was reached */
    uint64_t free_null, free_unknown, failed;
    uint64_t temporaries, tiny;
    uint64_t events, threads, last_time; /* threads: how many had events */
    /* The allocator's time in the traced run (version 5 traces with it: timed),
     * in ns: all of it, and the part no stack takes (frees of blocks not seen
     * allocated, free(NULL)). */
    bool timed;
    bool site_times;      /* and per site: the events' (not a SUMMARY's totals) */
    uint64_t timed_calls; /* the calls timed: slow ones, and one in MK_COST_STRIDE */
    double alloc_ns, alloc_ns_unattributed;
    double slow_ns;       /* the part of alloc_ns in slow calls (format.h) */
    uint64_t slow_calls;  /* those calls */
    double slow_bound_ns; /* a call at least this long was slow (0: unknown) */
    double cpu_ns;        /* the program's CPU time, user and system, memkit's own
                           * work taken off where it was measured (0: unknown) */
    /* The threads' CPU samples (preload/oncpu.h), where the run took them
     * (oncpu_samples > 0): samples in all and inside allocator calls, and
     * memkit's own time, which cpu_ns leaves out. alloc_ns is the samples' estimate
     * (alloc_from_samples) when they are enough (MK_ONCPU_ENOUGH) or the
     * calls were not timed; the stacks' times, from the timed calls, are
     * then scaled to it. */
    bool alloc_from_samples;
    unsigned cpu_sampling;  /* MK_CPU_SAMPLING_*: how the run could sample */
    int cpu_sampling_errno; /* why the kernel refused, where it did */
    uint64_t oncpu_samples, oncpu_alloc_samples;
    double tracer_ns;
    /* Read calls whose thread was switched out during them (trace/reader.h):
     * those whose time the tracer dropped, and those it took from the thread's
     * CPU clock; switches_unseen: a timed process whose tracer could not see
     * switches, whose calls keep their time off the CPU. */
    uint64_t switched_calls, switched_clocked;
    bool switches_unseen;
    double ns_per_cycle; /* the trace's TSC cycles to ns */
    bool from_summary;   /* a --summary-only trace: no per-event data */
    /* A --sample trace: each event stands for 1/p like it (p = 1 - exp(-size
     * / sample_mean)), so the per-stack numbers, the peak and leaks are
     * estimates; calls and bytes by kind are the exact counts. */
    bool sampled;
    uint64_t sample_mean, sample_seed;
    mk_growth_t growth;
    bool site_stacks; /* from_summary, its sites whole stacks */
    bool filtered;    /* opts narrowed the events */
    uint32_t size_hist[MK_HIST_BUCKETS];
    uint32_t life_hist[MK_HIST_BUCKETS];
    mk_timeline_bucket_t timeline[MK_TIMELINE];
    unsigned bucket_shift; /* a timeline bucket is 1 << bucket_shift wide (ns or lines) */
    uint32_t nbuckets;     /* buckets in use */
    /* One aggregate per stack seen, in order of first sight; found by id
     * through stack_index (key id + 1, a = index). Dense, so a damaged
     * trace's huge stack ids cost nothing. */
    mk_stack_agg_t *stacks;
    size_t nstacks, stacks_cap;
    mk_kv_table_t stack_index;
    uint32_t last_agg; /* the last aggregate agg_of found; UINT32_MAX: none */
    /* pairs of stacks whose blocks are allocated one after the other and
     * freed one after the other: key (older stack << 32 | younger) + 1,
     * a = times seen */
    mk_kv_table_t pairs;
    mk_profile_opts_t opts;
    /* private to profile.c */
    mk_live_table_t live; /* address -> index into blocks (profile.c) */
    mk_block_t *blocks;
    size_t blocks_cap, blocks_used;
    mk_kv_table_t wide;  /* a wide block's fields: key its record's index + 1,
                          * a = size, b = thread << 32 | aggregate */
    uint64_t free_block; /* head of the free list of block records, + 1 */
    /* One state per thread seen, found by thread number through thread_index
     * (key number + 1, a = index), as stacks are: a damaged trace's huge
     * thread numbers cost nothing. */
    mk_thread_state_t *thr;
    size_t nthr, thr_cap;
    mk_kv_table_t thread_index;
    uint32_t last_thread, last_thr; /* the last number thread_of found, and
                                     * its state's index; nthr == 0: none */
    struct mk_pending *pending;
    size_t npending, pending_cap;
    uint64_t tie_ns; /* two events closer than this may be in either order */
    uint64_t serial; /* allocations so far, all threads */
    uint64_t peak_epoch;
    bool oom;
    const mk_trace_t *tr; /* the trace replayed (NULL: a curl log) */
    bool met_trace;       /* meet_trace ran */
    uint64_t born_weight; /* the weight block_born gave its block */
} mk_profile_t;

/* The aggregate of a stack, made (zeroed) on its first use; NULL when
 * memory ran out. The replay's, and the merged report's. */
mk_stack_agg_t *mk_profile_agg(mk_profile_t *p, uint32_t stack);

/* Frees what only the replay needs (live blocks, thread states, the stack
 * index), keeping the totals, the per-stack aggregates (the report's site
 * rows point at them), histograms, timeline and pairs. */
void mk_profile_release_replay(mk_profile_t *p);

/* Frees what an aggregate (or a sum of them) holds: its histograms'
 * tables and its slices. */
void mk_agg_release(mk_stack_agg_t *a);

/* Starts an empty profile; opts may be NULL (everything counts). */
void mk_profile_init(mk_profile_t *p, const mk_profile_opts_t *opts);

/* Feeds one event; events come in time order. False when memory ran out
 * (the profile is then partial). */
bool mk_profile_event(mk_profile_t *p, const mk_event_t *ev);

/* Ends the input: what is live becomes leaked, totals are derived. */
void mk_profile_finish(mk_profile_t *p);
/* Has the trace the allocator's time: timed calls, or CPU samples
 * (MK_ONCPU_ENOUGH of them in all)? A profile of several processes is
 * judged as their sum. */
bool mk_profile_time_measured(const mk_profile_t *p);

/* Replays a trace into p (init'ed by the caller). Returns false only when
 * memory ran out; damage in the file is in tr->damage. */
bool mk_profile_build(mk_profile_t *p, mk_trace_t *tr);
void mk_profile_free(mk_profile_t *p);

/* The aggregate of a stack id, or NULL if it never allocated. */
static inline const mk_stack_agg_t *mk_profile_stack(const mk_profile_t *p, uint32_t id)
{
    const mk_kv_t *e = mk_kv_find(&p->stack_index, (uint64_t)id + 1);
    if (!e || (!p->stacks[e->a].calls && !p->stacks[e->a].leaked_blocks))
        return NULL;
    return &p->stacks[e->a];
}

#endif /* MEMKIT_ANALYZE_PROFILE_H */
