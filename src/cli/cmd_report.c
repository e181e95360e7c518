/*
 * cmd_report.c - `memkit report [--top N] TRACE...`: the summary of traces
 * written by `memkit trace`. (Sites, lifetimes, findings and the JSON and
 * HTML renderers build on this: see the README's planned parts.)
 */
#include "cli.h"

#include "../analyze/profile.h"
#include "../analyze/summary.h"

#include <string.h>

int mk_summarize_trace(const char *path, FILE *out, bool full, int top, uint64_t *calls)
{
    char err[512];
    mk_trace_t *tr = mk_trace_open(path, err, sizeof err);
    mk_profile_t p = {0};
    int rc = MK_EXIT_OK;

    if (!tr) {
        fprintf(stderr, "memkit: %s\n", err);
        return MK_EXIT_USAGE;
    }
    if (!mk_profile_build(&p, tr))
        fprintf(stderr, "memkit: out of memory analyzing %s; the summary is partial\n",
                path);
    if (full)
        mk_summary_print(out, tr, &p, top);
    if (tr->damage[0]) {
        fprintf(stderr, "memkit: %s is damaged: %s; %s\n", path, tr->damage,
                full ? "the summary covers what came before" : "read up to there");
        rc = MK_EXIT_USAGE;
    } else if (!tr->end.present && full) {
        fprintf(stderr,
                "memkit: %s has no end record (the process was killed?); the summary "
                "covers what was flushed\n",
                path);
    }
    if (calls)
        *calls = p.allocation_calls;
    mk_profile_free(&p);
    mk_trace_close(tr);
    return rc;
}

int mk_cmd_report(int argc, char **argv)
{
    int top = 10, rc = MK_EXIT_OK, files = 0;

    for (int i = 1; i < argc; i++) {
        uint64_t v;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            printf(
                "usage: memkit report [--top N] TRACE...\n\n"
                "Prints the summary of each trace: memanalyze's counts, peak, leaks and\n"
                "the N call sites with the most allocations (default 10).\n");
            return MK_EXIT_OK;
        }
        if (strcmp(argv[i], "--top") == 0 && i + 1 < argc) {
            if (!mk_parse_count(argv[++i], &v) || v > 100000)
                return mk_usage_error("--top wants a number, not '%s'", argv[i]);
            top = (int)v;
            continue;
        }
        if (argv[i][0] == '-' && argv[i][1])
            return mk_usage_error("unknown report option '%s' (memkit report --help)",
                                  argv[i]);
        if (files++)
            printf("\n");
        if (argc > 2)
            printf("== %s\n", argv[i]);
        int r = mk_summarize_trace(argv[i], stdout, true, top, NULL);
        if (r != MK_EXIT_OK)
            rc = r;
    }
    if (!files)
        return mk_usage_error("report: no trace given (memkit report TRACE)");
    return rc;
}
