/*
 * retain.c - the retention policy (memkit/common.h says what it is): which spare
 * bytes an allocator gives back to the OS after a slow-path event.
 *
 * Invariants: low <= the spare bytes of the last call; what a call tells its caller
 * to release never takes the spares below min(spare, floor) nor leaves more than
 * cap; with decay_ns == UINT64_MAX only cap releases anything.
 */
#include "internal.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

static uint64_t coarse_now(void)
{
    struct timespec ts;

    /* The coarse clock is read from the vDSO without a system call; its tick
     * (a few ms) is far below any period. */
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + 1;
}

uint64_t (*mk__retain_clock)(void) = coarse_now;

/* The default period: MEMKIT_DECAY_MS when set to a number (read once), else
 * MK_DECAY_MS. */
static unsigned default_decay_ms(void)
{
    static _Atomic unsigned ms; /* 0: not read yet; racing first reads agree */
    unsigned v = atomic_load_explicit(&ms, memory_order_relaxed);

    if (!v) {
        const char *e = getenv("MEMKIT_DECAY_MS");
        char *end;
        unsigned long n = e && *e ? strtoul(e, &end, 10) : 0;

        v = n > 0 && n <= 86400000ul && !*end ? (unsigned)n : MK_DECAY_MS;
        atomic_store_explicit(&ms, v, memory_order_relaxed);
    }
    return v;
}

void mk__retain_init(struct mk__retain *r, size_t limit, size_t unit, unsigned decay_ms)
{
    size_t floor = (size_t)1 << 20;

    if (unit > floor)
        floor = unit;
    *r = (struct mk__retain){
        .decay_ns = limit == SIZE_MAX
                        ? UINT64_MAX
                        : (uint64_t)(decay_ms ? decay_ms : default_decay_ms()) * 1000000u,
        .floor = floor,
        .cap = limit && limit != SIZE_MAX && limit <= SIZE_MAX / unit ? limit * unit
                                                                      : SIZE_MAX,
        .low = SIZE_MAX,
    };
    if (r->floor > r->cap)
        r->floor = r->cap;
}

size_t mk__retain_excess(struct mk__retain *r, size_t in_use, size_t spare, bool emptied)
{
    size_t keep = spare, bound;
    bool period_ends;
    uint64_t now;

    mk__retain_note(r, in_use, spare);
    if (spare > r->cap)
        keep = r->cap;
    if (keep <= r->floor || r->decay_ns == UINT64_MAX) {
        r->low = keep < r->low ? keep : r->low;
        return spare - keep;
    }
    now = mk__retain_clock();
    if (!r->epoch) { /* the first period starts with what is spare now */
        r->epoch = now;
        r->low = keep;
    }
    period_ends = now - r->epoch >= r->decay_ns;
    if (period_ends) {
        /* A new period: what stayed spare through the whole last one goes. */
        MK_ASSERT(r->low <= spare);
        if (spare - r->low < keep)
            keep = spare - r->low;
        r->epoch = now;
        r->peak_prev = r->peak;
        r->peak = in_use;
    }
    bound = r->peak > r->peak_prev ? r->peak : r->peak_prev;
    if (keep > bound)
        keep = bound;
    if (emptied) {
        if (!r->emptied || now - r->emptied >= r->decay_ns)
            keep = 0;
        r->emptied = now;
    }
    if (keep < r->floor)
        keep = spare < r->floor ? spare : r->floor;
    if (period_ends || keep < r->low)
        r->low = keep; /* a new period starts with what is kept */
    MK_ASSERT(keep <= spare && keep <= r->cap);
    return spare - keep;
}
