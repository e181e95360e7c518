/*
 * test_addr_index.c - the live-block index that writer and reader keep
 * identically (src/trace/addr_index.h), checked against a simple model: an
 * array of addresses where add appends and remove(i) moves the last into i.
 *   - After every operation, a's slot names a's place in the model (none
 *     for an address not in it), and
 *     each index's slot holds that index and its class.
 *   - Both map sizings (the writer's, twice the arrays; the reader's lean
 *     one) through growth from empty to thousands of entries and
 *     back, with addresses laid out as a heap lays them (runs in a page),
 *     scattered, and crowded into few homes.
 *   - Full (version 4's bound, made small here), a new block evicts one
 *     other: the model swap-removes the same index.
 *   - Adding an address already present keeps its index and takes the new
 *     class; the index stops growing at its capacity's memory failure
 *     without losing what it holds, whether its arrays grow by copy or by
 *     resize (the tracer's mremap), and a resize that fails on the second
 *     array gives the first back its old size.
 *   - mk_addr_key_home agrees with mk_addr_home at every table size up to
 *     2^24 slots.
 */
#define _GNU_SOURCE
#include "../../src/trace/addr_index.h"
#include "../../src/trace/format.h" /* MK_TRACE_VERSION */
#include "check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MODEL_MAX 12000

static uint64_t rng;
static uint64_t model[MODEL_MAX];
static unsigned model_cls[MODEL_MAX];
static uint32_t model_n;
static size_t fail_after = SIZE_MAX; /* allocations that succeed before failing */

static void *test_alloc(size_t n)
{
    if (fail_after == 0)
        return NULL;
    fail_after--;
    return calloc(1, n);
}

static void test_release(void *p, size_t n)
{
    (void)n;
    free(p);
}

static size_t resize_fails_after = SIZE_MAX; /* growths that succeed first */
static size_t shrinks;

static void *test_resize(void *p, size_t old_size, size_t n)
{
    if (n > old_size) {
        if (resize_fails_after == 0)
            return NULL;
        resize_fails_after--;
    } else {
        shrinks++;
    }
    unsigned char *q = realloc(p, n);
    if (q && n > old_size)
        memset(q + old_size, 0xa5, n - old_size); /* not zeroed: nothing may rely on it */
    return q;
}

static int64_t model_find(uint64_t a)
{
    for (uint32_t i = 0; i < model_n; i++)
        if (model[i] == a)
            return i;
    return -1;
}

/* An address of the given layout: 0 heap-like (16-byte granules in a few
 * hundred pages), 1 scattered over 2^40, 2 crowded (the same granule of
 * pages 64 MiB apart: one home per table size below 2^14 pages). */
static uint64_t some_address(int layout)
{
    uint64_t r = xorshift64(&rng);
    switch (layout) {
    case 0:
        return 0x560000000000ull + ((r % 300) << 12) + ((r >> 20) % 256) * 16;
    case 1:
        return (r & ((1ull << 40) - 1) & ~15ull) | 16;
    default:
        return 0x7f0000000000ull + ((r % 4096) << 26) + 32;
    }
}

static void check_all(const mk_addr_index_t *x, const char *what)
{
    CHECK_MSG(x->n == model_n, "%s: n %u, model %u", what, x->n, model_n);
    for (uint32_t i = 0; i < model_n; i++) {
        const mk_index_slot_t *s = mk_index_slot_at(x, i);
        if (mk_index_slot_of(x, model[i]) != s || mk_slot_idx(s) != i ||
            mk_slot_cls(s) != model_cls[i] || x->addr[i] != model[i]) {
            CHECK_MSG(false, "%s: index %u of %u disagrees", what, i, model_n);
            return;
        }
    }
}

/* A full index took a, and one block left it: exactly one, and not a; the
 * model swap-removes it, as the index did. */
static void evicted(const mk_addr_index_t *x, uint64_t a)
{
    CHECK(mk_index_slot_of(x, a) != NULL);
    int64_t gone = -1;
    for (uint32_t i = 0; i < model_n; i++)
        if (!mk_index_slot_of(x, model[i])) {
            CHECK_MSG(gone < 0, "two blocks left the index");
            gone = i;
        }
    CHECK(gone >= 0);
    if (gone < 0)
        return;
    model[gone] = model[--model_n];
    model_cls[gone] = model_cls[model_n];
}

/* max: 0 for version 3's bound (never reached here), else version 4's
 * eviction at max blocks. */
