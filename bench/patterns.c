/*
 * patterns.c - `memkit bench patterns`: the allocation shapes real programs have,
 * each run with every allocator it suits in that allocator's default
 * configuration (the one the README and the headers show), because that is what a
 * user who follows memkit's advice gets.
 *
 *   build-free-1k .. -1m  build a list of N 48-byte nodes, free it, again
 *   request-loop          per-request blocks of 16-512 bytes, released together
 *   burst-idle            a 64 MiB burst of 256-byte blocks, freed, then idle:
 *                         the final RSS is taken after the idle period
 *   sawtooth              a working set of 64-byte objects that grows and is
 *                         mostly purged, in random order, again and again
 *   queue-drift           a queue of 32-1024-byte messages whose depth drifts
 *                         slowly between 1,000 and 100,000
 *   xthread-queue         the same messages made on one thread, freed on another
 *   mixed-tail            a live set with a long tail of sizes (16 B to 1 MiB),
 *                         random replacement
 *   steady-spikes         a request loop where one request in 2,000 is 1,000x
 *                         larger
 *
 * A round's whole time is reported (alloc_s; free_s 0), with the RSS at its end
 * (after the idle period for burst-idle). Requests come from xorshift with a
 * fixed seed: every allocator sees the same sizes in the same order.
 */
#define _GNU_SOURCE
#include "heap.h"

#include <memkit/fifo.h>
#include <memkit/pool.h>
#include <memkit/ring.h>
#include <memkit/stack.h>
#include <memkit/tlsf.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define AI static inline __attribute__((always_inline))

/* What the loops read goes here, so the compiler keeps the loads. */
static volatile uint64_t pattern_sink;

