/*
 * cmd_report.c - `memkit report [options] INPUT...`: a trace or a curl
 * memdebug log as text, JSON, HTML or folded stacks; and the filter options
 * that `diff` and `check` share.
 */
#define _GNU_SOURCE
#include "cli.h"
#include "opts.h"
#include "outfile.h"
#include "replay.h"

#include "../analyze/report.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* --from and --to: seconds since the start, the window non-empty. */
static int set_window(mk_report_opts_t *o, double *at, const char *name, const char *v)
{
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(d) || d < 0)
        return mk_usage_error("%s wants seconds since the start, not '%s'", name, v);
    *at = d;
    if (o->to_s > 0 && o->to_s <= o->from_s)
        return mk_usage_error("--to must be after --from");
    return -1;
}

static int set_from(void *dest, const mk_opt_t *opt, const char *v)
{
    mk_report_opts_t *o = dest;
    (void)opt;
    return set_window(o, &o->from_s, "--from", v);
}

static int set_to(void *dest, const mk_opt_t *opt, const char *v)
{
    mk_report_opts_t *o = dest;
    (void)opt;
    return set_window(o, &o->to_s, "--to", v);
}

#define FILTER(field) offsetof(mk_report_opts_t, field)

/* enum mk_sort's order: "auto" is the default's name */
static const char *const sort_keys[] = {"auto", "time", "calls", "bytes", "peak", NULL};

const mk_opt_t mk_filter_opts[] = {
    {.name = "--module",
     .arg = "M",
     .kind = MK_OPT_STRING,
     .at = FILTER(module),
     .help = "only allocations made directly by code in object M\n"
             "(what an in-library wrapper like curl's memdebug counts)"},
    {.name = "--function",
     .arg = "F",
     .kind = MK_OPT_STRING,
     .at = FILTER(function),
     .help = "only allocations with F on their stack"},
    {.name = "--file",
     .arg = "F",
     .kind = MK_OPT_STRING,
     .at = FILTER(file),
     .help = "only allocations with a frame in source file F"},
    {.name = "--pid",
     .arg = "P",
     .kind = MK_OPT_COUNT,
     .at = FILTER(pid),
     .lo = 1,
     .hi = INT32_MAX,
     .help = "of several traces, only process P's"},
    {.name = "--thread",
     .arg = "N",
     .kind = MK_OPT_COUNT,
     .at = FILTER(thread),
     .hi = INT32_MAX,
     .help = "only thread N: threads are numbered from 1 (the main\n"
             "thread) in the order they start"},
    {.name = "--from",
     .arg = "S",
     .kind = MK_OPT_CALL,
     .call = set_from,
     .help = "only events from S seconds after the start"},
    {.name = "--to",
     .arg = "S",
     .kind = MK_OPT_CALL,
     .call = set_to,
     .help = "only events up to S seconds after the start"},
    {.name = "--min-count",
     .arg = "N",
     .kind = MK_OPT_COUNT,
     .at = FILTER(min_count),
     .lo = 1,
     .help = "a site needs N allocations for a finding (default 100)"},
    {.name = "--cost-ns",
     .arg = "X",
     .kind = MK_OPT_SECONDS,
     .at = FILTER(cost_ns),
     .help = "price a malloc+free at X ns (default: measured here)"},
    {.name = "--no-symbols",
     .kind = MK_OPT_FLAG,
     .at = FILTER(no_symbols),
     .help = "frames as module+offset, without reading debug information"},
    {.name = "--sort",
     .arg = "BY",
     .kind = MK_OPT_CHOICE,
     .at = FILTER(sort),
     .choices = sort_keys,
     .help = "rows by time (the allocator's, the default where the trace\n"
             "measured it), calls (the default otherwise), bytes or peak"},
};
const size_t mk_filter_nopts = sizeof mk_filter_opts / sizeof *mk_filter_opts;

int mk_opts_parse_report(const mk_command_spec_t *spec, const mk_opt_t *opts, size_t n,
                         void *dest, mk_report_opts_t *o, int argc, char **argv,
                         char **inputs, int *ninputs)
{
    mk_report_opts_default(o);
    mk_opt_table_t tables[] = {{opts, n, dest}, {mk_filter_opts, mk_filter_nopts, o}};
    return mk_opts_parse(spec, tables, 2, argc, argv, inputs, ninputs);
}

