/*
 * test_ring.c - unit tests of mk_ring: configuration, frames and alignment, reuse
 * of released memory (in order and out of order), frames spanning chunks and
 * larger than a chunk, the checks that always abort and those of debug mode, and
 * a multi-threaded stress test: one producer builds frames, several consumers
 * check their contents and release them in random order.
 */
#include "check.h"

#include <memkit/ring.h>

#include <errno.h>
#include <pthread.h>
#include <stdint.h>

#define KIB ((size_t)1 << 10)

static void test_config_errors(void)
{
    errno = 0;
    CHECK(mk_ring_create(&(mk_ring_config_t){.chunk_size = 100000}) == NULL);
    CHECK_EQ(errno, EINVAL);
    CHECK(mk_ring_create(&(mk_ring_config_t){.chunk_size = 16 * KIB}) == NULL);
    CHECK(mk_ring_create(&(mk_ring_config_t){.flags = 1u << 5}) == NULL);
    mk_ring_destroy(mk_ring_create(NULL));
    mk_ring_destroy(NULL); /* ignored */
}

static void test_frames(void)
{
    mk_ring_t *ring = mk_ring_create(NULL);
    mk_ring_stats_t s;

    mk_ring_frame_t *f = mk_ring_open(ring);
    CHECK(f != NULL);
    uint64_t *a = mk_ring_new(ring, uint64_t, 1), *b = mk_ring_new(ring, uint64_t, 1);
    CHECK_EQ((char *)b - (char *)a, 8); /* 8-byte objects pack */
    char *c = mk_ring_alloc(ring, 3);
    CHECK_EQ((uintptr_t)c % 16, 0);
    CHECK_EQ((uintptr_t)mk_ring_alloc_aligned(ring, 10, 512) % 512, 0);
    void *z1 = mk_ring_alloc(ring, 0), *z2 = mk_ring_alloc(ring, 0);
    CHECK(z1 && z2 && z1 != z2);
    errno = 0;
    CHECK(mk_ring_new(ring, uint64_t, SIZE_MAX / 4) == NULL);
    CHECK_EQ(errno, ENOMEM);
    CHECK(mk_ring_alloc(ring, 8) != NULL); /* the frame is still open after ENOMEM */
    CHECK(mk_ring_seal(ring) == f);
    mk_ring_stats(ring, &s);
    CHECK_EQ(s.frames, 1);
    CHECK_EQ(s.chunks, 1);
    mk_ring_release(f);
    mk_ring_stats(ring, &s);
    CHECK_EQ(s.frames, 0);
    mk_ring_destroy(ring);
}

/* Frames released in order: the ring runs in the same two chunks forever. */
static void test_reuse_in_order(void)
{
    enum { INFLIGHT = 8 };
    mk_ring_t *ring = mk_ring_create(&(mk_ring_config_t){.chunk_size = 64 * KIB});
    mk_ring_frame_t *q[INFLIGHT] = {0};
    mk_ring_stats_t s;

    for (int i = 0; i < 100000; i++) {
        if (q[i % INFLIGHT])
            mk_ring_release(q[i % INFLIGHT]);
        q[i % INFLIGHT] = mk_ring_open(ring);
        for (int k = 0; k < 1 + i % 5; k++)
            memset(mk_ring_alloc(ring, 100 + (size_t)(i * 31 % 900)), 1, 100);
        mk_ring_seal(ring);
    }
    mk_ring_stats(ring, &s);
    CHECK_EQ(s.frames, INFLIGHT);
    CHECK(s.peak_chunks <= 3);
    for (int i = 0; i < INFLIGHT; i++)
        mk_ring_release(q[i]);
    mk_ring_reclaim(ring);
    mk_ring_stats(ring, &s);
    CHECK_EQ(s.frames, 0);
    CHECK(s.chunks - s.spare_chunks == 1); /* only the current chunk in use */
    mk_ring_destroy(ring);
}

