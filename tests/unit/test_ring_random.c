/*
 * test_ring_random.c - model-based randomized test of mk_ring. Random sequences of
 * open, allocate, seal, release (mostly the oldest frame, sometimes any) and
 * reclaim are checked against a model (the frames not released, with their blocks'
 * sizes and contents): blocks keep their contents until their frame is released,
 * honour their alignment and never overlap, the ring counts the same frames, and
 * once all are released only the current chunk and the allowed spares stay mapped.
 * MEMKIT_TEST_SEED replays a failure; MEMKIT_TEST_STEPS sets the length.
 */
#include "check.h"

#include <memkit/ring.h>

#include <stdint.h>

#define MAX_FRAMES 300
#define MAX_BLOCKS 16

typedef struct block {
    unsigned char *p;
    size_t size, align;
    unsigned id;
} block_t;

typedef struct frame {
    mk_ring_frame_t *f;
    block_t b[MAX_BLOCKS];
    int n;
} frame_t;

/* The model: frames not yet released, oldest first; the last may be open. */
static frame_t frames[MAX_FRAMES];
static int nframes;
static bool open_frame;

static unsigned char pattern(unsigned id, size_t i)
{
    return (unsigned char)(id * 31u + i * 3u);
}

static int cmp_block(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const block_t *)a)->p,
              y = (uintptr_t)((const block_t *)b)->p;

    return (x > y) - (x < y);
}

static void verify(mk_ring_t *ring)
{
    static block_t all[MAX_FRAMES * MAX_BLOCKS];
    int n = 0;
    mk_ring_stats_t s;

    for (int i = 0; i < nframes; i++)
        for (int k = 0; k < frames[i].n; k++) {
            block_t *b = &frames[i].b[k];
            CHECK_EQ((uintptr_t)b->p % b->align, 0);
            for (size_t j = 0; j < b->size; j++)
                if (b->p[j] != pattern(b->id, j)) {
                    CHECK_EQ(b->p[j], pattern(b->id, j));
                    break;
                }
            all[n++] = *b;
        }
    qsort(all, (size_t)n, sizeof all[0], cmp_block);
    for (int i = 1; i < n; i++)
        CHECK((uintptr_t)all[i - 1].p + all[i - 1].size <= (uintptr_t)all[i].p);
    mk_ring_stats(ring, &s);
    CHECK_EQ(s.frames, nframes);
}

static size_t random_size(unsigned long long *rng, size_t chunk)
{
    unsigned r = (unsigned)(rng_next(rng) % 1000);

    if (r < 3)
        return chunk + rng_next(rng) % chunk; /* larger than a chunk */
    if (r < 80)
        return rng_next(rng) % 8000;
    return rng_next(rng) % 200;
}

static void release(int i)
{
    mk_ring_release(frames[i].f);
    memmove(&frames[i], &frames[i + 1], sizeof frames[0] * (size_t)(nframes - i - 1));
    nframes--;
}

static void run(size_t chunk, unsigned flags, size_t max_spare, unsigned long long seed,
                int steps)
{
    mk_ring_t *ring = mk_ring_create(&(mk_ring_config_t){
        .chunk_size = chunk, .max_spare_chunks = max_spare, .flags = flags});
    unsigned long long rng = seed;
    unsigned id = 0;
    mk_ring_stats_t s;

    CHECK(ring != NULL);
    if (!ring)
        return;
    nframes = 0;
    open_frame = false;
    for (int step = 0; step < steps && check_failures == 0; step++) {
        int grow = (step / 2000) % 2 == 0;
        unsigned r = (unsigned)(rng_next(&rng) % 100);
        int sealed = nframes - open_frame;

        if (open_frame && frames[nframes - 1].n < MAX_BLOCKS && r < 50) {
            frame_t *fr = &frames[nframes - 1];
            block_t *b = &fr->b[fr->n];
            static const size_t aligns[] = {8, 16, 16, 64, 1024};

            b->size = random_size(&rng, chunk);
            b->align = aligns[rng_next(&rng) % 5];
            b->p = b->align == 16 ? mk_ring_alloc(ring, b->size)
                                  : mk_ring_alloc_aligned(ring, b->size, b->align);
            CHECK(b->p != NULL);
            if (!b->p)
                break;
            b->id = id++;
            for (size_t j = 0; j < b->size; j++)
                b->p[j] = pattern(b->id, j);
            fr->n++;
        } else if (open_frame && r < 70) {
            mk_ring_seal(ring);
            open_frame = false;
        } else if (!open_frame && nframes < MAX_FRAMES && r < (grow ? 75u : 40u)) {
            frames[nframes].f = mk_ring_open(ring);
            CHECK(frames[nframes].f != NULL);
            frames[nframes].n = 0;
            nframes++;
            open_frame = true;
        } else if (sealed > 0 && r < 97) {
            /* The oldest, or now and then any sealed frame. */
            release(rng_next(&rng) % 4 ? 0 : (int)(rng_next(&rng) % (unsigned)sealed));
        } else if (!open_frame) {
            mk_ring_reclaim(ring);
        }
        if (step % 499 == 0)
            verify(ring);
    }
    verify(ring);
    if (open_frame)
        mk_ring_seal(ring);
    while (nframes > 0)
        release(nframes - 1); /* newest first: the worst order */
    mk_ring_reclaim(ring);
    mk_ring_stats(ring, &s);
    CHECK_EQ(s.frames, 0);
    CHECK(s.spare_chunks <= (max_spare ? max_spare : 2));
    CHECK(s.chunks <= s.spare_chunks + 1);
    mk_ring_destroy(ring);
}

int main(void)
{
    unsigned long long seed = test_seed();
    int steps = test_steps(60000);

    printf("test_ring_random: seed 0x%llx, %d steps per configuration\n", seed, steps);
    run((size_t)64 << 10, 0, 0, seed, steps);
    run((size_t)64 << 10, MK_RING_DEBUG, 1, seed + 1, steps / 2);
    run((size_t)2 << 20, 0, SIZE_MAX, seed + 2, steps / 2);
    run((size_t)128 << 10, MK_RING_DEBUG, 5, seed + 3, steps);
    return check_report("test_ring_random");
}
