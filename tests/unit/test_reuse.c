/*
 * test_reuse.c - the trace format's reuse model (src/trace/reuse.h), which
 * writer and reader must keep identically, checked against a simple model:
 * random frees, takes and record resets over few enough addresses that they
 * are freed again and again, with the recent-free map's hash slots shared.
 *   - Each class's candidates are its frees newest first, at most
 *     MK_REUSE_DEPTH, less the ones taken.
 *   - mk_reuse_recent_find returns the latest time an address was freed in
 *     the record when that is within MK_REUSE_RECENT frees and no other
 *     address has used its hash slot since; it returns 0 otherwise, and never
 *     a wrong one (a stale hint from an earlier record included).
 */
#define _GNU_SOURCE
#include "../../src/trace/reuse.h"
#include "check.h"

#include <stdint.h>
#include <stdlib.h>

#define ADDRS   3000 /* distinct addresses: each is freed many times */
#define CLASSES 4

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t next_random(void)
{
    return xorshift64(&rng);
}

/* The model: each address's latest free in the record (1 + its number, 0:
 * none), the record's free count, and the classes' lists. */
static uint32_t latest_free[ADDRS];
static uint32_t nfreed;
static uint64_t cls_list[CLASSES][MK_REUSE_DEPTH]; /* newest first */
static unsigned cls_n[CLASSES];
static uint64_t slot_owner[MK_REUSE_WHERE]; /* the address a slot was set for */

static void model_free(unsigned c, unsigned i, uint64_t addr)
{
    latest_free[i] = ++nfreed;
    memmove(&cls_list[c][1], &cls_list[c][0], (MK_REUSE_DEPTH - 1) * sizeof(uint64_t));
    cls_list[c][0] = addr;
    if (cls_n[c] < MK_REUSE_DEPTH)
        cls_n[c]++;
    slot_owner[mk_reuse_where_slot(addr)] = addr;
}

/* The latest free of address i in the record, as frees back (0: none). */
static uint32_t model_latest(unsigned i)
{
    return latest_free[i] ? nfreed - (latest_free[i] - 1) : 0;
}

static uint64_t address(unsigned i)
{
    return 0x555500001000ull + 16ull * i * (i % 3 ? 1 : 97); /* some far apart */
}

int main(void)
{
    static mk_reuse_t r; /* zeroed, as the tracer's mmap'd one */
    const char *steps_env = getenv("MEMKIT_TEST_STEPS");
    long steps = steps_env ? atol(steps_env) : 2000000;
    uint64_t found = 0, stale = 0, beyond = 0;

    mk_reuse_reset(&r);
    for (long s = 0; s < steps; s++) {
        uint64_t x = next_random();
        unsigned op = (unsigned)(x % 100), c = (unsigned)(x >> 8) % CLASSES;
        unsigned i = (unsigned)(x >> 16) % ADDRS;
        uint64_t addr = address(i);
        if (op < 50) {
            mk_reuse_free(&r, c, addr);
            model_free(c, i, addr);
        } else if (op < 75) { /* take a candidate of class c */
            CHECK_EQ(mk_reuse_count(&r, c), cls_n[c]);
            if (cls_n[c] == 0)
                continue;
            unsigned j = (unsigned)(x >> 32) % cls_n[c];
            uint64_t want = cls_list[c][j];
            CHECK_EQ(mk_reuse_find(&r, c, want) <= j,
                     1); /* an earlier copy may come first */
            CHECK_EQ(mk_reuse_take(&r, c, j), want);
            memmove(&cls_list[c][j], &cls_list[c][j + 1],
                    (MK_REUSE_DEPTH - 1 - j) * sizeof(uint64_t));
            cls_n[c]--;
        } else if (op < 99) { /* name an address by its recent free */
            uint32_t d = mk_reuse_recent_find(&r, addr), latest = model_latest(i);
            CHECK_EQ(mk_reuse_recent_count(&r),
                     nfreed < MK_REUSE_RECENT ? nfreed : MK_REUSE_RECENT);
            if (d) {
                CHECK_EQ(d, latest);
                CHECK_EQ(mk_reuse_recent(&r, d), addr);
                found++;
            } else {
                /* Missed only if out of reach or its slot was taken since. */
                CHECK(latest == 0 || latest > MK_REUSE_RECENT ||
                      slot_owner[mk_reuse_where_slot(addr)] != addr);
                stale += latest != 0;
                beyond += latest > MK_REUSE_RECENT;
            }
        } else if ((x >> 40) % 64 == 0) { /* a new record, every ~6,400 steps
                                           * (3,200 frees): hints stay, and
                                           * must not be believed */
            mk_reuse_reset(&r);
            nfreed = 0;
            memset(latest_free, 0, sizeof latest_free);
            memset(cls_n, 0, sizeof cls_n);
            memset(slot_owner, 0, sizeof slot_owner);
        }
    }
    /* The paths taken (a short run, as under valgrind, need not reach past
     * the window). */
    CHECK(found > 0 && stale > 0);
    if (steps >= 1000000)
        CHECK(found > (uint64_t)steps / 10 && beyond > 0);
    printf("test_reuse: %d checks passed, %d failed (%llu found, %llu not)\n",
           check_passes, check_failures, (unsigned long long)found,
           (unsigned long long)stale);
    return check_failures ? 1 : 0;
}
