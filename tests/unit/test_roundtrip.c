/*
 * test_roundtrip.c - the event format's two halves in step: random event
 * streams of every kind go through the writer (src/trace/writer.h, what the
 * tracer inlines) and the decoder (src/trace/decode.c, what every report
 * reads with), record by record, and each decoded event and stack
 * definition is compared field by field with what was written.
 *
 * The streams imitate an allocator, because the format's address coding
 * bets on one: a new block is often the one of its size class freed last,
 * or one freed a few calls back, or a fresh address; reallocs grow in place,
 * move, free (size 0) or fail; frees name this thread's blocks, another
 * thread's and NULL. Ticks repeat (same-tick runs), step and jump (records
 * closed by age).
 *
 * Versions 1 and 2 of the format are read, no longer written: their stored
 * traces (tests/trace/data) are decoded and every field of every event is
 * folded into a digest, pinned here, so a decoder change that alters any
 * field of an old trace fails (tests/trace/run.sh's formats case checks
 * the reports they make).
 *
 * usage: test_roundtrip [DATA_DIR]   (DATA_DIR: tests/trace/data)
 */
#include "check.h"

#include "../../src/trace/reader.h"
#include "../../src/trace/writer.h"

#include <inttypes.h>

/* ---- the writer's memory, as the tracer lays it out ---- */

static void *zalloc(size_t n)
{
    return calloc(1, n);
}

static void release(void *p, size_t n)
{
    (void)n;
    free(p);
}

static void writer_init(mk_writer_t *w)
{
    memset(w, 0, sizeof *w);
    for (int i = 0; i < MK_S_COUNT; i++)
        w->base[i] = malloc(mk_writer_stream_cap(i));
    w->reuse = calloc(1, sizeof *w->reuse);
    w->live.alloc = zalloc;
    w->live.release = release;
    mk_index_set_version(&w->live, MK_TRACE_VERSION);
    w->live.zeroed = true;
}

static void writer_free(mk_writer_t *w)
{
    for (int i = 0; i < MK_S_COUNT; i++)
        free(w->base[i]);
    free(w->reuse);
    mk_index_free(&w->live);
}

/* ---- what was written ---- */

#define MAX_EVENTS MK_RECORD_ITEMS
#define MAX_STACKS 4096

typedef struct expected {
    mk_event_t ev[MAX_EVENTS];
    size_t n;
    size_t seen; /* decoded so far */
} expected_t;

typedef struct stack_model {
    uint32_t depth;
    uintptr_t frames[MK_MAX_DEPTH];
    bool defined_in_record; /* defined since the record began */
} stack_model_t;

static stack_model_t stacks[MAX_STACKS];

static bool on_event(void *ctx, const mk_event_t *ev)
{
    expected_t *x = ctx;
    if (x->seen >= x->n) {
        CHECK(!"more events decoded than written");
        return false;
    }
    const mk_event_t *e = &x->ev[x->seen++];
    CHECK_EQ(ev->kind, e->kind);
    CHECK_EQ(ev->time, e->time);
    CHECK_EQ(ev->size, e->size);
    CHECK_EQ(ev->align, e->align);
    CHECK_EQ(ev->addr, e->addr);
    CHECK_EQ(ev->old_addr, e->old_addr);
    CHECK_EQ(ev->stack, e->stack);
    CHECK_EQ(ev->thread, e->thread);
    CHECK_MSG(ev->cost == e->cost, "cost %.3f, expected %.3f", ev->cost, e->cost);
    CHECK_EQ(ev->slow, e->slow);
    return check_failures == 0; /* stop at the first difference: one report */
}

/* ---- the imitated allocator ---- */

#define MAX_LIVE  20000
#define MAX_FREED 64

typedef struct heap {
    uint64_t rng;
    uintptr_t live[MAX_LIVE]; /* this thread's live blocks */
    size_t live_size[MAX_LIVE];
    size_t nlive;
    uintptr_t freed[MAX_FREED]; /* recently freed, newest last */
    size_t freed_size[MAX_FREED];
    size_t nfreed;
    uintptr_t next; /* fresh addresses from here */
} heap_t;

