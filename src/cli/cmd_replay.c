/*
 * cmd_replay.c - `memkit replay [OPTIONS] TRACE...`: a trace's exact
 * allocation calls against each allocator, in a fresh process each.
 *
 * The traces are compiled once (replay_ops.c); every allocator then replays
 * them --rounds times, round-robin with a rotating start (memkit tune's
 * schedule), so drift of the machine hits every allocator alike. What is
 * compared is the allocator's own time (each call timed, nothing of the
 * program's), its heap's RSS and its page faults. An allocator beats
 * glibc's default only when the exact Mann-Whitney test says its rounds
 * are faster (or leaner) beyond chance (p <= 0.05, as memkit tune).
 */
#define _GNU_SOURCE
#include "opts.h"
#include "outfile.h"
#include "replay.h"
#include "tune.h"

#include "../analyze/fmt.h"
#include "../analyze/names.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ROUNDS MK_STAT_MAX
#define MAX_ARGS   4096
#define MAX_ALLOCS 48
#define MAX_WHATIF 24 /* findings tried in one replay, and all together */

#define MAX_ENV 8

typedef struct alloc {
    char name[40];
    char *env[MAX_ENV + 1]; /* "VAR=value", NULL-ended */
    const char *status;     /* "ok", "missing", "n/a", "failed" */
    char reason[300];
    int nrounds;
    double ns[MAX_ROUNDS], rss[MAX_ROUNDS], faults[MAX_ROUNDS], end_rss[MAX_ROUNDS];
    double wall_ns[MAX_ROUNDS];
    mk_bench_hist hist; /* every round's calls */
    double ns_per_tick;
    uint64_t *site_ticks; /* every round's, per stack id of each trace */
    mk_stat t, r, f;
    double speedup, p_faster, rss_ratio, p_leaner;
    mk_whatif *what_if;        /* a what-if's row (glibc with a finding's fix) */
    double removed;            /* the last round's heap calls the fix took */
    double fix_ns[MAX_ROUNDS]; /* the fix's own time per round */
    uint32_t npoints;          /* the heap over the last round, the traces in turn */
    mk_replay_point points[MK_REPLAY_POINTS];
} alloc_t;

typedef struct replay_state {
    const char *list;
    int rounds;
    int threads;                   /* 0: as traced, 1: one */
    const char *extra[MAX_ALLOCS]; /* --allocator values */
    int nextra;
    bool json;
    const char *html; /* --html FILE */
    int top;
    bool what_if;
    const char *what_if_list;
    mk_whatif_set set;
    mk_replay_prog *prog; /* one per trace */
    int nprog;
    uint32_t *site_base; /* each trace's first place in site_ticks, and the end */
    alloc_t a[MAX_ALLOCS];
    int n;
} replay_state_t;

static const char *const thread_modes[] = {"as-traced", "1", NULL};

static int set_what_if(void *dest, const mk_opt_t *opt, const char *v)
{
    replay_state_t *st = dest;
    (void)opt;
    st->what_if = true;
    st->what_if_list = v;
    return -1;
}

#define RS(field) offsetof(replay_state_t, field)

static int add_allocator(void *dest, const mk_opt_t *opt, const char *v)
{
    replay_state_t *st = dest;
    (void)opt;
    if (st->nextra == MAX_ALLOCS / 2)
        return mk_usage_error("replay: too many --allocator options");
    st->extra[st->nextra++] = v;
    return -1;
}

