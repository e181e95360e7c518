/*
 * cmd_report.c - `memkit report [options] INPUT...`: a trace or a curl
 * memdebug log as text, JSON, HTML or folded stacks; and the filter options
 * that `diff` and `check` share.
 */
#define _GNU_SOURCE
#include "cli.h"
#include "outfile.h"

#include "../analyze/report.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool parse_seconds(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < 0)
        return false;
    *out = v;
    return true;
}

int mk_filter_option(int argc, char **argv, int *i, mk_report_opts_t *o)
{
    const char *a = argv[*i];
    uint64_t v;
    if (strcmp(a, "--no-symbols") == 0) {
        o->no_symbols = true;
        return 1;
    }
    static const char *const with_value[] = {"--module", "--function",  "--file",
                                             "--thread", "--from",      "--to",
                                             "--pid",    "--min-count", "--cost-ns"};
    bool known = false;
    for (size_t k = 0; k < sizeof with_value / sizeof with_value[0]; k++)
        known |= strcmp(a, with_value[k]) == 0;
    if (!known)
        return 0;
    if (*i + 1 >= argc)
        return mk_usage_error("%s wants a value", a), -1;
    const char *val = argv[++*i];
    if (strcmp(a, "--module") == 0) {
        o->module = val;
    } else if (strcmp(a, "--function") == 0) {
        o->function = val;
    } else if (strcmp(a, "--file") == 0) {
        o->file = val;
    } else if (strcmp(a, "--thread") == 0) {
        if (!mk_parse_count(val, &v) || v > INT32_MAX)
            return mk_usage_error("--thread wants a thread number, not '%s'", val), -1;
        o->thread = (int64_t)v;
    } else if (strcmp(a, "--pid") == 0) {
        if (!mk_parse_count(val, &v) || v == 0 || v > INT32_MAX)
            return mk_usage_error("--pid wants a process id, not '%s'", val), -1;
        o->pid = (int64_t)v;
    } else if (strcmp(a, "--from") == 0 || strcmp(a, "--to") == 0) {
        double *d = a[2] == 'f' ? &o->from_s : &o->to_s;
        if (!parse_seconds(val, d))
            return mk_usage_error("%s wants seconds since the start, not '%s'", a, val),
                   -1;
    } else if (strcmp(a, "--min-count") == 0) {
        if (!mk_parse_count(val, &v) || v == 0)
            return mk_usage_error("--min-count wants a positive number, not '%s'", val),
                   -1;
        o->min_count = v;
    } else {
        if (!parse_seconds(val, &o->cost_ns) || o->cost_ns <= 0)
            return mk_usage_error("--cost-ns wants a positive number, not '%s'", val), -1;
    }
    if (o->to_s > 0 && o->to_s <= o->from_s)
        return mk_usage_error("--to must be after --from"), -1;
    return 1;
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

int mk_summarize_trace(const char *path, FILE *out, int top)
{
    mk_report_t r;
    mk_report_opts_t o;
    mk_report_opts_default(&o);
    o.summary_first = true; /* the tracer's own summary where it wrote one */
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

static const char usage[] =
    "usage: memkit report [options] INPUT...\n"
    "\n"
    "INPUT is a trace written by `memkit trace`, a run's prefix (every\n"
    "PREFIX.<pid>.mkt: the processes of one run), a curl memdebug log\n"
    "(CURL_MEMDEBUG) or - (standard input). Several traces are one report:\n"
    "sites matched by their symbolized stacks, totals summed, a table of the\n"
    "processes. Prints totals, sites, the peak, leaks and findings.\n"
    "\n"
    "  --format F        text (default), json, html or collapsed (folded stacks)\n"
    "  -o FILE           write to FILE instead of standard output\n"
    "  --top N           rows per table (default 10; json: all unless given)\n"
    "  --weight W        collapsed: calls (default), bytes, peak or leaked\n"
    "  --growth          the sites whose live bytes grow across the trace's\n"
    "                    snapshots (--sample with --snapshot-every or SIGUSR2;\n"
    "                    else 8 even points of the run), fastest first\n"
    "  --module M        only allocations made directly by code in object M\n"
    "                    (what an in-library wrapper like curl's memdebug counts)\n"
    "  --function F      only allocations with F on their stack\n"
    "  --file F          only allocations with a frame in source file F\n"
    "  --pid P           of several traces, only process P's\n"
    "  --thread N        only thread N: threads are numbered from 1 (the main\n"
    "                    thread) in the order they start\n"
    "  --from S, --to S  only events in this window, seconds from the start\n"
    "  --min-count N     a site needs N allocations for a finding (default 100)\n"
    "  --cost-ns X       price a malloc+free at X ns (default: measured here)\n"
    "  --no-symbols      frames as module+offset, without reading debug information\n"
    "  --color, --no-color  colour text output (default: on a terminal)\n"
    "  --memanalyze[=2017]  print exactly what curl's memanalyze.pl -v prints for a\n"
    "                    memdebug log (=2017: the script of curl 7.53)\n";

enum format { FMT_TEXT, FMT_JSON, FMT_HTML, FMT_COLLAPSED };

int mk_cmd_report(int argc, char **argv)
{
    mk_report_opts_t o;
    mk_report_opts_default(&o);
    int top = -1, color = -1, memanalyze = 0;
    bool growth_only = false;
    enum format fmt = FMT_TEXT;
    enum mk_weight weight = MK_WEIGHT_CALLS;
    const char *outpath = NULL;
    char **inputs = calloc((size_t)argc, sizeof *inputs);
    int ninputs = 0;
    if (!inputs)
        return mk_usage_error("out of memory");

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        uint64_t v;
        int f = mk_filter_option(argc, argv, &i, &o);
        if (f < 0)
            return free(inputs), MK_EXIT_USAGE;
        if (f > 0)
            continue;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            fputs(usage, stdout);
            return free(inputs), MK_EXIT_OK;
        } else if (strcmp(a, "--top") == 0 && i + 1 < argc) {
            if (!mk_parse_count(argv[++i], &v) || v > 1000000)
                return free(inputs),
                       mk_usage_error("--top wants a number, not '%s'", argv[i]);
            top = (int)v;
        } else if (strcmp(a, "--format") == 0 && i + 1 < argc) {
            const char *f2 = argv[++i];
            if (strcmp(f2, "text") == 0)
                fmt = FMT_TEXT;
            else if (strcmp(f2, "json") == 0)
                fmt = FMT_JSON;
            else if (strcmp(f2, "html") == 0)
                fmt = FMT_HTML;
            else if (strcmp(f2, "collapsed") == 0)
                fmt = FMT_COLLAPSED;
            else
                return free(inputs),
                       mk_usage_error("--format: text, json, html or collapsed, not '%s'",
                                      f2);
        } else if (strcmp(a, "--weight") == 0 && i + 1 < argc) {
            const char *w = argv[++i];
            if (strcmp(w, "calls") == 0)
                weight = MK_WEIGHT_CALLS;
            else if (strcmp(w, "bytes") == 0)
                weight = MK_WEIGHT_BYTES;
            else if (strcmp(w, "peak") == 0)
                weight = MK_WEIGHT_PEAK;
            else if (strcmp(w, "leaked") == 0)
                weight = MK_WEIGHT_LEAKED;
            else
                return free(inputs),
                       mk_usage_error("--weight: calls, bytes, peak or leaked, not '%s'",
                                      w);
        } else if (strcmp(a, "-o") == 0 && i + 1 < argc) {
            outpath = argv[++i];
        } else if (strcmp(a, "--growth") == 0) {
            growth_only = true;
        } else if (strcmp(a, "--color") == 0) {
            color = 1;
        } else if (strcmp(a, "--no-color") == 0) {
            color = 0;
        } else if (strcmp(a, "--memanalyze") == 0) {
            memanalyze = 1;
        } else if (strncmp(a, "--memanalyze=", 13) == 0) {
            if (strcmp(a + 13, "2017") == 0)
                memanalyze = 2017;
            else if (strcmp(a + 13, "current") == 0)
                memanalyze = 1;
            else
                return free(inputs),
                       mk_usage_error("--memanalyze=: 2017 or current, not '%s'", a + 13);
        } else if (a[0] == '-' && a[1]) {
            return free(inputs),
                   mk_usage_error("unknown report option '%s' (memkit report --help)", a);
        } else {
            inputs[ninputs++] = argv[i];
        }
    }
    if (!ninputs)
        return free(inputs),
               mk_usage_error("report: no input given (memkit report TRACE)");
    if (growth_only && (fmt == FMT_COLLAPSED || memanalyze))
        return free(inputs), mk_usage_error("report: --growth is text, json or html");
    /* JSON and the page carry growth whenever the trace has snapshots. */
    o.growth = growth_only || fmt == FMT_JSON || fmt == FMT_HTML;
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

    int rc = MK_EXIT_OK;
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
            }
            mk_report_free(&r);
        }
    }
    mk_free_inputs(paths, npaths);
    if (!mk_outfile_close(&of, wrote))
        return MK_EXIT_USAGE;
    return rc;
}
