/*
 * test_retain.c - the retention policy (memkit/common.h), with a clock the test
 * moves: the policy function against its rules, then each allocator that maps
 * memory on the patterns the rules are for. A build-and-free loop keeps its
 * memory; a burst followed by a quiet period gives it back down to the floor;
 * spares no call needed for a whole period decay; a count limit caps; SIZE_MAX
 * keeps everything; trim leaves at most the current slab or chunk.
 */
#include "check.h"
#include "fake_clock.h"

#include "../../src/alloc/internal.h"

#include <memkit/fifo.h>
#include <memkit/pool.h>
#include <memkit/ring.h>
#include <memkit/stack.h>
#include <memkit/tlsf.h>

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

static unsigned clock_reads;

static uint64_t counting_now(void)
{
    clock_reads++;
    return fake_clock_ns;
}

/* ---- the policy function ---- */

static void test_policy_rules(void)
{
    struct mk__retain r;

    /* A loop that empties every 10 ms keeps its 8 MiB after the first time. */
    mk__retain_init(&r, 0, 64 * KIB, 0);
    mk__retain_note(&r, 8 * MIB, 0);
    CHECK_EQ(mk__retain_excess(&r, 64 * KIB, 8 * MIB, true), 7 * MIB); /* first: floor */
    for (int i = 0; i < 500; i++) {
        fake_clock_advance_ms(10);
        mk__retain_note(&r, 8 * MIB, 0); /* the next cycle took every spare */
        CHECK_EQ(mk__retain_excess(&r, 64 * KIB, 8 * MIB, true), 0);
    }
    /* Quiet for longer than the period, then empty: a burst ended. */
    fake_clock_advance_ms(MK_DECAY_MS + 1);
    mk__retain_note(&r, 8 * MIB, 0);
    CHECK_EQ(mk__retain_excess(&r, 64 * KIB, 8 * MIB, true), 7 * MIB);

    /* Decay: spares never below 6 MiB for a whole period; 2 MiB of them were used. */
    mk__retain_init(&r, 0, 64 * KIB, 100);
    mk__retain_note(&r, 4 * MIB, 8 * MIB);
    CHECK_EQ(mk__retain_excess(&r, 8 * MIB, 8 * MIB, false), 0); /* period starts */
    mk__retain_note(&r, 10 * MIB, 6 * MIB);
    CHECK_EQ(mk__retain_excess(&r, 8 * MIB, 8 * MIB, false), 0);
    fake_clock_advance_ms(100);
    CHECK_EQ(mk__retain_excess(&r, 8 * MIB, 8 * MIB, false), 6 * MIB);
    /* The next period starts from what was kept. */
    fake_clock_advance_ms(100);
    CHECK_EQ(mk__retain_excess(&r, 8 * MIB, 2 * MIB, false), 1 * MIB); /* to the floor */

    /* Bound: a working set that shrank keeps no more than its recent peak. */
    mk__retain_init(&r, 0, 64 * KIB, 100);
    mk__retain_note(&r, 32 * MIB, 0);
    CHECK_EQ(mk__retain_excess(&r, 2 * MIB, 2 * MIB, false), 0);
    fake_clock_advance_ms(100); /* a period of at most 4 MiB in use */
    mk__retain_note(&r, 4 * MIB, 0);
    CHECK_EQ(mk__retain_excess(&r, 2 * MIB, 2 * MIB, false), 0);
    fake_clock_advance_ms(100); /* 28 MiB spare, none unused all period: the bound */
    mk__retain_note(&r, 4 * MIB, 0);
    CHECK_EQ(mk__retain_excess(&r, 4 * MIB, 28 * MIB, false), 24 * MIB);

    /* A count limit caps without reading the clock; SIZE_MAX never releases. */
    mk__retain_clock = counting_now;
    clock_reads = 0;
    mk__retain_init(&r, 3, 64 * KIB, 0);
    CHECK_EQ(mk__retain_excess(&r, 0, 5 * 64 * KIB, true), 2 * 64 * KIB);
    mk__retain_init(&r, SIZE_MAX, 64 * KIB, 0);
    fake_clock_advance_ms(10 * MK_DECAY_MS);
    CHECK_EQ(mk__retain_excess(&r, 0, 512 * MIB, true), 0);
    /* Under the floor the clock is never read. */
    mk__retain_init(&r, 0, 64 * KIB, 0);
    for (int i = 0; i < 1000; i++)
        CHECK_EQ(mk__retain_excess(&r, 0, (size_t)(i % 16) * 64 * KIB, true), 0);
    CHECK_EQ(clock_reads, 0);
    fake_clock_install();
}