static const mk_opt_t replay_options[] = {
    {.name = "--allocators",
     .arg = "LIST",
     .kind = MK_OPT_STRING,
     .at = RS(list),
     .help = "allocators to replay against, comma-separated, from memkit tune's\n"
             "built-in candidates (default all installed; glibc always runs:\n"
             "it is the baseline)"},
    {.name = "--allocator",
     .arg = "NAME=ENV",
     .kind = MK_OPT_CALL,
     .call = add_allocator,
     .help = "one more allocator, your own: NAME=VAR=VALUE[ VAR=VALUE...], e.g.\n"
             "mine=LD_PRELOAD=/path/libmine.so (repeatable)"},
    {.name = "--threads",
     .arg = "as-traced|1",
     .kind = MK_OPT_CHOICE,
     .at = RS(threads),
     .choices = thread_modes,
     .help = "each traced thread's calls on a thread of its own (default), a\n"
             "free of another thread's block after its allocation; or all on one"},
    {.name = "--rounds",
     .arg = "N",
     .kind = MK_OPT_INT,
     .at = RS(rounds),
     .lo = 1,
     .hi = MAX_ROUNDS,
     .help = "replays per allocator, interleaved (default 5)"},
    {.name = "--top",
     .arg = "N",
     .kind = MK_OPT_INT,
     .at = RS(top),
     .lo = 0,
     .hi = 1000,
     .help = "sites shown by glibc's allocator time (default 10)"},
    {.name = "--what-if",
     .arg = "[=N,N...]",
     .kind = MK_OPT_CALL,
     .call = set_what_if,
     .help = "replay under glibc with each finding's fix applied to the calls it\n"
             "names (the findings memkit report numbers N; default those it\n"
             "shows) and all of them together: each fix's measured saving. Only\n"
             "glibc runs unless --allocators is given"},
    {.name = "--html",
     .arg = "FILE",
     .kind = MK_OPT_STRING,
     .at = RS(html),
     .help = "also write one self-contained page: the table, bar charts, the\n"
             "heap over time, the what-if"},
    {.name = "--json",
     .kind = MK_OPT_FLAG,
     .at = RS(json),
     .help = "JSON on stdout (docs/replay-json.md) instead of the table"},
};

static const mk_command_spec_t replay_spec = {
    .name = "replay",
    .synopsis = "memkit replay [OPTIONS] TRACE...",
    .about =
        "Replays every allocation call of the traces (sizes, alignments, order,\n"
        "reallocs, frees and their threads) against each allocator, each in a fresh\n"
        "process, and compares the allocator's own time per call, its heap's peak\n"
        "RSS and its page faults. Each block's first and last bytes and a byte of\n"
        "every page between are written, as a program writes what it allocates.\n"
        "A TRACE is a trace file (.mkt) or a run's prefix (its every process,\n"
        "replayed one after another), traced without --sample or --summary-only.\n",
    .max_args = MAX_ARGS,
};

/* ------------------------------------------------------------------------ */
/* the allocators                                                            */

/* An allocator given with --allocator: a name not taken, its environment. */
static int parse_extra(replay_state_t *st, const char *spec, alloc_t *a)
{
    int rc = mk_alloc_spec_parse("replay: --allocator", spec, a->name, sizeof a->name,
                                 a->env, MAX_ENV);

    if (rc >= 0)
        return rc;
    for (int i = 0; i < st->n; i++)
        if (strcmp(st->a[i].name, a->name) == 0)
            return mk_usage_error("replay: --allocator '%s': the name %s is taken", spec,
                                  a->name);
    a->status = "ok";
    for (int k = 0; a->env[k] && MK_SANITIZED; k++)
        if (strncmp(a->env[k], "LD_PRELOAD=", 11) == 0) {
            a->status = "n/a";
            snprintf(a->reason, sizeof a->reason,
                     "this memkit is a sanitizer build: no allocator can be preloaded");
        }
    return -1;
}

static int choose(replay_state_t *st)
{
    bool want[MAX_ALLOCS] = {true};

    if (mk_n_alloc_presets + MAX_ALLOCS / 2 > MAX_ALLOCS)
        return mk_usage_error("replay: too many allocators");
    if (st->list) {
        int rc = mk_alloc_presets_choose(st->list, want, "replay: unknown allocator");
        if (rc >= 0)
            return rc;
    }
    for (size_t i = 0; i < mk_n_alloc_presets; i++) {
        const mk_alloc_preset *p = &mk_alloc_presets[i];
        alloc_t *a = &st->a[st->n];

        if ((st->list && !want[i]) || (!st->list && st->what_if && i > 0))
            continue;
        st->n++;
        snprintf(a->name, sizeof a->name, "%s", p->name);
        if (p->soname && MK_SANITIZED) {
            a->status = "n/a";
            snprintf(a->reason, sizeof a->reason,
                     "this memkit is a sanitizer build: no allocator can be preloaded");
        } else if (!(a->status = mk_alloc_preset_env(p, &a->env[0], a->reason,
                                                     sizeof a->reason))) {
            return mk_usage_error("replay: out of memory");
        }
    }
    for (int i = 0; i < st->nextra; i++) {
        int rc = parse_extra(st, st->extra[i], &st->a[st->n]);
        if (rc >= 0)
            return rc;
        st->n++;
    }
    return -1;
}

