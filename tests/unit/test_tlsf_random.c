/*
 * test_tlsf_random.c - model-based randomized test of mk_tlsf. Long mixed
 * sequences of malloc, calloc, memalign (up to 4096), realloc and free with sizes
 * from 1 byte to 1 MiB run over a fixed region, so the heap is exhausted again and
 * again; they are checked against a model (live blocks with sizes, alignments and
 * contents): contents survive everything (realloc included), blocks never overlap,
 * exhaustion returns NULL with ENOMEM and leaves the heap consistent, the
 * integrity check passes every N steps, and at the end all memory is one free
 * block again. A growing heap (MK_TLSF_GROW, small regions) runs the same with a
 * clock that jumps past the retention period now and then: regions go back to
 * the OS while the model's blocks keep their contents, and after trim the first
 * region is all that is left; its freed small blocks go through the quick lists,
 * which the integrity check covers. MEMKIT_TEST_SEED replays a failure;
 * MEMKIT_TEST_STEPS sets the length.
 */
#include "check.h"
#include "fake_clock.h"

#include <memkit/tlsf.h>

#include <errno.h>
#include <stdint.h>

#define MAX_LIVE 3000

typedef struct blk {
    unsigned char *p;
    size_t size, align;
    unsigned id;
} blk_t;

static blk_t live[MAX_LIVE];
static int nlive;
static char why[256];

static unsigned char pattern(unsigned id, size_t i)
{
    return (unsigned char)(id * 17u + i * 11u + (i >> 8));
}

static void fill(blk_t *b)
{
    for (size_t k = 0; k < b->size; k++)
        b->p[k] = pattern(b->id, k);
}

static bool intact(const blk_t *b, size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (b->p[k] != pattern(b->id, k))
            return false;
    return true;
}

static int cmp_blk(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const blk_t *)a)->p, y = (uintptr_t)((const blk_t *)b)->p;

    return (x > y) - (x < y);
}

static void verify(mk_tlsf_t *t)
{
    static blk_t sorted[MAX_LIVE];
    mk_tlsf_stats_t s;

    for (int i = 0; i < nlive; i++) {
        CHECK_EQ((uintptr_t)live[i].p % live[i].align, 0);
        CHECK(intact(&live[i], live[i].size));
        CHECK(mk_tlsf_usable_size(t, live[i].p) >= live[i].size);
    }
    memcpy(sorted, live, sizeof live[0] * (size_t)nlive);
    qsort(sorted, (size_t)nlive, sizeof sorted[0], cmp_blk);
    for (int i = 1; i < nlive; i++)
        CHECK((uintptr_t)sorted[i - 1].p + sorted[i - 1].size <= (uintptr_t)sorted[i].p);
    if (!mk_tlsf_check(t, why, sizeof why)) {
        CHECK(!"mk_tlsf_check");
        fprintf(stderr, "mk_tlsf_check: %s\n", why);
    }
    mk_tlsf_stats(t, &s);
    CHECK_EQ(s.used_blocks, nlive);
}

/* Mostly small, a tail up to 64 KiB, now and then up to 1 MiB. */
static size_t random_size(unsigned long long *rng)
{
    unsigned r = (unsigned)(rng_next(rng) % 1000);

    if (r < 4)
        return 1 + rng_next(rng) % (1 << 20);
    if (r < 100)
        return 1 + rng_next(rng) % 65536;
    return 1 + rng_next(rng) % 512;
}