int mk_load_input(mk_report_t *r, const char *path, const mk_report_opts_t *o)
{
    char err[1024];
    if (mk_report_load(r, path, o, err, sizeof err) != 0) {
        fprintf(stderr, "memkit: %s\n", err);
        return MK_EXIT_USAGE;
    }
    if (r->problem[0])
        fprintf(stderr, "memkit: %s\n", r->problem);
    /* Damage is bad input: the exit status says so even though the part
     * before it was analysed. A missing end record (a killed program) is not. */
    return r->tr && r->tr->damage[0] ? MK_EXIT_USAGE : MK_EXIT_OK;
}

/* Is name base.<pid>.mkt or base.<pid>.<n>.mkt (after an exec)? Then *pid
 * and *seq (1 without <n>) are set. */
static bool trace_file_name(const char *name, const char *base, unsigned *pid, int *seq)
{
    size_t blen = strlen(base);
    if (strncmp(name, base, blen) != 0 || name[blen] != '.')
        return false;
    const char *p = name + blen + 1;
    unsigned long part[2];
    for (int k = 0; k < 2; k++) {
        if (!isdigit((unsigned char)*p))
            return false;
        char *end;
        errno = 0;
        part[k] = strtoul(p, &end, 10);
        if (errno || part[k] > (k ? INT32_MAX : UINT32_MAX))
            return false;
        p = end;
        if (strcmp(p, ".mkt") == 0) {
            *pid = (unsigned)part[0];
            *seq = k ? (int)part[1] : 1;
            return true;
        }
        if (*p++ != '.')
            return false;
    }
    return false;
}

int mk_each_trace_file(const char *prefix, mk_trace_file_fn fn, void *ctx)
{
    char dirbuf[PATH_MAX], basebuf[PATH_MAX];
    snprintf(dirbuf, sizeof dirbuf, "%s", prefix);
    snprintf(basebuf, sizeof basebuf, "%s", prefix);
    const char *dir = dirname(dirbuf), *base = basename(basebuf);
    DIR *d = opendir(dir);
    struct dirent *e;
    int calls = 0;
    if (!d)
        return -1;
    while ((e = readdir(d))) {
        unsigned pid;
        int seq;
        if (!trace_file_name(e->d_name, base, &pid, &seq))
            continue;
        /* Opened without blocking or following links, and passed on only when
         * a regular file: a FIFO or a link planted under a trace's name (in
         * /tmp, anyone can) must not hang memkit or point it elsewhere. */
        int fd =
            openat(dirfd(d), e->d_name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd < 0)
            continue;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        bool more = true;
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
            calls++;
            more = fn(ctx, path, fd, &st, pid, seq);
        }
        close(fd);
        if (!more)
            break;
    }
    closedir(d);
    return calls;
}

typedef struct path_list {
    char **paths;
    size_t n, cap;
    bool oom;
} path_list_t;

static bool add_path(void *ctx, const char *path, int fd, const struct stat *st,
                     unsigned pid, int seq)
{
    (void)fd, (void)st, (void)pid, (void)seq;
    path_list_t *l = ctx;
    char *copy = strdup(path);
    if (!copy || !mk_grow((void **)&l->paths, &l->cap, l->n + 1, sizeof *l->paths)) {
        free(copy);
        l->oom = true;
        return false;
    }
    l->paths[l->n++] = copy;
    return true;
}