static bool runs(const alloc_t *a)
{
    return strcmp(a->status, "ok") == 0;
}

/* One round of allocator a: every trace once. */
/* The ticks a's rows hold at each what-if's stacks, into at[k]. */
static void what_if_ticks(replay_state_t *st, const alloc_t *a, double *at)
{
    for (size_t k = 0; k < st->set.n + st->set.together; k++)
        at[k] = mk_whatif_ticks(&st->set.w[k], a->site_ticks);
}

/* A process's points after the round's earlier ones (at + its time),
 * their RSS less the process's base. */
static void add_points(alloc_t *a, const mk_replay_result *res, uint64_t at)
{
    for (uint32_t i = 0; i < res->npoints; i++) {
        mk_replay_point p = res->points[i];
        p.t_ns += at;
        p.rss_bytes =
            p.rss_bytes > res->base_rss_bytes ? p.rss_bytes - res->base_rss_bytes : 0;
        mk_replay_point_add(a->points, &a->npoints, p);
    }
}

static void replay_round(replay_state_t *st, alloc_t *a)
{
    double ns = 0, rss = 0, faults = 0, wall = 0, end = 0;
    double before[MAX_WHATIF] = {0};

    if (st->what_if)
        what_if_ticks(st, a, before);
    a->npoints = 0;
    for (int i = 0; i < st->nprog; i++) {
        mk_replay_result res;

        if (!mk_replay_run(&st->prog[i], a->env, a->what_if ? a->what_if->fixes : NULL,
                           &res, a->site_ticks + st->site_base[i], a->reason,
                           sizeof a->reason)) {
            a->status = "failed";
            return;
        }
        a->ns_per_tick = res.ns_per_tick;
        add_points(a, &res, (uint64_t)wall);
        ns += (double)res.alloc_ticks * res.ns_per_tick;
        wall += (double)res.wall_ns;
        /* processes run one after another: the largest heap is the peak */
        double heap = res.peak_rss_bytes > res.base_rss_bytes
                          ? (double)(res.peak_rss_bytes - res.base_rss_bytes)
                          : 0;
        if (heap > rss)
            rss = heap;
        end += res.end_rss_bytes > res.base_rss_bytes
                   ? (double)(res.end_rss_bytes - res.base_rss_bytes)
                   : 0; /* each process's heap as it exits */
        faults += (double)res.minor_faults;
        a->removed = (double)res.fix_calls;
        a->fix_ns[a->nrounds] = (double)res.fix_ticks * res.ns_per_tick;
        mk_bench_hist_merge(&a->hist, &res.hist);
    }
    for (size_t k = 0; st->what_if && k < st->set.n + st->set.together; k++) {
        mk_whatif *w = &st->set.w[k];
        double round = mk_whatif_ticks(w, a->site_ticks) - before[k];
        if (a->what_if == w)
            w->fixed_ticks[a->nrounds] = round;
        else if (a == &st->a[0])
            w->base_ticks[a->nrounds] = round;
    }
    a->ns[a->nrounds] = ns;
    a->rss[a->nrounds] = rss;
    a->faults[a->nrounds] = faults;
    a->end_rss[a->nrounds] = end;
    a->wall_ns[a->nrounds] = wall;
    a->nrounds++;
}

static void conclude(replay_state_t *st)
{
    alloc_t *base = &st->a[0];

    for (int i = 0; i < st->n; i++) {
        alloc_t *a = &st->a[i];
        if (!runs(a))
            continue;
        a->t = mk_stat_of(a->ns, a->nrounds);
        a->r = mk_stat_of(a->rss, a->nrounds);
        a->f = mk_stat_of(a->faults, a->nrounds);
    }
    for (int i = 1; i < st->n; i++) {
        alloc_t *a = &st->a[i];
        if (!runs(a) || !runs(base))
            continue;
        a->speedup = a->t.median > 0 ? base->t.median / a->t.median : 0;
        a->rss_ratio = base->r.median > 0 ? a->r.median / base->r.median : 0;
        a->p_faster = mk_p_smaller(a->ns, a->nrounds, base->ns, base->nrounds);
        a->p_leaner = mk_p_smaller(a->rss, a->nrounds, base->rss, base->nrounds);
        if (a->what_if) {
            a->what_if->alloc_ns = a->t.median;
            mk_whatif_measure(&st->set, a->what_if, base->site_ticks, a->site_ticks,
                              a->nrounds, a->ns_per_tick);
            a->what_if->fix_ns = mk_stat_of(a->fix_ns, a->nrounds).median;
            a->what_if->calls_removed = a->removed;
            a->what_if->peak_rss = a->r.median;
        }
    }
    for (int i = 1; i < st->n; i++)
        if (st->a[i].what_if && !runs(&st->a[i])) {
            st->a[i].what_if->status = "failed";
            snprintf(st->a[i].what_if->reason, sizeof st->a[i].what_if->reason, "%s",
                     st->a[i].reason);
        }
}

