/*
 * threads.c - the two-thread workloads: allocation on one thread, release on
 * another.
 *
 * producer-consumer: the producer mallocs messages of 64-512 bytes and
 * passes them through a single-producer single-consumer ring of 1,024
 * slots; the consumer frees them. alloc rate: the producer's messages per
 * second; free rate: the consumer's.
 * list-contended: Intersec's list test while a second thread frees the
 * previous batch: lists of 65,536 8-byte nodes are built on the main thread
 * and handed over whole. alloc rate: nodes per second of the builder;
 * free rate: of the freeing thread.
 *
 * Both also run under mk_ring, the allocator for this pattern: each message, or
 * each batch of nodes, is one frame, sealed by the producer and released by the
 * other thread (which still walks a batch's nodes, as free() would).
 */
#include "workload.h"

#include <memkit/ring.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static bool malloc_or_ring(mk_bench_api api)
{
    return api == MK_API_MALLOC || api == MK_API_MK_RING; /* the others: one thread */
}

/* ---- producer-consumer ---- */

#define RING 1024

typedef struct ring {
    void *slot[RING]; /* a message, or under mk_ring its frame */
    bool frames;
    _Atomic uint64_t head; /* written by the producer */
    _Atomic uint64_t tail; /* written by the consumer */
    uint64_t n;
    double consumer_s;
} ring_t;

static void *consume(void *arg)
{
    ring_t *q = arg;
    double t0 = mk_bench_now();
    for (uint64_t i = 0; i < q->n; i++) {
        while (atomic_load_explicit(&q->head, memory_order_acquire) == i)
            ; /* spin: the queue is empty */
        if (q->frames)
            mk_ring_release(q->slot[i % RING]);
        else
            free(q->slot[i % RING]);
        atomic_store_explicit(&q->tail, i + 1, memory_order_release);
    }
    q->consumer_s = mk_bench_now() - t0;
    return NULL;
}

/* One message: malloc'd, or a frame of its own in mk_ring. */
static void *pc_message(mk_ring_t *ring, size_t size, void **handle)
{
    if (!ring)
        return *handle = malloc(size);
    mk_ring_frame_t *f = mk_ring_open(ring);
    void *m = f ? mk_ring_alloc(ring, size) : NULL;
    if (m)
        mk_ring_seal(ring);
    *handle = f;
    return m;
}

static int pc_round(mk_ring_t *ring, uint64_t n, mk_bench_round *r)
{
    ring_t *q = calloc(1, sizeof *q);
    pthread_t t;
    if (!q)
        return -1;
    q->n = n;
    q->frames = ring != NULL;
    if (pthread_create(&t, NULL, consume, q) != 0) {
        free(q);
        return -1;
    }
    double t0 = mk_bench_now();
    uint64_t size = 64;
    for (uint64_t i = 0; i < n; i++) {
        while (i - atomic_load_explicit(&q->tail, memory_order_acquire) == RING)
            ;                       /* spin: the queue is full */
        size = size * 7 % 449 + 64; /* 64-512, the same sequence every time */
        void *m = pc_message(ring, size, &q->slot[i % RING]);
        if (!m)
            abort(); /* the consumer waits for it: no way back */
        *(char *)m = (char)i;
        atomic_store_explicit(&q->head, i + 1, memory_order_release);
    }
    double producer_s = mk_bench_now() - t0;
    pthread_join(t, NULL);
    *r = (mk_bench_round){
        .allocs = n, .frees = n, .alloc_s = producer_s, .free_s = q->consumer_s};
    free(q);
    return 0;
}

/* Both workloads: a ring for mk_ring (NULL for malloc), then the rounds. */
static int ring_rounds(mk_bench_api api, uint64_t scale, int rounds, mk_bench_round *out,
                       int (*round)(mk_ring_t *, uint64_t, mk_bench_round *))
{
    mk_ring_t *ring = NULL;
    int rc = 0;

    if (api == MK_API_MK_RING && !(ring = mk_ring_create(NULL)))
        return -1;
    for (int i = 0; i < rounds && rc == 0; i++)
        rc = round(ring, scale, &out[i]);
    mk_ring_destroy(ring);
    return rc;
}

