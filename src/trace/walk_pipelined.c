/*
 * walk_pipelined.c - mk_trace_walk with the decoding on a second thread:
 * the caller's callback runs on the calling thread, in the same order, while
 * the next batches of events are decoded. On two cores the analysis then
 * costs max(decode, analyse) instead of their sum.
 *
 * A bounded buffer of NSLOTS batches (NSLOTS * BATCH * 56 bytes: 14 MB) between the two
 * threads: the decoder fills slot head % NSLOTS only while head - tail < NSLOTS, and
 * publishes it by moving head; the analyser consumes slot tail % NSLOTS and frees it by
 * moving tail. One lock and one condition variable, taken once per batch.
 */
#define _GNU_SOURCE
#include "reader.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>

/* The merge decodes a whole record before it hands out the first event, so
 * the decoder works in bursts of up to MK_RECORD_ITEMS events. The buffer
 * holds one record. On the 20M-pair trace (records of 262,142 events): 4
 * slots made the threads take turns (7.3 s), 24 slots 5.3 s, 32 slots 4.8 s;
 * 64 slots were no faster within this machine's noise and cost 14 MB more. */
#define BATCH  8192 /* events per slot: 450 KB */
#define NSLOTS ((int)(MK_RECORD_ITEMS / BATCH))

/* A trace file smaller than this (about 50,000 events) is walked on the
 * calling thread: a short process's trace decodes in a millisecond or two,
 * less than starting a thread and faulting in its slots costs; cmake's
 * configure leaves 68 such traces for one merged report. */
#define PIPELINE_MIN_BYTES (128u << 10)

typedef struct batch {
    size_t n;
    mk_event_t ev[BATCH];
} batch_t;

typedef struct pipe {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    batch_t *slots[NSLOTS];
    uint64_t head, tail; /* batches published, batches consumed */
    bool done;           /* the decoder has published its last batch */
    bool stop;           /* the analyser wants no more */
    batch_t *filling;    /* the decoder's slot, NULL between batches */
    mk_trace_t *tr;
} pipe_t;

static void publish(pipe_t *q)
{
    pthread_mutex_lock(&q->lock);
    q->head++;
    q->filling = NULL;
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->lock);
}

/* The decoder's callback: one event into the slot being filled. */
static bool enqueue(void *ctx, const mk_event_t *ev)
{
    pipe_t *q = ctx;
    if (!q->filling) {
        pthread_mutex_lock(&q->lock);
        while (q->head - q->tail == NSLOTS && !q->stop)
            pthread_cond_wait(&q->cond, &q->lock);
        bool stop = q->stop;
        if (!stop) {
            q->filling = q->slots[q->head % NSLOTS];
            q->filling->n = 0;
        }
        pthread_mutex_unlock(&q->lock);
        if (stop)
            return false;
    }
    q->filling->ev[q->filling->n++] = *ev;
    if (q->filling->n == BATCH)
        publish(q);
    return true;
}

static void *decode(void *arg)
{
    pipe_t *q = arg;
    mk_trace_walk(q->tr, enqueue, q);
    if (q->filling && q->filling->n)
        publish(q);
    pthread_mutex_lock(&q->lock);
    q->done = true;
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->lock);
    return NULL;
}

/* Runs fn over the published batches until the decoder is done or fn
 * stops. Returns false if fn stopped. */
static bool consume(pipe_t *q, mk_event_fn fn, void *ctx)
{
    for (;;) {
        pthread_mutex_lock(&q->lock);
        while (q->tail == q->head && !q->done)
            pthread_cond_wait(&q->cond, &q->lock);
        if (q->tail == q->head) { /* done, and nothing left */
            pthread_mutex_unlock(&q->lock);
            return true;
        }
        const batch_t *b = q->slots[q->tail % NSLOTS];
        pthread_mutex_unlock(&q->lock);

        bool ok = true;
        for (size_t i = 0; i < b->n && ok; i++)
            ok = fn(ctx, &b->ev[i]);

        pthread_mutex_lock(&q->lock);
        q->tail++;
        q->stop = !ok;
        pthread_cond_broadcast(&q->cond);
        pthread_mutex_unlock(&q->lock);
        if (!ok)
            return false;
    }
}

bool mk_trace_walk_pipelined(mk_trace_t *tr, mk_event_fn fn, void *ctx)
{
    if (tr->file_size && tr->file_size < PIPELINE_MIN_BYTES)
        return mk_trace_walk(tr, fn, ctx);
    pipe_t q = {.tr = tr};
    pthread_t decoder;
    bool ok = true;

    /* One mapping for all slots, given back whole at the end; a slot no
     * batch reaches is never touched. NSLOTS mallocs of 450 KB went to the
     * heap once glibc's mmap threshold had risen, and the heap was grown
     * and trimmed around every walk; a malloc of the block would raise the
     * threshold to 14 MB for the rest of the report. */
    size_t block_bytes = NSLOTS * sizeof(batch_t);
    batch_t *block = mmap(NULL, block_bytes, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (block == MAP_FAILED) {
        block = NULL;
        ok = false;
    } else {
        madvise(block, block_bytes, MADV_HUGEPAGE); /* 7 faults, not 3,500 */
    }
    if (ok &&
        (pthread_mutex_init(&q.lock, NULL) != 0 || pthread_cond_init(&q.cond, NULL) != 0))
        ok = false;
    for (int i = 0; ok && i < NSLOTS; i++)
        q.slots[i] = &block[i];
    if (!ok || pthread_create(&decoder, NULL, decode, &q) != 0) {
        /* no thread to be had: the plain walk does the same job */
        if (block)
            munmap(block, block_bytes);
        return mk_trace_walk(tr, fn, ctx);
    }
    ok = consume(&q, fn, ctx);
    pthread_join(decoder, NULL);
    pthread_mutex_destroy(&q.lock);
    pthread_cond_destroy(&q.cond);
    munmap(block, block_bytes);
    return ok;
}
