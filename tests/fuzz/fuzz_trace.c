/*
 * fuzz_trace.c - libFuzzer target for the trace reader, the replay and the
 * report built on it: any bytes must give a clean result or a clean error,
 * never a crash, a hang or a leak. Built by `make fuzz` with clang; seeds
 * are real traces.
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
    mk_report_opts_t o;
    mk_report_opts_default(&o);
    o.cost_ns = 1; /* no measuring per input */
    o.min_count = 2;
    o.no_symbols = true; /* libdw on every input would starve the fuzzer */
    mk_report_t r;
    if (mk_report_load(&r, path, &o, err, sizeof err) != 0)
        return 0;
    mk_render_text(&r, sink, 5, false, false);
    mk_render_json(&r, sink, 5);
    mk_render_collapsed(&r, sink, MK_WEIGHT_BYTES);
    mk_report_free(&r);
    return 0;
}