static uint64_t rnd(heap_t *h, uint64_t n)
{
    return xorshift64(&h->rng) % n;
}

/* Sizes of every varint length, mostly small as programs' are. */
static size_t random_size(heap_t *h)
{
    switch (rnd(h, 8)) {
    case 0:
        return (size_t)rnd(h, 9); /* 0-8, version 1's own class */
    case 1:
    case 2:
    case 3:
        return 16 + (size_t)rnd(h, 8) * 16;
    case 4:
        return (size_t)rnd(h, 4096);
    case 5:
        return (size_t)rnd(h, 1 << 20);
    case 6:
        return (size_t)1 << (20 + rnd(h, 20));
    default:
        return 24;
    }
}

/* Takes freed[i] out of the recent frees: it is live again. */
static uintptr_t reuse_freed(heap_t *h, size_t i)
{
    uintptr_t a = h->freed[i];
    size_t o = 0;
    for (size_t j = 0; j < h->nfreed; j++)
        if (h->freed[j] != a) {
            h->freed_size[o] = h->freed_size[j];
            h->freed[o++] = h->freed[j];
        }
    h->nfreed = o;
    return a;
}

/* A new block's address: a recent free of its class (usually the last), a
 * recent free of any class, or a fresh one. The recent frees hold no live
 * block, so a live block's address is never handed out twice. */
static uintptr_t new_address(heap_t *h, size_t size)
{
    unsigned cls = mk_size_class(size);
    uint64_t pick = rnd(h, 10);
    if (pick < 6) {
        for (size_t i = h->nfreed; i-- > 0;)
            if (mk_size_class(h->freed_size[i]) == cls && (pick < 4 || rnd(h, 2)))
                return reuse_freed(h, i);
    } else if (pick < 8 && h->nfreed) {
        return reuse_freed(h, (size_t)rnd(h, h->nfreed));
    }
    h->next += 16 + ((size + 15) & ~(uintptr_t)15) % 65536;
    return h->next;
}

static void note_freed(heap_t *h, uintptr_t a, size_t size)
{
    for (size_t j = 0; j < h->nfreed; j++)
        if (h->freed[j] == a)
            reuse_freed(h, j); /* a stale entry from an earlier life */
    if (h->nfreed == MAX_FREED) {
        memmove(h->freed, h->freed + 1, (MAX_FREED - 1) * sizeof h->freed[0]);
        memmove(h->freed_size, h->freed_size + 1,
                (MAX_FREED - 1) * sizeof h->freed_size[0]);
        h->nfreed--;
    }
    h->freed[h->nfreed] = a;
    h->freed_size[h->nfreed++] = size;
}

static void add_live(heap_t *h, uintptr_t a, size_t size)
{
    if (!a || h->nlive == MAX_LIVE)
        return;
    h->live[h->nlive] = a;
    h->live_size[h->nlive++] = size;
}

/* Removes live block i (returning its address and size). */
static uintptr_t take_live(heap_t *h, size_t i, size_t *size)
{
    uintptr_t a = h->live[i];
    *size = h->live_size[i];
    h->live[i] = h->live[--h->nlive];
    h->live_size[i] = h->live_size[h->nlive];
    return a;
}

/* ---- one record ---- */

typedef struct run {
    heap_t heap;
    mk_writer_t w;
    mk_trace_t tr;
    mk_decoder_t dec;
    mk_addr_state_t *scratch;
    expected_t *x;
    uint64_t tick;
    uint32_t thread;
    uint32_t nstacks; /* ids 1..nstacks defined */
    uint64_t events, records;
    uint64_t stream_bytes[MK_S_COUNT]; /* every stream must be used */
} run_t;

static unsigned kinds_of[5][MK_K_COUNT], nkinds_of[5];

