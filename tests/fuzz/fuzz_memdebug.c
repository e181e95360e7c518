/*
 * fuzz_memdebug.c - libFuzzer target for the curl memdebug log reader: the
 * memanalyze emulation in both dialects and the log as a report. Any bytes
 * must give output or a clean error, never a crash, a hang or a leak.
 * Seeds: the logs of tests/report/data/curl-memdebug.
 */
#define _GNU_SOURCE
#include "analyze/report.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64], err[512];
    FILE *sink;

    if (!fuzz_input(data, size, path, sizeof path, &sink))
        return 0;
    mk_memanalyze(path, sink, 0, err, sizeof err);
    mk_memanalyze(path, sink, 2017, err, sizeof err);
    mk_report_opts_t o;
    mk_report_opts_default(&o);
    o.cost_ns = 1;
    o.min_count = 2;
    mk_report_t r;
    if (mk_report_load(&r, path, &o, err, sizeof err) != 0)
        return 0;
    mk_render_text(&r, sink, 5, false, false);
    mk_render_json(&r, sink, 5);
    mk_report_free(&r);
    return 0;
}
