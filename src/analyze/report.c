/*
 * report.c - load an input (trace or curl log), filter it, roll its stacks
 * up into sites, functions and lines, and find what is worth fixing.
 */
#define _GNU_SOURCE
#include "report.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Why a trace has no end record: the ways a process ends unseen by the
 * tracer, or the one its parent saw (o->wait_known), in buf. */
static const char *no_end_why(const mk_report_opts_t *o, char *buf, size_t len)
{
    if (o->wait_known && WIFSIGNALED(o->wait_status))
        snprintf(buf, len, "the process was killed by signal %d (%s)",
                 WTERMSIG(o->wait_status), strsignal(WTERMSIG(o->wait_status)));
    else if (o->wait_known && WIFEXITED(o->wait_status))
        snprintf(buf, len,
                 "the process exited with status %d, through an exit_group system call "
                 "made without libc (as Go programs end)",
                 WEXITSTATUS(o->wait_status));
    else
        snprintf(buf, len,
                 "the process was killed (SIGKILL), ended through an exit_group "
                 "system call made without libc (as Go programs end), or is "
                 "still running");
    return buf;
}

void mk_report_opts_default(mk_report_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->thread = -1;
    o->pid = -1;
    o->min_count = 100;
}

/* ---- filters ---- */

typedef struct filter {
    mk_report_t *r;
    mk_kv_table_t memo; /* stack id + 1 -> a: 1 passes, 2 does not */
} filter_t;

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0 && (n == m || s[n - m - 1] == '/');
}

static bool module_matches(const char *module, const char *want)
{
    /* "libcurl.so" matches libcurl.so.4.8.0 */
    size_t m = strlen(want);
    return module && strncmp(module, want, m) == 0 &&
           (module[m] == 0 || module[m] == '.');
}

static bool stack_matches(mk_report_t *r, uint32_t stack)
{
    uint32_t depth;
    const mk_frame_t *f = mk_names_stack(r->names, stack, &depth);
    const mk_report_opts_t *o = &r->opts;
    if (o->module && (!depth || !module_matches(f[0].module, o->module)))
        return false;
    bool fn = !o->function, file = !o->file;
    for (uint32_t i = 0; i < depth && !(fn && file); i++) {
        if (!fn && f[i].function && strcmp(f[i].function, o->function) == 0)
            fn = true;
        if (!file && f[i].file && ends_with(f[i].file, o->file))
            file = true;
    }
    return fn && file;
}

static bool filter_stack(void *ctx, uint32_t stack)
{
    filter_t *f = ctx;
    bool fresh;
    mk_kv_t *e = mk_kv_put(&f->memo, (uint64_t)stack + 1, &fresh);
    if (!e)
        return stack_matches(f->r, stack);
    if (fresh)
        e->a = stack_matches(f->r, stack) ? 1 : 2;
    return e->a == 1;
}

/* ---- rows ---- */

void mk_agg_add(mk_stack_agg_t *d, const mk_stack_agg_t *s)
{
    if (s->calls && (!d->calls || s->min_size < d->min_size))
        d->min_size = s->min_size;
    if (s->max_size > d->max_size)
        d->max_size = s->max_size;
    d->calls += s->calls;
    d->bytes += s->bytes;
    d->frees += s->frees;
    d->tiny += s->tiny;
    d->max_live_blocks += s->max_live_blocks; /* an upper bound for a sum */
    d->peak_bytes += s->peak_bytes;
    d->peak_blocks += s->peak_blocks;
    d->leaked_blocks += s->leaked_blocks;
    d->leaked_bytes += s->leaked_bytes;
    d->lifetime_ns += s->lifetime_ns;
    d->temporaries += s->temporaries;
    d->lifo_frees += s->lifo_frees;
    d->fifo_frees += s->fifo_frees;
    d->ordered_frees += s->ordered_frees;
    d->cross_thread += s->cross_thread;
    d->realloc_grows += s->realloc_grows;
    d->realloc_steps += s->realloc_steps;
    d->samples += s->samples;
    d->alloc_ns += s->alloc_ns;
    d->slow_ns += s->slow_ns;
    d->call_ns += s->call_ns;
    d->call_slow_ns += s->call_slow_ns;
    d->calls_var += s->calls_var; /* sites' estimates are independent */
    d->bytes_var += s->bytes_var;
    mk_hist_merge(&d->size_hist, &s->size_hist);
    mk_hist_merge(&d->life_hist, &s->life_hist);
    mk_slices_add(&d->slices, &s->slices); /* out of memory: the page's ranges miss it */
}

/* The roll-ups' sums (one per row) and what each holds. */
static void free_sums(mk_stack_agg_t *sums, size_t n)
{
    for (size_t i = 0; sums && i < n; i++)
        mk_agg_release(&sums[i]);
    free(sums);
}

enum mk_sort mk_report_sort_of(const mk_report_t *r)
{
    int s = r->opts.sort;
    if (s == MK_SORT_DEFAULT || (s == MK_SORT_TIME && !r->prof.site_times))
        return r->prof.site_times ? MK_SORT_TIME : MK_SORT_CALLS;
    return (enum mk_sort)s;
}

double mk_report_time_resolution_ns(const mk_report_t *r)
{
    return r->kind == MK_INPUT_TRACE && r->tr ? r->tr->ns_per_tick : 0;
}

/* What a share of the run's CPU is worth: below 1% no change pays for the
 * day it takes. */
static const char *verdict_of(double share)
{
    return share < 0.01   ? "not worth a change (under 1% of the run)"
           : share < 0.05 ? "a small gain at most"
           : share < 0.20 ? "worth a look"
                          : "worth a change";
}

