/*
 * report_text.c - the report as text: memanalyze-style "Name: value" totals
 * (scripts written for memanalyze.pl parse them unchanged), then sites in
 * aligned columns, the peak, leaks and findings. Colour only on a terminal.
 */
#define _GNU_SOURCE
#include "report.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct text {
    mk_report_t *r;
    FILE *out;
    bool color;
} text_t;

static void heading(const text_t *t, const char *s)
{
    fprintf(t->out, t->color ? "\n\033[1m%s\033[0m\n" : "\n%s\n", s);
}

/* glibc's own view of its heap at exit: what it took from the system, what
 * of it the program still uses, and what it holds free (memory a lower trim
 * threshold or malloc_trim would give back). */
static void glibc_heap(const mk_trace_end_t *e, FILE *out)
{
    char arena[32], used[32], free_b[32], mapped[32], rss[32];

    if (!e->has_heap_view)
        return;
    fprintf(out,
            "glibc heap at exit: %s from the system (%s in use, %s free), %s mmapped\n",
            mk_fmt_bytes(e->glibc_arena, arena, sizeof arena),
            mk_fmt_bytes(e->glibc_in_use, used, sizeof used),
            mk_fmt_bytes(e->glibc_free, free_b, sizeof free_b),
            mk_fmt_bytes(e->glibc_mmapped, mapped, sizeof mapped));
    fprintf(out, "Heap RSS ([heap] mapping): %s",
            mk_fmt_bytes(e->heap_rss, rss, sizeof rss));
    /* worth a word when the free part dominates and is more than noise */
    if (e->glibc_free > e->glibc_in_use && e->glibc_free >= (1u << 20))
        fprintf(out, " (glibc holds %s it does not use: see glibc-lean in memkit tune)",
                free_b);
    fputc('\n', out);
}

/* What a sampled trace's numbers are: which are exact, which estimated. */
static void sampling_note(const text_t *t)
{
    const mk_profile_t *p = &t->r->prof;
    char mean[32], n[32];
    const mk_trace_t *tr = t->r->tr;
    fprintf(t->out,
            "Sampled: one allocation per %s allocated on average, %s sampled events; "
            "counts by kind are exact, ~ marks estimates\n",
            mk_fmt_bytes(p->sample_mean, mean, sizeof mean),
            mk_fmt_count(p->events, n, sizeof n));
    if (tr && t->r->nprocs < 2 && tr->sampling.nsnapshots)
        fprintf(t->out,
                "Snapshots: %zu (memkit report --growth ranks the sites that "
                "grow)\n",
                tr->sampling.nsnapshots);
}