static void sort_kinds(void)
{
    for (unsigned k = 0; k < MK_K_COUNT; k++) {
        enum mk_kind_class c = mk_kind_class(k);
        kinds_of[c][nkinds_of[c]++] = k;
    }
}

static uint64_t next_tick(run_t *r)
{
    switch (rnd(&r->heap, 8)) {
    case 0:
    case 1:
    case 2:
        return r->tick; /* same tick: a run of zeros */
    case 7:
        if (rnd(&r->heap, 2048) == 0)
            return r->tick += MK_RECORD_AGE + rnd(&r->heap, 1000); /* an idle thread */
        /* fall through */
    default:
        return r->tick += 1 + rnd(&r->heap, 300);
    }
}

/* A stack id for an event: 0, one defined before, or a new one defined now
 * (its definition written before the event, as the tracer does). */
static uint32_t pick_stack(run_t *r)
{
    heap_t *h = &r->heap;
    if (rnd(h, 10) == 0)
        return 0;
    if (r->nstacks && (r->nstacks + 1 >= MAX_STACKS || rnd(h, 4)))
        return 1 + (uint32_t)rnd(h, r->nstacks);
    uint32_t id = ++r->nstacks;
    stack_model_t *s = &stacks[id];
    s->depth = (uint32_t)rnd(h, MK_MAX_DEPTH + 1);
    for (uint32_t i = 0; i < s->depth; i++)
        s->frames[i] = (uintptr_t)0x400000 + (uintptr_t)rnd(h, 1ull << 40);
    mk_writer_define_stack(&r->w, id, s->depth, s->frames);
    return id;
}

/* A call's cycles: mostly a few dozen, some thousands (format.h, COST). */
static uint64_t random_cost(heap_t *h)
{
    return rnd(h, 10) ? rnd(h, 300) : rnd(h, 1000000);
}

/* Is a call of these cycles slow? The tracer's judgement (record.h), here
 * the writer's bound for the head: some of random_cost's are. */
static bool is_slow(const mk_writer_t *w, uint64_t cycles)
{
    return w->slow_cycles && cycles >= w->slow_cycles;
}

/* What the reader makes of an event's cycles: a slow call's as they are
 * (format.h, SLOW); else the timed one's (the writer's stride says which,
 * before the event is written), less the reading's own cost and weighed by
 * the events it stands for; 0 for the others. */
static double expected_cost(const mk_writer_t *w, uint64_t cycles, bool slow)
{
    if (slow)
        return (double)cycles;
    if (!mk_writer_cost_due(w))
        return 0;
    double c = (double)cycles - (double)w->cost_overhead_x16 / 16;
    return c > 0 ? c * MK_COST_STRIDE : 0;
}

static void expect(run_t *r, mk_event_t ev)
{
    ev.thread = r->thread;
    r->x->ev[r->x->n++] = ev;
}

