/*
 * test_stack_random.c - model-based randomized test of mk_stack. A simple model
 * (frames as a stack of block lists) is driven with long random sequences of push,
 * pop, alloc (any size, any power-of-two alignment) and realloc; after every batch
 * the stack must agree with the model: every live block keeps its contents, honours
 * its alignment, and no two live blocks overlap. Replay a failure with
 * MEMKIT_TEST_SEED=<seed printed>.
 */
#include "check.h"

#include <memkit/stack.h>

#include <stdint.h>

#define MAX_BLOCKS 4096
#define MAX_DEPTH  24

typedef struct block {
    unsigned char *p;
    size_t size, align;
    unsigned id;
    int depth; /* frame it belongs to */
} block_t;

static block_t blocks[MAX_BLOCKS];
static int nblocks, depth;
static unsigned next_id;

static unsigned char pattern(unsigned id, size_t i)
{
    return (unsigned char)(id * 31u + i * 7u + (i >> 8));
}

static void fill(block_t *b)
{
    for (size_t i = 0; i < b->size; i++)
        b->p[i] = pattern(b->id, i);
}

static int cmp_block(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const block_t *)a)->p,
              y = (uintptr_t)((const block_t *)b)->p;

    return (x > y) - (x < y);
}

static void verify(void)
{
    static block_t sorted[MAX_BLOCKS];

    for (int i = 0; i < nblocks; i++) {
        block_t *b = &blocks[i];

        CHECK_EQ((uintptr_t)b->p % b->align, 0);
        for (size_t k = 0; k < b->size; k++)
            if (b->p[k] != pattern(b->id, k)) {
                CHECK_EQ(b->p[k], pattern(b->id, k));
                break;
            }
    }
    memcpy(sorted, blocks, sizeof blocks[0] * (size_t)nblocks);
    qsort(sorted, (size_t)nblocks, sizeof sorted[0], cmp_block);
    for (int i = 1; i < nblocks; i++)
        if (sorted[i - 1].size && sorted[i].size)
            CHECK((uintptr_t)sorted[i - 1].p + sorted[i - 1].size <=
                  (uintptr_t)sorted[i].p);
}

static size_t random_size(unsigned long long *rng)
{
    unsigned r = (unsigned)(rng_next(rng) % 100);

    if (r < 5)
        return 0;
    if (r < 80)
        return rng_next(rng) % 64 + 1;
    if (r < 98)
        return rng_next(rng) % 4096;
    return rng_next(rng) % 300000; /* forces new chunks */
}

static void op_alloc(mk_stack_t *st, unsigned long long *rng)
{
    block_t *b;

    if (depth == 0 || nblocks == MAX_BLOCKS)
        return;
    b = &blocks[nblocks];
    b->size = random_size(rng);
    b->align = (size_t)1 << (rng_next(rng) % 13); /* 1 .. 4096 */
    b->p = mk_stack_alloc_aligned(st, b->size, b->align);
    CHECK(b->p != NULL);
    if (!b->p)
        return;
    b->id = next_id++;
    b->depth = depth;
    fill(b);
    nblocks++;
}

static void op_realloc(mk_stack_t *st, unsigned long long *rng)
{
    block_t *b;
    size_t new_size, keep;
    unsigned char *q;
    int i;

    /* Any block of the innermost frame; the newest one most often. */
    if (nblocks == 0 || blocks[nblocks - 1].depth != depth)
        return;
    i = nblocks - 1;
    if (rng_next(rng) % 3 == 0) {
        int first = i;

        while (first > 0 && blocks[first - 1].depth == depth)
            first--;
        i = first + (int)(rng_next(rng) % (unsigned)(nblocks - first));
    }
    b = &blocks[i];
    new_size = random_size(rng);
    q = mk_stack_realloc(st, b->p, b->size, new_size);
    CHECK(q != NULL);
    if (!q)
        return;
    keep = b->size < new_size ? b->size : new_size;
    for (size_t k = 0; k < keep; k++)
        if (q[k] != pattern(b->id, k)) {
            CHECK_EQ(q[k], pattern(b->id, k));
            break;
        }
    /* In place, the block keeps its alignment; a copy gets malloc's (16). The old
     * block of a copy stays allocated until its frame pops: the model forgets it. */
    if (q != b->p)
        b->align = 16;
    b->p = q;
    b->size = new_size;
    fill(b);
    /* Keep the list ordered by allocation: a copied block is now the newest. */
    if (i != nblocks - 1) {
        block_t tmp = *b;

        memmove(&blocks[i], &blocks[i + 1], sizeof blocks[0] * (size_t)(nblocks - 1 - i));
        blocks[nblocks - 1] = tmp;
    }
}

static void op_pop(mk_stack_t *st)
{
    if (depth == 0)
        return;
    mk_stack_pop(st);
    while (nblocks > 0 && blocks[nblocks - 1].depth == depth)
        nblocks--;
    depth--;
}

int main(void)
{
    unsigned long long seed = test_seed(), rng = seed;
    int steps = test_steps(200000);
    mk_stack_t *st = mk_stack_create();
    mk_stack_stats_t s;

    printf("test_stack_random: seed 0x%llx, %d steps\n", seed, steps);
    for (int step = 0; step < steps && check_failures == 0; step++) {
        unsigned r = (unsigned)(rng_next(&rng) % 100);

        if (r < 8 && depth < MAX_DEPTH) {
            mk_stack_push(st);
            depth++;
        } else if (r < 15) {
            op_pop(st);
        } else if (r < 25) {
            op_realloc(st, &rng);
        } else {
            op_alloc(st, &rng);
        }
        if (step % 997 == 0)
            verify();
        mk_stack_stats(st, &s);
        if ((int)s.frames != depth)
            CHECK_EQ(s.frames, depth);
    }
    verify();
    while (depth)
        op_pop(st);
    mk_stack_stats(st, &s);
    CHECK_EQ(s.used_bytes, 0);
    mk_stack_destroy(st);
    return check_report("test_stack_random");
}