static void run(size_t region, unsigned flags, unsigned long long seed, int steps)
{
    bool grow = flags & MK_TLSF_GROW;
    /* Growing: 1 MiB first, then regions of `region` bytes, mapped by the heap. */
    unsigned char *mem = grow ? NULL : malloc(region);
    mk_tlsf_t *t =
        grow ? mk_tlsf_create(&(mk_tlsf_config_t){
                   .initial_size = (size_t)1 << 20, .grow_size = region, .flags = flags})
             : mk_tlsf_create_in(mem, region, flags);
    unsigned long long rng = seed;
    unsigned id = 0;
    int full = 0;
    size_t cached_seen = 0; /* the quick lists were exercised */
    mk_tlsf_stats_t s0, s;

    CHECK(t != NULL);
    if (!t)
        return;
    mk_tlsf_stats(t, &s0);
    nlive = 0;
    for (int step = 0; step < steps && check_failures == 0; step++) {
        unsigned r = (unsigned)(rng_next(&rng) % 100);

        if (nlive < MAX_LIVE && (nlive == 0 || r < 45)) {
            blk_t *b = &live[nlive];
            static const size_t aligns[] = {16, 16, 16, 32, 64, 256, 4096};
            unsigned kind = (unsigned)(rng_next(&rng) % 8);

            b->size = random_size(&rng);
            b->align = kind == 7 ? aligns[rng_next(&rng) % 7] : 16;
            errno = 0;
            b->p = kind == 7   ? mk_tlsf_memalign(t, b->align, b->size)
                   : kind == 6 ? mk_tlsf_calloc(t, 1, b->size)
                               : mk_tlsf_malloc(t, b->size);
            if (!b->p) {
                CHECK_EQ(errno, ENOMEM); /* exhausted: fine, and nothing broke */
                full++;
                continue;
            }
            if (kind == 6)
                for (size_t k = 0; k < b->size; k++)
                    if (b->p[k]) {
                        CHECK(!"calloc returned non-zero bytes");
                        break;
                    }
            b->id = id++;
            fill(b);
            nlive++;
        } else if (r < 85) {
            int i = (int)(rng_next(&rng) % (unsigned)nlive);

            mk_tlsf_free(t, live[i].p);
            live[i] = live[--nlive];
        } else {
            int i = (int)(rng_next(&rng) % (unsigned)nlive);
            blk_t *b = &live[i];
            size_t size = random_size(&rng);
            unsigned char *p = mk_tlsf_realloc(t, b->p, size);

            if (!p) {
                CHECK(intact(b, b->size)); /* a failed realloc leaves the block */
                full++;
                continue;
            }
            b->p = p;
            CHECK(intact(b, size < b->size ? size : b->size));
            b->size = size;
            b->align = 16;
            b->id = id++;
            fill(b);
        }
        if (grow)
            fake_clock_advance_ms(rng_next(&rng) % 2000 == 0 ? 1500 : 0);
        if (step % 1000 == 0) {
            verify(t);
            if (grow && !(flags & MK_TLSF_DEBUG)) {
                mk_tlsf_stats(t, &s);
                cached_seen += s.cached_blocks;
            }
        }
    }
    verify(t);
    if (grow)
        fake_clock_advance_ms(2 * MK_DECAY_MS); /* quiet, then everything is freed */
    while (nlive > 0)
        mk_tlsf_free(t, live[--nlive].p);
    CHECK(mk_tlsf_check(t, why, sizeof why));
    if (grow && !(flags & MK_TLSF_DEBUG))
        CHECK(cached_seen > 0);
    if (grow) {
        /* The policy kept at most its floor (1 MiB) of grown regions, plus the
         * one the last frees in flight are in; trim leaves the first region. */
        mk_tlsf_stats(t, &s);
        CHECK(s.regions <= 1 + ((size_t)1 << 20) / region + 1);
        mk_tlsf_trim(t);
        CHECK(mk_tlsf_check(t, why, sizeof why));
    }
    mk_tlsf_stats(t, &s);
    CHECK_EQ(s.free_blocks, 1);
    CHECK_EQ(s.free_bytes, s0.free_bytes);
    CHECK_EQ(s.cached_blocks, 0);
    /* The documented bound (memkit/tlsf.h): a realloc that moves, a malloc and a
     * free, plus in the default mode the two frees in flight merged first. A heap
     * that grows has quick lists, merged back all at once: no bound. */
    if (!grow || (flags & MK_TLSF_DEBUG))
        CHECK(s.max_call_steps <= (flags & MK_TLSF_DEBUG ? 10u : 24u));
    printf("test_tlsf_random: region %zu KiB%s: %d allocations refused (heap full), most "
           "steps in a call %zu\n",
           region >> 10,
           flags & MK_TLSF_DEBUG ? " (debug)"
           : grow                ? " (grown regions)"
                                 : "",
           full, s.max_call_steps);
    mk_tlsf_destroy(t);
    free(mem);
}

int main(void)
{
    unsigned long long seed = test_seed();
    int steps = test_steps(60000);

    printf("test_tlsf_random: seed 0x%llx, %d steps per configuration\n", seed, steps);
    run((size_t)8 << 20, 0, seed, steps);
    run((size_t)8 << 20, MK_TLSF_DEBUG, seed + 1, steps / 2);
    run((size_t)64 << 20, 0, seed + 2, steps);
    run((size_t)1 << 20, 0, seed + 3, steps / 2); /* mostly full */
    fake_clock_install();
    run((size_t)256 << 10, MK_TLSF_GROW, seed + 4, steps);
    run((size_t)256 << 10, MK_TLSF_GROW | MK_TLSF_DEBUG, seed + 5, steps / 2);
    return check_report("test_tlsf_random");
}