void mk_report_answer(mk_report_t *r, mk_answer_t *a)
{
    const mk_profile_t *p = &r->prof;
    memset(a, 0, sizeof *a);
    if (r->kind != MK_INPUT_TRACE || !p->allocation_calls)
        return;
    a->present = true;
    a->measured = mk_profile_time_measured(p) &&
                  (p->alloc_from_samples || (p->timed_calls && p->alloc_ns > 0));
    a->from_samples = a->measured && p->alloc_from_samples;
    if (!a->measured)
        a->price_ns = mk_report_cost_ns(r);
    a->ns = a->measured ? p->alloc_ns : (double)p->allocation_calls * a->price_ns;
    a->cpu_ns = p->cpu_ns > 0 ? (double)p->cpu_ns : 0;
    a->verdict = a->cpu_ns > 0 ? verdict_of(a->ns / a->cpu_ns) : NULL;
    /* where the allocator's time goes as a profiler's call graph charges it
     * (frees to the freeing function); without times, the calls */
    if (r->ncallers && p->alloc_ns > 0) {
        a->by_time = true;
        for (size_t i = 0; i < r->ncallers && a->nwhere < 3; i++, a->nwhere++) {
            snprintf(a->where[i].name, sizeof a->where[i].name, "%s", r->callers[i].name);
            a->where[i].share = r->callers[i].ns / p->alloc_ns;
        }
    } else {
        const mk_row_t *rows = r->nfunctions ? r->functions : r->sites;
        size_t n = r->nfunctions ? r->nfunctions : r->nsites;
        /* rows that read the same (a summary's calling instructions on one
         * line) are one place to the reader: their shares add up, over the
         * rows up to the third place (each label may symbolize a module:
         * labelling more cost a short run's summary 20 ms) */
        for (size_t i = 0; i < n && a->nwhere < 3; i++) {
            char buf[sizeof a->where[0].name];
            /* the label is buf, or the row's own name */
            const char *name = mk_row_label(r, &rows[i], buf, sizeof buf);
            size_t k = 0;
            while (k < a->nwhere && strcmp(a->where[k].name, name) != 0)
                k++;
            if (k == a->nwhere) {
                snprintf(a->where[k].name, sizeof a->where[k].name, "%s", name);
                a->nwhere++;
            }
            a->where[k].share += (double)rows[i].calls / (double)p->allocation_calls;
        }
    }
    a->first_fix = r->nfindings ? &r->findings[0] : NULL;
}

/* Its path and build-id, from the trace's module map. */
static void module_facts(const mk_report_t *r, mk_unsymbolized_t *u)
{
    for (size_t i = r->tr->nmodules; i-- > 0;) {
        const mk_module_t *m = &r->tr->modules[i];
        if (!m->name || strcmp(m->name, u->module) != 0)
            continue;
        u->path = m->path;
        for (size_t b = 0; b < m->build_id_len && 2 * b + 2 < sizeof u->build_id; b++)
            snprintf(u->build_id + 2 * b, 3, "%02x", m->build_id[b]);
        return;
    }
}

static int by_frames(const void *x, const void *y)
{
    const mk_unsymbolized_t *a = x, *b = y;
    return a->frames != b->frames ? (a->frames < b->frames ? 1 : -1)
                                  : strcmp(a->module, b->module);
}

size_t mk_report_unsymbolized(mk_report_t *r, size_t top, mk_unsymbolized_t *out,
                              size_t max)
{
    size_t n = 0;
    if (r->kind != MK_INPUT_TRACE || !r->tr || !r->names || r->opts.no_symbols)
        return 0;
    for (size_t i = 0; i < r->nsites && i < top; i++) {
        uint32_t depth = 0;
        const mk_frame_t *f = mk_names_stack(r->names, r->sites[i].stack, &depth);
        for (uint32_t k = 0; f && k < depth; k++) {
            if (f[k].function || !f[k].module)
                continue;
            size_t j = 0;
            while (j < n && strcmp(out[j].module, f[k].module) != 0)
                j++;
            if (j == n) {
                if (n == max)
                    continue;
                out[n] = (mk_unsymbolized_t){.module = f[k].module};
                module_facts(r, &out[n]);
                n++;
            }
            out[j].frames++;
        }
    }
    qsort(out, n, sizeof *out, by_frames);
    return n;
}

const char *mk_debug_file_of(const mk_unsymbolized_t *u, char *buf, size_t len)
{
    if (strlen(u->build_id) < 4)
        snprintf(buf, len, "%s", "");
    else
        snprintf(buf, len, "/usr/lib/debug/.build-id/%.2s/%s.debug", u->build_id,
                 u->build_id + 2);
    return buf;
}

const char *mk_report_sort_title(const mk_report_t *r)
{
    switch (mk_report_sort_of(r)) {
    case MK_SORT_TIME:
        return "allocator time";
    case MK_SORT_BYTES:
        return "bytes";
    case MK_SORT_PEAK:
        return "bytes at peak";
    default:
        return "allocations";
    }
}