/* A row per finding tried, after the allocators: glibc's environment, the
 * finding's fixes. */
static int add_what_ifs(replay_state_t *st)
{
    if (st->nprog != 1)
        return mk_usage_error("replay: --what-if takes one process's trace (%d given)",
                              st->nprog);
    int rc = mk_whatif_prepare(&st->prog[0], st->what_if_list, &st->set);
    if (rc >= 0)
        return rc;
    if (st->set.n + st->set.together > MAX_WHATIF || st->n + MAX_WHATIF > MAX_ALLOCS)
        return mk_usage_error("replay: --what-if: at most %d findings at once",
                              MAX_WHATIF - 1);
    for (size_t k = 0; k < st->set.n + st->set.together; k++) {
        mk_whatif *w = &st->set.w[k];
        alloc_t *a = &st->a[st->n];
        if (strcmp(w->status, "ok") != 0)
            continue;
        st->n++;
        a->what_if = w;
        a->status = "ok";
        snprintf(a->name, sizeof a->name, "what-if %d", w->number);
        for (int e = 0; e < MAX_ENV && st->a[0].env[e]; e++)
            if (!(a->env[e] = strdup(st->a[0].env[e])))
                return mk_usage_error("replay: out of memory");
    }
    return -1;
}

/* The fastest (or leanest) beyond noise, index 0 (glibc) when none is. */
static int best(const replay_state_t *st, bool by_time)
{
    int b = 0;

    for (int i = 1; i < st->n; i++) {
        const alloc_t *a = &st->a[i];
        if (!runs(a) || a->what_if ||
            (by_time ? a->p_faster : a->p_leaner) > MK_P_BEYOND_NOISE)
            continue;
        if (by_time ? a->t.median < st->a[b].t.median : a->r.median < st->a[b].r.median)
            b = i;
    }
    return b;
}

/* ------------------------------------------------------------------------ */
/* sites                                                                     */

typedef struct site_row {
    char label[256];
    double ns;
} site_row_t;

static int by_ns(const void *x, const void *y)
{
    const site_row_t *a = x, *b = y;
    return (a->ns < b->ns) - (a->ns > b->ns);
}

/* glibc's time per allocating function (a stack's innermost frame), summed
 * over the stacks that share it; *n rows, largest first. */
static site_row_t *site_rows(replay_state_t *st, size_t *n)
{
    const alloc_t *g = &st->a[0];
    site_row_t *rows = NULL;
    size_t cap = 0;

    *n = 0;
    if (!runs(g) || !g->nrounds)
        return NULL;
    for (int i = 0; i < st->nprog; i++) {
        mk_names_t *names = mk_names_for_trace(st->prog[i].tr, true);
        for (uint32_t s = 0; names && s < st->prog[i].nsites; s++) {
            uint64_t ticks = g->site_ticks[st->site_base[i] + s];
            mk_frame_t f;
            char label[256];
            size_t k;

            if (!ticks)
                continue;
            if (!mk_names_innermost(names, s, &f))
                snprintf(label, sizeof label, "(no stack)");
            else
                mk_frame_label(&f, label, sizeof label);
            for (k = 0; k < *n && strcmp(rows[k].label, label) != 0; k++)
                ;
            if (k == *n) {
                if (!mk_grow((void **)&rows, &cap, *n + 1, sizeof *rows))
                    break;
                snprintf(rows[k].label, sizeof rows[k].label, "%s", label);
                (*n)++;
            }
            rows[k].ns += (double)ticks * g->ns_per_tick / g->nrounds;
        }
        mk_names_free(names);
    }
    if (rows)
        qsort(rows, *n, sizeof *rows, by_ns);
    return rows;
}