static int by_string(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Adds the traces of a run's prefix (PREFIX.<pid>[.<n>].mkt) to list. */
static int expand_prefix(const char *prefix, char ***list, size_t *n, size_t *cap)
{
    size_t before = *n;
    path_list_t l = {*list, *n, *cap, false};
    mk_each_trace_file(prefix, add_path, &l);
    *list = l.paths;
    *n = l.n;
    *cap = l.cap;
    if (l.oom)
        return mk_usage_error("out of memory");
    if (*n == before)
        return mk_usage_error("no trace matches '%s' (a trace file, or a run's prefix: "
                              "PREFIX.<pid>.mkt)",
                              prefix);
    qsort(*list + before, *n - before, sizeof **list, by_string);
    return MK_EXIT_OK;
}

int mk_expand_inputs(char *const *inputs, size_t n, int64_t pid, char ***out,
                     size_t *nout)
{
    char **list = NULL;
    size_t count = 0, cap = 0;
    struct stat st;
    *out = NULL;
    *nout = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(inputs[i]);
        bool file_name = len > 4 && strcmp(inputs[i] + len - 4, ".mkt") == 0;
        if (strcmp(inputs[i], "-") == 0 || stat(inputs[i], &st) == 0 || file_name) {
            char *copy = strdup(inputs[i]);
            if (!copy || !mk_grow((void **)&list, &cap, count + 1, sizeof *list)) {
                free(copy);
                mk_free_inputs(list, count);
                return mk_usage_error("out of memory");
            }
            list[count++] = copy;
        } else if (expand_prefix(inputs[i], &list, &count, &cap) != MK_EXIT_OK) {
            mk_free_inputs(list, count);
            return MK_EXIT_USAGE;
        }
    }
    if (pid >= 0) { /* the traces whose header names that process */
        size_t kept = 0;
        for (size_t i = 0; i < count; i++) {
            char err[512];
            mk_trace_t *tr =
                strcmp(list[i], "-") ? mk_trace_open(list[i], err, sizeof err) : NULL;
            bool want = tr && tr->header.pid == (uint32_t)pid;
            mk_trace_close(tr);
            if (want)
                list[kept++] = list[i];
            else
                free(list[i]);
        }
        count = kept;
        if (!count) {
            free(list);
            return mk_usage_error("--pid %" PRId64 ": no trace given is of that process",
                                  pid);
        }
    }
    *out = list;
    *nout = count;
    return MK_EXIT_OK;
}

void mk_free_inputs(char **list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(list[i]);
    free(list);
}

int mk_load_inputs(mk_report_t *r, char *const *paths, size_t n,
                   const mk_report_opts_t *o)
{
    char err[1024];
    if (mk_report_load_many(r, (const char *const *)paths, n, o, err, sizeof err) != 0) {
        fprintf(stderr, "memkit: %s\n", err);
        return MK_EXIT_USAGE;
    }
    if (r->problem[0])
        fprintf(stderr, "memkit: %s\n", r->problem);
    return (r->tr && r->tr->damage[0]) || (n > 1 && r->partial) ? MK_EXIT_USAGE
                                                                : MK_EXIT_OK;
}

int mk_summarize_trace(const char *path, FILE *out, int top, const int *wait_status)
{
    mk_report_t r;
    mk_report_opts_t o;
    mk_report_opts_default(&o);
    o.summary_first = true; /* the tracer's own summary where it wrote one */
    if (wait_status) {
        o.wait_known = true;
        o.wait_status = *wait_status;
    }
    int rc = mk_load_input(&r, path, &o);
    if (rc != MK_EXIT_OK && !r.tr)
        return rc;
    mk_render_text(&r, out, top, false, true);
    mk_report_free(&r);
    return rc;
}

int mk_read_process(const char *path, mk_report_process_t *p)
{
    mk_report_t r;
    mk_report_opts_t o;
    mk_report_opts_default(&o);
    o.totals_only = true;
    o.summary_first = true;
    o.counts_only = true; /* a row of the process table: no stack is named */
    memset(p, 0, sizeof *p);
    p->path = path;
    int rc = mk_load_input(&r, path, &o);
    if (rc != MK_EXIT_OK && !r.tr)
        return rc;
    mk_report_process_of(p, &r, path);
    mk_report_free(&r);
    return rc;
}

enum format { FMT_TEXT, FMT_JSON, FMT_HTML, FMT_COLLAPSED, FMT_PPROF };

typedef struct report_cli {
    int top, color, memanalyze, format, weight, depth_shown;
    bool growth, what_if;
    size_t findings;
    const char *out, *replay;
} report_cli_t;

/* --findings N or all: how many findings text and the page show. */
static int set_findings(void *dest, const mk_opt_t *opt, const char *v)
{
    report_cli_t *c = dest;
    uint64_t n;
    (void)opt;
    if (strcmp(v, "all") == 0)
        c->findings = SIZE_MAX;
    else if (mk_parse_count(v, &n) && n > 0 && n < SIZE_MAX)
        c->findings = (size_t)n;
    else
        return mk_usage_error(
            "report: --findings: a count of at least 1 or 'all', not '%s'", v);
    return -1;
}

static int set_memanalyze(void *dest, const mk_opt_t *opt, const char *v)
{
    report_cli_t *c = dest;
    (void)opt;
    if (!v || strcmp(v, "current") == 0)
        c->memanalyze = 1;
    else if (strcmp(v, "2017") == 0)
        c->memanalyze = 2017;
    else
        return mk_usage_error("report: --memanalyze=: 2017 or current, not '%s'", v);
    return -1;
}

