/*
 * local_array.c - the `local-array` workload: curl's curl_multi_wait()
 * pattern. A function called over and over needs a small array (one entry
 * per socket: usually 1-8, changing every 64 calls; once in a thousand calls
 * 1,000); curl allocated
 * it with malloc on every call, then kept 10 entries on the stack "for most
 * typical cases". Each call fills its entries and reads them back (the poll
 * stand-in), so the array's cost is all that differs:
 *
 *   glibc, jemalloc, ...  malloc + free per call
 *   mk_stack              MK_SCOPE + mk_t_new per call (a frame push and pop)
 *   mk_localbuf           MK_LOCALBUF of 8 entries: no allocation unless n > 8
 *
 * Both rate columns are calls per second (the whole loop is timed).
 */
#include "local_array.h"
#include "workload.h"

#include <memkit/localbuf.h>
#include <memkit/stack.h>

#include <stdio.h>
#include <stdlib.h>

static unsigned call_malloc(unsigned n, unsigned seed)
{
    poll_entry *e = malloc(n * sizeof *e);
    if (!e)
        abort(); /* the benchmark cannot go on */
    unsigned r = use_entries(e, n, seed);
    free(e);
    return r;
}

static unsigned call_stack(unsigned n, unsigned seed)
{
    MK_SCOPE();
    return use_entries(mk_t_new(poll_entry, n), n, seed);
}

static unsigned call_localbuf(unsigned n, unsigned seed)
{
    MK_LOCALBUF(buf, INLINE_ENTRIES * sizeof(poll_entry));
    poll_entry *e = mk_localbuf_array(&buf, poll_entry, n);
    if (!e)
        abort();
    return use_entries(e, n, seed);
}

static bool local_array_supports(mk_bench_api api)
{
    return api == MK_API_MALLOC || api == MK_API_MK_STACK || api == MK_API_MK_LOCALBUF;
}

static int local_array_run(mk_bench_api api, uint64_t scale, int rounds,
                           mk_bench_round *out)
{
    volatile unsigned sink = 0;

    for (int r = 0; r < rounds; r++) {
        unsigned sum = 0;
        double t0 = mk_bench_now();
        switch (api) {
        case MK_API_MK_STACK:
            for (uint64_t i = 0; i < scale; i++)
                sum += call_stack(entries_for(i), (unsigned)i);
            break;
        case MK_API_MK_LOCALBUF:
            for (uint64_t i = 0; i < scale; i++)
                sum += call_localbuf(entries_for(i), (unsigned)i);
            break;
        default:
            for (uint64_t i = 0; i < scale; i++)
                sum += call_malloc(entries_for(i), (unsigned)i);
            break;
        }
        double t = mk_bench_now() - t0;
        sink += sum;
        out[r] =
            (mk_bench_round){.allocs = scale, .frees = scale, .alloc_s = t, .free_s = t};
    }
    (void)sink;
    return 0;
}

const mk_workload mk_workload_local_array = {
    .name = "local-array",
    .summary =
        "curl_multi_wait's per-call array: 1-8 entries, 1,000 once per 1,000 calls; "
        "rates are calls/s",
    .default_scale = 20000000,
    .quick_scale = 200000,
    .scale_unit = "calls",
    .default_rounds = 5,
    .supports = local_array_supports,
    .run = local_array_run,
};