/* ------------------------------------------------------------------------ */
/* output                                                                    */

static double quantile_ns(const alloc_t *a, double q)
{
    return (double)mk_bench_hist_quantile(&a->hist, q) * a->ns_per_tick;
}

/* Each allocator's heap RSS over its live bytes at 8 even points of its
 * last round, when the heap is big enough for pages not to decide it. */
#define OVER_TIME_POINTS 8
#define OVER_TIME_MIN    (1u << 20)

static void print_over_time(replay_state_t *st, FILE *out)
{
    uint64_t live = 0;

    for (int i = 0; i < st->nprog; i++)
        if (st->prog[i].peak_live_bytes > live)
            live = st->prog[i].peak_live_bytes;
    if (live < OVER_TIME_MIN)
        return;
    fprintf(out,
            "\nHeap RSS over live bytes as the replay goes (its last round, %d even "
            "points):\n",
            OVER_TIME_POINTS);
    for (int i = 0; i < st->n; i++) {
        const alloc_t *a = &st->a[i];
        if (!runs(a) || a->what_if || !a->npoints)
            continue;
        fprintf(out, "  %-17s", a->name);
        for (int k = 0; k < OVER_TIME_POINTS; k++) {
            const mk_replay_point *p =
                &a->points[(size_t)k * (a->npoints - 1) / (OVER_TIME_POINTS - 1)];
            if (p->live_bytes)
                fprintf(out, " %6.2fx", (double)p->rss_bytes / (double)p->live_bytes);
            else
                fprintf(out, " %7s", "-");
        }
        fputc('\n', out);
    }
}

static void print_table(replay_state_t *st, FILE *out)
{
    char b1[32], b2[32], b3[32], b4[32], b5[32];
    uint64_t calls = 0, cross = 0, skipped = 0, live = 0;
    int threads = 0;

    for (int i = 0; i < st->nprog; i++) {
        calls += st->prog[i].calls;
        cross += st->prog[i].cross_thread;
        skipped += st->prog[i].skipped;
        threads += st->prog[i].nthreads;
        if (st->prog[i].peak_live_bytes > live)
            live = st->prog[i].peak_live_bytes;
    }
    fprintf(out,
            "Replayed %s allocator calls of %d trace%s on %d thread%s (%s across "
            "threads), %d round%s each; the most live at once: %s\n",
            mk_fmt_count(calls, b1, sizeof b1), st->nprog, st->nprog == 1 ? "" : "s",
            threads, threads == 1 ? "" : "s", mk_fmt_count(cross, b2, sizeof b2),
            st->rounds, st->rounds == 1 ? "" : "s", mk_fmt_bytes(live, b3, sizeof b3));
    if (skipped)
        fprintf(out,
                "(%s frees and reallocs of blocks the trace never showed allocated "
                "were left out)\n",
                mk_fmt_count(skipped, b1, sizeof b1));
    fprintf(out, "\n%-17s %12s %10s %10s %10s %11s %9s %10s\n", "allocator", "alloc time",
            "p50/call", "p99/call", "max/call", "heap RSS", "vs live", "vs glibc");
    for (int i = 0; i < st->n; i++) {
        alloc_t *a = &st->a[i];
        if (a->what_if)
            continue;
        if (!runs(a)) {
            fprintf(out, "%-17s %s: %s\n", a->name, a->status, a->reason);
            continue;
        }
        char vs[32] = "1.00x";
        if (i > 0)
            snprintf(vs, sizeof vs, "%.2fx%s", a->speedup,
                     a->p_faster <= MK_P_BEYOND_NOISE ? "*" : "");
        fprintf(out, "%-17s %12s %10s %10s %10s %11s %8.2fx %10s\n", a->name,
                mk_fmt_ns(a->t.median, b1, sizeof b1),
                mk_fmt_ns(quantile_ns(a, 0.5), b2, sizeof b2),
                mk_fmt_ns(quantile_ns(a, 0.99), b3, sizeof b3),
                mk_fmt_ns((double)a->hist.max * a->ns_per_tick, b4, sizeof b4),
                mk_fmt_bytes((uint64_t)a->r.median, b5, sizeof b5),
                live ? a->r.median / (double)live : 0.0, vs);
    }
    fprintf(out,
            "(medians of the rounds; * beyond noise: faster in enough rounds, "
            "Mann-Whitney p <= %.2f)\n",
            MK_P_BEYOND_NOISE);
    int f = best(st, true), l = best(st, false);
    fprintf(out, "\nfastest: %s\n",
            f ? st->a[f].name : "glibc (nothing beats the default beyond noise)");
    fprintf(out, "leanest: %s\n",
            l ? st->a[l].name : "glibc (nothing beats the default beyond noise)");
    print_over_time(st, out);
    if (st->what_if)
        mk_whatif_print(&st->set, st->a[0].t.median, out);
    if (st->top == 0)
        return;
    size_t n;
    site_row_t *rows = site_rows(st, &n);
    if (!rows)
        return;
    double mean = 0; /* the rows are the rounds' means */
    for (int r = 0; r < st->a[0].nrounds; r++)
        mean += st->a[0].ns[r] / st->a[0].nrounds;
    fprintf(out, "\nAllocator time by allocating function under glibc (a block's free "
                 "counted with its allocation; the rounds' mean):\n");
    for (size_t k = 0; k < n && k < (size_t)st->top; k++)
        fprintf(out, "  %10s  %5.1f%%  %s\n", mk_fmt_ns(rows[k].ns, b1, sizeof b1),
                mean > 0 ? 100.0 * rows[k].ns / mean : 0.0, rows[k].label);
    free(rows);
}