/* Random events: whatever happens, the kept spares stay within [min(spare,
 * floor), cap] and never exceed what was spare. */
static void test_policy_random(unsigned long long seed)
{
    unsigned long long rng = seed;

    for (int run = 0; run < 50; run++) {
        struct mk__retain r;
        size_t unit = (size_t)64 * KIB << (rng_next(&rng) % 6);
        size_t limit = rng_next(&rng) % 4 == 0 ? 1 + rng_next(&rng) % 40 : 0;
        size_t spare = 0, in_use = 0;

        mk__retain_init(&r, limit, unit, (unsigned)(1 + rng_next(&rng) % 500));
        for (int step = 0; step < 5000; step++) {
            size_t n = (rng_next(&rng) % 8) * unit;

            fake_clock_advance_ms(rng_next(&rng) % 50 == 0 ? rng_next(&rng) % 2000 : 0);
            if (rng_next(&rng) % 2) { /* the program takes memory: spares first */
                size_t from_spare = n < spare ? n : spare;
                spare -= from_spare;
                in_use += n;
                mk__retain_note(&r, in_use, spare);
            } else if (in_use >= n) { /* it frees: memory becomes spare */
                size_t floor = r.floor, excess;

                in_use -= n;
                spare += n;
                excess = mk__retain_excess(&r, in_use, spare, in_use <= unit);
                CHECK(excess <= spare);
                CHECK(spare - excess >= (spare < floor ? spare : floor));
                CHECK(spare - excess <= r.cap);
                spare -= excess / unit * unit;
            }
        }
    }
}

/* ---- the allocators ---- */

typedef struct node {
    struct node *next;
    char payload[40];
} node_t;

/* Builds a list of n nodes and frees it, oldest first. */
static void pool_cycle(mk_pool_t *pool, size_t n)
{
    node_t *head = NULL, *tail = NULL;

    for (size_t i = 0; i < n; i++) {
        node_t *x = mk_pool_alloc(pool);
        CHECK(x != NULL);
        x->next = NULL;
        if (tail)
            tail->next = x;
        else
            head = x;
        tail = x;
    }
    while (head) {
        node_t *next = head->next;
        mk_pool_free(pool, head);
        head = next;
    }
}

static void test_pool(void)
{
    mk_pool_t *pool = mk_pool_create(&(mk_pool_config_t){.item_size = sizeof(node_t)});
    mk_pool_stats_t s, first;
    size_t n = 8 * MIB / sizeof(node_t); /* 8 MiB: far above the floor */

    pool_cycle(pool, n); /* the first emptying keeps the floor */
    mk_pool_stats(pool, &first);
    CHECK(first.empty_slabs * pool->slab_size <= MIB);
    for (int i = 0; i < 50; i++) { /* a loop: nothing goes back, nothing is mapped */
        fake_clock_advance_ms(10);
        pool_cycle(pool, n);
    }
    mk_pool_stats(pool, &s);
    CHECK(s.slabs * pool->slab_size >= 8 * MIB);
    CHECK_EQ(s.peak_slabs, s.slabs);
    size_t mapped = s.mapped_bytes;
    for (int i = 0; i < 20; i++) {
        fake_clock_advance_ms(10);
        pool_cycle(pool, n);
    }
    mk_pool_stats(pool, &s);
    CHECK_EQ(s.mapped_bytes, mapped);
    /* A burst after a quiet period: its memory goes back when it empties. */
    fake_clock_advance_ms(2 * MK_DECAY_MS);
    pool_cycle(pool, n);
    mk_pool_stats(pool, &s);
    CHECK(s.empty_slabs * pool->slab_size <= MIB);
    CHECK(s.slabs <= MIB / pool->slab_size + 1);
    mk_pool_trim(pool);
    mk_pool_stats(pool, &s);
    CHECK_EQ(s.slabs, 0);
    CHECK_EQ(s.mapped_bytes, 0);
    pool_cycle(pool, 1000); /* usable after trim */
    mk_pool_destroy(pool);

    /* max_empty_slabs = SIZE_MAX keeps everything, quiet or not. */
    pool = mk_pool_create(
        &(mk_pool_config_t){.item_size = sizeof(node_t), .max_empty_slabs = SIZE_MAX});
    pool_cycle(pool, n);
    fake_clock_advance_ms(10 * MK_DECAY_MS);
    pool_cycle(pool, n);
    mk_pool_stats(pool, &s);
    CHECK(s.empty_slabs * pool->slab_size >= 7 * MIB);
    mk_pool_destroy(pool);
}

