/*
 * cmd_diff.c - `memkit diff BEFORE AFTER`: totals side by side with ratios,
 * then the sites that changed most, matched across the two runs by their
 * symbolized stacks (addresses differ from run to run; names do not).
 * A sampled trace's estimates are marked "~", and a site's change smaller
 * than twice its standard error is said to be within the noise.
 */
#define _GNU_SOURCE
#include "cli.h"
#include "opts.h"

#include "../analyze/report.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

typedef struct change {
    char *key; /* the symbolized stack */
    const mk_row_t *before, *after;
    int64_t delta; /* calls after - before */
} change_t;

static int by_delta(const void *x, const void *y)
{
    const change_t *a = x, *b = y;
    int64_t da = a->delta < 0 ? -a->delta : a->delta,
            db = b->delta < 0 ? -b->delta : b->delta;
    if (da != db)
        return da < db ? 1 : -1;
    return strcmp(a->key, b->key);
}

static int by_key(const void *x, const void *y)
{
    return strcmp(((const change_t *)x)->key, ((const change_t *)y)->key);
}

/* The first of c[0..n) (sorted by key) with this key and no AFTER site yet,
 * or n. Two stacks can symbolize alike (two calls on one line): each AFTER
 * site takes the next free one. */
static size_t find_before(const change_t *c, size_t n, const char *key)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(c[mid].key, key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < n && strcmp(c[lo].key, key) == 0; lo++)
        if (!c[lo].after)
            return lo;
    return n;
}

/* Matches the two runs' sites by stack key: BEFORE's sites sorted by key,
 * each AFTER site found by binary search. */
static size_t match_sites(mk_report_t *b, mk_report_t *a, change_t **out)
{
    size_t n = 0, cap = 0, nbefore = 0;
    change_t *c = NULL;
    char key[8192];
    for (int side = 0; side < 2; side++) {
        mk_report_t *r = side ? a : b;
        for (size_t i = 0; i < r->nsites; i++) {
            mk_report_stack_key(r, r->sites[i].stack, key, sizeof key);
            size_t j = side ? find_before(c, nbefore, key) : nbefore;
            if (j == nbefore) { /* a BEFORE site, or an AFTER site without a match */
                char *copy = strdup(key);
                if (!copy || !mk_grow((void **)&c, &cap, n + 1, sizeof *c)) {
                    free(copy);
                    break;
                }
                c[n] = (change_t){.key = copy};
                j = n++;
            }
            if (side)
                c[j].after = &r->sites[i];
            else
                c[j].before = &r->sites[i];
        }
        if (!side) {
            nbefore = n;
            if (c)
                qsort(c, n, sizeof *c, by_key);
        }
    }
    for (size_t i = 0; i < n; i++)
        c[i].delta = (int64_t)(c[i].after ? c[i].after->agg->calls : 0) -
                     (int64_t)(c[i].before ? c[i].before->agg->calls : 0);
    if (c)
        qsort(c, n, sizeof *c, by_delta);
    *out = c;
    return n;
}

/* A count formatted one byte into buf, "~" before it when est. */
static const char *count_est(uint64_t v, bool est, char *buf, size_t cap)
{
    mk_fmt_count(v, buf + 1, cap - 1);
    if (!est)
        return buf + 1;
    buf[0] = '~';
    return buf;
}

/* Is a site's change within twice its standard error (sampled sides only)? */
static bool within_noise(const change_t *c)
{
    double var = (c->before ? c->before->agg->calls_var : 0) +
                 (c->after ? c->after->agg->calls_var : 0);
    return var > 0 && fabs((double)c->delta) <= 2 * sqrt(var);
}