static void print_json(replay_state_t *st, FILE *out)
{
    mk_json j = {.out = out};
    uint64_t calls = 0, frees = 0, cross = 0, skipped = 0, live = 0, blocks = 0;

    for (int i = 0; i < st->nprog; i++) {
        calls += st->prog[i].calls;
        frees += st->prog[i].frees;
        cross += st->prog[i].cross_thread;
        skipped += st->prog[i].skipped;
        if (st->prog[i].peak_live_bytes > live)
            live = st->prog[i].peak_live_bytes;
        if (st->prog[i].peak_live_blocks > blocks)
            blocks = st->prog[i].peak_live_blocks;
    }
    mk_json_begin_object(&j);
    mk_json_key(&j, "schema");
    mk_json_string(&j, "memkit-replay");
    mk_json_key(&j, "version");
    mk_json_uint(&j, 1);
    mk_json_key(&j, "traces");
    mk_json_begin_array(&j);
    for (int i = 0; i < st->nprog; i++)
        mk_json_string(&j, st->prog[i].path);
    mk_json_end_array(&j);
    mk_json_key(&j, "threads");
    mk_json_string(&j, thread_modes[st->threads]);
    mk_json_key(&j, "rounds");
    mk_json_uint(&j, (uint64_t)st->rounds);
    mk_json_key(&j, "calls");
    mk_json_uint(&j, calls);
    mk_json_key(&j, "frees");
    mk_json_uint(&j, frees);
    mk_json_key(&j, "cross_thread_calls");
    mk_json_uint(&j, cross);
    mk_json_key(&j, "skipped_calls");
    mk_json_uint(&j, skipped);
    mk_json_key(&j, "peak_live_bytes");
    mk_json_uint(&j, live);
    mk_json_key(&j, "peak_live_blocks");
    mk_json_uint(&j, blocks);
    mk_json_key(&j, "allocators");
    mk_json_begin_array(&j);
    for (int i = 0; i < st->n; i++) {
        alloc_t *a = &st->a[i];
        if (a->what_if)
            continue;
        mk_json_begin_object(&j);
        mk_json_key(&j, "name");
        mk_json_string(&j, a->name);
        mk_json_key(&j, "env");
        mk_json_begin_object(&j);
        for (int k = 0; k < MAX_ENV && a->env[k]; k++) {
            const char *eq = strchr(a->env[k], '=');
            char name[128];
            snprintf(name, sizeof name, "%.*s", (int)(eq - a->env[k]), a->env[k]);
            mk_json_key(&j, name);
            mk_json_string(&j, eq + 1);
        }
        mk_json_end_object(&j);
        mk_json_key(&j, "status");
        mk_json_string(&j, a->status);
        if (!runs(a)) {
            mk_json_key(&j, "reason");
            mk_json_string(&j, a->reason);
            mk_json_end_object(&j);
            continue;
        }
        mk_json_key(&j, "allocator_ns");
        mk_json_double(&j, a->t.median);
        mk_json_stat(&j, "allocator_ns_rounds", a->t);
        mk_json_key(&j, "wall_ns");
        mk_json_double(&j, mk_stat_of(a->wall_ns, a->nrounds).median);
        mk_json_key(&j, "p50_ns");
        mk_json_double(&j, quantile_ns(a, 0.5));
        mk_json_key(&j, "p99_ns");
        mk_json_double(&j, quantile_ns(a, 0.99));
        mk_json_key(&j, "max_ns");
        mk_json_double(&j, (double)a->hist.max * a->ns_per_tick);
        mk_json_key(&j, "peak_rss");
        mk_json_double(&j, a->r.median);
        mk_json_key(&j, "end_rss");
        mk_json_double(&j, mk_stat_of(a->end_rss, a->nrounds).median);
        mk_json_key(&j, "rss_over_time");
        mk_json_begin_array(&j);
        for (uint32_t k = 0; k < a->npoints; k++) {
            mk_json_begin_object(&j);
            mk_json_key(&j, "t_ns");
            mk_json_uint(&j, a->points[k].t_ns);
            mk_json_key(&j, "live_bytes");
            mk_json_uint(&j, a->points[k].live_bytes);
            mk_json_key(&j, "rss");
            mk_json_uint(&j, a->points[k].rss_bytes);
            mk_json_end_object(&j);
        }
        mk_json_end_array(&j);
        mk_json_key(&j, "page_faults");
        mk_json_double(&j, a->f.median);
        mk_json_key(&j, "speedup");
        if (i == 0)
            mk_json_double(&j, 1);
        else
            mk_json_double(&j, a->speedup);
        mk_json_key(&j, "p_faster");
        if (i == 0)
            mk_json_null(&j);
        else
            mk_json_double(&j, a->p_faster);
        mk_json_key(&j, "rss_ratio");
        if (i == 0)
            mk_json_double(&j, 1);
        else
            mk_json_double(&j, a->rss_ratio);
        mk_json_key(&j, "p_leaner");
        if (i == 0)
            mk_json_null(&j);
        else
            mk_json_double(&j, a->p_leaner);
        mk_json_end_object(&j);
    }
    mk_json_end_array(&j);
    mk_json_key(&j, "fastest");
    mk_json_string(&j, st->a[best(st, true)].name);
    mk_json_key(&j, "leanest");
    mk_json_string(&j, st->a[best(st, false)].name);
    if (st->what_if)
        mk_whatif_json(&st->set, &j);
    size_t n = 0;
    site_row_t *rows = st->top ? site_rows(st, &n) : NULL;
    mk_json_key(&j, "sites");
    mk_json_begin_array(&j);
    for (size_t k = 0; k < n && k < (size_t)st->top; k++) {
        mk_json_begin_object(&j);
        mk_json_key(&j, "function");
        mk_json_string(&j, rows[k].label);
        mk_json_key(&j, "allocator_ns");
        mk_json_double(&j, rows[k].ns);
        mk_json_end_object(&j);
    }
    mk_json_end_array(&j);
    free(rows);
    mk_json_end_object(&j);
    fputc('\n', out);
}