/* Most first by the key, then by calls and bytes, then the older stack. */
static int by_key(const void *a, const void *b)
{
    const mk_row_t *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? 1 : -1;
    if (x->calls != y->calls)
        return x->calls < y->calls ? 1 : -1;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? 1 : -1;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

/* Rows in the report's order (mk_report_sort_of), most first; their sort
 * keys copied from their aggregates, which are final by now. */
static void sort_rows(const mk_report_t *r, mk_row_t *rows, size_t n)
{
    enum mk_sort by = mk_report_sort_of(r);
    for (size_t i = 0; i < n; i++) {
        const mk_stack_agg_t *a = rows[i].agg;
        rows[i].calls = a->calls;
        rows[i].bytes = a->bytes;
        rows[i].key = by == MK_SORT_TIME    ? a->alloc_ns
                      : by == MK_SORT_BYTES ? (double)a->bytes
                      : by == MK_SORT_PEAK  ? (double)a->peak_bytes
                                            : (double)a->calls;
    }
    if (n)
        qsort(rows, n, sizeof *rows, by_key);
}

const char *mk_report_rollup_name(mk_report_t *r, uint32_t stack, bool by_line, char *buf,
                                  size_t cap)
{
    mk_frame_t innermost;
    const mk_frame_t *f = &innermost;
    if (!mk_names_innermost(r->names, stack, &innermost))
        return "(no stack)";
    if (by_line && f->file) {
        snprintf(buf, cap, "%s:%d", f->file, f->line);
        return buf;
    }
    if (!by_line && f->function)
        return f->function;
    return mk_frame_label(f, buf, cap);
}

/* Rolls the stack rows up by name into *out (names are copied, freed with
 * the rows). Rows are found by the name's hash; a hash shared by two names
 * falls back to a search. With row_of_site, also which row each site joins
 * (allocated; NULL when out of memory). */
static size_t rollup(mk_report_t *r, bool by_line, mk_row_t **out,
                     mk_stack_agg_t **sums_out, uint32_t **row_of_site)
{
    mk_kv_table_t index = mk_kv_heap_table();
    /* At most a row per site: room for that much, touched only as rows come
     * (a sum is zeroed when its row is made), so the untouched rest costs
     * address space, not memory. */
    size_t room = r->nsites ? r->nsites : 1;
    mk_row_t *rows = malloc(room * sizeof *rows);
    mk_stack_agg_t *sums = malloc(room * sizeof *sums); /* rows[j]'s, until the sort */
    uint32_t *joined = row_of_site ? malloc(room * sizeof *joined) : NULL;
    for (size_t i = 0; joined && i < r->nsites; i++)
        joined[i] = UINT32_MAX; /* none, past a failure below */
    size_t n = 0;
    *out = NULL;
    *sums_out = NULL;
    if (row_of_site)
        *row_of_site = NULL;
    if (!rows || !sums) {
        free(rows);
        free(sums);
        free(joined);
        return 0;
    }
    for (size_t i = 0; i < r->nsites; i++) {
        char buf[1024];
        const char *name =
            mk_report_rollup_name(r, r->sites[i].stack, by_line, buf, sizeof buf);
        bool fresh;
        mk_kv_t *e = mk_kv_put(&index, mk_hash_bytes(name, strlen(name)) | 1, &fresh);
        if (!e)
            break;
        size_t j = n;
        if (!fresh && strcmp(rows[e->a].name, name) == 0)
            j = e->a;
        else if (!fresh)
            for (j = 0; j < n && strcmp(rows[j].name, name) != 0; j++)
                ;
        if (j == n) {
            char *copy = strdup(name);
            if (!copy)
                break;
            rows[n] = (mk_row_t){.stack = r->sites[i].stack, .name = copy};
            memset(&sums[n], 0, sizeof sums[n]);
            if (fresh)
                e->a = n;
            n++;
        }
        mk_agg_add(&sums[j], r->sites[i].agg);
        if (joined)
            joined[i] = (uint32_t)j;
    }
    free(index.slots);
    for (size_t j = 0; j < n; j++) /* sums has stopped moving */
        rows[j].agg = &sums[j];
    sort_rows(r, rows, n);
    if (joined) { /* rows moved in the sort: each keeps its sum, found by it */
        uint32_t *moved_to = malloc((n ? n : 1) * sizeof *moved_to);
        for (size_t k = 0; moved_to && k < n; k++)
            moved_to[rows[k].agg - sums] = (uint32_t)k;
        for (size_t i = 0; moved_to && i < r->nsites; i++)
            if (joined[i] != UINT32_MAX)
                joined[i] = moved_to[joined[i]];
        if (!moved_to) {
            free(joined);
            joined = NULL;
        }
        free(moved_to);
        *row_of_site = joined;
    }
    *out = rows;
    *sums_out = sums;
    return n;
}

static bool build_rows(mk_report_t *r)
{
    mk_profile_t *p = &r->prof;
    size_t want = 0;
    for (size_t i = 0; i < p->nstacks; i++)
        want += p->stacks[i].calls || p->stacks[i].leaked_blocks;
    r->sites = want ? calloc(want, sizeof *r->sites) : NULL; /* exact: rows are large */
    if (want && !r->sites)
        return false;
    for (size_t i = 0; i < p->nstacks; i++) {
        mk_stack_agg_t *a = &p->stacks[i];
        if (!a->calls && !a->leaked_blocks)
            continue;
        mk_row_t *row = &r->sites[r->nsites++];
        row->stack = a->stack;
        row->agg = a;
    }
    sort_rows(r, r->sites, r->nsites);
    /* The summary at the end of memkit trace (summary_first) shows sites by
     * line only: the roll-up by function is the full report's. */
    if (!r->opts.summary_first)
        r->nfunctions = rollup(r, false, &r->functions, &r->function_aggs, NULL);
    r->nlines = rollup(r, true, &r->lines, &r->line_aggs, &r->line_of_site);
    return true;
}

/* ---- loading ---- */

/* Says when the counts miss what the program allocates: its own malloc or
 * free ahead of memkit's (the trace's NOTES), or frees of unseen blocks
 * outnumbering the seen ones (an allocator memkit's hooks never reach). */
static void note_outside_malloc(mk_report_t *r)
{
    const mk_trace_t *tr = r->tr;
    const mk_profile_t *p = &r->prof;
    if (tr->shadowed & (MK_SHADOWED_MALLOC | MK_SHADOWED_FREE | MK_SHADOWED_NEW)) {
        snprintf(r->outside, sizeof r->outside,
                 "this program allocates mostly outside malloc: %s defines %s itself, "
                 "ahead of memkit's, so those calls are not seen; the counts cover what "
                 "reached memkit (libc's strdup, for one)",
                 tr->shadowed_by,
                 tr->shadowed & MK_SHADOWED_MALLOC ? "malloc/free"
                                                   : "operator new/delete");
        r->leaks_unknown = (tr->shadowed & MK_SHADOWED_FREE) != 0;
    } else if (p->free_unknown >= 100 && p->free_unknown > p->frees) {
        snprintf(r->outside, sizeof r->outside,
                 "this program allocates mostly outside malloc: %" PRIu64
                 " frees were of blocks memkit never saw allocated, against %" PRIu64
                 " of blocks it saw (an allocator linked statically, or its own)",
                 p->free_unknown, p->frees);
    }
}

/* Seconds as ns, saturating: --from 2e10 is past any trace, not a wrap. */
static uint64_t seconds_to_ns(double s)
{
    return s * 1e9 >= 18e18 ? UINT64_MAX : (uint64_t)(s * 1e9);
}

/* A thread or time filter that selects nothing is a mistake to name (a
 * thread the trace lacks, a window past its end), not an empty report. */
static int no_event_selected(const mk_report_t *r, const char *path, char *err,
                             size_t errlen)
{
    const mk_trace_t *tr = r->tr;
    if (r->opts.thread >= 0 && tr->end.present)
        snprintf(err, errlen,
                 "%s has no event of thread %" PRId64 " (its %" PRIu64
                 " threads are numbered from 1)",
                 path, r->opts.thread, tr->end.threads);
    else if (r->opts.thread >= 0)
        snprintf(err, errlen, "%s has no event of thread %" PRId64, path, r->opts.thread);
    else {
        char window[96];
        if (r->opts.to_s > 0)
            snprintf(window, sizeof window, "between --from %g and --to %g s",
                     r->opts.from_s, r->opts.to_s);
        else
            snprintf(window, sizeof window, "from --from %g s on", r->opts.from_s);
        if (tr->end.present)
            snprintf(err, errlen, "%s has no event %s (its events run from 0 to %.3f s)",
                     path, window, (double)tr->end.duration_ns / 1e9);
        else
            snprintf(err, errlen, "%s has no event %s", path, window);
    }
    return 2;
}

static int load_trace(mk_report_t *r, const char *src, const char *path, filter_t *flt,
                      char *err, size_t errlen)
{
    r->tr = mk_trace_open_named(src, path, err, errlen);
    if (!r->tr)
        return 2;
    r->kind = MK_INPUT_TRACE;
    r->time_unit = "ns";
    r->names = mk_names_for_trace(r->tr, !r->opts.no_symbols);
    if (r->names && r->opts.share_names)
        mk_names_share(r->names, r->opts.share_names);
    bool narrowed = r->opts.module || r->opts.function || r->opts.file ||
                    r->opts.thread >= 0 || r->opts.from_s > 0 || r->opts.to_s > 0;
    mk_profile_opts_t po = {.thread = r->opts.thread,
                            .summary_first = r->opts.summary_first && !narrowed,
                            .growth = r->opts.growth,
                            .counts_only = r->opts.counts_only,
                            .slices = r->opts.slices};
    if (r->opts.module || r->opts.function || r->opts.file) {
        po.stack_pass = filter_stack;
        po.filter_ctx = flt;
    }
    if (r->opts.from_s > 0)
        po.from_ns = seconds_to_ns(r->opts.from_s);
    if (r->opts.to_s > 0)
        po.to_ns = seconds_to_ns(r->opts.to_s);
    mk_profile_init(&r->prof, &po);
    if (!r->names || !mk_profile_build(&r->prof, r->tr))
        snprintf(r->problem, sizeof r->problem,
                 "%s: out of memory while analysing; the report is partial", path);
    if (!r->prof.events && !r->prof.from_summary && !r->prof.oom &&
        (r->opts.thread >= 0 || po.from_ns || po.to_ns))
        return no_event_selected(r, path, err, errlen);
    const mk_report_opts_t *o = &r->opts;
    char why[160];
    if (r->tr->damage[0]) {
        r->partial = true;
        snprintf(r->problem, sizeof r->problem,
                 r->tr->bounded ? "%s: %s; the report covers what came before"
                                : "%s is damaged: %s; the report covers what came before",
                 path, r->tr->damage);
    } else if ((r->tr->header.flags & MK_TF_SUMMARY_ONLY) && !r->tr->summary.present) {
        /* Counts of 0 would read as a program that made no allocation. */
        snprintf(err, errlen,
                 "%s holds no totals: --summary-only writes them at the process's end "
                 "and at checkpoints from 1 s in, and it reached neither (%s)",
                 path, no_end_why(o, why, sizeof why));
        return 2;
    } else if (!r->tr->end.present && r->tr->summary.from_parts) {
        r->partial = true;
        snprintf(r->problem, sizeof r->problem,
                 "%s has no end record (%s); the totals are its threads' last "
                 "checkpoints, the latest %.1f s into the run",
                 path, no_end_why(o, why, sizeof why),
                 (double)r->tr->summary.parts_at_ns / 1e9);
    } else if (!r->tr->end.present) {
        r->partial = true;
        snprintf(r->problem, sizeof r->problem,
                 "%s has no end record (%s); the report covers what was flushed, up to "
                 "about a second before the end",
                 path, no_end_why(o, why, sizeof why));
    }
    note_outside_malloc(r);
    if (r->tr->end.present)
        r->duration_s = (double)r->tr->end.duration_ns / 1e9;
    else if (r->prof.last_time)
        r->duration_s = (double)r->prof.last_time / 1e9;
    return 0;
}

static int load_log(mk_report_t *r, const char *src, const char *path, filter_t *flt,
                    char *err, size_t errlen)
{
    if (r->opts.thread >= 0 || r->opts.from_s > 0 || r->opts.to_s > 0) {
        snprintf(err, errlen,
                 "%s is a curl memdebug log: it has no threads or times to filter by",
                 path);
        return 2;
    }
    r->kind = MK_INPUT_MEMDEBUG;
    r->time_unit = "line";
    r->names = mk_names_new();
    mk_profile_opts_t po = {.thread = -1, .slices = r->opts.slices};
    if (r->opts.module) {
        snprintf(err, errlen, "%s is a curl memdebug log: it names no modules", path);
        return 2;
    }
    if (r->opts.function || r->opts.file) {
        po.stack_pass = filter_stack;
        po.filter_ctx = flt;
    }
    mk_profile_init(&r->prof, &po);
    if (!r->names)
        return snprintf(err, errlen, "out of memory"), 2;
    if (!mk_memdebug_profile(src, &r->prof, r->names, &r->md, err, errlen))
        return 2;
    return 0;
}

/* Copies all of fd into a memory file: a pipe can be read only once, and the
 * readers seek. Returns the copy's descriptor, or -1 with err set. */
static int spool(int fd, const char *path, char *err, size_t errlen)
{
    int copy = memfd_create("memkit-input", MFD_CLOEXEC);
    if (copy < 0) {
        snprintf(err, errlen, "%s: cannot copy the piped input: %s", path,
                 strerror(errno));
        return -1;
    }
    char buf[1 << 16];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(err, errlen, "%s: read error: %s", path, strerror(errno));
            break;
        }
        if (n == 0)
            return copy;
        for (ssize_t done = 0; done < n;) {
            ssize_t w = write(copy, buf + done, (size_t)(n - done));
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0) {
                snprintf(err, errlen, "%s: cannot copy the piped input: %s", path,
                         strerror(errno));
                close(copy);
                return -1;
            }
            done += w;
        }
    }
    close(copy);
    return -1;
}

