/*
 * cmd_check.c - `memkit check INPUT --max-allocations N ...`: a regression
 * guard for CI. Exit status 1 and one line per limit breached; limits can
 * also come from a small file in the user's repository (--config).
 */
#define _GNU_SOURCE
#include "cli.h"
#include "opts.h"

#include "../analyze/report.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* What a limit's number is. */
enum unit {
    U_COUNT,   /* a count (1k, 2M) */
    U_SIZE,    /* a byte size (K/M/G are powers of 1024) */
    U_TIME,    /* ns (1ms, 2s) */
    U_PERCENT, /* hundredths of a percent ("12.5%" or "12.5") */
};

typedef struct limit {
    const char *name; /* option name without "--" and config key */
    const char *what; /* in messages */
    enum unit unit;
    bool set;
    uint64_t max;
} limit_t;

enum {
    L_ALLOCATIONS,
    L_PEAK,
    L_LEAKED,
    L_LEAKED_BLOCKS,
    L_TOTAL,
    L_PEAK_BLOCKS,
    L_TEMPORARIES,
    L_FINDINGS,
    L_ALLOCATOR_TIME,  /* the allocator's measured time (a trace with times) */
    L_ALLOCATOR_SHARE, /* and its share of the run's CPU time */
    L_COUNT
};

/* "12.5%" or "12.5" as hundredths of a percent, 0 to 100%. */
static bool parse_percent(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || v < 0 || v > 100 || (*end && strcmp(end, "%") != 0))
        return false;
    *out = (uint64_t)(v * 100 + 0.5);
    return true;
}

static int set_limit(limit_t *l, const char *val, const char *from)
{
    static const char *const wants[] = {
        [U_COUNT] = "a count",
        [U_SIZE] = "a size (e.g. 64K, 10M)",
        [U_TIME] = "a duration (e.g. 0.5ms, 20ms)",
        [U_PERCENT] = "a percentage (e.g. 5%)",
    };
    bool ok = l->unit == U_SIZE      ? mk_parse_bytes(val, &l->max)
              : l->unit == U_TIME    ? mk_parse_duration(val, &l->max)
              : l->unit == U_PERCENT ? parse_percent(val, &l->max)
                                     : mk_parse_count(val, &l->max);
    if (!ok)
        return mk_usage_error("%s%s wants %s, not '%s'", from, l->name, wants[l->unit],
                              val);
    l->set = true;
    return MK_EXIT_OK;
}

/* A limit's number as its messages write it. */
static const char *shown(const limit_t *l, uint64_t v, char *buf, size_t cap)
{
    if (l->unit == U_PERCENT)
        snprintf(buf, cap, "%.2f%%", (double)v / 100);
    else if (l->unit == U_TIME)
        snprintf(buf, cap, "%" PRIu64 " ns", v);
    else
        snprintf(buf, cap, "%" PRIu64, v);
    return buf;
}

static limit_t *limit_named(limit_t *limits, const char *name, size_t len)
{
    for (int i = 0; i < L_COUNT; i++)
        if (strlen(limits[i].name) == len && strncmp(limits[i].name, name, len) == 0)
            return &limits[i];
    return NULL;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = 0;
    return s;
}

/* "max-allocations = 1000" per line; '#' starts a comment. Command-line
 * limits given before or after win over the file's (set_by_cli). */
static int read_config(const char *path, limit_t *limits, const bool *set_by_cli)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return mk_usage_error("cannot read check config %s: %s", path, strerror(errno));
    char line[1024];
    int lineno = 0, rc = MK_EXIT_OK;
    while (rc == MK_EXIT_OK && fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = 0;
        char *s = trim(line);
        if (!*s)
            continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            rc = mk_usage_error("%s:%d: expected 'name = value'", path, lineno);
            break;
        }
        *eq = 0;
        char *name = trim(s), *val = trim(eq + 1);
        limit_t *l = limit_named(limits, name, strlen(name));
        if (!l) {
            rc = mk_usage_error("%s:%d: unknown limit '%s'", path, lineno, name);
            break;
        }
        if (set_by_cli[l - limits])
            continue;
        char from[1100];
        snprintf(from, sizeof from, "%s:%d: ", path, lineno);
        rc = set_limit(l, val, from);
    }
    if (rc == MK_EXIT_OK && ferror(f)) /* a directory reads as an error, not as empty */
        rc = mk_usage_error("cannot read check config %s: %s", path, strerror(errno));
    fclose(f);
    return rc;
}