static void totals(const text_t *t)
{
    const mk_profile_t *p = &t->r->prof;
    FILE *out = t->out;
    fprintf(out, "Mallocs: %" PRIu64 "\n", p->mallocs);
    fprintf(out, "Reallocs: %" PRIu64 "\n", p->reallocs);
    fprintf(out, "Callocs: %" PRIu64 "\n", p->callocs);
    fprintf(out, "Strdups: %" PRIu64 "\n", p->strdups);
    fprintf(out, "Wcsdups: %" PRIu64 "\n", p->wcsdups);
    fprintf(out, "Frees: %" PRIu64 "\n", p->frees);
    if (t->r->kind == MK_INPUT_MEMDEBUG)
        fprintf(out, "Sockets: %" PRIu64 "\n", t->r->md.sockets);
    fprintf(out, "Allocations: %" PRIu64 "\n", p->allocations);
    const char *est = p->sampled ? "~" : ""; /* a sampled trace's estimates */
    fprintf(out, "Maximum allocated: %s%" PRIu64 "\n", est, p->max_allocated);
    fprintf(out, "Total allocated: %" PRIu64 "\n", p->total_allocated);
    fprintf(out, "News: %" PRIu64 "\n", p->news);
    fprintf(out, "Deletes: %" PRIu64 "\n", p->deletes);
    fprintf(out, "Aligned allocations: %" PRIu64 "\n", p->aligned);
    fprintf(out, "Allocation calls: %" PRIu64 "\n", p->allocation_calls);
    if (mk_profile_time_measured(p) && (p->alloc_from_samples || p->timed_calls)) {
        /* measured: by the threads' CPU samples, or by every slow call and
         * one in MK_COST_STRIDE of the rest */
        char ns[32], cpu[32], bound[32];
        fprintf(out, "Allocator time: %s", mk_fmt_ns(p->alloc_ns, ns, sizeof ns));
        if (p->cpu_ns > 0)
            fprintf(out, " of %s CPU (%.1f%%)", mk_fmt_ns(p->cpu_ns, cpu, sizeof cpu),
                    100.0 * p->alloc_ns / p->cpu_ns);
        if (p->alloc_from_samples)
            fprintf(out, ", %" PRIu64 " of %" PRIu64 " CPU samples",
                    p->oncpu_alloc_samples, p->oncpu_samples);
        if (p->tracer_ns > 0)
            fprintf(out, "; memkit's own %s not counted",
                    mk_fmt_ns(p->tracer_ns, cpu, sizeof cpu));
        if (p->slow_calls && p->alloc_ns > 0)
            fprintf(out, "; %.0f%% of it in %" PRIu64 " calls of %s or more",
                    100.0 * p->slow_ns / p->alloc_ns, p->slow_calls,
                    mk_fmt_ns(p->slow_bound_ns, bound, sizeof bound));
        fputc('\n', out);
        if (p->switches_unseen)
            fprintf(out,
                    "Allocator time note: the tracer could not see its threads switched "
                    "out (no rseq); calls preempted or blocked count their time off "
                    "the CPU\n");
        else if (p->switched_calls + p->switched_clocked)
            fprintf(out,
                    "Allocator time note: %" PRIu64
                    " calls switched out of the CPU: %" PRIu64
                    " timed by their thread's CPU clock or CPU samples, %" PRIu64
                    " not counted\n",
                    p->switched_calls + p->switched_clocked, p->switched_clocked,
                    p->switched_calls);
    } else if (p->alloc_from_samples) {
        fprintf(out, "Allocator time: not measured (%" PRIu64 " CPU samples, under %d)\n",
                p->oncpu_samples, MK_ONCPU_ENOUGH);
    } else if (p->timed) {
        fprintf(out, "Allocator time: not measured (1 call in %d is timed)\n",
                MK_COST_STRIDE);
    }
    if (p->cpu_sampling == MK_CPU_SAMPLING_REFUSED)
        fprintf(out,
                "Allocator time note: the kernel refused CPU samples (%s: "
                "kernel.perf_event_paranoid 2 or less allows them)%s\n",
                strerror(p->cpu_sampling_errno),
                p->timed && p->timed_calls ? "; timed calls measure it instead" : "");
    fprintf(out, "Peak live blocks: %s%" PRIu64 "\n", est, p->peak_blocks);
    /* Counted in process, the peak of several threads is sampled (the tracer's
     * summary.h gives the bound); the replay of the events has it exact. */
    uint64_t threads = t->r->tr && t->r->tr->end.present ? t->r->tr->end.threads : 0;
    if (p->from_summary && threads > 1)
        fprintf(out,
                "Peak note: sampled across %" PRIu64 " threads, within %" PRIu64
                " KB and %" PRIu64 " blocks of the exact peak%s\n",
                threads, threads * 16, threads * 64,
                p->site_stacks ? " (memkit report replays it exact)" : "");
    /* A process killed by SIGKILL (or still running) did not exit: what its
     * trace leaves live is not known to leak. */
    const mk_trace_t *cut =
        t->r->kind == MK_INPUT_TRACE && t->r->tr && !t->r->tr->end.present ? t->r->tr
                                                                           : NULL;
    fprintf(out, "%s: %s%" PRIu64 " blocks, %s%" PRIu64 " bytes%s\n",
            cut ? "Live where the trace ends" : "Leaks at exit", est, p->live_blocks, est,
            p->live_bytes,
            cut ? " (no exit: not known to leak)"
            : t->r->leaks_unknown
                ? " (not known to leak: the program's own free is not seen)"
                : "");
    if (!p->from_summary && !p->sampled)
        fprintf(out, "Temporaries: %" PRIu64 "\n", p->temporaries);
    if (p->sampled)
        sampling_note(t);
    if (p->free_unknown || p->failed)
        fprintf(out,
                "Frees of unknown blocks: %" PRIu64 "; failed allocations: %" PRIu64 "\n",
                p->free_unknown, p->failed);
    if (t->r->outside[0])
        fprintf(out, "Outside malloc: %s\n", t->r->outside);
    if (t->r->duration_s > 0 && t->r->kind == MK_INPUT_TRACE)
        fprintf(out, "Allocations per second: %.0f\n",
                (double)p->allocation_calls / t->r->duration_s);
    const mk_trace_t *tr = t->r->tr;
    if (!tr || !tr->end.present)
        return;
    fprintf(out, "Peak RSS: %" PRIu64 " KB\n", tr->end.maxrss_kb);
    fprintf(out, "Page faults: %" PRIu64 " minor, %" PRIu64 " major\n", tr->end.minflt,
            tr->end.majflt);
    glibc_heap(&tr->end, out);
}

/* Under a top site, where its calls came from (heaptrack's "from" lines):
 * the frame below the site in each of its stacks, the busiest first, when
 * there is more than one. A site inside an allocation wrapper (xmalloc) says
 * little by itself; its callers say where the allocations are. */
#define MK_CALLERS_SHOWN 3
#define MK_CALLERS_KEPT  64 /* distinct callers tallied per site; the rest not shown */

typedef struct caller {
    char label[512];
    uint64_t calls;
} caller_t;

static int by_caller_calls(const void *a, const void *b)
{
    const caller_t *x = a, *y = b;
    return (x->calls < y->calls) - (x->calls > y->calls);
}

