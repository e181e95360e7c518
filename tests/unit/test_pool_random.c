/*
 * test_pool_random.c - model-based randomized test of mk_pool. For several item
 * sizes and flag sets, long random sequences of alloc and free are checked against a
 * model (the set of live items): items keep their contents, honour the alignment,
 * never overlap, zeroed pools return zeroed items, live_items matches the model, and
 * the retention policy, with a clock that jumps past its period now and then, never
 * takes back a slab in use (contents would change) and keeps at most its floor (or
 * max_empty_slabs) once the pool empties after a quiet period; trim returns all.
 */
#include "check.h"
#include "fake_clock.h"

#include <memkit/pool.h>

#include <stdint.h>

#define MAX_LIVE 6000

typedef struct item {
    unsigned char *p;
    unsigned id;
} item_t;

static item_t live[MAX_LIVE];
static int nlive;

static unsigned char pattern(unsigned id, size_t i)
{
    return (unsigned char)(id * 13u + i * 5u);
}

static int cmp_item(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const item_t *)a)->p,
              y = (uintptr_t)((const item_t *)b)->p;

    return (x > y) - (x < y);
}

static void verify(mk_pool_t *pool, size_t size, size_t align)
{
    static item_t sorted[MAX_LIVE];
    mk_pool_stats_t s;

    for (int i = 0; i < nlive; i++) {
        CHECK_EQ((uintptr_t)live[i].p % align, 0);
        for (size_t k = 0; k < size; k++)
            if (live[i].p[k] != pattern(live[i].id, k)) {
                CHECK_EQ(live[i].p[k], pattern(live[i].id, k));
                break;
            }
    }
    memcpy(sorted, live, sizeof live[0] * (size_t)nlive);
    qsort(sorted, (size_t)nlive, sizeof sorted[0], cmp_item);
    for (int i = 1; i < nlive; i++)
        CHECK((uintptr_t)sorted[i - 1].p + size <= (uintptr_t)sorted[i].p);
    mk_pool_stats(pool, &s);
    CHECK_EQ(s.live_items, nlive);
}

static void run(size_t size, size_t align, unsigned flags, size_t max_empty,
                unsigned long long seed, int steps)
{
    mk_pool_t *pool = mk_pool_create(&(mk_pool_config_t){
        .item_size = size, .align = align, .flags = flags, .max_empty_slabs = max_empty});
    size_t expect_align = align ? align : (size % 16 == 0 ? 16 : 8);
    unsigned long long rng = seed;
    unsigned id = 0;
    mk_pool_stats_t s;

    CHECK(pool != NULL);
    if (!pool)
        return;
    nlive = 0;
    for (int step = 0; step < steps && check_failures == 0; step++) {
        /* Phases of growth and shrinkage, so slabs fill, empty and come back. */
        int grow = (step / 5000) % 2 == 0;
        unsigned r = (unsigned)(rng_next(&rng) % 100);

        if (nlive < MAX_LIVE && (nlive == 0 || r < (grow ? 70u : 30u))) {
            item_t *it = &live[nlive];

            it->p = mk_pool_alloc(pool);
            CHECK(it->p != NULL);
            if (!it->p)
                break;
            if (flags & MK_POOL_ZERO)
                for (size_t k = 0; k < size; k++)
                    if (it->p[k]) {
                        CHECK(it->p[k] == 0);
                        break;
                    }
            it->id = id++;
            for (size_t k = 0; k < size; k++)
                it->p[k] = pattern(it->id, k);
            nlive++;
        } else if (nlive > 0) {
            int i = (int)(rng_next(&rng) % (unsigned)nlive);

            mk_pool_free(pool, live[i].p);
            live[i] = live[--nlive];
        }
        fake_clock_advance_ms(rng_next(&rng) % 3000 == 0 ? 1500 : 0);
        if (step % 1009 == 0)
            verify(pool, size, expect_align);
    }
    verify(pool, size, expect_align);
    fake_clock_advance_ms(2 * MK_DECAY_MS);
    while (nlive > 0)
        mk_pool_free(pool, live[--nlive].p);
    mk_pool_stats(pool, &s);
    CHECK_EQ(s.live_items, 0);
    size_t floor = ((size_t)1 << 20) / pool->slab_size;
    CHECK(s.empty_slabs <= (max_empty ? max_empty : floor > 1 ? floor : 1));
    mk_pool_trim(pool);
    mk_pool_stats(pool, &s);
    CHECK_EQ(s.slabs, 0);
    CHECK_EQ(s.empty_slabs, 0);
    CHECK_EQ(s.mapped_bytes, 0);
    mk_pool_destroy(pool);
}

int main(void)
{
    unsigned long long seed = test_seed();
    int steps = test_steps(60000);
    static const size_t sizes[] = {1, 8, 12, 24, 64, 100, 4000, 40000};

    fake_clock_install();
    printf("test_pool_random: seed 0x%llx, %d steps per configuration\n", seed, steps);
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        run(sizes[i], 0, 0, 0, seed + i, steps);
        run(sizes[i], 0, MK_POOL_ZERO | MK_POOL_DEBUG, 3, seed + 100 + i, steps / 2);
    }
    run(24, 64, 0, 0, seed + 200, steps);
    run(8, 0, MK_POOL_THREAD_SAFE, 0, seed + 300, steps / 2);
    run(48, 0, 0, 0, seed + 400, steps); /* slab size default, many slabs */
    return check_report("test_pool_random");
}