static void ratio_line(FILE *out, const char *name, uint64_t b, bool best, uint64_t a,
                       bool aest)
{
    char x[32], y[32], z[32];
    fprintf(out, "%-20s %14s %14s", name, count_est(b, best, x, sizeof x),
            count_est(a, aest, y, sizeof y));
    if (b == a) {
        fprintf(out, "  same\n");
    } else if (b && a) {
        double r = a < b ? (double)b / (double)a : (double)a / (double)b;
        if (r >= 100)
            mk_fmt_count((uint64_t)(r + 0.5), z, sizeof z);
        else
            snprintf(z, sizeof z, "%.2f", r);
        fprintf(out, "  %sx %s\n", z, a < b ? "fewer" : "more");
    } else {
        fprintf(out, "  %s\n", a ? "new" : "gone");
    }
}

typedef struct total {
    const char *name, *json;
    size_t off;
    bool estimated; /* in a sampled trace (the counts by kind are exact) */
} total_t;

#define T(n, j, f)                                                                       \
    {                                                                                    \
        n, j, offsetof(mk_profile_t, f), false                                           \
    }
#define E(n, j, f)                                                                       \
    {                                                                                    \
        n, j, offsetof(mk_profile_t, f), true                                            \
    }
static const total_t totals[] = {
    T("Allocation calls", "allocation_calls", allocation_calls),
    T("Allocations", "allocations", allocations),
    T("Mallocs", "mallocs", mallocs),
    T("Callocs", "callocs", callocs),
    T("Reallocs", "reallocs", reallocs),
    T("Strdups", "strdups", strdups),
    T("News", "news", news),
    T("Frees", "frees", frees),
    E("Maximum allocated", "max_allocated", max_allocated),
    T("Total allocated", "total_allocated", total_allocated),
    E("Peak live blocks", "peak_live_blocks", peak_blocks),
    E("Leaked bytes", "leaked_bytes", live_bytes),
    E("Temporaries", "temporaries", temporaries),
};
#undef T
#undef E

static uint64_t total_of(const mk_report_t *r, const total_t *t)
{
    return *(const uint64_t *)((const char *)&r->prof + t->off);
}

/* A site in one line: its two innermost frames (mk_row_label_with_caller). */
static const char *label_of(mk_report_t *r, const change_t *c, char *buf, size_t cap)
{
    return mk_row_label_with_caller(r, c->after ? c->after : c->before, buf, cap);
}

/* The allocator's measured time and its share of the CPU time, before and
 * after, with their ratio. */
static void time_lines(FILE *out, const mk_profile_t *b, const mk_profile_t *a)
{
    char x[32], y[32];
    fprintf(out, "%-20s %14s %14s", "Allocator time", mk_fmt_ns(b->alloc_ns, x, sizeof x),
            mk_fmt_ns(a->alloc_ns, y, sizeof y));
    if (b->alloc_ns > 0 && a->alloc_ns > 0)
        fprintf(out, "  %.2fx %s\n",
                a->alloc_ns < b->alloc_ns ? b->alloc_ns / a->alloc_ns
                                          : a->alloc_ns / b->alloc_ns,
                a->alloc_ns < b->alloc_ns ? "less" : "more");
    else
        fputc('\n', out);
    if (b->cpu_ns > 0 && a->cpu_ns > 0)
        fprintf(out, "%-20s %13.1f%% %13.1f%%\n", "Allocator share",
                100 * b->alloc_ns / b->cpu_ns, 100 * a->alloc_ns / a->cpu_ns);
}