/* The callers of the stacks that joined line row `row` in the roll-up
 * (r->line_of_site). */
static void site_callers(const text_t *t, uint32_t row)
{
    mk_report_t *r = t->r;
    caller_t *callers = calloc(MK_CALLERS_KEPT, sizeof *callers);
    size_t n = 0;
    if (!callers)
        return;
    for (size_t i = 0; i < r->nsites; i++) {
        char buf[1024];
        mk_frame_t caller; /* the stack's second frame: its others stay unnamed */
        if (r->line_of_site[i] != row || !r->sites[i].agg->calls ||
            !mk_names_frame(r->names, r->sites[i].stack, 1, &caller))
            continue;
        const char *label = mk_frame_long(&caller, buf, sizeof buf);
        size_t j = 0;
        while (j < n && strcmp(callers[j].label, label) != 0)
            j++;
        if (j == n) {
            if (n == MK_CALLERS_KEPT)
                continue;
            snprintf(callers[n++].label, sizeof callers->label, "%s", label);
        }
        callers[j].calls += r->sites[i].agg->calls;
    }
    if (n > 1) {
        qsort(callers, n, sizeof *callers, by_caller_calls);
        for (size_t i = 0; i < n && i < MK_CALLERS_SHOWN; i++)
            fprintf(t->out, "       %" PRIu64 " calls from %s\n", callers[i].calls,
                    callers[i].label);
        if (n > MK_CALLERS_SHOWN)
            fprintf(t->out, "       ... and %zu more callers\n", n - MK_CALLERS_SHOWN);
    }
    free(callers);
}

/* "  1. 10 calls, 205 bytes: main at basic.c:12 (basic)", its callers below */
static void top_list(const text_t *t, int top)
{
    mk_report_t *r = t->r;
    /* A call site is where the call is: the source line (or, without line
     * information, the calling instruction), whatever called the function
     * it is in. By stack, one line reached from two callers would show as
     * two sites that read the same. */
    const mk_row_t *rows = r->nlines ? r->lines : r->sites;
    size_t n = r->nlines ? r->nlines : r->nsites;
    if (!n || top <= 0)
        return;
    fprintf(t->out, "Top call sites by %s%s:\n", mk_report_sort_title(r),
            r->prof.from_summary && !r->prof.site_stacks ? " (calling instruction)" : "");
    size_t shown = n < (size_t)top ? n : (size_t)top;
    for (size_t i = 0; i < shown; i++) {
        mk_frame_t innermost;
        bool named = mk_names_frame(r->names, rows[i].stack, 0, &innermost);
        char where[1024];
        const mk_stack_agg_t *g = rows[i].agg;
        if (r->prof.sampled)
            fprintf(
                t->out,
                "  %zu. ~%" PRIu64 " calls (+-%.0f), ~%" PRIu64 " bytes (+-%.0f): %s\n",
                i + 1, g->calls, sqrt(g->calls_var), g->bytes, sqrt(g->bytes_var),
                named ? mk_frame_long(&innermost, where, sizeof where) : "(no stack)");
        else if (r->prof.site_times) {
            char ns[32];
            fprintf(
                t->out,
                "  %zu. %s in the allocator, %" PRIu64 " calls, %" PRIu64 " bytes: %s\n",
                i + 1, mk_fmt_ns(g->alloc_ns, ns, sizeof ns), g->calls, g->bytes,
                named ? mk_frame_long(&innermost, where, sizeof where) : "(no stack)");
        } else
            fprintf(t->out, "  %zu. %" PRIu64 " calls, %" PRIu64 " bytes: %s\n", i + 1,
                    g->calls, g->bytes,
                    named ? mk_frame_long(&innermost, where, sizeof where)
                          : "(no stack)");
        if (r->nlines && r->line_of_site)
            site_callers(t, (uint32_t)i);
    }
}

/* A stack's first frames: --depth-shown's, else max_frames. */
static void stack_lines(const text_t *t, uint32_t stack, int max_frames,
                        const char *indent)
{
    uint32_t depth;
    if (t->r->opts.depth_shown > 0)
        max_frames = t->r->opts.depth_shown;
    const mk_frame_t *f = mk_names_stack(t->r->names, stack, &depth);
    for (uint32_t i = 0; i < depth && i < (uint32_t)max_frames; i++) {
        char where[1024];
        fprintf(t->out, "%s%s %s\n", indent, i ? "from" : "at  ",
                mk_frame_long(&f[i], where, sizeof where));
    }
    if (depth > (uint32_t)max_frames)
        fprintf(t->out, "%s... %u more frames\n", indent, depth - (uint32_t)max_frames);
}

/* The labels of the n rows shown, each row's named once: a stack row whose
 * innermost frame reads like another shown stack row's (one line reached
 * from two callers) adds its caller as memkit diff writes it, "xmalloc
 * (make) <- parse_file_seq (make)", so that the rows do not read the same.
 * A malloc'd array (free it), or NULL when out of memory: then the caller
 * prints mk_row_label's. */