/* One random event into the writer and the expected list. */
static void one_event(run_t *r)
{
    heap_t *h = &r->heap;
    uint64_t roll = rnd(h, 100);
    mk_event_t ev = {0};
    if (roll < 40 || h->nlive == 0) { /* ALLOC */
        unsigned k = kinds_of[MK_CLASS_ALLOC][rnd(h, nkinds_of[MK_CLASS_ALLOC])];
        size_t size = random_size(h);
        size_t align = mk_kind_has_align(k) ? (size_t)1 << rnd(h, 13) : 0;
        uintptr_t a = rnd(h, 50) ? new_address(h, size) : 0; /* NULL: out of memory */
        uint32_t stack = pick_stack(r);
        uint64_t t = next_tick(r), cost = random_cost(h);
        bool slow = is_slow(&r->w, cost);
        double want = expected_cost(&r->w, cost, slow);
        CHECK(mk_writer_alloc(&r->w, t, cost, slow, k, size, align, a, stack));
        add_live(h, a, size);
        ev = (mk_event_t){.kind = (uint8_t)k,
                          .time = t,
                          .size = size,
                          .align = align,
                          .addr = a,
                          .stack = stack,
                          .slow = slow,
                          .cost = (float)want};
    } else if (roll < 80) { /* FREE: ours, another thread's, or NULL */
        unsigned k = kinds_of[MK_CLASS_FREE][rnd(h, nkinds_of[MK_CLASS_FREE])];
        uintptr_t a = 0;
        uint64_t how = rnd(h, 20);
        if (how < 17) {
            size_t size;
            a = take_live(h, rnd(h, h->nlive), &size);
            note_freed(h, a, size);
        } else if (how < 19) {
            a = (uintptr_t)0x7f0000000000 + (uintptr_t)rnd(h, 1u << 30) * 16;
        }
        uint64_t t = next_tick(r), cost = random_cost(h);
        bool slow = is_slow(&r->w, cost);
        /* a free that carries a time names its caller's stack (format.h) */
        uint32_t stack = mk_writer_times(&r->w, slow) ? pick_stack(r) : 0;
        double want = expected_cost(&r->w, cost, slow);
        mk_writer_free(&r->w, t, cost, slow, k, a, mk_writer_free_slot(&r->w, a), stack);
        ev = (mk_event_t){.kind = (uint8_t)k,
                          .time = t,
                          .addr = a,
                          .stack = stack,
                          .slow = slow,
                          .cost = (float)want};
    } else if (roll < 95) { /* REALLOC: in place, moved, from NULL, to size 0, failed */
        unsigned k = kinds_of[MK_CLASS_REALLOC][rnd(h, nkinds_of[MK_CLASS_REALLOC])];
        uint64_t how = rnd(h, 10);
        size_t size = random_size(h), old_size = 0;
        uintptr_t old = 0, a;
        if (how > 0) {
            old = take_live(h, rnd(h, h->nlive), &old_size);
        }
        if (how == 9 && old) { /* realloc(p, 0): freed, NULL back */
            size = 0;
            a = 0;
            note_freed(h, old, old_size);
        } else if (how == 8 && old) { /* failed: the old block stays */
            a = 0;
            add_live(h, old, old_size);
            if (size == 0)
                size = 1;
        } else if (how < 5 && old) { /* in place */
            a = old;
            add_live(h, a, size);
        } else {
            a = new_address(h, size); /* moved: never onto the old block */
            if (old)
                note_freed(h, old, old_size);
            add_live(h, a, size);
        }
        uint32_t stack = pick_stack(r);
        uint64_t t = next_tick(r), cost = random_cost(h);
        bool slow = is_slow(&r->w, cost);
        double want = expected_cost(&r->w, cost, slow);
        CHECK(mk_writer_realloc(&r->w, t, cost, slow, k, size, old, a, stack));
        ev = (mk_event_t){.kind = (uint8_t)k,
                          .time = t,
                          .size = size,
                          .addr = a,
                          .old_addr = old,
                          .stack = stack,
                          .slow = slow,
                          .cost = (float)want};
    } else { /* SYSMAP */
        unsigned k = kinds_of[MK_CLASS_SYSMAP][rnd(h, nkinds_of[MK_CLASS_SYSMAP])];
        size_t size = (size_t)rnd(h, 1ull << 34);
        uintptr_t a = (uintptr_t)rnd(h, 1ull << 47) & ~(uintptr_t)4095;
        uintptr_t old =
            k == MK_K_MREMAP ? (uintptr_t)rnd(h, 1ull << 47) & ~(uintptr_t)4095 : 0;
        uint64_t t = next_tick(r);
        mk_writer_sysmap(&r->w, t, k, size, a, old);
        ev = (mk_event_t){
            .kind = (uint8_t)k, .time = t, .size = size, .addr = a, .old_addr = old};
    }
    expect(r, ev);
}