static void run(bool lean, bool resize, int layout, uint32_t target, uint32_t max,
                unsigned long long seed)
{
    /* as the tracer (zeroed pages) and the reader (malloc) have them */
    mk_addr_index_t x = {.lean = lean,
                         .zeroed = !lean,
                         .alloc = test_alloc,
                         .release = test_release,
                         .resize = resize ? test_resize : NULL};
    mk_index_set_version(&x, max ? 4 : 3);
    if (max)
        x.max = max;
    rng = seed | 1;
    model_n = 0;
    /* grow toward target with some removals, then shrink to empty */
    for (int phase = 0; phase < 2; phase++) {
        for (uint32_t step = 0; step < 3 * target; step++) {
            uint64_t r = xorshift64(&rng);
            bool grow = phase == 0 ? r % 4 != 0 : r % 4 == 0;
            if (grow && model_n < target) {
                uint64_t a = some_address(layout);
                unsigned cls = (unsigned)(r >> 40) & 255;
                int64_t at = model_find(a);
                CHECK(mk_index_add(&x, a, cls));
                if (at < 0 && max && model_n == max)
                    evicted(&x, a);
                if (at < 0) {
                    model[model_n] = a;
                    model_cls[model_n++] = cls;
                } else {
                    model_cls[at] = cls; /* present: keeps its index */
                }
            } else if (model_n) {
                uint32_t i = (uint32_t)(r % model_n);
                if (r & (1ull << 50))
                    mk_index_remove_slot(&x, mk_index_slot_at(&x, i));
                else
                    mk_index_remove_slot(&x, mk_index_slot_of(&x, model[i]));
                model[i] = model[--model_n];
                model_cls[i] = model_cls[model_n];
            }
            if (step % 997 == 0)
                check_all(&x, lean ? "lean" : "writer");
        }
        check_all(&x, lean ? "lean, phase end" : "writer, phase end");
        CHECK(!mk_index_slot_of(&x, 0x1234560)); /* never added (odd granule) */
    }
    mk_index_free(&x);
}

/* The index keeps everything it holds when memory runs out: by alloc, or
 * by resize failing on its first or its second array. */
static void run_out_of_memory(int how)
{
    mk_addr_index_t x = {
        .alloc = test_alloc, .release = test_release, .resize = how ? test_resize : NULL};
    mk_index_set_version(&x, MK_TRACE_VERSION);
    rng = 77;
    model_n = 0;
    shrinks = 0;
    if (!how)
        fail_after = 3 * 4; /* arrays and map, four times over: up to 512 entries */
    else /* the first growth allocs; then 3 more by resize, and the next fails */
        resize_fails_after = how == 1 ? 3 * 2 : 3 * 2 + 1;
    bool ok = true;
    while (ok && model_n < MODEL_MAX) {
        uint64_t a = some_address(0);
        if (model_find(a) >= 0)
            continue;
        ok = mk_index_add(&x, a, 7);
        if (ok) {
            model[model_n] = a;
            model_cls[model_n++] = 7;
        }
    }
    CHECK(!ok);
    CHECK_EQ(model_n, 512);
    CHECK_EQ(shrinks, how == 2 ? 1u : 0u);
    check_all(&x, "out of memory");
    fail_after = resize_fails_after = SIZE_MAX;
    /* and goes on when memory comes back */
    uint64_t a = some_address(0);
    CHECK(model_find(a) < 0 && mk_index_add(&x, a, 7));
    model[model_n] = a;
    model_cls[model_n++] = 7;
    check_all(&x, "memory back");
    mk_index_free(&x);
}

static void check_key_homes(void)
{
    uint64_t r = 99;
    for (unsigned bits = 1; bits <= 24; bits++)
        for (int k = 0; k < 2000; k++) {
            uint64_t a = xorshift64(&r) & ((1ull << 56) - 1);
            size_t cap = (size_t)1 << bits;
            if (mk_addr_key_home(mk_addr_key(a), cap) != mk_addr_home(a, cap)) {
                CHECK_MSG(false, "address %#llx, %zu slots", (unsigned long long)a, cap);
                return;
            }
        }
    check_passes++;
    /* beyond 2^24 slots a key still has a home inside the table */
    CHECK(mk_addr_key_home(0xffffffffu, (size_t)1 << 32) < ((size_t)1 << 32));
}

int main(void)
{
    unsigned long long seed = test_seed();
    for (int layout = 0; layout < 3; layout++) {
        run(false, false, layout, 5000, 0, seed + (unsigned)layout);
        run(true, false, layout, 5000, 0, seed + 10 + (unsigned)layout);
        run(false, true, layout, 5000, 0, seed + 30 + (unsigned)layout);
        /* eviction, at a bound that is a capacity and one that is not */
        run(false, true, layout, 5000, 1024, seed + 40 + (unsigned)layout);
        run(true, false, layout, 5000, 1000, seed + 50 + (unsigned)layout);
    }
    run(false, false, 0, MODEL_MAX, 0, seed + 20);
    run(false, true, 1, MODEL_MAX, 4096, seed + 60);
    for (int how = 0; how < 3; how++)
        run_out_of_memory(how);
    check_key_homes();
    return check_report("test_addr_index");
}
