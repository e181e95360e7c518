/*
 * test_live_sizes.c - the tracer's live-size table (src/preload/live_sizes.h),
 * which --summary-only's exact peak rests on, checked against a simple model:
 * random puts and takes at addresses that take every path (shadow slots,
 * sizes too large for a slot, addresses not 16-byte aligned or above 2^48,
 * a block put again at an address still recorded), then threads that put and
 * take blocks 8 bytes apart at the same time (no lost or crossed entries).
 */
#define _GNU_SOURCE
#include "../../src/preload/live_sizes.h"
#include "check.h"

#include <pthread.h>
#include <stdint.h>

/* ---- random operations against a model ---- */

#define SLOTS 4096

typedef struct model_block {
    uintptr_t addr;
    long long size; /* -1: not live */
} model_block_t;

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_random(void)
{
    return xorshift64(&rng);
}

/* Addresses of every kind: 8 bytes apart (every other one has a slot) and
 * 24 bytes apart in two regions (one GiB apart, so two leaves), odd ones, and
 * ones above 2^48. Distinct by construction. */
static uintptr_t address_of(int i)
{
    switch (i % 4) {
    case 0:
        return 0x7f1200000000ull + (uintptr_t)(i / 4) * 8; /* neighbours 8 bytes apart */
    case 1:
        return 0x5600c0000000ull + (uintptr_t)i * 24;
    case 2:
        return 0x7f1200000000ull + (uintptr_t)(i / 4) * 8 + 3; /* not aligned */
    default:
        return (1ull << 52) + (uintptr_t)i * 16; /* beyond the table */
    }
}

static size_t size_of_random(void)
{
    switch (next_random() % 8) {
    case 0:
        return 0;
    case 1:
        return 65533 + next_random() % 4; /* around the largest slot size */
    case 2:
        return (size_t)1 << (20 + next_random() % 14); /* 1 MiB .. 8 GiB */
    default:
        return next_random() % 4096;
    }
}

static void test_random_against_model(void)
{
    static model_block_t model[SLOTS];
    for (int i = 0; i < SLOTS; i++)
        model[i] = (model_block_t){.addr = address_of(i), .size = -1};

    long mismatches = 0;
    for (long step = 0; step < 400000; step++) {
        model_block_t *b = &model[next_random() % SLOTS];
        if (next_random() % 2) {
            size_t size = size_of_random();
            /* A put over a live block: that block was freed unseen. */
            long long was = mk_live_put(b->addr, size);
            mismatches += was != b->size;
            b->size = (long long)size;
        } else {
            long long size = mk_live_take(b->addr);
            mismatches += size != b->size;
            b->size = -1;
        }
    }
    CHECK_EQ(mismatches, 0);
    /* Everything still live comes out with its size, exactly once. */
    for (int i = 0; i < SLOTS; i++) {
        CHECK_EQ(mk_live_take(model[i].addr), model[i].size);
        CHECK_EQ(mk_live_take(model[i].addr), -1);
    }
}

/* The boundary between a slot and the map, a large block's address reused
 * by a small one after a free no hook saw, and a neighbour 8 bytes on. */
static void test_slot_boundary(void)
{
    uintptr_t a = 0x7f3400000000ull;
    CHECK_EQ(mk_live_put(a, 65533), -1); /* the largest size a slot holds */
    CHECK_EQ(mk_live_put(a + 16, 65534), -1);
    CHECK_EQ(mk_live_put(a + 8, 40), -1); /* no slot of its own: the map */
    CHECK_EQ(mk_live_take(a), 65533);
    CHECK_EQ(mk_live_put(a + 16, 16), 65534); /* replaces the map's entry */
    CHECK_EQ(mk_live_take(a + 16), 16);
    CHECK_EQ(mk_live_take(a + 16), -1); /* nothing left in the map either */
    CHECK_EQ(mk_live_take(a + 8), 40);
    CHECK_EQ(mk_live_take(a + 32), -1);
}

/* ---- threads: blocks 8 bytes apart, put and taken at the same time ---- */

#define THREADS    4
#define PER_THREAD 20000

static void *churn_interleaved(void *arg)
{
    uintptr_t me = (uintptr_t)arg;
    long errors = 0;
    for (int round = 0; round < 20; round++) {
        /* Thread k owns every THREADS-th 8-byte address: neighbours belong
         * to other threads, odd k has no slots (the map), and large sizes put
         * some of the others in the map too. */
        for (uintptr_t i = 0; i < PER_THREAD; i++) {
            uintptr_t addr = 0x7f5600000000ull + (i * THREADS + me) * 8;
            size_t size = (i + (uintptr_t)round) % 97 == 0 ? 100000 : i % 1000;
            errors += mk_live_put(addr, size) != -1;
        }
        for (uintptr_t i = 0; i < PER_THREAD; i++) {
            uintptr_t addr = 0x7f5600000000ull + (i * THREADS + me) * 8;
            size_t size = (i + (uintptr_t)round) % 97 == 0 ? 100000 : i % 1000;
            errors += mk_live_take(addr) != (long long)size;
        }
    }
    return (void *)errors;
}

static void test_threads(void)
{
    pthread_t th[THREADS];
    for (uintptr_t k = 0; k < THREADS; k++)
        CHECK_EQ(pthread_create(&th[k], NULL, churn_interleaved, (void *)k), 0);
    for (int k = 0; k < THREADS; k++) {
        void *errors;
        pthread_join(th[k], &errors);
        CHECK_EQ((long)(uintptr_t)errors, 0);
    }
}

int main(void)
{
    test_random_against_model();
    test_slot_boundary();
    test_threads();
    return check_report("test_live_sizes");
}