static int pc_run(mk_bench_api api, uint64_t scale, int rounds, mk_bench_round *out)
{
    return ring_rounds(api, scale, rounds, out, pc_round);
}

/* ---- list-contended ---- */

#define BATCH (64u << 10)

typedef struct node {
    struct node *next;
} node_t;

typedef struct handoff {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    node_t *pending;                /* a built list waiting for the freer */
    mk_ring_frame_t *pending_frame; /* under mk_ring: the frame holding it */
    bool done;
    double free_s;
    uint64_t freed;
} handoff_t;

static void *free_batches(void *arg)
{
    handoff_t *h = arg;
    for (;;) {
        pthread_mutex_lock(&h->lock);
        while (!h->pending && !h->done)
            pthread_cond_wait(&h->cond, &h->lock);
        node_t *list = h->pending;
        mk_ring_frame_t *frame = h->pending_frame;
        h->pending = NULL;
        bool done = h->done;
        pthread_cond_broadcast(&h->cond);
        pthread_mutex_unlock(&h->lock);
        if (!list && done)
            return NULL;
        double t0 = mk_bench_now();
        while (list) {
            node_t *next = list->next;
            if (!frame)
                free(list);
            list = next;
            h->freed++;
        }
        if (frame)
            mk_ring_release(frame);
        h->free_s += mk_bench_now() - t0;
    }
}

static int lc_round(mk_ring_t *ring, uint64_t n, mk_bench_round *r)
{
    handoff_t h = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
    pthread_t t;
    if (pthread_create(&t, NULL, free_batches, &h) != 0)
        return -1;
    double alloc_s = 0;
    for (uint64_t done = 0; done < n;) {
        uint64_t k = n - done < BATCH ? n - done : BATCH;
        node_t *head = NULL;
        mk_ring_frame_t *frame = NULL;
        double t0 = mk_bench_now();
        if (ring) {
            if (!(frame = mk_ring_open(ring)))
                abort();
            for (uint64_t i = 0; i < k; i++) {
                node_t *node = mk_ring_new(ring, node_t, 1);
                if (!node)
                    abort();
                node->next = head;
                head = node;
            }
            mk_ring_seal(ring);
        } else {
            for (uint64_t i = 0; i < k; i++) {
                node_t *node = malloc(sizeof *node);
                if (!node)
                    abort();
                node->next = head;
                head = node;
            }
        }
        alloc_s += mk_bench_now() - t0;
        done += k;
        pthread_mutex_lock(&h.lock);
        while (h.pending) /* the freer is one batch behind at most */
            pthread_cond_wait(&h.cond, &h.lock);
        h.pending = head;
        h.pending_frame = frame;
        pthread_cond_broadcast(&h.cond);
        pthread_mutex_unlock(&h.lock);
    }
    pthread_mutex_lock(&h.lock);
    h.done = true;
    pthread_cond_broadcast(&h.cond);
    pthread_mutex_unlock(&h.lock);
    pthread_join(t, NULL);
    *r = (mk_bench_round){
        .allocs = n, .frees = h.freed, .alloc_s = alloc_s, .free_s = h.free_s};
    return h.freed == n ? 0 : -1;
}

static int lc_run(mk_bench_api api, uint64_t scale, int rounds, mk_bench_round *out)
{
    return ring_rounds(api, scale, rounds, out, lc_round);
}

const mk_workload mk_workload_producer_consumer = {
    .name = "producer-consumer",
    .summary = "one thread mallocs 64-512 byte messages, another frees them, through a "
               "1,024-slot ring",
    .default_scale = 5000000,
    .quick_scale = 50000,
    .scale_unit = "messages",
    .supports = malloc_or_ring,
    .run = pc_run,
    /* 20M took glibc 87 s per process here (0.7M messages/s): too long for a
     * default; 5M is about 20 s. */
};

const mk_workload mk_workload_list_contended = {
    .name = "list-contended",
    .summary = "Intersec's list test while a second thread frees the previous batch "
               "(batches of 65,536 nodes)",
    .default_scale = 20000000,
    .quick_scale = 200000,
    .scale_unit = "nodes",
    .supports = malloc_or_ring,
    .run = lc_run,
    /* Intersec's 100M nodes took glibc 100 s per process here (3.3M nodes/s
     * with the second thread freeing): 20M is about 20 s. */
};
