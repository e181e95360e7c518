/*
 * profile.h - the analysis core: replay a trace's events in time order into
 * totals, per-stack aggregates, the peak and what is live at exit.
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

typedef struct mk_stack_agg {
    uint32_t stack;
    uint64_t calls, bytes; /* allocating calls from this stack */
    uint64_t leaked_blocks, leaked_bytes;
} mk_stack_agg_t;

typedef struct mk_profile {
    uint64_t calls[MK_K_COUNT]; /* every recorded call, by kind */
    uint64_t bytes[MK_K_COUNT]; /* requested bytes, by kind */
    /* memanalyze's numbers */
    uint64_t mallocs, reallocs, callocs, strdups, wcsdups, frees, allocations;
    uint64_t max_allocated, total_allocated;
    /* memkit's own */
    uint64_t news, deletes, aligned, allocation_calls;
    uint64_t live_bytes, live_blocks, peak_blocks;
    uint64_t free_null, free_unknown, failed;
    uint64_t events, threads;
    bool from_summary;      /* a --summary-only trace: no per-event data */
    mk_stack_agg_t *stacks; /* indexed by stack id; sparse */
    size_t stacks_cap;
    /* the address table: live blocks during the replay (key address,
     * a = size, b = stack id) */
    mk_kv_table_t live;
    /* frees of blocks not live yet, waiting a moment for their allocation
     * (another thread's, in the same clock tick) */
    struct mk_pending *pending;
    size_t npending, pending_cap;
    uint64_t tie_ns; /* two events closer than this may be in either order */
} mk_profile_t;

/* Replays the trace into p (zeroed by the caller). Returns false only when
 * memory ran out; damage in the file is in tr->damage. */
bool mk_profile_build(mk_profile_t *p, mk_trace_t *tr);
void mk_profile_free(mk_profile_t *p);

/* A call site: the innermost frame of the stacks that allocate there. */
typedef struct mk_site {
    uint64_t pc; /* return address into the allocating function */
    uint64_t calls, bytes, leaked_blocks, leaked_bytes;
    uint32_t example_stack; /* the busiest stack through this site */
} mk_site_t;

/* Sites sorted by calls, most first. Caller frees *out. */
size_t mk_profile_sites(const mk_profile_t *p, const mk_trace_t *tr, mk_site_t **out);

#endif /* MEMKIT_ANALYZE_PROFILE_H */