static uint64_t measured(const mk_report_t *r, int i)
{
    const mk_profile_t *p = &r->prof;
    switch (i) {
    case L_ALLOCATIONS:
        return p->allocation_calls;
    case L_PEAK:
        return p->max_allocated;
    case L_LEAKED:
        return p->live_bytes;
    case L_LEAKED_BLOCKS:
        return p->live_blocks;
    case L_TOTAL:
        return p->total_allocated;
    case L_PEAK_BLOCKS:
        return p->peak_blocks;
    case L_TEMPORARIES:
        return p->temporaries;
    case L_ALLOCATOR_TIME:
        return (uint64_t)(p->alloc_ns + 0.5);
    case L_ALLOCATOR_SHARE:
        return p->cpu_ns > 0 ? (uint64_t)(p->alloc_ns / p->cpu_ns * 10000 + 0.5) : 0;
    default:
        return r->nfindings;
    }
}

typedef struct check_cli {
    limit_t limits[L_COUNT];
    bool set_by_cli[L_COUNT];
    const char *config;
} check_cli_t;

/* --max-...: the limit whose index the row's lo holds. */
static int set_cli_limit(void *dest, const mk_opt_t *opt, const char *v)
{
    check_cli_t *c = dest;
    if (set_limit(&c->limits[opt->lo], v, "--") != MK_EXIT_OK)
        return MK_EXIT_USAGE;
    c->set_by_cli[opt->lo] = true;
    return -1;
}

#define LIMIT(i, option, arg_name, text)                                                 \
    {                                                                                    \
        .name = option, .arg = arg_name, .kind = MK_OPT_CALL, .lo = i,                   \
        .call = set_cli_limit, .help = text                                              \
    }

static const mk_opt_t check_opts[] = {
    LIMIT(L_ALLOCATIONS, "--max-allocations", "N",
          "allocation calls (malloc family and new)"),
    LIMIT(L_PEAK, "--max-peak", "SIZE",
          "maximum allocated bytes (K, M, G: powers of 1024)"),
    LIMIT(L_LEAKED, "--max-leaked", "SIZE", "bytes still allocated at the end"),
    LIMIT(L_LEAKED_BLOCKS, "--max-leaked-blocks", "N",
          "blocks still allocated at the end"),
    LIMIT(L_TOTAL, "--max-total", "SIZE", "bytes allocated over the run"),
    LIMIT(L_PEAK_BLOCKS, "--max-peak-blocks", "N", "live blocks at the highest point"),
    LIMIT(L_TEMPORARIES, "--max-temporaries", "N",
          "blocks freed before their thread's next allocation"),
    LIMIT(L_FINDINGS, "--max-findings", "N", "findings (see memkit report)"),
    LIMIT(L_ALLOCATOR_TIME, "--max-allocator-time", "T",
          "the allocator's measured time (e.g. 20ms; a trace with times)"),
    LIMIT(L_ALLOCATOR_SHARE, "--max-allocator-share", "P",
          "the allocator's share of the run's CPU time (e.g. 5%)"),
    {.name = "--config",
     .arg = "FILE",
     .kind = MK_OPT_STRING,
     .at = offsetof(check_cli_t, config),
     .help = "limits as 'max-peak = 10M' lines (# comments);\n"
             "the command line wins over the file"},
};

static const mk_command_spec_t check_spec = {
    .name = "check",
    .synopsis = "memkit check [options] INPUT",
    .about = "Exit status 1, with one line per limit exceeded, when the trace or curl\n"
             "memdebug log goes over a limit; 0 when it is within all of them.\n",
    .max_args = 1,
};