typedef char label_t[1024];

static label_t *shown_labels(const text_t *t, const mk_row_t *rows, size_t n)
{
    label_t *labels = malloc((n ? n : 1) * sizeof *labels);
    bool *shared = calloc(n ? n : 1, sizeof *shared);
    if (!labels || !shared) {
        free(labels);
        free(shared);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        const char *label = mk_row_label(t->r, &rows[i], labels[i], sizeof labels[i]);
        if (label != labels[i])
            snprintf(labels[i], sizeof labels[i], "%s", label);
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (!rows[i].name && !rows[j].name && strcmp(labels[i], labels[j]) == 0)
                shared[i] = shared[j] = true;
    for (size_t i = 0; i < n; i++) {
        char with[1024]; /* a longer label is cut: its start says most */
        if (shared[i])
            snprintf(labels[i], sizeof labels[i], "%s",
                     mk_row_label_with_caller(t->r, &rows[i], with, sizeof with));
    }
    free(shared);
    return labels;
}

/* A number formatted one byte into its buffer: with "~" before it when the
 * trace is sampled (and the number not 0). */
static const char *est_of(const text_t *t, const char *num)
{
    if (!t->r->prof.sampled || strcmp(num, "0") == 0 || strcmp(num, "0 B") == 0)
        return num;
    char *at = (char *)num - 1;
    *at = '~';
    return at;
}

static void site_table(const text_t *t, const char *title, const mk_row_t *rows, size_t n,
                       int top)
{
    char head[256], a[32], b[32], c[32], d[32], e[32], s[32], label[1024];
    if (!n || top <= 0)
        return;
    snprintf(head, sizeof head, "%s (top %zu of %zu)", title,
             n < (size_t)top ? n : (size_t)top, n);
    heading(t, head);
    bool lines = strcmp(t->r->time_unit, "line") == 0;
    bool timed = t->r->prof.site_times; /* the allocator's time, measured */
    fprintf(t->out, "%12s %10s %10s %10s %11s %9s", "calls", "bytes", "at peak", "leaked",
            lines ? "life/lines" : "median life", "med size");
    if (timed)
        fprintf(t->out, " %10s", "time");
    fprintf(t->out, "  site\n");
    size_t shown = n < (size_t)top ? n : (size_t)top;
    label_t *labels = shown_labels(t, rows, shown);
    double tick = mk_report_time_resolution_ns(t->r);
    for (size_t i = 0; i < shown; i++) {
        const mk_stack_agg_t *g = rows[i].agg;
        uint64_t life = mk_hist_median_of(&g->life_hist);
        if (lines) {
            snprintf(e, sizeof e, "%" PRIu64, life);
        } else if ((double)life < tick) { /* within one tick: not "0 ns" */
            char res[24];
            snprintf(e, sizeof e, "<%s", mk_fmt_ns(tick, res, sizeof res));
        } else {
            mk_fmt_ns((double)life, e, sizeof e);
        }
        fprintf(t->out, "%12s %10s %10s %10s %11s %9s",
                est_of(t, mk_fmt_count(g->calls, a + 1, sizeof a - 1)),
                est_of(t, mk_fmt_bytes(g->bytes, b + 1, sizeof b - 1)),
                est_of(t, mk_fmt_bytes(g->peak_bytes, c + 1, sizeof c - 1)),
                est_of(t, mk_fmt_bytes(g->leaked_bytes, d + 1, sizeof d - 1)),
                g->frees ? e : "-", mk_fmt_bytes(mk_agg_median_size(g), s, sizeof s));
        if (timed) {
            char ns[32];
            fprintf(t->out, " %10s", mk_fmt_ns(g->alloc_ns, ns, sizeof ns));
        }
        fprintf(t->out, "  %s\n",
                labels ? labels[i] : mk_row_label(t->r, &rows[i], label, sizeof label));
    }
    free(labels);
}

static int by_peak(const void *x, const void *y)
{
    const mk_row_t *a = x, *b = y;
    return a->agg->peak_bytes < b->agg->peak_bytes   ? 1
           : a->agg->peak_bytes > b->agg->peak_bytes ? -1
                                                     : 0;
}

/* qsort_r's comparison of row pointers by a comparison of rows */
static int by_row_pointer(const void *x, const void *y, void *cmp)
{
    int (*rows_cmp)(const void *, const void *) =
        (int (*)(const void *, const void *))cmp;
    return rows_cmp(*(const mk_row_t *const *)x, *(const mk_row_t *const *)y);
}

static int by_leaked(const void *x, const void *y)
{
    const mk_row_t *a = x, *b = y;
    return a->agg->leaked_bytes < b->agg->leaked_bytes   ? 1
           : a->agg->leaked_bytes > b->agg->leaked_bytes ? -1
                                                         : 0;
}

/* The first n rows of sites in cmp's order, copied (rows are large: the
 * order is found on pointers, and only the rows shown are copied). */
static size_t top_rows(const mk_report_t *r, int (*cmp)(const void *, const void *),
                       size_t n, mk_row_t *out)
{
    const mk_row_t **order = malloc(r->nsites * sizeof *order);
    if (!order)
        return 0;
    for (size_t i = 0; i < r->nsites; i++)
        order[i] = &r->sites[i];
    qsort_r(order, r->nsites, sizeof *order, by_row_pointer, (void *)cmp);
    if (n > r->nsites)
        n = r->nsites;
    for (size_t i = 0; i < n; i++)
        out[i] = *order[i];
    free(order);
    return n;
}

static void peak_and_leaks(const text_t *t, int top)
{
    mk_report_t *r = t->r;
    char a[32], b[64], c[32], head[256];
    if (!r->nsites || r->prof.from_summary)
        return;
    size_t want = (size_t)top < r->nsites ? (size_t)top : r->nsites;
    mk_row_t *rows = malloc((want ? want : 1) * sizeof *rows);
    if (!rows)
        return;
    want = top_rows(r, by_peak, want, rows);
    if (strcmp(r->time_unit, "ns") == 0)
        mk_fmt_ns((double)r->prof.peak_time, b, sizeof b);
    else
        snprintf(b, sizeof b, "line %" PRIu64, r->prof.peak_time);
    const char *est = r->prof.sampled ? "~" : "";
    snprintf(head, sizeof head, "Peak: %s%s in %s%s blocks at %s, held by", est,
             mk_fmt_bytes(r->prof.max_allocated, a, sizeof a), est,
             mk_fmt_count(r->prof.peak_blocks, c, sizeof c), b);
    heading(t, head);
    size_t shown = 0;
    while (shown < want && rows[shown].agg->peak_bytes)
        shown++;
    label_t *labels = shown_labels(t, rows, shown);
    for (size_t i = 0; i < shown; i++) {
        char label[1024];
        fprintf(t->out, "%10s in %8s blocks  %s\n",
                est_of(t, mk_fmt_bytes(rows[i].agg->peak_bytes, a + 1, sizeof a - 1)),
                est_of(t, mk_fmt_count(rows[i].agg->peak_blocks, c + 1, sizeof c - 1)),
                labels ? labels[i] : mk_row_label(r, &rows[i], label, sizeof label));
    }
    free(labels);

    if (r->prof.live_blocks) {
        want = top_rows(r, by_leaked, want, rows);
        snprintf(head, sizeof head, "Leaks: %s%s blocks, %s%s still allocated at the end",
                 est, mk_fmt_count(r->prof.live_blocks, c, sizeof c), est,
                 mk_fmt_bytes(r->prof.live_bytes, a, sizeof a));
        heading(t, head);
        for (size_t i = 0; i < want && rows[i].agg->leaked_blocks; i++) {
            fprintf(
                t->out, "%10s in %8s blocks\n",
                est_of(t, mk_fmt_bytes(rows[i].agg->leaked_bytes, a + 1, sizeof a - 1)),
                est_of(t, mk_fmt_count(rows[i].agg->leaked_blocks, c + 1, sizeof c - 1)));
            stack_lines(t, rows[i].stack, 6, "    ");
        }
    }
    free(rows);
}

/* Frames two stacks share from the innermost on. */
static uint32_t shared_frames(const text_t *t, uint32_t a, uint32_t b)
{
    uint32_t da, db, n = 0;
    const mk_frame_t *fa = mk_names_stack(t->r->names, a, &da);
    const mk_frame_t *fb = mk_names_stack(t->r->names, b, &db);
    char x[1024], y[1024];
    while (n < da && n < db &&
           strcmp(mk_frame_label(&fa[n], x, sizeof x),
                  mk_frame_label(&fb[n], y, sizeof y)) == 0)
        n++;
    return n;
}

/* Another stack of a finding, from where it parts from the busiest one:
 * the frames both share are said, not repeated. */
static void other_stack(const text_t *t, uint32_t busiest, uint32_t stack)
{
    uint32_t depth, shared = shared_frames(t, busiest, stack), shown = 0;
    const mk_frame_t *f = mk_names_stack(t->r->names, stack, &depth);
    int max = t->r->opts.depth_shown > 0 ? t->r->opts.depth_shown : 2;
    fprintf(t->out, "     and from (its first %u frame%s the busiest stack's):\n", shared,
            shared == 1 ? "" : "s");
    for (uint32_t i = shared; i < depth && shown < (uint32_t)max; i++, shown++) {
        char where[1024];
        fprintf(t->out, "       from %s\n", mk_frame_long(&f[i], where, sizeof where));
    }
    if (depth > shared + shown)
        fprintf(t->out, "       ... %u more frames\n", depth - shared - shown);
}

static void findings(const text_t *t, int top, bool brief)
{
    mk_report_t *r = t->r;
    char a[32], b[32], c[32], head[256];
    if (!r->nfindings && r->prof.sampled) {
        if (!brief)
            heading(t, "Findings: none from a sampled trace (release orders and "
                       "temporaries need every event: trace without --sample)");
        return;
    }
    if (!r->nfindings) {
        if (!brief && !r->prof.from_summary)
            heading(t, "Findings: none (no site shows a pattern a known fix removes)");
        return;
    }
    if (r->savings_measured) { /* no price: the sites' measured times */
        if (brief)
            fprintf(t->out,
                    "Findings (savings: the allocator's time measured at each site):\n");
        else {
            snprintf(
                head, sizeof head,
                "Findings (%zu; savings: the allocator's time measured at each site)",
                r->nfindings);
            heading(t, head);
        }
    } else if (brief) {
        fprintf(t->out, "Findings (malloc+free costs %s here):\n",
                mk_fmt_ns(mk_report_cost_ns(r), c, sizeof c));
    } else {
        snprintf(head, sizeof head,
                 "Findings (%zu; malloc+free costs %s on this machine)", r->nfindings,
                 mk_fmt_ns(mk_report_cost_ns(r), c, sizeof c));
        heading(t, head);
    }
    size_t shown = brief ? (r->nfindings < (size_t)top ? r->nfindings : (size_t)top)
                         : mk_findings_shown(r, r->opts.findings_shown);
    for (size_t i = 0; i < shown; i++) {
        const mk_finding_t *f = &r->findings[i];
        uint32_t depth;
        const mk_frame_t *fr = mk_names_stack(r->names, f->stack, &depth);
        char where[1024], stacks[48] = "";
        if (f->nstacks > 1)
            snprintf(stacks, sizeof stacks, " from %u stacks", f->nstacks);
        const char *priced = "";
        if (r->savings_measured && f->npriced == f->nstacks)
            priced = " (priced: no call measured there)";
        else if (r->savings_measured && f->npriced)
            priced = " (in part priced: no call measured at some stacks)";
        fprintf(t->out,
                t->color ? "  %zu. \033[1m%s\033[0m: %s allocations%s, saves ~%s%s: %s\n"
                         : "  %zu. %s: %s allocations%s, saves ~%s%s: %s\n",
                i + 1, mk_finding_name(f->kind), mk_fmt_count(f->removable, a, sizeof a),
                stacks, mk_fmt_ns(f->saving_ns, b, sizeof b), priced,
                depth ? mk_frame_long(fr, where, sizeof where) : "(no stack)");
        if (brief)
            continue;
        fprintf(t->out, "     %s%s\n", f->nstacks > 1 ? "at the busiest stack: " : "",
                f->evidence);
        fprintf(t->out, "     fix: %s\n", f->fix);
        if (f->replayed) {
            char s1[32], s2[32], s3[32];
            double v = f->replay_saving_ns;
            fprintf(t->out,
                    "     replayed with the fix: saves %s%s%s, the fix's own calls "
                    "at most %s, %s heap calls gone\n",
                    v < 0 ? "-" : "", mk_fmt_ns(v < 0 ? -v : v, s1, sizeof s1),
                    f->replay_beyond_noise ? "" : " (within noise)",
                    mk_fmt_ns(f->replay_fix_ns, s2, sizeof s2),
                    mk_fmt_count((uint64_t)f->replay_calls_removed, s3, sizeof s3));
        }
        stack_lines(t, f->stack, 4, "       ");
        if (f->kind == MK_F_PAIRED) {
            fprintf(t->out, "     paired with:\n");
            stack_lines(t, f->stack2, 4, "       ");
        }
        for (uint32_t k = 1; k < f->nstacks && k < MK_FINDING_STACKS; k++)
            other_stack(t, f->stack, f->stacks[k]);
        if (f->nstacks > MK_FINDING_STACKS)
            fprintf(t->out, "     and %u more stacks\n", f->nstacks - MK_FINDING_STACKS);
    }
    if (!brief && shown < r->nfindings) {
        double rest = 0, all = 0;
        for (size_t i = 0; i < r->nfindings; i++) {
            all += r->findings[i].saving_ns;
            rest += i >= shown ? r->findings[i].saving_ns : 0;
        }
        bool one = r->nfindings - shown == 1;
        fprintf(t->out,
                "  %zu more finding%s ~%s in all (%.0f%% of the findings' "
                "saving): --findings all shows them\n",
                r->nfindings - shown, one ? " saves" : "s save",
                mk_fmt_ns(rest, b, sizeof b), all > 0 ? 100.0 * rest / all : 0);
    }
}

/* The answer first (mk_report_answer): how much, what it is worth, where,
 * and the first fix; the counts follow. */
static void answer(const text_t *t)
{
    mk_report_t *r = t->r;
    mk_answer_t a;
    char x[32], y[32], where[1024];
    mk_report_answer(r, &a);
    if (!a.present)
        return;
    fprintf(t->out, "Answer: the allocator %s %s", a.measured ? "took" : "costs about",
            mk_fmt_ns(a.ns, x, sizeof x));
    if (a.from_samples)
        fputs(" (sampled)", t->out);
    if (!a.measured)
        fprintf(t->out, " (%s calls at a malloc+free price of %s: not measured)",
                mk_fmt_count(r->prof.allocation_calls, x, sizeof x),
                mk_fmt_ns(a.price_ns, y, sizeof y));
    if (a.verdict)
        fprintf(t->out, " of %s CPU (%.1f%%): %s", mk_fmt_ns(a.cpu_ns, x, sizeof x),
                100.0 * a.ns / a.cpu_ns, a.verdict);
    fputs("\n", t->out);
    if (a.nwhere) {
        fputs("Where:", t->out);
        for (size_t i = 0; i < a.nwhere; i++)
            fprintf(t->out, "%s %s %.0f%%", i ? "," : "", a.where[i].name,
                    100.0 * a.where[i].share);
        fprintf(t->out, " of the %s%s\n",
                a.by_time ? "allocator's time" : "allocation calls",
                r->prof.sampled ? " (estimates)" : "");
    }
    const mk_finding_t *f = a.first_fix;
    if (!f)
        return;
    mk_frame_t innermost;
    bool named = mk_names_frame(r->names, f->stack, 0, &innermost);
    fprintf(t->out, "First fix: %s at %s: %s (saves ~%s", mk_finding_name(f->kind),
            named ? mk_frame_long(&innermost, where, sizeof where) : "(no stack)", f->fix,
            mk_fmt_ns(f->saving_ns, x, sizeof x));
    if (a.measured && !f->priced)
        fprintf(t->out, ", %.0f%% of the allocator's time", 100.0 * f->saving_ns / a.ns);
    fputs(")\n", t->out);
}

/* A merged report's processes, busiest first (all of them: the table is
 * the map of the run). */
static void processes(const text_t *t)
{
    const mk_report_t *r = t->r;
    if (r->nprocs < 2)
        return;
    fprintf(t->out,
            "\nProcesses: %zu (totals above are their sums; the peak is the largest "
            "process's)\n",
            r->nprocs);
    mk_render_processes(t->out, r->procs, r->nprocs, r->nprocs);
}

void mk_render_processes(FILE *out, const mk_report_process_t *procs, size_t n,
                         size_t max_rows)
{
    fprintf(out, "  %8s %16s %14s  %s\n", "pid", "allocation calls", "peak bytes",
            "command");
    for (size_t i = 0; i < n && i < max_rows; i++)
        fprintf(out, "  %8u %16" PRIu64 " %14" PRIu64 "  %s\n", procs[i].pid,
                procs[i].calls, procs[i].peak_bytes, procs[i].command);
    if (n > max_rows)
        fprintf(out, "  ... and %zu more processes\n", n - max_rows);
}

void mk_render_growth(mk_report_t *r, FILE *out, int top, bool color)
{
    text_t t = {r, out, color};
    const mk_growth_t *g = &r->prof.growth;
    char a[32], b[32], c[32], head[256], label[1024];
    if (g->n < 2) {
        fprintf(out,
                "Growth: needs 2 or more snapshots, and %s has %zu (trace with --sample "
                "BYTES --snapshot-every T, or send the program SIGUSR2)\n",
                r->path, g->n);
        return;
    }
    mk_growth_row_t *rows;
    size_t n = mk_report_growth(r, &rows);
    const char *est = r->prof.sampled ? "~" : "";
    mk_fmt_ns((double)g->times[0], a, sizeof a);
    mk_fmt_ns((double)g->times[g->n - 1], b, sizeof b);
    snprintf(head, sizeof head,
             "Growth across %zu %s (%s to %s): %zu site%s whose live "
             "bytes grow, fastest first",
             g->n, g->snapshots ? "snapshots" : "points of the run", a, b, n,
             n == 1 ? "" : "s");
    fprintf(out, color ? "\033[1m%s\033[0m\n" : "%s\n", head);
    if (!n) {
        free(rows);
        return;
    }
    fprintf(out, "%12s %10s %10s %6s  %s\n", "per second", "first", "last", "rises",
            "site");
    size_t shown = n < (size_t)top ? n : (size_t)top;
    for (size_t i = 0; i < shown; i++) {
        char rate[40], rises[16];
        snprintf(rate, sizeof rate, "%s%s/s", est,
                 mk_fmt_bytes((uint64_t)rows[i].slope, c, sizeof c));
        snprintf(rises, sizeof rises, "%u/%zu", rows[i].rises, g->n - 1);
        fprintf(out, "%12s %10s %10s %6s  %s\n", rate,
                est_of(&t, mk_fmt_bytes(rows[i].first, a + 1, sizeof a - 1)),
                est_of(&t, mk_fmt_bytes(rows[i].last, b + 1, sizeof b - 1)), rises,
                mk_row_label_with_caller(r, rows[i].row, label, sizeof label));
    }
    for (size_t i = 0; i < shown && i < 3; i++) {
        fprintf(out, "\n%zu. grows %s%s/s:\n", i + 1, est,
                mk_fmt_bytes((uint64_t)rows[i].slope, c, sizeof c));
        stack_lines(&t, rows[i].stack, 8, "    ");
    }
    free(rows);
}

#define SLOW_ADVICE_SHARE 0.25

/* "Allocator time by calling function": where a profiler's call graph
 * puts it (frees by the function that freed). */
static void callers_table(const text_t *t, int top)
{
    const mk_report_t *r = t->r;
    if (!r->ncallers || top <= 0)
        return;
    char head[128], ns[32];
    size_t shown = r->ncallers < (size_t)top ? r->ncallers : (size_t)top;
    snprintf(head, sizeof head, "Allocator time by calling function (top %zu of %zu)",
             shown, r->ncallers);
    heading(t, head);
    fprintf(t->out, "%10s %7s %7s  %s\n", "time", "share", "slow", "function");
    for (size_t i = 0; i < shown; i++) {
        const mk_caller_t *c = &r->callers[i];
        fprintf(t->out, "%10s %6.1f%% %6.0f%%  %s\n", mk_fmt_ns(c->ns, ns, sizeof ns),
                r->prof.alloc_ns > 0 ? 100.0 * c->ns / r->prof.alloc_ns : 0.0,
                c->ns > 0 ? 100.0 * c->slow_ns / c->ns : 0.0, c->name);
    }
    /* Concentrated in slow calls: the allocator's own slow paths, which its
     * settings move (SLOW_ADVICE_SHARE of the time or more). */
    const mk_profile_t *p = &r->prof;
    if (p->alloc_ns > 0 && p->slow_ns >= SLOW_ADVICE_SHARE * p->alloc_ns) {
        const mk_caller_t *most = &r->callers[0];
        for (size_t i = 1; i < r->ncallers; i++)
            if (r->callers[i].slow_ns > most->slow_ns)
                most = &r->callers[i];
        char bound[32], count[32], in[32];
        fprintf(
            t->out,
            "%.0f%% of the allocator's time is in %s slow calls (%s or more), %s of it "
            "from %s: glibc spends such calls consolidating freed chunks, growing or "
            "trimming the heap and mapping large blocks; memkit tune tries its "
            "settings (mxfast, trim_threshold, mmap_threshold) on this program.\n",
            100.0 * p->slow_ns / p->alloc_ns,
            mk_fmt_count(p->slow_calls, count, sizeof count),
            mk_fmt_ns(p->slow_bound_ns, bound, sizeof bound),
            mk_fmt_ns(most->slow_ns, in, sizeof in), most->name);
    }
}

/* The modules whose frames above are offsets: why, and what would name them. */
static void unsymbolized(text_t *t, int top)
{
    mk_unsymbolized_t u[3];
    size_t n = mk_report_unsymbolized(t->r, (size_t)top, u, 3);
    for (size_t i = 0; i < n; i++) {
        char debug[256];
        fprintf(t->out,
                "No symbols for %s (%u frame%s above shown as an offset): neither a "
                "symbol table nor debug information for it was found.\n",
                u[i].module, u[i].frames, u[i].frames == 1 ? "" : "s");
        fputs("  To name them: build it with -g, or install its debug symbols", t->out);
        if (u[i].path)
            fprintf(t->out, " (Debian: the -dbgsym package of `dpkg -S %s`'s package)",
                    u[i].path);
        if (mk_debug_file_of(&u[i], debug, sizeof debug)[0])
            fprintf(t->out, ", or put its debug file at %s", debug);
        fputs("\n", t->out);
    }
}

void mk_render_text(mk_report_t *r, FILE *out, int top, bool color, bool brief)
{
    text_t t = {r, out, color};
    answer(&t);
    totals(&t);
    processes(&t);
    if (brief) {
        top_list(&t, top);
        findings(&t, 3, true);
        if (r->prof.site_stacks) /* the tracer's own totals: nothing was replayed */
            fprintf(out, "Findings, temporaries and the peak's holders: memkit report "
                         "replays the trace for them\n");
        return;
    }
    if (r->kind == MK_INPUT_MEMDEBUG && r->md.unrecognized)
        fprintf(out, "Lines not understood: %" PRIu64 "\n", r->md.unrecognized);
    char title[3][64];
    snprintf(title[0], sizeof title[0], "Sites by %s", mk_report_sort_title(r));
    snprintf(title[1], sizeof title[1], "Functions by %s", mk_report_sort_title(r));
    snprintf(title[2], sizeof title[2], "Source lines by %s", mk_report_sort_title(r));
    callers_table(&t, top);
    site_table(&t, title[0], r->sites, r->nsites, top);
    if (r->kind == MK_INPUT_TRACE)
        site_table(&t, title[1], r->functions, r->nfunctions, top);
    site_table(&t, title[2], r->lines, r->nlines, top);
    unsymbolized(&t, top);
    peak_and_leaks(&t, top);
    findings(&t, top, false);
}