/* A frame released out of order is reclaimed only when the older ones are. */
static void test_out_of_order(void)
{
    mk_ring_t *ring = mk_ring_create(&(mk_ring_config_t){.chunk_size = 64 * KIB});
    mk_ring_frame_t *old = mk_ring_open(ring);
    char *kept = mk_ring_alloc(ring, 100);
    mk_ring_stats_t s;

    memcpy(kept, "still here", 11);
    mk_ring_seal(ring);
    /* Many newer frames come and go while the oldest stays. */
    for (int i = 0; i < 200; i++) {
        mk_ring_frame_t *f = mk_ring_open(ring);
        mk_ring_alloc(ring, 4 * KIB);
        mk_ring_release(mk_ring_seal(ring));
        (void)f;
    }
    mk_ring_stats(ring, &s);
    CHECK_EQ(s.frames, 1);
    CHECK(s.chunks >= 12); /* 800 KiB of released frames stay pinned */
    CHECK(strcmp(kept, "still here") == 0);
    mk_ring_release(old);
    mk_ring_reclaim(ring);
    mk_ring_stats(ring, &s);
    CHECK_EQ(s.frames, 0);
    /* Under the retention policy's 1 MiB floor every spare stays; trim returns them. */
    CHECK_EQ(s.spare_chunks, s.chunks - 1);
    mk_ring_trim(ring);
    mk_ring_stats(ring, &s);
    CHECK_EQ(s.spare_chunks, 0);
    CHECK_EQ(s.chunks, 1);
    mk_ring_destroy(ring);
}

static void test_spanning_and_large(void)
{
    mk_ring_t *ring = mk_ring_create(&(mk_ring_config_t){.chunk_size = 64 * KIB});
    mk_ring_stats_t s;
    mk_ring_frame_t *f = mk_ring_open(ring);
    char *p[40];

    /* 40 x 4 KiB: the frame continues across three chunks. */
    for (int i = 0; i < 40; i++) {
        p[i] = mk_ring_alloc(ring, 4 * KIB);
        memset(p[i], i, 4 * KIB);
    }
    char *big = mk_ring_alloc(ring, 200 * KIB); /* larger than a chunk */
    CHECK(big != NULL);
    memset(big, 0x77, 200 * KIB);
    mk_ring_seal(ring);
    for (int i = 0; i < 40; i++)
        CHECK(p[i][0] == i && p[i][4 * KIB - 1] == i);
    mk_ring_stats(ring, &s);
    CHECK(s.chunks >= 4);
    mk_ring_release(f);
    mk_ring_reclaim(ring);
    mk_ring_stats(ring, &s);
    CHECK_EQ(s.frames, 0);
    CHECK(s.chunks <= 4); /* the large chunk stays current; 64 KiB spares */
    mk_ring_trim(ring);
    mk_ring_stats(ring, &s);
    CHECK_EQ(s.chunks, 1);
    mk_ring_destroy(ring);
}

/* ---- checks ---- */

static void child_alloc_without_frame(void)
{
    mk_ring_alloc(mk_ring_create(NULL), 8);
}

static void child_alloc_into_sealed(void)
{
    mk_ring_t *ring = mk_ring_create(NULL);

    mk_ring_open(ring);
    mk_ring_alloc(ring, 8);
    mk_ring_seal(ring);
    mk_ring_alloc(ring, 8);
}

static void child_open_twice(void)
{
    mk_ring_t *ring = mk_ring_create(NULL);

    mk_ring_open(ring);
    mk_ring_open(ring);
}

static void child_foreign_frame(void)
{
    static uint64_t not_a_frame[8];

    mk_ring_release((mk_ring_frame_t *)not_a_frame);
}

static void child_double_release(void)
{
    mk_ring_t *ring = mk_ring_create(&(mk_ring_config_t){.flags = MK_RING_DEBUG});
    mk_ring_frame_t *f = mk_ring_open(ring);

    mk_ring_seal(ring);
    mk_ring_release(f);
    mk_ring_release(f);
}

static void child_release_open(void)
{
    mk_ring_t *ring = mk_ring_create(&(mk_ring_config_t){.flags = MK_RING_DEBUG});

    mk_ring_release(mk_ring_open(ring));
}

static void test_checks(void)
{
    CHECK_ABORTS(child_alloc_without_frame, "no open frame");
    CHECK_ABORTS(child_alloc_into_sealed, "the frame is sealed");
    CHECK_ABORTS(child_open_twice, "a frame is already open");
    CHECK_ABORTS(child_foreign_frame, "is not a frame");
    CHECK_ABORTS(child_double_release, "released twice");
    CHECK_ABORTS(child_release_open, "is still open");
}

#ifdef TEST_ASAN
static void child_use_after_release(void)
{
    mk_ring_t *ring = mk_ring_create(NULL);
    mk_ring_frame_t *f = mk_ring_open(ring);
    volatile char *p = mk_ring_alloc(ring, 64);

    mk_ring_seal(ring);
    mk_ring_release(f);
    p[10] = 1;
}
#endif

/* ---- threads: one producer, consumers releasing in random order ---- */

#define CONSUMERS 3
#define QCAP      256