static const char *const formats[] = {"text", "json", "html", "collapsed", "pprof", NULL};
static const char *const weights[] = {"calls", "bytes", "peak", "leaked", NULL};

#define REPORT(field) offsetof(report_cli_t, field)

static const mk_opt_t report_opts[] = {
    {.name = "--format",
     .arg = "F",
     .kind = MK_OPT_CHOICE,
     .at = REPORT(format),
     .choices = formats,
     .help = "text (default), json, html, collapsed (folded stacks)\n"
             "or pprof (profile.proto, gzipped: go tool pprof)"},
    {.name = "--output",
     .alias = "-o",
     .arg = "FILE",
     .kind = MK_OPT_STRING,
     .at = REPORT(out),
     .help = "write to FILE instead of standard output"},
    {.name = "--top",
     .arg = "N",
     .kind = MK_OPT_INT,
     .at = REPORT(top),
     .hi = 1000000,
     .help = "rows per table (default 10; json: all unless given)"},
    {.name = "--findings",
     .arg = "N|all",
     .kind = MK_OPT_CALL,
     .call = set_findings,
     .help = "findings text and html show (default: those that hold\n"
             "90% of the saving, at most 10; json: all)"},
    {.name = "--depth-shown",
     .arg = "N",
     .kind = MK_OPT_INT,
     .at = REPORT(depth_shown),
     .lo = 1,
     .hi = 1000,
     .help = "frames of each stack in text (default: 6 for sites,\n"
             "4 for findings)"},
    {.name = "--weight",
     .arg = "W",
     .kind = MK_OPT_CHOICE,
     .at = REPORT(weight),
     .choices = weights,
     .help = "collapsed: calls (default), bytes, peak or leaked"},
    {.name = "--growth",
     .kind = MK_OPT_FLAG,
     .at = REPORT(growth),
     .help = "the sites whose live bytes grow across the trace's\n"
             "snapshots (--sample with --snapshot-every or SIGUSR2;\n"
             "else 8 even points of the run), fastest first"},
    {.name = "--color",
     .kind = MK_OPT_SET,
     .at = REPORT(color),
     .lo = 1,
     .help = "colour text output (default: on a terminal)"},
    {.name = "--no-color",
     .kind = MK_OPT_SET,
     .at = REPORT(color),
     .lo = 0,
     .help = "no colour"},
    {.name = "--replay",
     .arg = "FILE",
     .kind = MK_OPT_STRING,
     .at = REPORT(replay),
     .help = "each finding's measured saving beside its estimate, from\n"
             "`memkit replay --what-if --json TRACE >FILE` of the same trace"},
    {.name = "--what-if",
     .kind = MK_OPT_FLAG,
     .at = REPORT(what_if),
     .help = "run that replay now (the findings shown, under glibc) and\n"
             "show each one's measured saving"},
    {.name = "--memanalyze",
     .arg = "[=2017]",
     .kind = MK_OPT_CALL,
     .call = set_memanalyze,
     .help = "print exactly what curl's memanalyze.pl -v prints for a\n"
             "memdebug log (=2017: the script of curl 7.53)"},
};

static const mk_command_spec_t report_spec = {
    .name = "report",
    .synopsis = "memkit report [options] INPUT...",
    .about = "INPUT is a trace written by `memkit trace`, a run's prefix (every\n"
             "PREFIX.<pid>.mkt: the processes of one run), a curl memdebug log\n"
             "(CURL_MEMDEBUG) or - (standard input). Several traces are one report:\n"
             "sites matched by their symbolized stacks, totals summed, a table of the\n"
             "processes. Prints totals, sites, the peak, leaks and findings.\n",
    .max_args = 4096,
};