/* Closes the writer's record, decodes it, and compares. */
static void end_record(run_t *r)
{
    uint8_t head[MK_HEAD_MAX];
    const void *part[1 + MK_S_COUNT];
    size_t len[1 + MK_S_COUNT], total = 0;
    mk_writer_end(&r->w, r->thread, 4242, head, part, len);
    for (int i = 0; i < 1 + MK_S_COUNT; i++)
        total += len[i];
    for (int i = 0; i < MK_S_COUNT; i++)
        r->stream_bytes[i] += len[1 + i];
    uint8_t *raw = malloc(total ? total : 1), *p = raw;
    for (int i = 0; i < 1 + MK_S_COUNT; i++) {
        memcpy(p, part[i], len[i]);
        p += len[i];
    }
    r->x->seen = 0;
    if (r->records == 0 && total > 3) { /* a head cut short is damage, said */
        CHECK(!mk_trace_decode_events(&r->tr, &r->dec, raw, 3, on_event, r->x));
        CHECK(strstr(r->tr.damage, "malformed events") != NULL);
        CHECK_EQ(r->x->seen, 0);
        r->tr.damage[0] = '\0';
    }
    CHECK(mk_trace_decode_events(&r->tr, &r->dec, raw, total, on_event, r->x));
    CHECK_EQ(r->x->seen, r->x->n);
    CHECK(r->tr.damage[0] == 0);
    r->events += r->x->n;
    r->records++;
    r->x->n = 0;
    free(raw);
    /* Every stack defined so far reads back whole. */
    for (uint32_t id = 1; id <= r->nstacks; id++) {
        const mk_stack_def_t *d = mk_trace_stack(&r->tr, id);
        CHECK(d != NULL);
        if (!d)
            break;
        CHECK_EQ(d->depth, stacks[id].depth);
        for (uint32_t i = 0; i < d->depth && i < stacks[id].depth; i++)
            CHECK_EQ(d->frames[i], stacks[id].frames[i]);
    }
    mk_writer_begin(&r->w, r->tick, r->tick);
}

/* index_max: 0, or a bound on both sides' live index smaller than the
 * blocks the heap holds, so that its eviction runs (format.h). */
static void roundtrip(uint64_t seed, uint64_t nevents, uint32_t index_max)
{
    run_t *r = calloc(1, sizeof *r);
    r->heap.rng = seed;
    r->heap.next = 0x10000;
    r->x = calloc(1, sizeof *r->x);
    r->thread = 1 + (uint32_t)(seed % 7);
    r->tick = 1000; /* ticks from the start: 1 ns each below */
    writer_init(&r->w);
    r->w.cost_overhead_x16 = (uint32_t)rnd(&r->heap, 1600);
    r->w.slow_cycles = 1000 + rnd(&r->heap, 100000); /* some of random_cost's are slow */
    r->w.cost_rng = seed;
    r->w.cost_left = mk_cost_stride(&r->w.cost_rng);
    mk_writer_begin(&r->w, r->tick, r->tick);
    r->tr.header.flags = MK_TF_COSTS;
    r->tr.header.version = MK_TRACE_VERSION;
    r->tr.ns_per_tick = 1.0;
    r->scratch = calloc(1, sizeof *r->scratch);
    mk_decoder_init(&r->dec, r->scratch);
    if (index_max) {
        mk_index_set_version(&r->dec.live, MK_TRACE_VERSION);
        r->w.live.max = r->dec.live.max = index_max;
    }
    memset(stacks, 0, sizeof stacks);

    for (uint64_t i = 0; i < nevents && !check_failures; i++) {
        if (!mk_writer_has_room(&r->w))
            end_record(r);
        one_event(r);
        if (rnd(&r->heap, 3000) == 0) /* a flush mid-record: the thread ended */
            end_record(r);
    }
    if (!check_failures)
        end_record(r);
    CHECK(r->records > 1);
    for (int i = 0; i < MK_S_COUNT; i++) /* every coding path was taken */
        CHECK(r->stream_bytes[i] > 0);
    printf("seed %" PRIu64 ": %" PRIu64 " events in %" PRIu64 " records, %u stacks\n",
           seed, r->events, r->records, r->nstacks);

    mk_decoder_free(&r->dec);
    free(r->scratch);
    for (size_t i = 0; i < r->tr.stacks_cap; i++)
        free(r->tr.stacks[i].frames);
    free(r->tr.stacks);
    writer_free(&r->w);
    free(r->x);
    free(r);
}