/* Where the readers find path's bytes (src, PATH_MAX): path itself for a
 * regular file; for a pipe, a FIFO, a terminal or "-" (standard input), a
 * copy read once (r->spool_fd), named /proc/self/fd/N. */
static int resolve_input(mk_report_t *r, const char *path, char *src, char *err,
                         size_t errlen)
{
    bool is_stdin = strcmp(path, "-") == 0;
    int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        if (fd >= 0 && !is_stdin)
            close(fd);
        return 2;
    }
    if (S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s is a directory, not a trace or a memdebug log", path);
        close(fd);
        return 2;
    }
    if (S_ISREG(st.st_mode) && !is_stdin) {
        close(fd);
        snprintf(src, PATH_MAX, "%s", path);
        return 0;
    }
    int copy = spool(fd, is_stdin ? "standard input" : path, err, errlen);
    if (!is_stdin)
        close(fd);
    if (copy < 0)
        return 2;
    r->spool_fd = copy;
    r->spooled = true;
    snprintf(src, PATH_MAX, "/proc/self/fd/%d", copy);
    return 0;
}

/* What the file is, from its first bytes. */
static int sniff(const char *src, const char *path, bool *is_log, char *err,
                 size_t errlen)
{
    FILE *f = fopen(src, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return 2;
    }
    unsigned char head[16];
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    if (n == 0) {
        snprintf(err, errlen, "%s: empty file, not a trace or a memdebug log",
                 strcmp(path, "-") ? path : "standard input");
        return 2;
    }
    *is_log = mk_memdebug_sniff(head, n);
    return 0;
}