int mk_cmd_report(int argc, char **argv)
{
    mk_report_opts_t o;
    report_cli_t c = {
        .top = -1, .color = -1, .format = FMT_TEXT, .weight = MK_WEIGHT_CALLS};
    char **inputs = calloc((size_t)argc, sizeof *inputs);
    int ninputs = 0;
    if (!inputs)
        return mk_usage_error("out of memory");
    int rc = mk_opts_parse_report(&report_spec, report_opts, MK_OPTS_N(report_opts), &c,
                                  &o, argc, argv, inputs, &ninputs);
    if (rc >= 0)
        return free(inputs), rc;
    int top = c.top, color = c.color, memanalyze = c.memanalyze;
    bool growth_only = c.growth;
    enum format fmt = (enum format)c.format;
    o.findings_shown = c.findings;
    o.depth_shown = c.depth_shown;
    enum mk_weight weight = (enum mk_weight)c.weight;
    const char *outpath = c.out;
    if (!ninputs)
        return free(inputs),
               mk_usage_error("report: no input given (memkit report TRACE)");
    if (fmt == FMT_PPROF && !outpath && isatty(STDOUT_FILENO))
        return free(inputs),
               mk_usage_error(
                   "report: a pprof profile is binary: write it with -o FILE.pb.gz");
    if (growth_only && (fmt == FMT_COLLAPSED || fmt == FMT_PPROF || memanalyze))
        return free(inputs), mk_usage_error("report: --growth is text, json or html");
    if ((c.replay || c.what_if) && (memanalyze || growth_only))
        return free(inputs),
               mk_usage_error("report: --replay and --what-if are for the findings");
    if (c.replay && c.what_if)
        return free(inputs), mk_usage_error("report: --replay or --what-if, not both");
    /* JSON and the page carry growth whenever the trace has snapshots. */
    o.growth = growth_only || fmt == FMT_JSON || fmt == FMT_HTML;
    o.slices = fmt == FMT_HTML;
    o.growth_asked = growth_only;
    char **paths;
    size_t npaths;
    if (mk_expand_inputs(inputs, (size_t)ninputs, o.pid, &paths, &npaths) != MK_EXIT_OK)
        return free(inputs), MK_EXIT_USAGE;
    free(inputs);

    mk_outfile_t of;
    if (!mk_outfile_open(&of, outpath))
        return mk_free_inputs(paths, npaths), MK_EXIT_USAGE;
    FILE *out = of.f;
    if (color < 0)
        color =
            !outpath && fmt == FMT_TEXT && isatty(STDOUT_FILENO) && !getenv("NO_COLOR");

    rc = MK_EXIT_OK;
    bool wrote;       /* an input that could not be read leaves an -o file as it was */
    if (memanalyze) { /* memanalyze.pl: one log each */
        for (size_t k = 0; k < npaths; k++) {
            char err[1024];
            if (!mk_memanalyze(paths[k], out, memanalyze, err, sizeof err)) {
                fprintf(stderr, "memkit: %s\n", err);
                rc = MK_EXIT_USAGE;
            }
        }
        wrote = rc == MK_EXIT_OK;
    } else { /* several inputs (a process tree) are one report, merged */
        mk_report_t r;
        rc = mk_load_inputs(&r, paths, npaths, &o);
        /* a damaged trace is reported up to the damage, and written */
        wrote = rc == MK_EXIT_OK || r.tr || r.nprocs;
        if (wrote && (c.replay || c.what_if)) {
            int wrc = rc != MK_EXIT_OK || npaths != 1 || !r.tr
                          ? mk_usage_error("report: --replay and --what-if take one "
                                           "undamaged trace")
                      : c.replay ? mk_report_read_replay(&r, c.replay)
                                 : mk_report_run_what_if(&r, paths[0]);
            if (wrc >= 0) {
                rc = wrc;
                wrote = false;
                mk_report_free(&r);
            }
        }
        if (wrote) {
            switch (fmt) {
            case FMT_TEXT:
                if (growth_only)
                    mk_render_growth(&r, out, top < 0 ? 10 : top, color);
                else
                    mk_render_text(&r, out, top < 0 ? 10 : top, color, false);
                break;
            case FMT_JSON:
                mk_render_json(&r, out, top < 0 ? 0 : top);
                break;
            case FMT_HTML:
                mk_render_html(&r, out, top < 0 ? 50 : top);
                break;
            case FMT_COLLAPSED:
                mk_render_collapsed(&r, out, weight);
                break;
            case FMT_PPROF:
                if (!mk_render_pprof(&r, out)) {
                    fprintf(stderr,
                            "memkit: report: cannot write the pprof profile: %s\n",
                            ferror(out) ? "write failed" : "out of memory");
                    rc = MK_EXIT_USAGE;
                    wrote = false;
                }
                break;
            }
            mk_report_free(&r);
        }
    }
    mk_free_inputs(paths, npaths);
    if (!mk_outfile_close(&of, wrote))
        return MK_EXIT_USAGE;
    return rc;
}
