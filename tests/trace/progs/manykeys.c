/*
 * manykeys.c - 1,536 keys on each of three threads, each allocating once per
 * round for 8 rounds. The tracer's per-thread stack cache, keyed by (return
 * address, frame address), starts far smaller than that and grows while the
 * keys miss; every allocation must still get its own stack. leafNN (NN:
 * 00-07, 10-17, ... 70-77) reached through d + 1 frames of descend_a() or
 * descend_b() allocates 8 + 8 * (NN * DEPTHS + d) bytes. Rounds 0-1 come
 * from from_x() through descend_a(), 2-3 from from_y() (the same key and
 * inner frames, another caller further out), 4-5 from from_x() through
 * descend_b() (another caller at the first frame), 6-7 from from_y(): the
 * frames of each pair are the same size, so the keys are the same and the
 * cached stacks stop holding at different depths. A stack's bytes tell
 * whether its allocations were all put on it: 2 times that size.
 */
#include <pthread.h>
#include <stdlib.h>

enum { LEAVES = 64, DEPTHS = 24, ROUNDS = 8, WORKERS = 2 };

static _Thread_local void *kept[LEAVES * DEPTHS];
static _Thread_local int nkept;

static size_t size_of(int k, int d)
{
    return 8 + 8 * (size_t)(k * DEPTHS + d);
}

/* 64 leaves: each its own malloc call, so its own return address. k is the
 * number in the leaf's name (00-07 are octal, and the same numbers). */
#define LEAF(k)                                                                          \
    static __attribute__((noinline)) void leaf##k(int d)                                 \
    {                                                                                    \
        kept[nkept++] = malloc(size_of(k, d));                                           \
    }
#define LEAVES8(a)                                                                       \
    LEAF(a##0)                                                                           \
    LEAF(a##1) LEAF(a##2) LEAF(a##3) LEAF(a##4) LEAF(a##5) LEAF(a##6) LEAF(a##7)
LEAVES8(0)
LEAVES8(1)
LEAVES8(2)
LEAVES8(3)
LEAVES8(4)
LEAVES8(5)
LEAVES8(6)
LEAVES8(7)

#define LEAF_NAMES8(a)                                                                   \
    leaf##a##0, leaf##a##1, leaf##a##2, leaf##a##3, leaf##a##4, leaf##a##5, leaf##a##6,  \
        leaf##a##7
static void (*const leaves[LEAVES])(int) = {
    LEAF_NAMES8(0), LEAF_NAMES8(1), LEAF_NAMES8(2), LEAF_NAMES8(3),
    LEAF_NAMES8(4), LEAF_NAMES8(5), LEAF_NAMES8(6), LEAF_NAMES8(7)};

/* d more frames of itself, then leaf k: each depth moves the hook's frame. */
static __attribute__((noinline)) void descend_a(int d, int k, int depth)
{
    if (d > 0)
        descend_a(d - 1, k, depth);
    else
        leaves[k](depth);
}

/* The same, at other return addresses. */
static __attribute__((noinline)) void descend_b(int d, int k, int depth)
{
    if (d > 0)
        descend_b(d - 1, k, depth);
    else
        leaves[k](depth);
}

typedef void descend_fn(int d, int k, int depth);

/* Two outer callers of the same frame size. */
static __attribute__((noinline)) void from_x(descend_fn *descend, int d, int k)
{
    descend(d, k, d);
}

static __attribute__((noinline)) void from_y(descend_fn *descend, int d, int k)
{
    descend(d, k, d);
}

static void *rounds(void *arg)
{
    (void)arg;
    for (int r = 0; r < ROUNDS; r++) {
        void (*from)(descend_fn *, int, int) = (r / 2) % 2 ? from_y : from_x;
        descend_fn *descend = r < ROUNDS / 2 ? descend_a : descend_b;
        /* leaves outer, depths inner: neighbouring keys share neither */
        for (int k = 0; k < LEAVES; k++)
            for (int d = 0; d < DEPTHS; d++)
                from(descend, d, k);
        while (nkept > 0)
            free(kept[--nkept]);
    }
    return NULL;
}

int main(void)
{
    pthread_t w[WORKERS];
    for (int i = 0; i < WORKERS; i++)
        if (pthread_create(&w[i], NULL, rounds, NULL) != 0)
            return 1;
    rounds(NULL);
    for (int i = 0; i < WORKERS; i++)
        pthread_join(w[i], NULL);
    return 0;
}