typedef struct msg {
    mk_ring_frame_t *frame;
    unsigned id, nparts;
    unsigned char *part[4];
    size_t len[4];
} msg_t;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    msg_t *slot[QCAP];
    unsigned head, tail;
    bool done;
    unsigned checked, bad;
} q = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static unsigned char byte_of(unsigned id, unsigned part, size_t i)
{
    return (unsigned char)(id * 7u + part * 131u + i);
}

static void *consumer(void *arg)
{
    unsigned long long rng = (uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1;
    msg_t *held[4] = {0};
    unsigned checked = 0, bad = 0;

    for (;;) {
        pthread_mutex_lock(&q.lock);
        while (q.head == q.tail && !q.done)
            pthread_cond_wait(&q.cond, &q.lock);
        msg_t *m = q.head != q.tail ? q.slot[q.tail++ % QCAP] : NULL;
        pthread_cond_broadcast(&q.cond);
        pthread_mutex_unlock(&q.lock);
        if (!m)
            break;
        for (unsigned k = 0; k < m->nparts; k++)
            for (size_t i = 0; i < m->len[k]; i++)
                if (m->part[k][i] != byte_of(m->id, k, i)) {
                    bad++;
                    break;
                }
        checked++;
        /* Hold up to four frames and release a random one: out of order. */
        unsigned k = (unsigned)(rng_next(&rng) % 4);
        if (held[k])
            mk_ring_release(held[k]->frame);
        held[k] = m;
    }
    for (unsigned k = 0; k < 4; k++)
        if (held[k])
            mk_ring_release(held[k]->frame);
    pthread_mutex_lock(&q.lock);
    q.checked += checked;
    q.bad += bad;
    pthread_mutex_unlock(&q.lock);
    return NULL;
}

static void test_threads(void)
{
    unsigned n = getenv("MEMKIT_TEST_STEPS") ? (unsigned)atoi(getenv("MEMKIT_TEST_STEPS"))
                                             : 100000;
    mk_ring_t *ring = mk_ring_create(
        &(mk_ring_config_t){.chunk_size = 64 * KIB, .flags = MK_RING_DEBUG});
    unsigned long long rng = 42;
    pthread_t t[CONSUMERS];
    mk_ring_stats_t s;

    for (uintptr_t i = 0; i < CONSUMERS; i++)
        pthread_create(&t[i], NULL, consumer, (void *)(i + 1));
    for (unsigned id = 0; id < n; id++) {
        mk_ring_frame_t *f = mk_ring_open(ring);
        msg_t *m = mk_ring_new(ring, msg_t, 1);

        m->frame = f;
        m->id = id;
        m->nparts = 1 + (unsigned)(rng_next(&rng) % 4);
        for (unsigned k = 0; k < m->nparts; k++) {
            m->len[k] = (size_t)(rng_next(&rng) % (rng_next(&rng) % 50 ? 300 : 20000));
            m->part[k] = mk_ring_alloc(ring, m->len[k]);
            for (size_t i = 0; i < m->len[k]; i++)
                m->part[k][i] = byte_of(id, k, i);
        }
        mk_ring_seal(ring);
        pthread_mutex_lock(&q.lock);
        while (q.head - q.tail == QCAP)
            pthread_cond_wait(&q.cond, &q.lock);
        q.slot[q.head++ % QCAP] = m;
        pthread_cond_broadcast(&q.cond);
        pthread_mutex_unlock(&q.lock);
    }
    pthread_mutex_lock(&q.lock);
    q.done = true;
    pthread_cond_broadcast(&q.cond);
    pthread_mutex_unlock(&q.lock);
    for (int i = 0; i < CONSUMERS; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ(q.checked, n);
    CHECK_EQ(q.bad, 0);
    mk_ring_reclaim(ring);
    mk_ring_stats(ring, &s);
    CHECK_EQ(s.frames, 0);
    CHECK_EQ(s.chunks - s.spare_chunks, 1);
    /* At most QCAP + 12 frames in flight, each under 80 KiB: memory stays bounded. */
    CHECK(s.peak_chunks < 400);
    printf("test_ring: %u frames through %d consumers, peak %zu chunks of 64 KiB\n", n,
           CONSUMERS, s.peak_chunks);
    mk_ring_destroy(ring);
}

int main(void)
{
    test_config_errors();
    test_frames();
    test_reuse_in_order();
    test_out_of_order();
    test_spanning_and_large();
    test_checks();
#ifdef TEST_ASAN
    CHECK_ABORTS(child_use_after_release, "use-after-poison");
#else
    printf("use-after-release poisoning: skipped (not an AddressSanitizer build; make "
           "test-sanitize runs it)\n");
#endif
    test_threads();
    return check_report("test_ring");
}
