/*
 * report_json.c - the report as JSON, schema "memkit-report" version 1
 * (docs/report-json.md). Fields are only ever added within a version.
 */
#define _GNU_SOURCE
#include "json.h"
#include "report.h"

#include <stddef.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MK_REPORT_SCHEMA_VERSION 1

static void key_uint(mk_json *j, const char *k, uint64_t v)
{
    mk_json_key(j, k);
    mk_json_uint(j, v);
}

static void key_str(mk_json *j, const char *k, const char *v)
{
    mk_json_key(j, k);
    if (v)
        mk_json_string(j, v);
    else
        mk_json_null(j);
}

static void key_bool(mk_json *j, const char *k, bool v)
{
    mk_json_key(j, k);
    mk_json_bool(j, v);
}

/* The writer: the JSON report, or the HTML page's form of it (page_t). */
typedef struct page page_t;
typedef struct jout {
    mk_json j;    /* first: every function's mk_json * is its jout_t's */
    page_t *page; /* NULL: the JSON report */
} jout_t;

/* The page's form (mk_render_page_json): the same keys, but each frame once,
 * in "frame_table", and stacks as indices into it (a compiler's 5,000 stacks
 * of 20-30 frames repeat the same few thousand frames); rows below 0.1% of
 * every weight folded into one "other" row. */
struct page {
    mk_kv_table_t ids; /* hash of a frame -> a: its index + 1 */
    mk_frame_t *table;
    size_t n, cap;
};

static void frame_object(mk_json *j, const mk_frame_t *f)
{
    mk_json_begin_object(j);
    key_str(j, "function", f->function);
    key_str(j, "file", f->file);
    key_uint(j, "line", f->file ? (uint64_t)f->line : 0);
    key_str(j, "module", f->module);
    key_uint(j, "offset", f->module ? f->offset : 0);
    mk_json_end_object(j);
}

static uint64_t hash_s(const char *s)
{
    return s ? mk_hash_bytes(s, strlen(s)) : 0x2545f491;
}