/* Spares no call needed for a period decay, on the pool's slow paths alone: half
 * the working set stays live, the other half was freed and is not needed again. */
static void test_pool_decay(void)
{
    mk_pool_t *pool =
        mk_pool_create(&(mk_pool_config_t){.item_size = sizeof(node_t), .decay_ms = 100});
    size_t n = 16 * MIB / sizeof(node_t);
    node_t **items = malloc(n * sizeof *items);
    mk_pool_stats_t s;

    for (size_t i = 0; i < n; i++)
        items[i] = mk_pool_alloc(pool);
    for (size_t i = n / 2; i < n; i++) /* 8 MiB become spare */
        mk_pool_free(pool, items[i]);
    mk_pool_stats(pool, &s);
    CHECK(s.empty_slabs * pool->slab_size >= 7 * MIB);
    /* Spares are judged on slow paths (slabs emptying): the period that ends
     * first saw them arrive, the next one saw them unused throughout. */
    fake_clock_advance_ms(150);
    for (size_t i = 0; i < n / 16; i++)
        mk_pool_free(pool, items[i]);
    mk_pool_stats(pool, &s);
    CHECK(s.empty_slabs * pool->slab_size >= 7 * MIB);
    fake_clock_advance_ms(150);
    for (size_t i = n / 16; i < n / 8; i++)
        mk_pool_free(pool, items[i]);
    mk_pool_stats(pool, &s);
    CHECK(s.empty_slabs * pool->slab_size <= 3 * MIB);
    for (size_t i = n / 8; i < n / 2; i++) /* contents were never touched */
        items[i]->payload[0] = 1;
    for (size_t i = n / 8; i < n / 2; i++)
        mk_pool_free(pool, items[i]);
    free(items);
    mk_pool_destroy(pool);
}

static void test_fifo(void)
{
    mk_fifo_t *f = mk_fifo_create(NULL);
    size_t n = 16 * MIB / 256;
    void **b = malloc(n * sizeof *b);
    mk_fifo_stats_t s;
    size_t mapped = 0;

    for (int cycle = 0; cycle < 30; cycle++) { /* requests: allocate, free all */
        fake_clock_advance_ms(5);
        for (size_t i = 0; i < n; i++)
            b[i] = mk_fifo_alloc(f, 256);
        for (size_t i = 0; i < n; i++)
            mk_fifo_free(f, b[i]);
        mk_fifo_stats(f, &s);
        /* Kept from the second cycle on: never less mapped, and at most one more
         * chunk when a cycle's blocks start late in the current chunk. */
        if (cycle > 1)
            CHECK(s.mapped_bytes >= mapped && s.mapped_bytes <= 16 * MIB + 4 * 2 * MIB);
        if (cycle >= 1)
            mapped = s.mapped_bytes;
    }
    CHECK(mapped >= 16 * MIB);
    fake_clock_advance_ms(2 * MK_DECAY_MS);
    for (size_t i = 0; i < n; i++)
        b[i] = mk_fifo_alloc(f, 256);
    for (size_t i = 0; i < n; i++)
        mk_fifo_free(f, b[i]);
    mk_fifo_stats(f, &s);
    CHECK(s.spare_chunks <= 1); /* the floor: one 2 MiB chunk */
    mk_fifo_trim(f);
    mk_fifo_stats(f, &s);
    CHECK_EQ(s.spare_chunks, 0);
    CHECK_EQ(s.chunks, 1);
    free(b);
    mk_fifo_destroy(f);
}

static void ring_cycle(mk_ring_t *ring, size_t bytes)
{
    CHECK(mk_ring_open(ring) != NULL);
    for (size_t k = 0; k < bytes / (64 * KIB); k++)
        CHECK(mk_ring_alloc(ring, 64 * KIB) != NULL);
    mk_ring_release(mk_ring_seal(ring));
    mk_ring_reclaim(ring);
}

static void test_ring(void)
{
    mk_ring_t *ring = mk_ring_create(NULL);
    mk_ring_stats_t s;
    size_t mapped = 0;

    for (int cycle = 0; cycle < 30; cycle++) {
        fake_clock_advance_ms(5);
        ring_cycle(ring, 16 * MIB);
        mk_ring_stats(ring, &s);
        if (cycle > 1) /* kept, as for the FIFO */
            CHECK(s.mapped_bytes >= mapped && s.mapped_bytes <= 16 * MIB + 4 * 2 * MIB);
        if (cycle >= 1)
            mapped = s.mapped_bytes;
    }
    CHECK(mapped >= 16 * MIB);
    fake_clock_advance_ms(2 * MK_DECAY_MS);
    ring_cycle(ring, 16 * MIB);
    mk_ring_stats(ring, &s);
    CHECK(s.spare_chunks <= 1);
    mk_ring_trim(ring);
    mk_ring_stats(ring, &s);
    CHECK_EQ(s.spare_chunks, 0);
    CHECK(s.chunks <= 1);
    mk_ring_destroy(ring);
}