static int by_caller_name(const void *a, const void *b)
{
    return strcmp(((const mk_caller_t *)a)->name, ((const mk_caller_t *)b)->name);
}

static int by_caller_ns(const void *a, const void *b)
{
    const mk_caller_t *x = a, *y = b;
    if (x->ns != y->ns)
        return x->ns < y->ns ? 1 : -1;
    return strcmp(x->name, y->name);
}

/* r->callers: every stack's calls' time by its innermost function (every
 * stack: one that only freed is no site, but called the allocator). */
static bool build_callers(mk_report_t *r)
{
    const mk_profile_t *p = &r->prof;
    if (!p->site_times)
        return true;
    size_t n = 0;
    for (size_t i = 0; i < p->nstacks; i++)
        n += p->stacks[i].call_ns > 0;
    mk_caller_t *c = calloc(n ? n : 1, sizeof *c);
    if (!c)
        return false;
    size_t k = 0;
    for (size_t i = 0; i < p->nstacks; i++) {
        const mk_stack_agg_t *a = &p->stacks[i];
        if (!(a->call_ns > 0))
            continue;
        char buf[1024];
        c[k].name = strdup(mk_report_rollup_name(r, a->stack, false, buf, sizeof buf));
        if (!c[k].name)
            break;
        c[k].slow_ns = a->call_slow_ns;
        c[k++].ns = a->call_ns;
    }
    if (k > 1) /* one row per function */
        qsort(c, k, sizeof *c, by_caller_name);
    size_t m = 0;
    for (size_t i = 0; i < k; i++) {
        if (m && strcmp(c[m - 1].name, c[i].name) == 0) {
            c[m - 1].ns += c[i].ns;
            c[m - 1].slow_ns += c[i].slow_ns;
            free(c[i].name);
        } else {
            c[m++] = c[i];
        }
    }
    if (m > 1)
        qsort(c, m, sizeof *c, by_caller_ns);
    r->callers = c;
    r->ncallers = m;
    return k == n;
}

/* Rows, roll-ups and findings, once the profile is whole. */
static void finish(mk_report_t *r, const char *path)
{
    if (r->tr)
        mk_trace_drop_buffers(r->tr); /* the replay is done */
    if (!build_rows(r))
        snprintf(r->problem, sizeof r->problem, "%s: out of memory building the sites",
                 path);
    if (!build_callers(r) && !r->problem[0])
        snprintf(r->problem, sizeof r->problem,
                 "%s: out of memory naming the allocator's callers", path);
    r->cost_ns = r->opts.cost_ns > 0 ? r->opts.cost_ns : 0; /* 0: on first use */
    if (!mk_findings_compute(r) && !r->problem[0])
        snprintf(r->problem, sizeof r->problem,
                 "%s: out of memory finding patterns; the findings are partial", path);
    /* Savings from the measured time where the trace has it, unless a price
     * is asked for (--cost-ns); else this machine's malloc+free price, which
     * is measured only when there is a finding to price. */
    if (r->nfindings && r->prof.site_times && !(r->opts.cost_ns > 0))
        mk_findings_measure(r, mk_report_cost_ns);
    else if (r->nfindings)
        mk_findings_price(r, mk_report_cost_ns(r));
    if (!mk_findings_merge(r) && !r->problem[0])
        snprintf(r->problem, sizeof r->problem,
                 "%s: out of memory merging the findings; some are per stack", path);
    /* The rows and findings hold what is left to show (the site rows point at
     * the profile's aggregates): the replay's own state goes. */
    mk_profile_release_replay(&r->prof);
}

int mk_report_load(mk_report_t *r, const char *path, const mk_report_opts_t *opts,
                   char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->path = path;
    if (opts)
        r->opts = *opts;
    else
        mk_report_opts_default(&r->opts);
    bool is_log = false;
    char src[PATH_MAX];
    if (resolve_input(r, path, src, err, errlen) ||
        sniff(src, path, &is_log, err, errlen)) {
        mk_report_free(r);
        return 2;
    }
    filter_t *flt = calloc(1, sizeof *flt);
    if (!flt) {
        mk_report_free(r);
        return snprintf(err, errlen, "out of memory"), 2;
    }
    flt->r = r;
    flt->memo = mk_kv_heap_table();
    int rc = is_log ? load_log(r, src, path, flt, err, errlen)
                    : load_trace(r, src, path, flt, err, errlen);
    free(flt->memo.slots);
    free(flt);
    if (rc) {
        mk_report_free(r);
        return rc;
    }
    if (r->opts.totals_only)
        return 0;
    finish(r, path);
    return 0;
}