int mk_cmd_check(int argc, char **argv)
{
    check_cli_t c = {
        .limits = {
            [L_ALLOCATIONS] = {"max-allocations", "allocation calls", U_COUNT, false, 0},
            [L_PEAK] = {"max-peak", "maximum allocated bytes", U_SIZE, false, 0},
            [L_LEAKED] = {"max-leaked", "leaked bytes", U_SIZE, false, 0},
            [L_LEAKED_BLOCKS] = {"max-leaked-blocks", "leaked blocks", U_COUNT, false, 0},
            [L_TOTAL] = {"max-total", "total allocated bytes", U_SIZE, false, 0},
            [L_PEAK_BLOCKS] = {"max-peak-blocks", "peak live blocks", U_COUNT, false, 0},
            [L_TEMPORARIES] = {"max-temporaries", "temporaries", U_COUNT, false, 0},
            [L_FINDINGS] = {"max-findings", "findings", U_COUNT, false, 0},
            [L_ALLOCATOR_TIME] = {"max-allocator-time", "allocator time", U_TIME, false,
                                  0},
            [L_ALLOCATOR_SHARE] = {"max-allocator-share",
                                   "allocator share of the CPU time", U_PERCENT, false,
                                   0},
        }};
    limit_t *limits = c.limits;
    mk_report_opts_t o;
    char *inputs[1] = {NULL};
    int ninputs = 0;
    int rc = mk_opts_parse_report(&check_spec, check_opts, MK_OPTS_N(check_opts), &c, &o,
                                  argc, argv, inputs, &ninputs);
    if (rc >= 0)
        return rc;
    const char *input = inputs[0], *config = c.config;
    bool *set_by_cli = c.set_by_cli;
    if (config && read_config(config, limits, set_by_cli) != MK_EXIT_OK)
        return MK_EXIT_USAGE;
    if (!input)
        return mk_usage_error("check: no input given (memkit check TRACE --max-...)");
    bool any = false;
    for (int i = 0; i < L_COUNT; i++)
        any |= limits[i].set;
    if (!any)
        return mk_usage_error("check: no limit given (memkit check --help lists them)");
    if (!limits[L_FINDINGS].set)
        o.cost_ns = 1; /* findings are not checked: skip measuring */

    mk_report_t r;
    char **paths, *given = (char *)input;
    size_t npaths;
    if (mk_expand_inputs(&given, 1, o.pid, &paths, &npaths) != MK_EXIT_OK)
        return MK_EXIT_USAGE;
    rc = mk_load_inputs(&r, paths, npaths, &o); /* a prefix: its processes merged */
    if (rc != MK_EXIT_OK) {                     /* mk_load_input said why, in one line */
        if (r.tr || r.nprocs)
            mk_report_free(&r);
        mk_free_inputs(paths, npaths);
        return MK_EXIT_USAGE;
    }
    /* A sampled trace counts calls and bytes exactly and estimates the
     * rest; temporaries and findings it does not know at all. */
    bool sampled = r.prof.sampled;
    if (sampled && (limits[L_TEMPORARIES].set || limits[L_FINDINGS].set)) {
        mk_usage_error("check: %s is sampled (--sample): it has no %s to check; trace "
                       "without --sample",
                       input, limits[L_TEMPORARIES].set ? "temporaries" : "findings");
        mk_report_free(&r);
        mk_free_inputs(paths, npaths);
        return MK_EXIT_USAGE;
    }
    /* The allocator's time is measured only by full tracing with times. */
    bool timed = mk_profile_time_measured(&r.prof) &&
                 (r.prof.cpu_ns > 0 || !limits[L_ALLOCATOR_SHARE].set);
    if (!timed && (limits[L_ALLOCATOR_TIME].set || limits[L_ALLOCATOR_SHARE].set)) {
        mk_usage_error(
            "check: %s has no %s (traced with --no-times, --summary-only or "
            "--sample, by an older memkit, a curl log, or cut short): it cannot "
            "be checked against --max-allocator-%s",
            input, mk_profile_time_measured(&r.prof) ? "CPU time" : "allocator times",
            limits[L_ALLOCATOR_SHARE].set ? "share" : "time");
        mk_report_free(&r);
        mk_free_inputs(paths, npaths);
        return MK_EXIT_USAGE;
    }
    int breached = 0;
    for (int i = 0; i < L_COUNT; i++) {
        if (!limits[i].set)
            continue;
        uint64_t v = measured(&r, i);
        bool est = sampled && i != L_ALLOCATIONS && i != L_TOTAL;
        if (v > limits[i].max) {
            char a[64], b[64];
            printf("memkit check: %s: %s %s%s > limit %s%s\n", input, limits[i].what,
                   est ? "~" : "", shown(&limits[i], v, a, sizeof a),
                   shown(&limits[i], limits[i].max, b, sizeof b),
                   est ? " (estimated from a sampled trace)" : "");
            breached++;
        }
    }
    if (!breached)
        printf("memkit check: %s: within all limits (%" PRIu64 " allocation calls, "
               "%" PRIu64 " bytes at peak, %" PRIu64 " bytes leaked)\n",
               input, r.prof.allocation_calls, r.prof.max_allocated, r.prof.live_bytes);
    mk_report_free(&r);
    mk_free_inputs(paths, npaths); /* the report named them until here */
    return breached ? MK_EXIT_FAIL : MK_EXIT_OK;
}