static void diff_text(FILE *out, mk_report_t *b, mk_report_t *a, change_t *c, size_t n,
                      int top)
{
    char x[32], y[32], z[32], label[1024];
    bool bs = b->prof.sampled, as = a->prof.sampled;
    fprintf(out, "%-20s %14s %14s\n", "", "before", "after");
    for (size_t i = 0; i < sizeof totals / sizeof totals[0]; i++) {
        const total_t *t = &totals[i];
        if (t->off == offsetof(mk_profile_t, temporaries) && (bs || as))
            continue; /* not estimated from a sample at all */
        ratio_line(out, t->name, total_of(b, t), bs && t->estimated, total_of(a, t),
                   as && t->estimated);
    }
    if (mk_profile_time_measured(&b->prof) &&
        mk_profile_time_measured(&a->prof)) /* measured in both runs */
        time_lines(out, &b->prof, &a->prof);
    if (bs || as)
        fprintf(out, "(~: estimated from a sampled trace; counts by kind are exact)\n");
    size_t shown = 0;
    for (size_t i = 0; i < n && shown < (size_t)top; i++)
        if (c[i].delta)
            shown++;
    if (!shown) {
        fprintf(out, "\nNo site changed its allocation count.\n");
        return;
    }
    fprintf(out, "\nSites that changed most (%zu of %zu sites changed):\n", shown, n);
    fprintf(out, "%14s %14s %14s  %s\n", "before", "after", "change", "site");
    for (size_t i = 0, k = 0; i < n && k < shown; i++) {
        if (!c[i].delta)
            continue;
        k++;
        const char *site = label_of(c[i].after ? a : b, &c[i], label, sizeof label);
        fprintf(out, "%14s %14s %14s  %s%s%s\n",
                count_est(c[i].before ? c[i].before->agg->calls : 0, bs, x, sizeof x),
                count_est(c[i].after ? c[i].after->agg->calls : 0, as, y, sizeof y),
                c[i].delta < 0
                    ? (z[0] = '-',
                       mk_fmt_count((uint64_t)-c[i].delta, z + 1, sizeof z - 1), z)
                    : (z[0] = '+',
                       mk_fmt_count((uint64_t)c[i].delta, z + 1, sizeof z - 1), z),
                site,
                !c[i].before  ? " (new)"
                : !c[i].after ? " (gone)"
                              : "",
                within_noise(&c[i]) ? " (within the sampling noise)" : "");
    }
}

static void diff_json(FILE *out, mk_report_t *b, mk_report_t *a, change_t *c, size_t n,
                      int top)
{
    mk_json j = {.out = out};
    mk_json_begin_object(&j);
    mk_json_key(&j, "schema");
    mk_json_string(&j, "memkit-diff");
    mk_json_key(&j, "version");
    mk_json_uint(&j, 1);
    for (int side = 0; side < 2; side++) {
        mk_report_t *r = side ? a : b;
        mk_json_key(&j, side ? "after" : "before");
        mk_json_begin_object(&j);
        mk_json_key(&j, "path");
        mk_json_string(&j, r->path);
        mk_json_key(&j, "estimated"); /* sampled: see memkit-report's "estimated" */
        mk_json_bool(&j, r->prof.sampled);
        for (size_t i = 0; i < sizeof totals / sizeof totals[0]; i++) {
            mk_json_key(&j, totals[i].json);
            mk_json_uint(&j, total_of(r, &totals[i]));
        }
        /* as memkit-report's totals: null where the run has no times */
        mk_json_key(&j, "allocator_ns");
        if (mk_profile_time_measured(&r->prof))
            mk_json_double(&j, r->prof.alloc_ns);
        else
            mk_json_null(&j);
        mk_json_key(&j, "allocator_share");
        if (mk_profile_time_measured(&r->prof) && r->prof.cpu_ns > 0)
            mk_json_double(&j, r->prof.alloc_ns / r->prof.cpu_ns);
        else
            mk_json_null(&j);
        mk_json_end_object(&j);
    }
    mk_json_key(&j, "sites");
    mk_json_begin_array(&j);
    for (size_t i = 0; i < n && (top <= 0 || i < (size_t)top); i++) {
        mk_json_begin_object(&j);
        mk_json_key(&j, "stack");
        mk_json_string(&j, c[i].key);
        mk_json_key(&j, "before_calls");
        mk_json_uint(&j, c[i].before ? c[i].before->agg->calls : 0);
        mk_json_key(&j, "after_calls");
        mk_json_uint(&j, c[i].after ? c[i].after->agg->calls : 0);
        mk_json_key(&j, "before_bytes");
        mk_json_uint(&j, c[i].before ? c[i].before->agg->bytes : 0);
        mk_json_key(&j, "after_bytes");
        mk_json_uint(&j, c[i].after ? c[i].after->agg->bytes : 0);
        mk_json_key(&j, "within_noise");
        mk_json_bool(&j, within_noise(&c[i]));
        mk_json_end_object(&j);
    }
    mk_json_end_array(&j);
    mk_json_end_object(&j);
}

