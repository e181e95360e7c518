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

/* The merge decodes a whole record before it hands out the first event, so
 * the decoder works in bursts of up to MK_RECORD_ITEMS events. The buffer
 * holds one record. On the 20M-pair trace (records of 262,142 events): 4
 * slots made the threads take turns (7.3 s), 24 slots 5.3 s, 32 slots 4.8 s;
 * 64 slots were no faster within this machine's noise and cost 14 MB more. */
#define BATCH  8192 /* events per slot: 450 KB */
#define NSLOTS ((int)(MK_RECORD_ITEMS / BATCH))

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
    pipe_t q = {.tr = tr};
    pthread_t decoder;
    bool ok = true;

    for (int i = 0; i < NSLOTS; i++)
        if (!(q.slots[i] = malloc(sizeof *q.slots[i])))
            ok = false;
    if (ok &&
        (pthread_mutex_init(&q.lock, NULL) != 0 || pthread_cond_init(&q.cond, NULL) != 0))
        ok = false;
    if (!ok || pthread_create(&decoder, NULL, decode, &q) != 0) {
        /* no thread to be had: the plain walk does the same job */
        for (int i = 0; i < NSLOTS; i++)
            free(q.slots[i]);
        return mk_trace_walk(tr, fn, ctx);
    }
    ok = consume(&q, fn, ctx);
    pthread_join(decoder, NULL);
    pthread_mutex_destroy(&q.lock);
    pthread_cond_destroy(&q.cond);
    for (int i = 0; i < NSLOTS; i++)
        free(q.slots[i]);
    return ok;
}