/* ---- versions 1 to 3: stored traces, pinned field by field ---- */

typedef struct digest {
    uint64_t h, n;
} digest_t;

static void fold(digest_t *d, uint64_t v)
{
    d->h = (d->h ^ v) * 0x100000001b3ull; /* FNV-1a over 64-bit words */
}

static bool digest_event(void *ctx, const mk_event_t *ev)
{
    digest_t *d = ctx;
    fold(d, ev->kind);
    fold(d, ev->time);
    fold(d, ev->size);
    fold(d, ev->align);
    fold(d, ev->addr);
    fold(d, ev->old_addr);
    fold(d, ev->stack);
    fold(d, ev->thread);
    d->n++;
    return true;
}

static void check_stored(const char *dir, const char *name, uint32_t version,
                         uint64_t events, uint64_t digest)
{
    char path[4096], err[256];
    snprintf(path, sizeof path, "%s/%s.mkt", dir, name);
    mk_trace_t *tr = mk_trace_open(path, err, sizeof err);
    CHECK(tr != NULL);
    if (!tr) {
        fprintf(stderr, "%s\n", err);
        return;
    }
    CHECK_EQ(tr->header.version, version);
    digest_t d = {0xcbf29ce484222325ull, 0};
    mk_trace_walk(tr, digest_event, &d);
    for (uint32_t id = 0; id < tr->stacks_cap; id++) { /* the stacks too */
        const mk_stack_def_t *s = mk_trace_stack(tr, id);
        for (uint32_t i = 0; s && i < s->depth; i++)
            fold(&d, s->frames[i] ^ id);
    }
    CHECK(tr->damage[0] == 0);
    printf("%s: version %u, %" PRIu64 " events, digest %016" PRIx64 "\n", name,
           tr->header.version, d.n, d.h);
    CHECK_EQ(d.n, events);
    CHECK_EQ(d.h, digest);
    mk_trace_close(tr);
}

int main(int argc, char **argv)
{
    sort_kinds();
    CHECK(nkinds_of[MK_CLASS_ALLOC] > 10 && nkinds_of[MK_CLASS_FREE] >= 3 &&
          nkinds_of[MK_CLASS_REALLOC] == 2 && nkinds_of[MK_CLASS_SYSMAP] >= 4);
    static const uint64_t seeds[] = {1, 2, 3, 0x9e3779b97f4a7c15ull, 12345678901ull};
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++)
        roundtrip(seeds[i], 200000, 0);
    /* the heap holds up to 20,000; a lean map of 600 would be 1,024 slots,
     * a sparse one 2,048, which tells a decoder sized as version 3 apart */
    roundtrip(7, 200000, 600);

    if (argc > 1) {
        check_stored(argv[1], "v1-bulk", 1, 600000, 0xf4bdbc2055e8ed0bull);
        check_stored(argv[1], "v1-threads", 1, 82074, 0x96f7d691d3e336b4ull);
        check_stored(argv[1], "v2-basic", 2, 54, 0x54ec9b3c269d81d0ull);
        check_stored(argv[1], "v2-bulk", 2, 600000, 0x73a161e6f76fa028ull);
        check_stored(argv[1], "v2-threads", 2, 82074, 0xa26575b8c2db22d4ull);
        check_stored(argv[1], "v3-basic", 3, 54, 0x90d5cf5e1601240cull);
        check_stored(argv[1], "v3-bulk", 3, 600000, 0x148af20e9e64db79ull);
        check_stored(argv[1], "v3-threads", 3, 82074, 0x448c2d34e96a71bcull);
    }
    return check_report("test_roundtrip");
}
