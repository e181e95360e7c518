/*
 * test_fifo_random.c - model-based randomized test of mk_fifo. Long random
 * sequences of alloc, free (mostly oldest first, sometimes any live block) and
 * realloc are checked against a model (the list of live blocks with their sizes
 * and contents): blocks keep their contents across everything, honour their
 * alignment, never overlap, live_blocks matches the model, and once every block
 * is freed, with a clock that jumped past the retention period now and then, at
 * most the current chunk and the spares the policy allows stay mapped (trim
 * leaves the current chunk alone).
 * MEMKIT_TEST_SEED replays a failure; MEMKIT_TEST_STEPS sets the length.
 */
#include "check.h"
#include "fake_clock.h"

#include <memkit/fifo.h>

#include <stdint.h>

#define MAX_LIVE 4000

typedef struct block {
    unsigned char *p;
    size_t size, align;
    unsigned id;
} block_t;

/* The model: live blocks in allocation order (a FIFO with holes closed up). */
static block_t live[MAX_LIVE];
static int nlive;

static unsigned char pattern(unsigned id, size_t i)
{
    return (unsigned char)(id * 29u + i * 7u);
}

static void fill(block_t *b)
{
    for (size_t k = 0; k < b->size; k++)
        b->p[k] = pattern(b->id, k);
}

static int cmp_block(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const block_t *)a)->p,
              y = (uintptr_t)((const block_t *)b)->p;

    return (x > y) - (x < y);
}

static void verify(mk_fifo_t *fifo)
{
    static block_t sorted[MAX_LIVE];
    mk_fifo_stats_t s;

    for (int i = 0; i < nlive; i++) {
        CHECK_EQ((uintptr_t)live[i].p % live[i].align, 0);
        for (size_t k = 0; k < live[i].size; k++)
            if (live[i].p[k] != pattern(live[i].id, k)) {
                CHECK_EQ(live[i].p[k], pattern(live[i].id, k));
                break;
            }
    }
    memcpy(sorted, live, sizeof live[0] * (size_t)nlive);
    qsort(sorted, (size_t)nlive, sizeof sorted[0], cmp_block);
    for (int i = 1; i < nlive; i++)
        CHECK((uintptr_t)sorted[i - 1].p + sorted[i - 1].size <= (uintptr_t)sorted[i].p);
    mk_fifo_stats(fifo, &s);
    CHECK_EQ(s.live_blocks, nlive);
}

/* Sizes: mostly small, some up to a few KiB, rarely larger than a chunk. */
static size_t random_size(unsigned long long *rng, size_t chunk)
{
    unsigned r = (unsigned)(rng_next(rng) % 1000);

    if (r < 5)
        return chunk + rng_next(rng) % chunk;
    if (r < 100)
        return rng_next(rng) % 5000;
    return rng_next(rng) % 129;
}

static void drop(int i)
{
    memmove(&live[i], &live[i + 1], sizeof live[0] * (size_t)(nlive - i - 1));
    nlive--;
}

static void run(size_t chunk, unsigned flags, size_t max_spare, unsigned long long seed,
                int steps)
{
    mk_fifo_t *fifo = mk_fifo_create(&(mk_fifo_config_t){
        .chunk_size = chunk, .max_spare_chunks = max_spare, .flags = flags});
    unsigned long long rng = seed;
    unsigned id = 0;
    mk_fifo_stats_t s;

    CHECK(fifo != NULL);
    if (!fifo)
        return;
    nlive = 0;
    for (int step = 0; step < steps && check_failures == 0; step++) {
        /* Phases where the queue grows and where it drains. */
        int grow = (step / 3000) % 2 == 0;
        unsigned r = (unsigned)(rng_next(&rng) % 100);

        if (nlive < MAX_LIVE && (nlive == 0 || r < (grow ? 60u : 35u))) {
            block_t *b = &live[nlive];
            static const size_t aligns[] = {8, 16, 16, 16, 64, 4096};

            b->size = random_size(&rng, chunk);
            b->align = aligns[rng_next(&rng) % 6];
            b->p = b->align == 16 ? mk_fifo_alloc(fifo, b->size)
                                  : mk_fifo_alloc_aligned(fifo, b->size, b->align);
            CHECK(b->p != NULL);
            if (!b->p)
                break;
            b->id = id++;
            fill(b);
            nlive++;
        } else if (r < 90) {
            /* Oldest first, or now and then any live block. */
            int i = rng_next(&rng) % 8 ? 0 : (int)(rng_next(&rng) % (unsigned)nlive);

            mk_fifo_free(fifo, live[i].p);
            drop(i);
        } else {
            /* Realloc: the newest (in place when it fits) or any block (moves). */
            int i =
                rng_next(&rng) % 2 ? nlive - 1 : (int)(rng_next(&rng) % (unsigned)nlive);
            block_t *b = &live[i];
            size_t size = random_size(&rng, chunk);
            unsigned char *p = mk_fifo_realloc(fifo, b->p, b->size, size);

            CHECK(p != NULL);
            if (!p)
                break;
            for (size_t k = 0; k < (size < b->size ? size : b->size); k++)
                if (p[k] != pattern(b->id, k)) {
                    CHECK_EQ(p[k], pattern(b->id, k));
                    break;
                }
            b->p = p;
            b->size = size;
            b->align = 8; /* realloc keeps only the grain for a moved block */
            if ((uintptr_t)p % 16 == 0)
                b->align = 16;
            fill(b);
        }
        fake_clock_advance_ms(rng_next(&rng) % 3000 == 0 ? 1500 : 0);
        if (step % 997 == 0)
            verify(fifo);
    }
    verify(fifo);
    fake_clock_advance_ms(2 * MK_DECAY_MS);
    while (nlive > 0) {
        mk_fifo_free(fifo, live[0].p);
        drop(0);
    }
    mk_fifo_stats(fifo, &s);
    CHECK_EQ(s.live_blocks, 0);
    size_t floor = ((size_t)1 << 20) / chunk;
    if (max_spare != SIZE_MAX)
        CHECK(s.spare_chunks <= (max_spare ? max_spare : floor > 1 ? floor : 1));
    CHECK(s.chunks <= s.spare_chunks + 1);
    mk_fifo_trim(fifo);
    mk_fifo_stats(fifo, &s);
    CHECK_EQ(s.spare_chunks, 0);
    CHECK_EQ(s.chunks, 1);
    mk_fifo_destroy(fifo);
}

int main(void)
{
    unsigned long long seed = test_seed();
    int steps = test_steps(60000);

    fake_clock_install();
    printf("test_fifo_random: seed 0x%llx, %d steps per configuration\n", seed, steps);
    run((size_t)64 << 10, 0, 0, seed, steps);
    run((size_t)64 << 10, MK_FIFO_DEBUG, 3, seed + 1, steps / 2);
    run((size_t)2 << 20, 0, SIZE_MAX, seed + 2, steps);
    run((size_t)128 << 10, MK_FIFO_DEBUG, SIZE_MAX, seed + 3, steps / 2);
    return check_report("test_fifo_random");
}
