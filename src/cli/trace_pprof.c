/*
 * trace_pprof.c - memkit trace --pprof: each trace of the run also as pprof
 * profiles beside it, for the engines that keep a fleet's profiles (and
 * `go tool pprof`): PREFIX.<pid>[.<n>].pb.gz for the whole run, and for a
 * sampled run's snapshots PREFIX.<pid>[.<n>].snap<K>.pb.gz, the run up to
 * snapshot K (what was allocated since the start, and what was live then).
 *
 * Each snapshot's profile is a report of the trace up to that time, as
 * `memkit report --format pprof --to T` writes it: K snapshots replay the
 * trace K times, which a sampled trace's few events make cheap.
 */
#define _GNU_SOURCE
#include "cli.h"
#include "outfile.h"

#include "../analyze/report.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* One profile of path's trace, to_s its end (0: the whole run), into out;
 * with snaps, its snapshots' times too (a copy in *snaps, to free). */
static bool write_one(const char *path, double to_s, const char *out, uint64_t **snaps,
                      size_t *nsnaps)
{
    mk_report_opts_t o;
    mk_report_opts_default(&o);
    o.to_s = to_s;
    mk_report_t r;
    if (mk_load_input(&r, path, &o) != MK_EXIT_OK && !r.tr)
        return false;
    if (snaps && r.tr && r.tr->sampling.nsnapshots &&
        (*snaps = malloc(r.tr->sampling.nsnapshots * sizeof **snaps))) {
        *nsnaps = r.tr->sampling.nsnapshots;
        memcpy(*snaps, r.tr->sampling.snapshots, *nsnaps * sizeof **snaps);
    }
    mk_outfile_t of;
    bool ok = mk_outfile_open(&of, out);
    if (ok) {
        bool wrote = mk_render_pprof(&r, of.f);
        if (!wrote)
            fprintf(stderr, "memkit: trace: cannot write the pprof profile %s\n", out);
        ok = mk_outfile_close(&of, wrote) && wrote;
    }
    mk_report_free(&r);
    return ok;
}

int mk_trace_write_pprof(const char *path, FILE *said)
{
    char base[PATH_MAX], out[PATH_MAX + 32];
    size_t len = strlen(path);
    if (len < 4 || strcmp(path + len - 4, ".mkt") != 0 || len - 4 >= sizeof base)
        return 0;
    memcpy(base, path, len - 4);
    base[len - 4] = '\0';
    snprintf(out, sizeof out, "%s.pb.gz", base);
    uint64_t *at = NULL; /* the snapshots' times, from the trace itself */
    size_t n = 0;
    if (!write_one(path, 0, out, &at, &n)) {
        free(at);
        return 0;
    }
    size_t written = 0;
    for (size_t k = 0; k < n; k++) {
        snprintf(out, sizeof out, "%s.snap%zu.pb.gz", base, k + 1);
        /* a snapshot at time 0 would read as "to the end": just after it */
        written += write_one(path, at[k] ? (double)at[k] / 1e9 : 1e-9, out, NULL, NULL);
    }
    free(at);
    if (n)
        fprintf(said, "pprof: %s.pb.gz, and %s.snap1..%zu.pb.gz (%zu of %zu snapshots)\n",
                base, base, n, written, n);
    else
        fprintf(said, "pprof: %s.pb.gz\n", base);
    return 1;
}