static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Resident bytes of this process now. */
static uint64_t rss_now(void)
{
    unsigned long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    if (f) {
        if (fscanf(f, "%lu %lu", &size, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* The allocator of one run, in its default configuration. item_size is the
 * pool's (patterns of one size only). */
typedef struct run {
    mk_bench_heap h;
    mk_stack_t *stack;
} run_t;

static int run_open(run_t *r, mk_bench_api api, size_t item_size)
{
    memset(r, 0, sizeof *r);
    r->h.api = api;
    switch (api) {
    case MK_API_MK_POOL:
        r->h.pool = mk_pool_create(&(mk_pool_config_t){.item_size = item_size});
        return r->h.pool ? 0 : -1;
    case MK_API_MK_FIFO:
        r->h.fifo = mk_fifo_create(NULL);
        return r->h.fifo ? 0 : -1;
    case MK_API_MK_TLSF:
        /* The configuration for a heap that grows like malloc's. */
        r->h.tlsf = mk_tlsf_create(&(mk_tlsf_config_t){.flags = MK_TLSF_GROW});
        return r->h.tlsf ? 0 : -1;
    case MK_API_MK_STACK:
        r->stack = mk_stack_create();
        return r->stack ? 0 : -1;
    default:
        return 0;
    }
}

static void run_close(run_t *r)
{
    mk_pool_destroy(r->h.pool);
    mk_fifo_destroy(r->h.fifo);
    mk_tlsf_destroy(r->h.tlsf);
    mk_stack_destroy(r->stack);
}

/* A block from the run's allocator (the stack: from its open frame). */
AI void *run_alloc(const run_t *r, size_t size)
{
    if (r->h.api == MK_API_MK_STACK)
        return mk_stack_alloc(r->stack, size);
    return mk_bench_heap_alloc(&r->h, size, 16);
}

/* Frees one block; the stack frees nothing until its frame is popped. */
AI void run_free(const run_t *r, void *p)
{
    if (r->h.api != MK_API_MK_STACK)
        mk_bench_heap_free(&r->h, p);
}

AI void run_begin(const run_t *r)
{
    if (r->h.api == MK_API_MK_STACK)
        mk_stack_push(r->stack);
}

AI void run_end(const run_t *r)
{
    if (r->h.api == MK_API_MK_STACK)
        mk_stack_pop(r->stack);
}

/* rc = fn(run, args...) with the run's api a constant in each branch, so each
 * allocator gets a loop of its own with no branch on the api inside (heap.h). */
#define RUN_AS(rc, r, fn, ...)                                                           \
    do {                                                                                 \
        switch ((r).h.api) {                                                             \
        case MK_API_MK_POOL:                                                             \
            rc = fn(&(run_t){.h = {.api = MK_API_MK_POOL, .pool = (r).h.pool}},          \
                    __VA_ARGS__);                                                        \
            break;                                                                       \
        case MK_API_MK_FIFO:                                                             \
            rc = fn(&(run_t){.h = {.api = MK_API_MK_FIFO, .fifo = (r).h.fifo}},          \
                    __VA_ARGS__);                                                        \
            break;                                                                       \
        case MK_API_MK_TLSF:                                                             \
            rc = fn(&(run_t){.h = {.api = MK_API_MK_TLSF, .tlsf = (r).h.tlsf}},          \
                    __VA_ARGS__);                                                        \
            break;                                                                       \
        case MK_API_MK_STACK:                                                            \
            rc = fn(&(run_t){.h = {.api = MK_API_MK_STACK}, .stack = (r).stack},         \
                    __VA_ARGS__);                                                        \
            break;                                                                       \
        default:                                                                         \
            rc = fn(&(run_t){.h = {.api = MK_API_MALLOC}}, __VA_ARGS__);                 \
            break;                                                                       \
        }                                                                                \
    } while (0)

static int oom(const char *pattern)
{
    fprintf(stderr, "%s: out of memory\n", pattern);
    return -1;
}

/* Fills a round: its time, its calls, the RSS at its end. */
static void round_done(mk_bench_round *out, double t0, uint64_t allocs, uint64_t frees)
{
    *out = (mk_bench_round){.allocs = allocs,
                            .frees = frees,
                            .alloc_s = mk_bench_now() - t0,
                            .final_rss = rss_now()};
}

/* Allocators that serve any size (the pool serves one). */
static bool general(mk_bench_api api)
{
    return api == MK_API_MALLOC || api == MK_API_MK_TLSF;
}

/* ------------------------------------------------------------------------ */
/* build-free: build a list of N nodes at its head, free it from the head    */

typedef struct node {
    struct node *next;
    char payload[40];
} node_t;

_Static_assert(sizeof(node_t) == 48, "the issue's 48-byte nodes");

AI int build_free(const run_t *r, uint64_t n, uint64_t cycles, uint64_t *sink)
{
    for (uint64_t c = 0; c < cycles; c++) {
        node_t *head = NULL, *x;

        run_begin(r);
        for (uint64_t i = 0; i < n; i++) {
            if (!(x = run_alloc(r, sizeof *x)))
                return oom("build-free");
            x->next = head;
            x->payload[0] = (char)i;
            head = x;
        }
        while (head) {
            x = head->next;
            *sink += (uint64_t)head->payload[0];
            run_free(r, head);
            head = x;
        }
        run_end(r);
    }
    return 0;
}

static bool build_free_supports(mk_bench_api api)
{
    return general(api) || api == MK_API_MK_POOL || api == MK_API_MK_STACK;
}

static int build_free_run(uint64_t n, mk_bench_api api, uint64_t scale, int rounds,
                          mk_bench_round *out)
{
    uint64_t cycles = scale / n ? scale / n : 1, sink = 0;
    run_t r;
    int rc = 0;

    if (run_open(&r, api, sizeof(node_t)) != 0)
        return oom("build-free");
    for (int k = 0; k < rounds && rc == 0; k++) {
        double t0 = mk_bench_now();

        RUN_AS(rc, r, build_free, n, cycles, &sink);
        round_done(&out[k], t0, n * cycles, n * cycles);
    }
    run_close(&r);
    pattern_sink = sink;
    return rc; /* sink is read: the loads are not dead */
}

#define BUILD_FREE(suffix, nodes, label)                                                 \
    static int build_free_##suffix(mk_bench_api api, uint64_t scale, int rounds,         \
                                   mk_bench_round *out)                                  \
    {                                                                                    \
        return build_free_run(nodes, api, scale, rounds, out);                           \
    }                                                                                    \
    const mk_workload mk_workload_build_free_##suffix = {                                \
        .name = "build-free-" label,                                                     \
        .summary = "build a list of " #nodes " 48-byte nodes, free it, again",           \
        .group = "patterns",                                                             \
        .default_scale = 20000000,                                                       \
        .quick_scale = 2000000,                                                          \
        .scale_unit = "nodes",                                                           \
        .supports = build_free_supports,                                                 \
        .run = build_free_##suffix,                                                      \
    }

BUILD_FREE(1k, 1000, "1k");
BUILD_FREE(10k, 10000, "10k");
BUILD_FREE(100k, 100000, "100k");
BUILD_FREE(1m, 1000000, "1m");

/* ------------------------------------------------------------------------ */
/* request-loop and steady-spikes: blocks of one request released together   */

#define REQ_MAX_BLOCKS 200000

/* Sizes of a request's blocks: mostly small, 16-512 bytes. */
AI size_t request_size(uint64_t *rng)
{
    uint64_t x = next_random(rng);

    return (x & 3) ? 16 + (x >> 8) % 112 : 16 + (x >> 8) % 497;
}

/* One request of n blocks: allocate, touch, free in the order allocated. */
AI int request(const run_t *r, void **blocks, uint64_t n, uint64_t *rng, uint64_t *sink)
{
    run_begin(r);
    for (uint64_t i = 0; i < n; i++) {
        size_t size = request_size(rng);
        char *p = run_alloc(r, size);

        if (!p)
            return oom("request-loop");
        p[0] = (char)i;
        p[size - 1] = (char)size;
        blocks[i] = p;
    }
    for (uint64_t i = 0; i < n; i++) {
        *sink += (uint64_t)((char *)blocks[i])[0];
        run_free(r, blocks[i]);
    }
    run_end(r);
    return 0;
}

/* `requests` requests of 20-200 blocks; with spikes, every 2,000th has 100,000. */
AI int request_loop(const run_t *r, void **blocks, uint64_t requests, bool spikes,
                    uint64_t *rng, uint64_t *calls, uint64_t *sink)
{
    for (uint64_t q = 0; q < requests; q++) {
        uint64_t n = spikes && q % 2000 == 1999 ? 100000 : 20 + next_random(rng) % 181;

        if (request(r, blocks, n, rng, sink) != 0)
            return -1;
        *calls += n;
    }
    return 0;
}

static bool request_supports(mk_bench_api api)
{
    return general(api) || api == MK_API_MK_FIFO || api == MK_API_MK_STACK;
}

static int requests_run(bool spikes, mk_bench_api api, uint64_t scale, int rounds,
                        mk_bench_round *out)
{
    void **blocks = malloc(REQ_MAX_BLOCKS * sizeof *blocks);
    uint64_t rng = 0x9e3779b97f4a7c15ull, sink = 0;
    run_t r;
    int rc = 0;

    if (!blocks || run_open(&r, api, 0) != 0) {
        free(blocks);
        return oom("request-loop");
    }
    for (int k = 0; k < rounds && rc == 0; k++) {
        double t0 = mk_bench_now();
        uint64_t calls = 0;

        RUN_AS(rc, r, request_loop, blocks, scale, spikes, &rng, &calls, &sink);
        round_done(&out[k], t0, calls, calls);
    }
    run_close(&r);
    free(blocks);
    pattern_sink = sink;
    return rc;
}

static int request_loop_run(mk_bench_api api, uint64_t scale, int rounds,
                            mk_bench_round *out)
{
    return requests_run(false, api, scale, rounds, out);
}

static int steady_spikes_run(mk_bench_api api, uint64_t scale, int rounds,
                             mk_bench_round *out)
{
    return requests_run(true, api, scale, rounds, out);
}

const mk_workload mk_workload_request_loop = {
    .name = "request-loop",
    .summary = "requests of 20-200 blocks of 16-512 bytes, released together",
    .group = "patterns",
    .default_scale = 200000,
    .quick_scale = 20000,
    .scale_unit = "requests",
    .supports = request_supports,
    .run = request_loop_run,
};

const mk_workload mk_workload_steady_spikes = {
    .name = "steady-spikes",
    .summary = "the request loop, one request in 2,000 of 100,000 blocks",
    .group = "patterns",
    .default_scale = 100000,
    .quick_scale = 10000,
    .scale_unit = "requests",
    .supports = request_supports,
    .run = steady_spikes_run,
};

/* ------------------------------------------------------------------------ */
/* burst-idle: a burst freed, then an idle period before the RSS is read     */

#define BURST_BLOCK 256

/* The idle period: MEMKIT_BENCH_IDLE_MS (memkit bench --idle), else 2 s. */
static unsigned idle_ms(void)
{
    const char *v = getenv("MEMKIT_BENCH_IDLE_MS");

    return v && *v ? (unsigned)strtoul(v, NULL, 10) : 2000;
}

AI int burst(const run_t *r, void **blocks, uint64_t n)
{
    run_begin(r);
    for (uint64_t i = 0; i < n; i++) {
        char *p = run_alloc(r, BURST_BLOCK);

        if (!p)
            return oom("burst-idle");
        memset(p, (int)i, BURST_BLOCK);
        blocks[i] = p;
    }
    for (uint64_t i = 0; i < n; i++)
        run_free(r, blocks[i]);
    run_end(r);
    return 0;
}

static bool burst_supports(mk_bench_api api)
{
    return general(api) || api == MK_API_MK_POOL || api == MK_API_MK_FIFO ||
           api == MK_API_MK_STACK;
}

static int burst_idle_run(mk_bench_api api, uint64_t scale, int rounds,
                          mk_bench_round *out)
{
    void **blocks = malloc(scale * sizeof *blocks);
    unsigned ms = idle_ms();
    run_t r;
    int rc = 0;

    if (!blocks || run_open(&r, api, BURST_BLOCK) != 0) {
        free(blocks);
        return oom("burst-idle");
    }
    for (int k = 0; k < rounds && rc == 0; k++) {
        double t0 = mk_bench_now(), t1;

        RUN_AS(rc, r, burst, blocks, scale);
        t1 = mk_bench_now();
        nanosleep(&(struct timespec){.tv_sec = ms / 1000,
                                     .tv_nsec = (long)(ms % 1000) * 1000000},
                  NULL);
        round_done(&out[k], t0, scale, scale);
        out[k].alloc_s = t1 - t0; /* the burst, not the idle period */
    }
    run_close(&r);
    free(blocks);
    return rc;
}

const mk_workload mk_workload_burst_idle = {
    .name = "burst-idle",
    .summary = "256-byte blocks allocated and freed in a burst, then idle; "
               "RSS after the idle period",
    .group = "patterns",
    .default_scale = 262144, /* 64 MiB */
    .quick_scale = 16384,
    .scale_unit = "blocks",
    .supports = burst_supports,
    .run = burst_idle_run,
};

/* ------------------------------------------------------------------------ */
/* sawtooth: grow to N live objects, purge 90% at random, again              */

#define SAW_LIVE 200000
#define SAW_SIZE 64

AI int sawtooth(const run_t *r, void **slot, uint64_t total, uint64_t *rng)
{
    size_t live = 0;

    for (uint64_t made = 0; made < total;) {
        while (live < SAW_LIVE && made < total) {
            char *p = run_alloc(r, SAW_SIZE);

            if (!p)
                return oom("sawtooth");
            p[0] = (char)made++;
            slot[live++] = p;
        }
        /* purge: 90% of the live objects, picked at random */
        for (size_t keep = live / 10; live > keep;) {
            size_t k = (size_t)(next_random(rng) % live);

            run_free(r, slot[k]);
            slot[k] = slot[--live];
        }
    }
    while (live)
        run_free(r, slot[--live]);
    return 0;
}

static bool sawtooth_supports(mk_bench_api api)
{
    return general(api) || api == MK_API_MK_POOL;
}

static int sawtooth_run(mk_bench_api api, uint64_t scale, int rounds, mk_bench_round *out)
{
    void **slot = malloc(SAW_LIVE * sizeof *slot);
    uint64_t rng = 0x2545f4914f6cdd1dull;
    run_t r;
    int rc = 0;

    if (!slot || run_open(&r, api, SAW_SIZE) != 0) {
        free(slot);
        return oom("sawtooth");
    }
    for (int k = 0; k < rounds && rc == 0; k++) {
        double t0 = mk_bench_now();

        RUN_AS(rc, r, sawtooth, slot, scale, &rng);
        round_done(&out[k], t0, scale, scale);
    }
    run_close(&r);
    free(slot);
    return rc;
}

const mk_workload mk_workload_sawtooth = {
    .name = "sawtooth",
    .summary = "64-byte objects grow to 200,000 live, 90% purged at random, again",
    .group = "patterns",
    .default_scale = 20000000,
    .quick_scale = 2000000,
    .scale_unit = "objects",
    .supports = sawtooth_supports,
    .run = sawtooth_run,
};

/* ------------------------------------------------------------------------ */
/* queue-drift: a queue whose depth drifts slowly between 1,000 and 100,000  */

#define QUEUE_MAX 100000

/* Message sizes: 32-1024 bytes, most under 256. */
AI size_t message_size(uint64_t *rng)
{
    uint64_t x = next_random(rng);

    return (x & 7) ? 32 + (x >> 8) % 225 : 32 + (x >> 8) % 993;
}

/* The depth the queue drifts towards at message i: a triangle wave of period
 * 2M messages between 1,000 and QUEUE_MAX. */
static size_t drift_target(uint64_t i)
{
    uint64_t phase = i % 2000000;
    uint64_t up = phase < 1000000 ? phase : 2000000 - phase;

    return 1000 + (size_t)(up * (QUEUE_MAX - 1000) / 1000000);
}

AI int queue_drift(const run_t *r, void **ring, uint64_t total, uint64_t *rng,
                   uint64_t *sink)
{
    size_t head = 0, depth = 0;

    for (uint64_t i = 0; i < total; i++) {
        size_t target = drift_target(i);
        size_t size = message_size(rng);
        char *p;

        /* consume down to the target (one or two at a time while it falls) */
        for (int k = 0; k < 2 && depth > 0 && depth >= target; k++) {
            *sink += (uint64_t)((char *)ring[head])[0];
            run_free(r, ring[head]);
            head = (head + 1) % QUEUE_MAX;
            depth--;
        }
        if (!(p = run_alloc(r, size)))
            return oom("queue-drift");
        p[0] = (char)size;
        ring[(head + depth++) % QUEUE_MAX] = p;
    }
    while (depth) {
        run_free(r, ring[head]);
        head = (head + 1) % QUEUE_MAX;
        depth--;
    }
    return 0;
}

static bool queue_supports(mk_bench_api api)
{
    return general(api) || api == MK_API_MK_FIFO;
}

static int queue_drift_run(mk_bench_api api, uint64_t scale, int rounds,
                           mk_bench_round *out)
{
    void **ring = malloc(QUEUE_MAX * sizeof *ring);
    uint64_t rng = 0x853c49e6748fea9bull, sink = 0;
    run_t r;
    int rc = 0;

    if (!ring || run_open(&r, api, 0) != 0) {
        free(ring);
        return oom("queue-drift");
    }
    for (int k = 0; k < rounds && rc == 0; k++) {
        double t0 = mk_bench_now();

        RUN_AS(rc, r, queue_drift, ring, scale, &rng, &sink);
        round_done(&out[k], t0, scale, scale);
    }
    run_close(&r);
    free(ring);
    pattern_sink = sink;
    return rc;
}

const mk_workload mk_workload_queue_drift = {
    .name = "queue-drift",
    .summary = "a queue of 32-1024-byte messages, depth drifting 1,000-100,000",
    .group = "patterns",
    .default_scale = 10000000,
    .quick_scale = 1000000,
    .scale_unit = "messages",
    .supports = queue_supports,
    .run = queue_drift_run,
};

/* ------------------------------------------------------------------------ */
/* xthread-queue: messages made on one thread, freed on another              */

#define XQ_BATCH 64   /* messages per batch (a ring frame) */
#define XQ_SLOTS 1024 /* batches in flight at most */

typedef struct batch {
    void *msg[XQ_BATCH];
    mk_ring_frame_t *frame; /* the ring's frame, or NULL */
} batch_t;

typedef struct xq {
    batch_t *slots;
    _Atomic uint64_t head, tail; /* single producer, single consumer */
    uint64_t batches;
    uint64_t sink;
} xq_t;

static void *xq_consumer(void *arg)
{
    xq_t *q = arg;

    for (uint64_t b = 0; b < q->batches; b++) {
        while (atomic_load_explicit(&q->tail, memory_order_acquire) == b)
            ;
        batch_t *x = &q->slots[b % XQ_SLOTS];
        for (int i = 0; i < XQ_BATCH; i++) {
            q->sink += (uint64_t)((char *)x->msg[i])[0];
            if (!x->frame)
                free(x->msg[i]);
        }
        if (x->frame)
            mk_ring_release(x->frame);
        atomic_store_explicit(&q->head, b + 1, memory_order_release);
    }
    return NULL;
}

static int xq_round(mk_ring_t *ring, xq_t *q, uint64_t *rng)
{
    pthread_t t;

    atomic_store(&q->head, 0);
    atomic_store(&q->tail, 0);
    if (pthread_create(&t, NULL, xq_consumer, q) != 0)
        return -1;
    for (uint64_t b = 0; b < q->batches; b++) {
        while (b - atomic_load_explicit(&q->head, memory_order_acquire) >= XQ_SLOTS)
            ;
        batch_t *x = &q->slots[b % XQ_SLOTS];
        x->frame = ring ? mk_ring_open(ring) : NULL;
        for (int i = 0; i < XQ_BATCH; i++) {
            size_t size = message_size(rng);
            char *p = ring ? mk_ring_alloc(ring, size) : malloc(size);

            if (!p)
                abort(); /* the consumer waits for this batch: no way back */
            p[0] = (char)size;
            x->msg[i] = p;
        }
        if (ring)
            mk_ring_seal(ring);
        atomic_store_explicit(&q->tail, b + 1, memory_order_release);
    }
    pthread_join(t, NULL);
    return 0;
}

static bool xthread_supports(mk_bench_api api)
{
    return api == MK_API_MALLOC || api == MK_API_MK_RING;
}

static int xthread_queue_run(mk_bench_api api, uint64_t scale, int rounds,
                             mk_bench_round *out)
{
    xq_t q = {.slots = malloc(XQ_SLOTS * sizeof(batch_t)), .batches = scale / XQ_BATCH};
    mk_ring_t *ring = api == MK_API_MK_RING ? mk_ring_create(NULL) : NULL;
    uint64_t rng = 0xda942042e4dd58b5ull;
    int rc = 0;

    if (!q.slots || (api == MK_API_MK_RING && !ring)) {
        free(q.slots);
        mk_ring_destroy(ring);
        return oom("xthread-queue");
    }
    for (int k = 0; k < rounds && rc == 0; k++) {
        double t0 = mk_bench_now();

        rc = xq_round(ring, &q, &rng);
        round_done(&out[k], t0, q.batches * XQ_BATCH, q.batches * XQ_BATCH);
    }
    mk_ring_destroy(ring);
    free(q.slots);
    pattern_sink = q.sink;
    return rc;
}

const mk_workload mk_workload_xthread_queue = {
    .name = "xthread-queue",
    .summary = "32-1024-byte messages made on one thread in batches of 64, freed on "
               "another",
    .group = "patterns",
    .default_scale = 10000000,
    .quick_scale = 1000000,
    .scale_unit = "messages",
    .supports = xthread_supports,
    .run = xthread_queue_run,
};

/* ------------------------------------------------------------------------ */
/* mixed-tail: a live set with a long tail of sizes, random replacement      */

#define TAIL_LIVE 50000

/* 70% 16-64 B, 20% 64-512 B, 9% 512 B-8 KiB, 1% 8 KiB-1 MiB. */
AI size_t tail_size(uint64_t *rng)
{
    uint64_t x = next_random(rng), p = x % 100, y = x >> 8;

    if (p < 70)
        return 16 + y % 49;
    if (p < 90)
        return 64 + y % 449;
    if (p < 99)
        return 512 + y % 7681;
    return 8192 + y % ((1u << 20) - 8192);
}

AI int mixed_tail(const run_t *r, void **slot, uint64_t steps, uint64_t *rng)
{
    for (size_t i = 0; i < TAIL_LIVE; i++)
        if (!(slot[i] = run_alloc(r, tail_size(rng))))
            return oom("mixed-tail");
    for (uint64_t s = 0; s < steps; s++) {
        size_t k = (size_t)(next_random(rng) % TAIL_LIVE), size = tail_size(rng);
        char *p;

        run_free(r, slot[k]);
        if (!(p = run_alloc(r, size)))
            return oom("mixed-tail");
        p[0] = (char)s;
        p[size - 1] = (char)s;
        slot[k] = p;
    }
    for (size_t i = 0; i < TAIL_LIVE; i++)
        run_free(r, slot[i]);
    return 0;
}

static int mixed_tail_run(mk_bench_api api, uint64_t scale, int rounds,
                          mk_bench_round *out)
{
    void **slot = malloc(TAIL_LIVE * sizeof *slot);
    uint64_t rng = 0x6a09e667f3bcc909ull;
    run_t r;
    int rc = 0;

    if (!slot || run_open(&r, api, 0) != 0) {
        free(slot);
        return oom("mixed-tail");
    }
    for (int k = 0; k < rounds && rc == 0; k++) {
        double t0 = mk_bench_now();

        RUN_AS(rc, r, mixed_tail, slot, scale, &rng);
        round_done(&out[k], t0, scale + TAIL_LIVE, scale + TAIL_LIVE);
    }
    run_close(&r);
    free(slot);
    return rc;
}

const mk_workload mk_workload_mixed_tail = {
    .name = "mixed-tail",
    .summary = "50,000 live blocks of 16 B-1 MiB (long tail), replaced at random",
    .group = "patterns",
    .default_scale = 5000000,
    .quick_scale = 500000,
    .scale_unit = "replacements",
    .supports = general,
    .run = mixed_tail_run,
};