/* One side of the diff: its paths stay in *paths (the report names them)
 * until mk_free_inputs. */
typedef struct side {
    char **paths;
    size_t n;
} side_t;

static int load_side(mk_report_t *r, const char *input, const mk_report_opts_t *o,
                     side_t *side)
{
    char *given = (char *)input; /* read, never written */
    memset(r, 0, sizeof *r);
    if (mk_expand_inputs(&given, 1, o->pid, &side->paths, &side->n) != MK_EXIT_OK)
        return MK_EXIT_USAGE;
    return mk_load_inputs(r, side->paths, side->n, o);
}

typedef struct diff_cli {
    int top, format;
} diff_cli_t;

static const char *const diff_formats[] = {"text", "json", NULL};

static const mk_opt_t diff_opts[] = {
    {.name = "--top",
     .arg = "N",
     .kind = MK_OPT_INT,
     .at = offsetof(diff_cli_t, top),
     .hi = 1000000,
     .help = "sites shown (default 10)"},
    {.name = "--format",
     .arg = "F",
     .kind = MK_OPT_CHOICE,
     .at = offsetof(diff_cli_t, format),
     .choices = diff_formats,
     .help = "text (default) or json"},
};

static const mk_command_spec_t diff_spec = {
    .name = "diff",
    .synopsis = "memkit diff [options] BEFORE AFTER",
    .about = "Compares two traces or curl memdebug logs (each may be a run's prefix:\n"
             "its processes merged): totals with ratios, then the sites whose\n"
             "allocation counts changed most, matched by their symbolized stacks.\n",
    .max_args = 2,
};

int mk_cmd_diff(int argc, char **argv)
{
    mk_report_opts_t o;
    diff_cli_t cli = {.top = 10};
    char *in[2] = {NULL, NULL};
    int nin = 0;
    int rc = mk_opts_parse_report(&diff_spec, diff_opts, MK_OPTS_N(diff_opts), &cli, &o,
                                  argc, argv, in, &nin);
    if (rc >= 0)
        return rc;
    if (o.cost_ns == 0)
        o.cost_ns = 1; /* findings are not shown: skip measuring */
    if (nin != 2)
        return mk_usage_error("diff takes two inputs: memkit diff BEFORE AFTER");
    int top = cli.top;
    bool json = cli.format == 1;
    /* Each side a trace, a log, or a run's prefix (its processes merged). */
    mk_report_t b, a;
    side_t sb = {0}, sa = {0};
    int rb = load_side(&b, in[0], &o, &sb);
    if (rb != MK_EXIT_OK && !b.tr && !b.nprocs)
        return mk_free_inputs(sb.paths, sb.n), rb;
    int ra = load_side(&a, in[1], &o, &sa);
    if (ra != MK_EXIT_OK && !a.tr && !a.nprocs) {
        mk_report_free(&b);
        mk_free_inputs(sb.paths, sb.n);
        mk_free_inputs(sa.paths, sa.n);
        return ra;
    }
    change_t *c;
    size_t n = match_sites(&b, &a, &c);
    if (json)
        diff_json(stdout, &b, &a, c, n, top);
    else
        diff_text(stdout, &b, &a, c, n, top);
    for (size_t i = 0; i < n; i++)
        free(c[i].key);
    free(c);
    mk_report_free(&b);
    mk_report_free(&a);
    mk_free_inputs(sb.paths, sb.n);
    mk_free_inputs(sa.paths, sa.n);
    return rb != MK_EXIT_OK ? rb : ra;
}
