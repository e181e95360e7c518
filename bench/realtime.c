/*
 * realtime.c - the `realtime` workload: the loop of the glibc-tuning article.
 * Each round mallocs N blocks of 4096 bytes, touches every byte, then frees
 * them all; every malloc is timed on its own.
 *
 * Under glibc's defaults the free phase hands the top of the heap back to
 * the kernel (trim), so every round faults its 4 KB pages in again.
 * glibc-tuned (M_MMAP_THRESHOLD 32 MiB, M_TRIM_THRESHOLD -1, set in the
 * child) keeps the heap: only the first round faults, and the rest run from
 * memory already mapped. The article measured that first repetition 8.16x
 * slower than the steady ones; memkit bench reports the ratio of the first
 * round's time to the median of the others as first_to_steady.
 */
#include "workload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK 4096

static bool realtime_supports(mk_bench_api api)
{
    /* Blocks live until the whole set is freed, in any order: a stack frame
     * or a pool fits, but the workload is about malloc's own behaviour. */
    return api == MK_API_MALLOC;
}

static int realtime_round(char **blocks, uint64_t *lat, uint64_t n, mk_bench_round *r)
{
    double t0 = mk_bench_now();
    for (uint64_t i = 0; i < n; i++) {
        uint64_t s = mk_bench_now_ns();
        blocks[i] = malloc(BLOCK);
        lat[i] = mk_bench_now_ns() - s;
        if (!blocks[i]) {
            fprintf(stderr, "realtime: malloc failed after %llu blocks\n",
                    (unsigned long long)i);
            while (i-- > 0)
                free(blocks[i]);
            return -1;
        }
        memset(blocks[i], (int)(i & 0xff), BLOCK); /* the article touches them */
    }
    double t1 = mk_bench_now();
    for (uint64_t i = 0; i < n; i++)
        free(blocks[i]);
    double t2 = mk_bench_now();
    *r = (mk_bench_round){.allocs = n, .frees = n, .alloc_s = t1 - t0, .free_s = t2 - t1};
    mk_bench_latencies(lat, n, r);
    return 0;
}

static int realtime_run(mk_bench_api api, uint64_t scale, int rounds, mk_bench_round *out)
{
    (void)api;
    /* Our own bookkeeping comes from mmap'd memory, not the heap under test. */
    char **blocks = calloc(scale, sizeof *blocks);
    uint64_t *lat = calloc(scale, sizeof *lat);
    int rc = blocks && lat ? 0 : -1;
    if (rc)
        fprintf(stderr, "realtime: no memory for %llu block pointers\n",
                (unsigned long long)scale);
    for (int i = 0; i < rounds && rc == 0; i++)
        rc = realtime_round(blocks, lat, scale, &out[i]);
    free(blocks);
    free(lat);
    return rc;
}

const mk_workload mk_workload_realtime = {
    .name = "realtime",
    .summary = "the glibc-tuning article's loop: N x malloc(4096) + touch, free all, "
               "repeated; latencies and first-vs-steady",
    .default_scale = 100000,
    .quick_scale = 2000,
    .scale_unit = "blocks of 4096 bytes per round",
    .default_rounds = 10,
    .supports = realtime_supports,
    .run = realtime_run,
};