static bool same_s(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

static bool same_frame(const mk_frame_t *a, const mk_frame_t *b)
{
    return a->line == b->line && a->offset == b->offset &&
           same_s(a->function, b->function) && same_s(a->file, b->file) &&
           same_s(a->module, b->module);
}

/* The frame's index in the page's table, added on first use (-1: out of
 * memory: the frame is written whole, which the page reads too). */
static long long frame_index(page_t *pg, const mk_frame_t *f)
{
    uint64_t h = (hash_s(f->function) * 31 + hash_s(f->file)) * 31 + hash_s(f->module);
    h = (h ^ (uint64_t)f->line * 0x9e3779b97f4a7c15ull ^
         f->offset * 0xbf58476d1ce4e5b9ull) |
        1;
    for (;; h = (h + 0x94d049bb133111ebull) | 1) { /* another frame there: probe on */
        bool fresh;
        mk_kv_t *e = mk_kv_put(&pg->ids, h, &fresh);
        if (!e)
            break;
        if (!fresh) {
            if (same_frame(&pg->table[e->a - 1], f))
                return (long long)e->a - 1;
            continue;
        }
        if (!mk_grow((void **)&pg->table, &pg->cap, pg->n + 1, sizeof *pg->table)) {
            mk_kv_remove(&pg->ids, e);
            break;
        }
        pg->table[pg->n] = *f; /* its strings are the report's: they outlive the page */
        e->a = ++pg->n;
        return (long long)pg->n - 1;
    }
    return -1;
}

static void frames(mk_json *j, mk_report_t *r, uint32_t stack)
{
    uint32_t depth;
    const mk_frame_t *f = mk_names_stack(r->names, stack, &depth);
    page_t *pg = ((jout_t *)j)->page;
    mk_json_begin_array(j);
    for (uint32_t i = 0; i < depth; i++) {
        long long k = pg ? frame_index(pg, &f[i]) : -1;
        if (k >= 0)
            mk_json_uint(j, (uint64_t)k);
        else
            frame_object(j, &f[i]);
    }
    mk_json_end_array(j);
}

static void hist(mk_json *j, const char *k, const uint32_t *h)
{
    int last = MK_HIST_BUCKETS - 1;
    while (last >= 0 && !h[last])
        last--;
    mk_json_key(j, k);
    mk_json_begin_array(j);
    for (int i = 0; i <= last; i++)
        mk_json_uint(j, h[i]);
    mk_json_end_array(j);
}

static void key_double(mk_json *j, const char *k, double v)
{
    mk_json_key(j, k);
    mk_json_double(j, v);
}

/* A measured time, or null where the trace has none. */
static void key_ns(mk_json *j, const char *k, bool measured, double ns)
{
    mk_json_key(j, k);
    if (measured)
        mk_json_double(j, ns);
    else
        mk_json_null(j);
}

static void agg_fields(mk_json *j, const mk_stack_agg_t *a, bool sampled, bool timed)
{
    key_uint(j, "calls", a->calls);
    key_uint(j, "bytes", a->bytes);
    key_ns(j, "allocator_ns", timed, a->alloc_ns);
    key_ns(j, "allocator_slow_ns", timed, a->slow_ns);
    if (sampled) { /* estimates, with one standard error each */
        key_bool(j, "estimated", true);
        key_uint(j, "samples", a->samples);
        key_double(j, "calls_se", sqrt(a->calls_var));
        key_double(j, "bytes_se", sqrt(a->bytes_var));
    }
    key_uint(j, "frees", a->frees);
    key_uint(j, "min_size", a->min_size);
    key_uint(j, "max_size", a->max_size);
    key_uint(j, "median_size", mk_agg_median_size(a));
    key_uint(j, "peak_bytes", a->peak_bytes);
    key_uint(j, "peak_blocks", a->peak_blocks);
    key_uint(j, "leaked_blocks", a->leaked_blocks);
    key_uint(j, "leaked_bytes", a->leaked_bytes);
    key_uint(j, "median_lifetime", mk_hist_median_of(&a->life_hist));
    key_uint(j, "temporaries", a->temporaries);
    key_uint(j, "tiny", a->tiny);
    key_uint(j, "lifo_frees", a->lifo_frees);
    key_uint(j, "fifo_frees", a->fifo_frees);
    key_uint(j, "cross_thread_frees", a->cross_thread);
    key_uint(j, "realloc_grows", a->realloc_grows);
    uint32_t counts[MK_HIST_BUCKETS];
    mk_hist_counts(&a->size_hist, counts);
    hist(j, "size_histogram", counts);
    mk_hist_counts(&a->life_hist, counts);
    hist(j, "lifetime_histogram", counts);
}

/* The profile's counters in "totals", in the schema's order. */
static const struct {
    const char *key;
    size_t at; /* offsetof a uint64_t of mk_profile_t */
} total_counters[] = {
#define C(key, field)                                                                    \
    {                                                                                    \
        key, offsetof(mk_profile_t, field)                                               \
    }
    C("mallocs", mallocs),
    C("reallocs", reallocs),
    C("callocs", callocs),
    C("strdups", strdups),
    C("wcsdups", wcsdups),
    C("frees", frees),
    C("allocations", allocations),
    C("max_allocated", max_allocated),
    C("total_allocated", total_allocated),
    C("allocation_calls", allocation_calls),
    C("news", news),
    C("deletes", deletes),
    C("aligned", aligned),
    C("peak_live_blocks", peak_blocks),
    C("peak_time", peak_time),
    C("leaked_blocks", live_blocks),
    C("leaked_bytes", live_bytes),
    C("temporaries", temporaries),
    C("tiny", tiny),
    C("free_null", free_null),
    C("free_unknown", free_unknown),
#undef C
};

static void totals(mk_json *j, mk_report_t *r)
{
    const mk_profile_t *p = &r->prof;
    mk_json_key(j, "totals");
    mk_json_begin_object(j);
    for (size_t i = 0; i < sizeof total_counters / sizeof *total_counters; i++)
        key_uint(
            j, total_counters[i].key,
            *(const uint64_t *)(const void *)((const char *)p + total_counters[i].at));
    /* The allocator's own time in the traced run (null: not measured:
     * older formats, --no-times, --summary-only without enough CPU
     * samples, curl logs). */
    bool timed = mk_profile_time_measured(p);
    key_ns(j, "allocator_ns", timed, p->alloc_ns);
    key_ns(j, "allocator_ns_unattributed", timed, p->alloc_ns_unattributed);
    key_uint(j, "allocator_timed_calls", p->timed_calls);
    /* How it was measured: the threads' CPU samples, or the timed calls. */
    mk_json_key(j, "allocator_time_from");
    if (p->alloc_from_samples && timed)
        mk_json_string(j, "cpu_samples");
    else if (p->timed && p->timed_calls)
        mk_json_string(j, "timed_calls");
    else
        mk_json_null(j);
    mk_json_key(j, "cpu_samples");
    if (p->oncpu_samples)
        mk_json_uint(j, p->oncpu_samples);
    else
        mk_json_null(j);
    mk_json_key(j, "allocator_samples");
    if (p->oncpu_samples)
        mk_json_uint(j, p->oncpu_alloc_samples);
    else
        mk_json_null(j);
    static const char *const sampling[] = {NULL, "refused", "user", "user_and_kernel"};
    mk_json_key(j, "cpu_sampling");
    if (p->cpu_sampling && p->cpu_sampling < sizeof sampling / sizeof *sampling)
        mk_json_string(j, sampling[p->cpu_sampling]);
    else
        mk_json_null(j);
    key_ns(j, "tracer_ns", p->oncpu_samples > 0, p->tracer_ns);
    /* The share is of the program's CPU time: the traced run's, less
     * memkit's own work where CPU samples measured it (tracer_ns). */
    key_ns(j, "cpu_ns", p->cpu_ns > 0, p->cpu_ns);
    mk_json_key(j, "allocator_share");
    if (timed && p->cpu_ns > 0)
        mk_json_double(j, p->alloc_ns / p->cpu_ns);
    else
        mk_json_null(j);
    key_ns(j, "allocator_slow_ns", p->timed, p->slow_ns);
    key_uint(j, "allocator_slow_calls", p->slow_calls);
    key_ns(j, "allocator_slow_bound_ns", p->timed && p->slow_bound_ns > 0,
           p->slow_bound_ns);
    /* Read calls switched out of the CPU, and of them those whose time was
     * dropped (the rest keep their time on the CPU); null: the tracer could
     * not see switches, and such calls keep their time off the CPU. */
    bool seen = p->timed && !p->switches_unseen;
    mk_json_key(j, "allocator_switched_calls");
    if (seen)
        mk_json_uint(j, p->switched_calls + p->switched_clocked);
    else
        mk_json_null(j);
    mk_json_key(j, "allocator_switched_dropped");
    if (seen)
        mk_json_uint(j, p->switched_calls);
    else
        mk_json_null(j);
    key_bool(j, "outside_malloc", r->outside[0] != 0);
    key_str(j, "outside_malloc_note", r->outside[0] ? r->outside : NULL);
    key_bool(j, "leaks_unknown", r->leaks_unknown);
    key_uint(j, "failed", p->failed);
    /* A sampled trace: the counts by kind (mallocs...frees, total_allocated)
     * are exact; the peak, leaks, temporaries and tiny are estimates. */
    key_bool(j, "estimated", p->sampled);
    if (r->nprocs > 1) { /* several traces merged */
        mk_json_key(j, "processes");
        mk_json_begin_array(j);
        for (size_t i = 0; i < r->nprocs; i++) {
            mk_json_begin_object(j);
            key_uint(j, "pid", r->procs[i].pid);
            key_str(j, "command", r->procs[i].command);
            key_str(j, "trace", r->procs[i].path);
            key_uint(j, "allocation_calls", r->procs[i].calls);
            key_uint(j, "peak_bytes", r->procs[i].peak_bytes);
            key_uint(j, "total_bytes", r->procs[i].total_bytes);
            mk_json_end_object(j);
        }
        mk_json_end_array(j);
    }
    if (r->kind == MK_INPUT_MEMDEBUG)
        key_uint(j, "sockets", r->md.sockets);
    mk_json_key(j, "allocations_per_second");
    if (r->duration_s > 0 && r->kind == MK_INPUT_TRACE)
        mk_json_double(j, (double)p->allocation_calls / r->duration_s);
    else
        mk_json_null(j);
    /* Always null: the program's I/O is not measured (trace/reader.h); the
     * key stays for readers of version 1. */
    mk_json_key(j, "allocations_per_mb_io");
    mk_json_null(j);
    mk_json_end_object(j);
}

static void input(mk_json *j, mk_report_t *r, int top)
{
    mk_json_key(j, "input");
    mk_json_begin_object(j);
    key_str(j, "path", r->path);
    key_str(j, "format", r->kind == MK_INPUT_TRACE ? "memkit-trace" : "curl-memdebug");
    key_str(j, "time_unit", r->time_unit);
    if (r->tr) {
        key_str(j, "command", r->tr->header.cmdline);
        key_str(j, "executable", r->tr->header.exe);
        key_uint(j, "pid", r->tr->header.pid);
        key_uint(j, "threads", r->prof.threads);
        mk_json_key(j, "duration_s");
        mk_json_double(j, r->duration_s);
        mk_json_key(j, "time_resolution_ns");
        mk_json_double(j, mk_report_time_resolution_ns(r));
        mk_json_key(j, "summary_only");
        mk_json_bool(j, r->prof.from_summary);
        mk_json_key(j, "sampling");
        if (r->prof.sampled) {
            const mk_trace_sampling_t *s = &r->tr->sampling;
            mk_json_begin_object(j);
            key_uint(j, "mean_bytes", r->prof.sample_mean);
            key_uint(j, "seed", s->seed);
            key_uint(j, "samples", r->prof.events);
            key_uint(j, "snapshots", s->nsnapshots);
            mk_json_end_object(j);
        } else {
            mk_json_null(j);
        }
        if (r->tr->end.present) {
            key_uint(j, "max_rss_kb", r->tr->end.maxrss_kb);
            key_uint(j, "minor_faults", r->tr->end.minflt);
            key_uint(j, "major_faults", r->tr->end.majflt);
        }
        mk_json_key(j, "glibc_heap");
        if (r->tr->end.has_heap_view) {
            const mk_trace_end_t *e = &r->tr->end;
            mk_json_begin_object(j);
            key_uint(j, "arena_bytes", e->glibc_arena);
            key_uint(j, "in_use_bytes", e->glibc_in_use);
            key_uint(j, "free_bytes", e->glibc_free);
            key_uint(j, "mmapped_bytes", e->glibc_mmapped);
            key_uint(j, "heap_rss_bytes", e->heap_rss);
            mk_json_end_object(j);
        } else {
            mk_json_null(j);
        }
    } else {
        key_uint(j, "lines", r->md.lines);
        key_uint(j, "unrecognized_lines", r->md.unrecognized);
    }
    mk_json_key(j, "partial");
    mk_json_bool(j, r->partial);
    key_str(j, "problem", r->problem[0] ? r->problem : NULL);
    /* modules the sites' frames show as offsets, and what would name them */
    mk_unsymbolized_t u[8];
    size_t nu = mk_report_unsymbolized(r, top > 0 ? (size_t)top : r->nsites, u, 8);
    mk_json_key(j, "unsymbolized_modules");
    mk_json_begin_array(j);
    for (size_t i = 0; i < nu; i++) {
        char debug[256];
        mk_json_begin_object(j);
        key_str(j, "module", u[i].module);
        key_str(j, "path", u[i].path);
        key_str(j, "build_id", u[i].build_id[0] ? u[i].build_id : NULL);
        key_str(j, "debug_file",
                mk_debug_file_of(&u[i], debug, sizeof debug)[0] ? debug : NULL);
        key_uint(j, "frames", u[i].frames);
        mk_json_end_object(j);
    }
    mk_json_end_array(j);
    mk_json_key(j, "filter");
    mk_json_begin_object(j);
    key_str(j, "module", r->opts.module);
    key_str(j, "function", r->opts.function);
    key_str(j, "file", r->opts.file);
    mk_json_key(j, "thread");
    if (r->opts.thread >= 0)
        mk_json_uint(j, (uint64_t)r->opts.thread);
    else
        mk_json_null(j);
    mk_json_key(j, "from_s");
    mk_json_double(j, r->opts.from_s);
    mk_json_key(j, "to_s");
    mk_json_double(j, r->opts.to_s);
    mk_json_end_object(j);
    mk_json_end_object(j);
}

/* The slices a profile's timeline has used (0: no slices kept). */
static uint32_t slices_used(const mk_report_t *r)
{
    return r->prof.opts.slices ? (r->prof.nbuckets + MK_SLICE_WIDTH - 1) / MK_SLICE_WIDTH
                               : 0;
}

/* The page's "slices": [calls, bytes, allocator ns] per time slice, each
 * an array of n. */
static void row_slices(mk_json *j, const mk_stack_agg_t *a, uint32_t n)
{
    mk_json_key(j, "slices");
    mk_json_begin_array(j);
    for (int f = 0; f < MK_SLICE_FIELDS; f++) {
        mk_json_begin_array(j);
        for (uint32_t i = 0; i < n; i++)
            mk_json_uint(j, (uint64_t)(mk_slices_get(&a->slices, (int)i, f) + 0.5));
        mk_json_end_array(j);
    }
    mk_json_end_array(j);
}

/* Does a row hold at least 0.1% of one of the page's weights (calls,
 * bytes, allocator time, at the peak, leaked) of all rows'? */
static bool page_worthy(const mk_stack_agg_t *a, const mk_stack_agg_t *all)
{
    return a->calls * 1000 >= all->calls && all->calls                ? true
           : a->bytes * 1000 >= all->bytes && all->bytes              ? true
           : a->alloc_ns * 1000 >= all->alloc_ns && all->alloc_ns > 0 ? true
           : a->peak_bytes * 1000 >= all->peak_bytes && all->peak_bytes
               ? true
               : a->leaked_bytes * 1000 >= all->leaked_bytes && all->leaked_bytes;
}

static void rows(mk_json *j, mk_report_t *r, const char *k, const mk_row_t *rw, size_t n,
                 int top)
{
    page_t *pg = ((jout_t *)j)->page;
    mk_stack_agg_t all = {0}, other = {0};
    size_t folded = 0;
    for (size_t i = 0; pg && i < n; i++)
        mk_agg_add(&all, rw[i].agg);
    mk_json_key(j, k);
    mk_json_begin_array(j);
    for (size_t i = 0; i < n && (pg || top <= 0 || i < (size_t)top); i++) {
        if (pg && ((top > 0 && i >= (size_t)top) || !page_worthy(rw[i].agg, &all))) {
            mk_agg_add(&other, rw[i].agg);
            folded++;
            continue;
        }
        mk_json_begin_object(j);
        if (rw[i].name)
            key_str(j, "name", rw[i].name);
        key_uint(j, "stack", rw[i].stack);
        if (!rw[i].name) {
            mk_json_key(j, "frames");
            frames(j, r, rw[i].stack);
        }
        agg_fields(j, rw[i].agg, r->prof.sampled, r->prof.site_times);
        if (pg && slices_used(r))
            row_slices(j, rw[i].agg, slices_used(r));
        mk_json_end_object(j);
    }
    if (folded) { /* the page's "other": one row, named, without frames */
        char name[96];
        snprintf(name, sizeof name, "other: %zu %s under 0.1%% of every weight", folded,
                 strcmp(k, "sites") == 0 ? "sites" : k);
        mk_json_begin_object(j);
        key_str(j, "name", name);
        key_uint(j, "other", folded);
        key_uint(j, "stack", 0);
        mk_json_key(j, "frames");
        mk_json_begin_array(j);
        mk_json_end_array(j);
        agg_fields(j, &other, r->prof.sampled, r->prof.site_times);
        if (slices_used(r))
            row_slices(j, &other, slices_used(r));
        mk_json_end_object(j);
    }
    mk_json_end_array(j);
    mk_agg_release(&all); /* the sums' histograms may have spilled */
    mk_agg_release(&other);
}

/* "key": {"stack": id, "frames": [...]} */
static void site(mk_json *j, const char *key, mk_report_t *r, uint32_t stack)
{
    mk_json_key(j, key);
    mk_json_begin_object(j);
    key_uint(j, "stack", stack);
    mk_json_key(j, "frames");
    frames(j, r, stack);
    mk_json_end_object(j);
}

static void findings(mk_json *j, mk_report_t *r)
{
    mk_json_key(j, "findings");
    mk_json_begin_array(j);
    for (size_t i = 0; i < r->nfindings; i++) {
        const mk_finding_t *f = &r->findings[i];
        mk_json_begin_object(j);
        key_str(j, "kind", mk_finding_name(f->kind));
        site(j, "site", r, f->stack);
        if (f->kind == MK_F_PAIRED)
            site(j, "site2", r, f->stack2);
        key_uint(j, "count", f->count);
        key_uint(j, "removable", f->removable);
        key_ns(j, "allocator_ns", r->prof.site_times, f->alloc_ns);
        mk_json_key(j, "estimated_saving_ns");
        mk_json_double(j, f->saving_ns);
        key_str(j, "saving_from", f->priced ? "price" : "measured");
        key_str(j, "evidence", f->evidence);
        key_str(j, "fix", f->fix);
        mk_json_key(j, "replayed"); /* memkit report --replay / --what-if */
        if (f->replayed) {
            mk_json_begin_object(j);
            mk_json_key(j, "saving_ns");
            mk_json_double(j, f->replay_saving_ns);
            mk_json_key(j, "fix_ns");
            mk_json_double(j, f->replay_fix_ns);
            mk_json_key(j, "calls_removed");
            mk_json_double(j, f->replay_calls_removed);
            mk_json_key(j, "beyond_noise");
            mk_json_bool(j, f->replay_beyond_noise);
            mk_json_end_object(j);
        } else {
            mk_json_null(j);
        }
        /* one fix: the stacks that reach its site, the busiest first */
        key_uint(j, "stack_count", f->nstacks);
        key_uint(j, "priced_stacks", f->npriced);
        mk_json_key(j, "other_sites");
        mk_json_begin_array(j);
        for (uint32_t k = 1; k < f->nstacks && k < MK_FINDING_STACKS; k++) {
            mk_json_begin_object(j);
            key_uint(j, "stack", f->stacks[k]);
            mk_json_key(j, "frames");
            frames(j, r, f->stacks[k]);
            mk_json_end_object(j);
        }
        mk_json_end_array(j);
        mk_json_end_object(j);
    }
    mk_json_end_array(j);
    /* how many the text and the page show (--findings) */
    key_uint(j, "findings_shown", mk_findings_shown(r, r->opts.findings_shown));
}

static void timeline(mk_json *j, const mk_report_t *r)
{
    const mk_profile_t *p = &r->prof;
    mk_json_key(j, "timeline");
    mk_json_begin_object(j);
    key_uint(j, "bucket", 1ull << p->bucket_shift);
    if (((jout_t *)j)->page && slices_used(r)) { /* the page's ranges: rows' "slices" */
        key_uint(j, "slice", (1ull << p->bucket_shift) * MK_SLICE_WIDTH);
        key_uint(j, "slices", slices_used(r));
    }
    mk_json_key(j, "buckets");
    mk_json_begin_array(j);
    for (uint32_t i = 0; i < p->nbuckets; i++) {
        const mk_timeline_bucket_t *b = &p->timeline[i];
        mk_json_begin_array(
            j); /* compact: [allocs, bytes, max_live, end_live, max_blocks] */
        mk_json_uint(j, b->allocs);
        mk_json_uint(j, b->bytes);
        mk_json_uint(j, b->max_live);
        mk_json_uint(j, b->end_live);
        mk_json_uint(j, b->max_blocks);
        mk_json_end_array(j);
    }
    mk_json_end_array(j);
    mk_json_end_object(j);
}

/* "growth": null, or its points and the growing sites, fastest first, each
 * with its live bytes at every point. */
static void growth(mk_json *j, mk_report_t *r, int top)
{
    const mk_growth_t *g = &r->prof.growth;
    mk_json_key(j, "growth");
    /* the page: only what the trace's snapshots show, or --growth asks for
     * (a compiler's eight even points were 18 MB of its 50) */
    page_t *pg = ((jout_t *)j)->page;
    if (g->n < 2 || (pg && !g->snapshots && !r->opts.growth_asked)) {
        mk_json_null(j);
        return;
    }
    mk_json_begin_object(j);
    key_bool(j, "snapshots", g->snapshots);
    key_bool(j, "estimated", r->prof.sampled);
    mk_json_key(j, "points_ns");
    mk_json_begin_array(j);
    for (size_t i = 0; i < g->n; i++)
        mk_json_uint(j, g->times[i]);
    mk_json_end_array(j);
    mk_growth_row_t *rows;
    size_t n = mk_report_growth(r, &rows);
    mk_json_key(j, "sites");
    mk_json_begin_array(j);
    for (size_t i = 0; i < n && (top <= 0 || i < (size_t)top); i++) {
        mk_json_begin_object(j);
        key_uint(j, "stack", rows[i].stack);
        mk_json_key(j, "frames");
        frames(j, r, rows[i].stack);
        key_double(j, "bytes_per_s", rows[i].slope);
        key_uint(j, "rises", rows[i].rises);
        mk_json_key(j, "live_bytes");
        mk_json_begin_array(j);
        for (size_t k = 0; k < g->n; k++)
            mk_json_uint(j, rows[i].row->agg->growth[k]);
        mk_json_end_array(j);
        mk_json_end_object(j);
    }
    mk_json_end_array(j);
    free(rows);
    mk_json_end_object(j);
}

/* The allocator's time by calling function (mk_caller_t), most first. */
static void callers(mk_json *j, const mk_report_t *r, int top)
{
    mk_json_key(j, "callers");
    mk_json_begin_array(j);
    for (size_t i = 0; i < r->ncallers && (top <= 0 || i < (size_t)top); i++) {
        mk_json_begin_object(j);
        key_str(j, "function", r->callers[i].name);
        key_ns(j, "allocator_ns", true, r->callers[i].ns);
        key_ns(j, "allocator_slow_ns", true, r->callers[i].slow_ns);
        mk_json_end_object(j);
    }
    mk_json_end_array(j);
}

/* The answer first (mk_report_answer); null for inputs without one. */
static void answer(mk_json *j, mk_report_t *r)
{
    mk_answer_t a;
    mk_report_answer(r, &a);
    mk_json_key(j, "answer");
    if (!a.present) {
        mk_json_null(j);
        return;
    }
    mk_json_begin_object(j);
    key_ns(j, "allocator_ns", true, a.ns);
    key_bool(j, "measured", a.measured);
    key_ns(j, "price_ns", !a.measured, a.price_ns);
    key_ns(j, "cpu_ns", a.cpu_ns > 0, a.cpu_ns);
    mk_json_key(j, "share");
    if (a.cpu_ns > 0)
        mk_json_double(j, a.ns / a.cpu_ns);
    else
        mk_json_null(j);
    key_str(j, "verdict", a.verdict);
    key_str(j, "where_by", a.by_time ? "allocator_time" : "calls");
    mk_json_key(j, "where");
    mk_json_begin_array(j);
    for (size_t i = 0; i < a.nwhere; i++) {
        mk_json_begin_object(j);
        key_str(j, "name", a.where[i].name);
        mk_json_key(j, "share");
        mk_json_double(j, a.where[i].share);
        mk_json_end_object(j);
    }
    mk_json_end_array(j);
    mk_json_key(j, "first_fix"); /* an index into findings */
    if (a.first_fix)
        mk_json_uint(j, (uint64_t)(a.first_fix - r->findings));
    else
        mk_json_null(j);
    mk_json_end_object(j);
}

static void render(mk_report_t *r, FILE *out, int top, page_t *pg)
{
    jout_t o = {.j = {.out = out}, .page = pg};
    mk_json *j = &o.j;
    mk_json_begin_object(j);
    key_str(j, "schema", "memkit-report");
    key_uint(j, "version", MK_REPORT_SCHEMA_VERSION);
    input(j, r, top);
    answer(j, r);
    totals(j, r);
    mk_json_key(j, "malloc_free_ns");
    mk_json_double(j, mk_report_cost_ns(r));
    mk_json_key(j, "histograms");
    mk_json_begin_object(j);
    hist(j, "size", r->prof.size_hist);
    hist(j, "lifetime", r->prof.life_hist);
    mk_json_end_object(j);
    timeline(j, r);
    callers(j, r, top);
    rows(j, r, "sites", r->sites, r->nsites, top);
    rows(j, r, "functions", r->functions, r->nfunctions, top);
    rows(j, r, "lines", r->lines, r->nlines, top);
    findings(j, r);
    growth(j, r, top);
    if (pg) { /* every frame the stacks above name, by index */
        mk_json_key(j, "frame_table");
        mk_json_begin_array(j);
        for (size_t i = 0; i < pg->n; i++)
            frame_object(j, &pg->table[i]);
        mk_json_end_array(j);
    }
    mk_json_end_object(j);
}

void mk_render_json(mk_report_t *r, FILE *out, int top)
{
    render(r, out, top, NULL);
}

void mk_render_page_json(mk_report_t *r, FILE *out, int top)
{
    page_t pg = {.ids = mk_kv_heap_table()};
    render(r, out, top, &pg);
    free(pg.ids.slots);
    free(pg.table);
}