/* ---- several traces, merged ---- */

/* The merged stack id of one process's stack, by its frames; 0 when memory
 * ran out. */
static uint32_t merged_id(mk_report_t *m, mk_report_t *one, uint32_t stack)
{
    uint32_t depth;
    const mk_frame_t *frames = mk_names_stack(one->names, stack, &depth);
    uint32_t id = mk_names_add_stack(m->names, one->names, frames, depth);
    mk_names_drop_stack(one->names, stack); /* copied: its frames go */
    return id;
}

/* Adds one process's aggregate to a merged one: agg_add's sums, and what
 * only a process's own replay keeps (its live blocks, its threads). */
static void merge_agg(mk_stack_agg_t *to, const mk_stack_agg_t *a)
{
    mk_agg_add(to, a);
    to->live_blocks += a->live_blocks;
    to->live_bytes += a->live_bytes;
    to->multi_thread |= a->multi_thread;
    if (!to->first_thread)
        to->first_thread = a->first_thread;
}

/* The first process merged gives the merged profile its aggregates, which
 * are then renamed to merged stack ids in place, rather than copied: the
 * largest process is merged first (mk_report_load_many), so the report
 * never holds its aggregates twice. Two of its stacks that name the same
 * frames become one. */
static bool adopt_profile(mk_report_t *m, mk_report_t *one)
{
    mk_profile_t *d = &m->prof, *s = &one->prof;
    assert(d->nstacks == 0 && !d->stacks);
    d->stacks = s->stacks;
    d->nstacks = s->nstacks;
    d->stacks_cap = s->stacks_cap;
    s->stacks = NULL;
    s->nstacks = s->stacks_cap = 0;
    for (size_t i = 0; i < d->nstacks; i++) {
        mk_stack_agg_t *a = &d->stacks[i];
        free(a->growth); /* a merged report has no growth points */
        a->growth = NULL;
        uint32_t id = merged_id(m, one, a->stack);
        bool fresh;
        mk_kv_t *e = id ? mk_kv_put(&d->stack_index, (uint64_t)id + 1, &fresh) : NULL;
        if (!e)
            return false;
        if (fresh) {
            e->a = i;
            a->stack = id;
            continue;
        }
        merge_agg(&d->stacks[e->a], a); /* an earlier stack, same frames */
        mk_agg_release(a);
        memset(a, 0, sizeof *a); /* no calls, no leaks: not a site */
    }
    d->last_agg = UINT32_MAX;
    return true;
}

/* Adds one process's profile to the merged one: its stacks re-identified by
 * their frames in the merged names, its totals summed. */
static bool merge_profile(mk_report_t *m, mk_report_t *one)
{
    mk_profile_t *d = &m->prof;
    const mk_profile_t *s = &one->prof;
    if (!d->stacks && !adopt_profile(m, one))
        return false;
    for (size_t i = 0; i < s->nstacks; i++) {
        const mk_stack_agg_t *a = &s->stacks[i];
        uint32_t id = merged_id(m, one, a->stack);
        mk_stack_agg_t *to = id ? mk_profile_agg(d, id) : NULL;
        if (!to)
            return false;
        merge_agg(to, a);
    }
    const struct {
        uint64_t *to;
        const uint64_t *from;
    } sum[] = {
        {&d->mallocs, &s->mallocs},
        {&d->reallocs, &s->reallocs},
        {&d->callocs, &s->callocs},
        {&d->strdups, &s->strdups},
        {&d->wcsdups, &s->wcsdups},
        {&d->frees, &s->frees},
        {&d->allocations, &s->allocations},
        {&d->total_allocated, &s->total_allocated},
        {&d->news, &s->news},
        {&d->deletes, &s->deletes},
        {&d->aligned, &s->aligned},
        {&d->allocation_calls, &s->allocation_calls},
        {&d->live_bytes, &s->live_bytes},
        {&d->live_blocks, &s->live_blocks},
        {&d->free_null, &s->free_null},
        {&d->free_unknown, &s->free_unknown},
        {&d->failed, &s->failed},
        {&d->temporaries, &s->temporaries},
        {&d->tiny, &s->tiny},
        {&d->events, &s->events},
        {&d->threads, &s->threads},
    };
    for (size_t i = 0; i < sizeof sum / sizeof *sum; i++)
        *sum[i].to += *sum[i].from;
    if (s->max_allocated > d->max_allocated) { /* the largest process's peak */
        d->max_allocated = s->max_allocated;
        d->peak_time = s->peak_time;
    }
    if (s->peak_blocks > d->peak_blocks)
        d->peak_blocks = s->peak_blocks;
    if (s->last_time > d->last_time)
        d->last_time = s->last_time;
    for (int i = 0; i < MK_HIST_BUCKETS; i++) {
        d->size_hist[i] += s->size_hist[i];
        d->life_hist[i] += s->life_hist[i];
    }
    d->from_summary |= s->from_summary;
    d->filtered |= s->filtered;
    d->timed |= s->timed; /* processes without times add none */
    d->site_times |= s->site_times;
    d->alloc_ns += s->alloc_ns;
    d->alloc_ns_unattributed += s->alloc_ns_unattributed;
    d->timed_calls += s->timed_calls;
    if (s->cpu_sampling > d->cpu_sampling) {
        d->cpu_sampling = s->cpu_sampling;
        d->cpu_sampling_errno = s->cpu_sampling_errno;
    }
    d->alloc_from_samples |= s->alloc_from_samples;
    d->oncpu_samples += s->oncpu_samples;
    d->oncpu_alloc_samples += s->oncpu_alloc_samples;
    d->tracer_ns += s->tracer_ns;
    d->slow_ns += s->slow_ns;
    d->slow_calls += s->slow_calls;
    d->cpu_ns += s->cpu_ns;
    d->switched_calls += s->switched_calls;
    d->switched_clocked += s->switched_clocked;
    d->switches_unseen |= s->timed && s->switches_unseen;
    if (s->slow_bound_ns > d->slow_bound_ns)
        d->slow_bound_ns = s->slow_bound_ns;
    if (s->sampled && !d->sampled) { /* any sampled process makes the sum an estimate */
        d->sampled = true;
        d->sample_mean = s->sample_mean;
    }
    return true;
}