extern const unsigned char mk_replay_page[];
extern const size_t mk_replay_page_len;

/* The page (replay_page.html) with the JSON in its data element. */
static bool write_page(replay_state_t *st, const char *path)
{
    static const char marker[] = "@MEMKIT_DATA@";
    const char *page = (const char *)mk_replay_page;
    const char *at = memmem(page, mk_replay_page_len, marker, sizeof marker - 1);
    mk_outfile_t of;

    if (!at || !mk_outfile_open(&of, path))
        return false;
    fwrite(page, 1, (size_t)(at - page), of.f);
    /* the writer escapes <, > and &: no string ends the script early */
    print_json(st, of.f);
    const char *rest = at + sizeof marker - 1;
    fwrite(rest, 1, mk_replay_page_len - (size_t)(rest - page), of.f);
    return mk_outfile_close(&of, true);
}

/* ------------------------------------------------------------------------ */

int mk_cmd_replay(int argc, char **argv)
{
    replay_state_t *st;
    char **inputs = NULL, **paths = NULL;
    int ninputs = 0, rc;
    size_t npaths = 0;

    if (argc >= 2 && strcmp(argv[1], "--child") == 0)
        return mk_replay_child(argc, argv);
    st = calloc(1, sizeof *st);
    inputs = calloc(MAX_ARGS, sizeof *inputs);
    if (!st || !inputs) {
        free(st);
        free(inputs);
        return mk_usage_error("replay: out of memory");
    }
    st->rounds = 5;
    st->top = 10;
    mk_opt_table_t table = MK_OPT_TABLE(replay_options, st);
    rc = mk_opts_parse(&replay_spec, &table, 1, argc, argv, inputs, &ninputs);
    if (rc >= 0)
        goto out;
    if (ninputs == 0) {
        rc = mk_usage_error("replay: no trace given (memkit replay --help)");
        goto out;
    }
    for (int i = 0; i < ninputs; i++)
        if (strcmp(inputs[i], "-") == 0) {
            rc = mk_usage_error("replay: a trace from standard input cannot be replayed: "
                                "name its file");
            goto out;
        }
    if ((rc = choose(st)) >= 0)
        goto out;
    if ((rc = mk_expand_inputs(inputs, (size_t)ninputs, -1, &paths, &npaths)) !=
        MK_EXIT_OK)
        goto out;
    st->prog = calloc(npaths, sizeof *st->prog);
    st->site_base = calloc(npaths + 1, sizeof *st->site_base);
    if (!st->prog || !st->site_base) {
        rc = mk_usage_error("replay: out of memory");
        goto out;
    }
    rc = -1;
    for (size_t i = 0; i < npaths; i++) {
        int k = st->nprog;
        rc = mk_replay_compile(paths[i], st->threads == 1, &st->prog[k]);
        if (rc != MK_EXIT_OK)
            goto out;
        if (st->prog[k].calls == 0)
            continue; /* a process that allocated nothing: a run's shell, say */
        st->nprog++;
        if ((uint64_t)st->site_base[k] + st->prog[k].nsites > UINT32_MAX) {
            rc = mk_usage_error("replay: too many stacks");
            goto out;
        }
        st->site_base[k + 1] = st->site_base[k] + st->prog[k].nsites;
    }
    if (st->nprog == 0) {
        rc =
            mk_usage_error("replay: %s hold%s no allocation calls to replay",
                           npaths == 1 ? paths[0] : "the traces", npaths == 1 ? "s" : "");
        goto out;
    }
    if (st->what_if && (rc = add_what_ifs(st)) >= 0)
        goto out;
    rc = -1;
    for (int i = 0; i < st->n; i++)
        if (runs(&st->a[i]) && !(st->a[i].site_ticks = calloc(
                                     st->site_base[st->nprog] + 1, sizeof(uint64_t)))) {
            rc = mk_usage_error("replay: out of memory");
            goto out;
        }
    /* round-robin, the start rotating: drift hits every allocator alike */
    for (int r = 0; r < st->rounds; r++)
        for (int k = 0; k < st->n; k++) {
            alloc_t *a = &st->a[(k + r) % st->n];
            if (runs(a))
                replay_round(st, a);
        }
    if (!runs(&st->a[0])) {
        rc = mk_usage_error("replay: the replay under glibc failed: %s", st->a[0].reason);
        goto out;
    }
    conclude(st);
    if (st->json)
        print_json(st, stdout);
    else
        print_table(st, stdout);
    rc = fflush(stdout) == 0 && !ferror(stdout) ? MK_EXIT_OK : MK_EXIT_FAIL;
    if (st->html && !write_page(st, st->html))
        rc = MK_EXIT_USAGE;
out:
    mk_whatif_free(&st->set);
    for (int i = 0; i < st->nprog; i++)
        mk_replay_remove(&st->prog[i]);
    free(st->prog);
    free(st->site_base);
    mk_free_inputs(paths, npaths);
    free(inputs);
    for (int i = 0; i < st->n + (st->n < MAX_ALLOCS); i++) {
        for (int k = 0; k < MAX_ENV && st->a[i].env[k]; k++)
            free(st->a[i].env[k]);
        free(st->a[i].site_ticks);
    }
    free(st);
    return rc;
}