static void stack_cycle(mk_stack_t *st, size_t bytes)
{
    mk_stack_push(st);
    for (size_t k = 0; k < bytes / (64 * KIB); k++)
        CHECK(mk_stack_alloc(st, 64 * KIB) != NULL);
    mk_stack_pop(st);
}

static void test_stack(void)
{
    mk_stack_t *st = mk_stack_create();
    mk_stack_stats_t s;

    size_t mapped = 0;

    for (int cycle = 0; cycle < 30; cycle++) { /* frames over several 64 MiB chunks */
        fake_clock_advance_ms(5);
        stack_cycle(st, 200 * MIB);
        mk_stack_stats(st, &s);
        if (cycle == 1)
            mapped = s.mapped_bytes;
        if (cycle > 1)
            CHECK_EQ(s.mapped_bytes, mapped); /* the loop keeps every chunk */
    }
    CHECK(mapped >= 200 * MIB);
    fake_clock_advance_ms(2 * MK_DECAY_MS);
    stack_cycle(st, 200 * MIB);
    mk_stack_stats(st, &s);
    CHECK(s.mapped_bytes <= MIB);
    mk_stack_destroy(st);
}

/* The regions a growing TLSF heap maps: kept by a loop, given back after a
 * burst, all gone on trim; the first region always stays. */
static void tlsf_cycle(mk_tlsf_t *t, void **b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        b[i] = mk_tlsf_malloc(t, 200);
        CHECK(b[i] != NULL);
    }
    for (size_t i = 0; i < n; i++)
        mk_tlsf_free(t, b[i]);
}

static void test_tlsf(void)
{
    mk_tlsf_t *t = mk_tlsf_create(&(mk_tlsf_config_t){.flags = MK_TLSF_GROW});
    size_t n = 16 * MIB / 216;
    void **b = malloc(n * sizeof *b);
    mk_tlsf_stats_t s;
    size_t regions = 0;

    for (int cycle = 0; cycle < 20; cycle++) {
        fake_clock_advance_ms(5);
        tlsf_cycle(t, b, n);
        mk_tlsf_stats(t, &s);
        if (cycle == 1)
            regions = s.regions;
        if (cycle > 1)
            CHECK_EQ(s.regions, regions); /* a loop keeps its regions */
    }
    CHECK(s.region_bytes >= 16 * MIB);
    fake_clock_advance_ms(2 * MK_DECAY_MS);
    tlsf_cycle(t, b, n);
    mk_tlsf_stats(t, &s); /* merges the frees in flight: the last regions empty */
    mk_tlsf_stats(t, &s);
    CHECK(s.region_bytes <= 3 * MIB); /* the first region and the floor */
    CHECK(mk_tlsf_check(t, NULL, 0));
    mk_tlsf_trim(t);
    mk_tlsf_stats(t, &s);
    CHECK_EQ(s.regions, 1);
    CHECK(mk_tlsf_check(t, NULL, 0));
    tlsf_cycle(t, b, n); /* grows again after trim */
    CHECK(mk_tlsf_check(t, NULL, 0));
    free(b);
    mk_tlsf_destroy(t);
}

int main(void)
{
    unsigned long long seed = test_seed();

    /* The process's default period comes from MEMKIT_DECAY_MS (read once, at the
     * first allocator created); a config's own decay_ms still wins. The tests
     * below hold for any period under 2 * MK_DECAY_MS and over 10 ms. */
    setenv("MEMKIT_DECAY_MS", "250", 1);
    struct mk__retain r;
    mk__retain_init(&r, 0, 64 * KIB, 0);
    CHECK_EQ(r.decay_ns, 250000000u);
    mk__retain_init(&r, 0, 64 * KIB, 40);
    CHECK_EQ(r.decay_ns, 40000000u);
    fake_clock_install();
    test_policy_rules();
    test_policy_random(seed);
    if (bypass_mode()) {
        printf("test_retain: allocator checks skipped (MEMKIT_BYPASS: no chunks)\n");
        return check_report("test_retain");
    }
    test_pool();
    test_pool_decay();
    test_fifo();
    test_ring();
    test_stack();
    test_tlsf();
    return check_report("test_retain");
}