static int by_process_calls(const void *a, const void *b)
{
    const mk_report_process_t *x = a, *y = b;
    if (x->calls != y->calls)
        return x->calls > y->calls ? -1 : 1;
    return x->pid < y->pid ? -1 : x->pid > y->pid;
}

void mk_report_sort_processes(mk_report_process_t *procs, size_t n)
{
    qsort(procs, n, sizeof *procs, by_process_calls);
}

void mk_report_process_of(mk_report_process_t *p, const mk_report_t *one,
                          const char *path)
{
    const mk_trace_t *tr = one->tr;
    p->path = path;
    p->pid = tr->header.pid;
    const char *cmd = tr->header.cmdline[0] ? tr->header.cmdline : tr->header.exe;
    size_t n = strlen(cmd);
    if (n < sizeof p->command) {
        memcpy(p->command, cmd, n + 1);
    } else { /* cut, and marked so */
        memcpy(p->command, cmd, sizeof p->command - 4);
        memcpy(p->command + sizeof p->command - 4, "...", 4);
    }
    p->calls = one->prof.allocation_calls;
    p->peak_bytes = one->prof.max_allocated;
    p->total_bytes = one->prof.total_allocated;
}

/* The order in which to merge a run's traces: the largest file first, as
 * it gives the merged profile its aggregates (adopt_profile); ties keep
 * the given order. NULL when memory ran out. */
static size_t *largest_first(const char *const *paths, size_t n)
{
    size_t *order = malloc(n * sizeof *order);
    off_t *size = malloc(n * sizeof *size);
    if (!order || !size) {
        free(order);
        free(size);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        size[i] = stat(paths[i], &st) == 0 ? st.st_size : 0;
        size_t j = i; /* insertion: n is a run's processes */
        for (; j > 0 && size[order[j - 1]] < size[i]; j--)
            order[j] = order[j - 1];
        order[j] = i;
    }
    free(size);
    return order;
}

/* One trace of a merge, loaded on a thread of its own while the one before
 * it is merged: decoding a trace's events and merging its stacks (naming
 * their frames) are each about half of a run's merged report, and neither
 * touches what the other does. Not with --module, --function or --file,
 * whose filter names stacks while the events are decoded. */
typedef struct prefetch {
    pthread_t thread;
    bool running; /* on its thread, not yet joined */
    bool pending; /* started, and its report not yet taken */
    const char *path;
    const mk_report_opts_t *opts;
    mk_report_t one;
    int rc;
    char err[1024];
} prefetch_t;

static void *prefetch_run(void *arg)
{
    prefetch_t *p = arg;
    p->rc = mk_report_load(&p->one, p->path, p->opts, p->err, sizeof p->err);
    return NULL;
}

/* Loads path into p: on a thread when threaded (and one can be made), else
 * here and now. */
static void prefetch_start(prefetch_t *p, const char *path, const mk_report_opts_t *opts,
                           bool threaded)
{
    p->path = path;
    p->opts = opts;
    p->pending = true;
    p->running = threaded && pthread_create(&p->thread, NULL, prefetch_run, p) == 0;
    if (!p->running)
        prefetch_run(p);
}

static void prefetch_wait(prefetch_t *p)
{
    if (p->running)
        pthread_join(p->thread, NULL);
    p->running = false;
}

/* A load no longer wanted (the merge failed): waited for, and freed. */
static void prefetch_drop(prefetch_t *p)
{
    prefetch_wait(p);
    if (p->pending && p->rc == 0)
        mk_report_free(&p->one);
    p->pending = false;
}

/* Merges a loaded trace into r (and frees it): 0, or the exit status of a
 * merge that cannot go on, its error in err. A trace that could not be read
 * is left out, said in r->problem, unless it is the last hope (none_yet:
 * no trace could be read before it, and none comes after). */
static int merge_loaded(mk_report_t *r, prefetch_t *p, const char *path, bool none_yet,
                        char *err, size_t errlen)
{
    mk_report_t *one = &p->one;
    if (p->rc) {
        /* A trace that cannot be read at all (a process killed before its
         * head was written leaves an empty file) costs the report that
         * process, not the run: the others are reported, the loss said in
         * one line, the exit status 2 (partial). */
        if (none_yet) {
            snprintf(err, errlen, "%s", p->err);
            return p->rc; /* none could be read: its error is the answer */
        }
        if (!r->problem[0])
            snprintf(r->problem, sizeof r->problem, "%.440s; left out of the report",
                     p->err);
        r->partial = true;
        return 0;
    }
    if (one->kind != MK_INPUT_TRACE) {
        snprintf(err, errlen,
                 "%s is a curl memdebug log: a log is reported alone, not merged with "
                 "other inputs",
                 path);
        mk_report_free(one);
        return 2;
    }
    if (one->problem[0] && !r->problem[0])
        snprintf(r->problem, sizeof r->problem, "%s", one->problem);
    r->partial |= one->partial;
    if (one->duration_s > r->duration_s)
        r->duration_s = one->duration_s;
    if (one->outside[0] && !r->outside[0])
        snprintf(r->outside, sizeof r->outside, "%.900s (pid %u)", one->outside,
                 one->tr->header.pid);
    r->leaks_unknown |= one->leaks_unknown;
    mk_report_process_of(&r->procs[r->nprocs++], one, path);
    mk_profile_release_replay(&one->prof); /* its aggregates are what is merged */
    bool merged = merge_profile(r, one);
    mk_report_free(one);
    if (!merged)
        return snprintf(err, errlen, "out of memory merging %s", path), 2;
    return 0;
}

int mk_report_load_many(mk_report_t *r, const char *const *paths, size_t n,
                        const mk_report_opts_t *opts, char *err, size_t errlen)
{
    if (n == 1)
        return mk_report_load(r, paths[0], opts, err, errlen);
    memset(r, 0, sizeof *r);
    r->path = paths[0];
    if (opts)
        r->opts = *opts;
    else
        mk_report_opts_default(&r->opts);
    r->kind = MK_INPUT_TRACE;
    r->time_unit = "ns";
    r->names = mk_names_new();
    r->procs = calloc(n, sizeof *r->procs);
    mk_profile_init(&r->prof, NULL);
    if (!r->names || !r->procs) {
        mk_report_free(r);
        return snprintf(err, errlen, "out of memory"), 2;
    }
    mk_report_opts_t each = r->opts;
    each.totals_only = true;     /* each process's aggregates; rows once, merged */
    each.share_names = r->names; /* one symbolization of each module for the run */
    each.slices = false;         /* processes' times do not share one axis */
    bool ahead = !each.module && !each.function && !each.file; /* see prefetch_t */
    size_t *order = largest_first(paths, n);
    prefetch_t *slot = calloc(2, sizeof *slot); /* trace k's load is slot[k % 2] */
    if (!order || !slot) {
        free(order);
        free(slot);
        mk_report_free(r);
        return snprintf(err, errlen, "out of memory"), 2;
    }
    /* The largest trace here: a large one decodes on two threads already.
     * The next one loads after it is merged, not beside: the largest
     * trace's replay and the merged names' growth make the report's peak
     * memory, to which a second trace's replay would add. */
    prefetch_start(&slot[0], paths[order[0]], &each, false);
    int rc = 0;
    for (size_t k = 0; k < n && rc == 0; k++) {
        prefetch_t *cur = &slot[k % 2], *next = &slot[(k + 1) % 2];
        bool beside = ahead && k > 0 && k + 1 < n;
        prefetch_wait(cur);
        cur->pending = false; /* merge_loaded frees or keeps what it holds */
        if (beside)
            prefetch_start(next, paths[order[k + 1]], &each, true);
        rc = merge_loaded(r, cur, paths[order[k]], !r->nprocs && k + 1 == n, err, errlen);
        if (rc == 0 && !beside && k + 1 < n)
            prefetch_start(next, paths[order[k + 1]], &each, false);
    }
    if (rc) {
        for (int s = 0; s < 2; s++)
            prefetch_drop(&slot[s]);
        free(order);
        free(slot);
        mk_report_free(r);
        return rc;
    }
    free(order);
    free(slot);
    mk_report_sort_processes(r->procs, r->nprocs);
    if (!r->opts.totals_only)
        finish(r, paths[0]);
    return 0;
}

static void free_rows(mk_row_t *rows, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free((char *)rows[i].name);
    free(rows);
}

void mk_report_free(mk_report_t *r)
{
    free(r->sites);
    free(r->line_of_site);
    free_rows(r->functions, r->nfunctions);
    free_rows(r->lines, r->nlines);
    free_sums(r->function_aggs, r->nfunctions);
    free_sums(r->line_aggs, r->nlines);
    free(r->findings);
    for (size_t i = 0; i < r->ncallers; i++)
        free(r->callers[i].name);
    free(r->callers);
    mk_profile_free(&r->prof);
    mk_names_free(r->names);
    if (r->tr)
        mk_trace_close(r->tr);
    if (r->spooled)
        close(r->spool_fd);
    free(r->procs);
    memset(r, 0, sizeof *r);
}

/* ---- helpers for the renderers ---- */

uint64_t mk_agg_median_size(const mk_stack_agg_t *a)
{
    uint64_t m = mk_hist_median_of(&a->size_hist);
    return m < a->min_size ? a->min_size : m > a->max_size ? a->max_size : m;
}

const char *mk_report_stack_key(mk_report_t *r, uint32_t stack, char *buf, size_t cap)
{
    uint32_t depth;
    const mk_frame_t *f = mk_names_stack(r->names, stack, &depth);
    size_t used = 0;
    buf[0] = 0;
    for (uint32_t i = 0; i < depth && used + 1 < cap; i++) {
        char label[1024];
        mk_frame_label(&f[i], label, sizeof label);
        int w = snprintf(buf + used, cap - used, "%s%s", i ? ";" : "", label);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    if (!depth)
        snprintf(buf, cap, "(no stack)");
    return buf;
}

const char *mk_row_label(mk_report_t *r, const mk_row_t *row, char *buf, size_t cap)
{
    if (row->name)
        return row->name;
    uint32_t depth;
    const mk_frame_t *f = mk_names_stack(r->names, row->stack, &depth);
    return depth ? mk_frame_label(f, buf, cap) : "(no stack)";
}

const char *mk_row_label_with_caller(mk_report_t *r, const mk_row_t *row, char *buf,
                                     size_t cap)
{
    uint32_t depth = 0;
    const mk_frame_t *f = row->name ? NULL : mk_names_stack(r->names, row->stack, &depth);
    if (!f || depth < 2)
        return mk_row_label(r, row, buf, cap);
    char inner[1024], caller[1024];
    snprintf(buf, cap, "%s <- %s", mk_frame_label(&f[0], inner, sizeof inner),
             mk_frame_label(&f[1], caller, sizeof caller));
    return buf;
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int by_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double mk_report_cost_ns(mk_report_t *r)
{
    if (!(r->cost_ns > 0))
        r->cost_ns = mk_measure_malloc_free_ns();
    return r->cost_ns;
}

double mk_measure_malloc_free_ns(void)
{
    static double measured; /* once per process: every input is priced alike */
    if (measured > 0)
        return measured;
    /* Sizes cycle over small classes, as real programs' do; the pointer is
     * published through a volatile so the pair is not optimized away. Runs
     * of 20,000 pairs (about half a millisecond) are long enough for the
     * clock and short enough to cost a report little (100,000 a run would
     * be 4.6% of the instructions of cmake's 68-process report). */
    enum { N = 20000, RUNS = 5 };
    void *volatile sink;
    double t[RUNS];
    for (int r = 0; r < RUNS; r++) {
        double t0 = now_ns();
        for (int i = 0; i < N; i++) {
            sink = malloc(16 + (size_t)(i & 15) * 16);
            free(sink);
        }
        t[r] = (now_ns() - t0) / N;
    }
    qsort(t, RUNS, sizeof t[0], by_double);
    measured = t[RUNS / 2];
    return measured;
}
