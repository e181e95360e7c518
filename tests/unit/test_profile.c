/*
 * test_profile.c - the replay's block accounting against a model.
 *
 * Random allocations, frees and reallocs go to mk_profile_event and to a
 * plain model (an array of live blocks searched linearly). Each stack's
 * calls, bytes, frees, live and leaked blocks and bytes, lifetimes,
 * cross-thread frees and realloc growth, and the heap's peak, must agree
 * exactly, and so must the counters the findings are built from: sizes
 * (smallest, largest, tiny), each stack's own live maximum, temporaries,
 * frees of the youngest and oldest block in the order window (LIFO, FIFO)
 * and the pairs of stacks allocated together and freed together. Events
 * that free a stack's youngest or oldest block, a thread's latest
 * allocation, or a block and its thread neighbour make those counters
 * large; runs with few stacks overflow the order window. Some blocks are
 * wide (profile.c: of 256 MiB or more, or of a thread numbered past
 * 16,383), so they take the wide table's path; some allocations land on a
 * live address (a free the trace missed). A sampled
 * run checks that a block's death takes off exactly the weight its birth
 * added: its record keeps no weight.
 */
#include "check.h"
#include "../../src/analyze/profile.h"

#include <inttypes.h>

#define MAX_LIVE   3000
#define MAX_STACKS 40
#define WINDOW     256 /* MK_ORDER_WINDOW, written out: the model's own number */
#define THREADS    8   /* pick_thread's distinct threads, at most */

typedef struct model_block {
    uint64_t addr, size, time;
    uint64_t serial, prev; /* allocation number; its thread's previous one's */
    uint32_t stack, thread;
    bool from_realloc;
} model_block_t;

typedef struct model_stack {
    uint64_t calls, bytes, frees, live_blocks, live_bytes, lifetime_ns;
    uint64_t cross_thread, realloc_grows, realloc_steps;
    uint64_t min_size, max_size, tiny, max_live_blocks;
    uint64_t temporaries, ordered, lifo, fifo;
    uint64_t window[WINDOW]; /* its live blocks' serials, the newest WINDOW */
    size_t nwindow;
} model_stack_t;

/* A thread's latest allocation, and its latest free not yet paired. */
typedef struct model_thread {
    uint32_t id;
    uint64_t last_alloc, free_serial, free_prev;
    uint32_t free_stack;
} model_thread_t;

typedef struct model {
    model_block_t live[MAX_LIVE];
    size_t nlive;
    model_stack_t stacks[MAX_STACKS + 1]; /* by stack id, 1..nstacks */
    model_thread_t threads[THREADS];
    size_t nthreads;
    uint64_t pairs[MAX_STACKS + 1][MAX_STACKS + 1]; /* [older][younger] */
    uint64_t serial;
    uint64_t live_bytes, live_blocks, max_bytes, max_blocks;
} model_t;

static model_t model;
static uint32_t nstacks;

static uint64_t pick_size(uint64_t *rng)
{
    uint64_t r = xorshift64(rng) % 100;
    if (r == 0) /* the widest narrow size, and past it */
        return (1ull << 28) - 1 + xorshift64(rng) % 3;
    if (r == 1)
        return (5ull << 30) + 16; /* past 32 bits */
    if (r < 20)                   /* around the tiny limit, 32 bytes */
        return 24 + xorshift64(rng) % 16;
    return 1 + xorshift64(rng) % 2000;
}

static model_thread_t *model_thread(uint32_t id)
{
    for (size_t i = 0; i < model.nthreads; i++)
        if (model.threads[i].id == id)
            return &model.threads[i];
    CHECK(model.nthreads < THREADS);
    model.threads[model.nthreads] = (model_thread_t){.id = id};
    return &model.threads[model.nthreads++];
}

/* The order window of a stack: serials ascending, the oldest forgotten
 * when a newer one does not fit. */
static void window_push(model_stack_t *s, uint64_t serial)
{
    if (s->nwindow == WINDOW)
        memmove(s->window, s->window + 1, --s->nwindow * sizeof *s->window);
    s->window[s->nwindow++] = serial;
}

/* Takes serial out; 0 if the window did not hold it, else 1, | 2 if it was
 * the newest, | 4 if it was the oldest. */
static unsigned window_take(model_stack_t *s, uint64_t serial)
{
    for (size_t i = 0; i < s->nwindow; i++) {
        if (s->window[i] != serial)
            continue;
        unsigned r = 1 | (i == s->nwindow - 1 ? 2u : 0u) | (i == 0 ? 4u : 0u);
        memmove(s->window + i, s->window + i + 1,
                (s->nwindow - i - 1) * sizeof *s->window);
        s->nwindow--;
        return r;
    }
    return 0;
}

static uint32_t pick_thread(uint64_t *rng)
{
    uint64_t r = xorshift64(rng) % 50;
    return r == 0 ? 16383 : r == 1 ? 16384 : r == 2 ? 70000 : (uint32_t)(r % 3);
}

/* An address not live in the model (granules of a few pages, so the live
 * table's runs meet). */
static uint64_t fresh_addr(uint64_t *rng)
{
    for (;;) {
        uint64_t a = 0x7f0000100000ull + (xorshift64(rng) % 65536) * 16;
        bool taken = false;
        for (size_t i = 0; i < model.nlive && !taken; i++)
            taken = model.live[i].addr == a;
        if (!taken)
            return a;
    }
}

static void model_born(const mk_event_t *ev, bool from_realloc, uint64_t old_size)
{
    model_stack_t *s = &model.stacks[ev->stack];
    model_thread_t *t = model_thread(ev->thread);
    if (!s->calls || ev->size < s->min_size)
        s->min_size = ev->size;
    if (ev->size > s->max_size)
        s->max_size = ev->size;
    s->tiny += ev->size < 32;
    s->calls++;
    s->bytes += ev->size;
    if (from_realloc && ev->size > old_size)
        s->realloc_grows++;
    model.live[model.nlive++] = (model_block_t){.addr = ev->addr,
                                                .size = ev->size,
                                                .time = ev->time,
                                                .serial = ++model.serial,
                                                .prev = t->last_alloc,
                                                .stack = ev->stack,
                                                .thread = ev->thread,
                                                .from_realloc = from_realloc};
    t->last_alloc = model.serial;
    window_push(s, model.serial);
    s->live_blocks++;
    if (s->live_blocks > s->max_live_blocks)
        s->max_live_blocks = s->live_blocks;
    s->live_bytes += ev->size;
    model.live_blocks++;
    model.live_bytes += ev->size;
    if (model.live_bytes > model.max_bytes)
        model.max_bytes = model.live_bytes;
    if (model.live_blocks > model.max_blocks)
        model.max_blocks = model.live_blocks;
}

enum death { FREED, REALLOCATED, REPLACED };

static model_block_t model_dies(size_t i, const mk_event_t *ev, enum death how)
{
    model_block_t b = model.live[i];
    model.live[i] = model.live[--model.nlive];
    model_stack_t *s = &model.stacks[b.stack];
    s->live_blocks--;
    s->live_bytes -= b.size;
    model.live_blocks--;
    model.live_bytes -= b.size;
    unsigned ord = window_take(s, b.serial);
    if (how != REPLACED)
        s->frees++;
    if (how != FREED)
        return b;
    s->lifetime_ns += ev->time - b.time;
    s->ordered += ord != 0;
    s->lifo += (ord & 2) != 0;
    s->fifo += (ord & 4) != 0;
    if (ev->thread != b.thread) {
        s->cross_thread++;
        return b;
    }
    model_thread_t *t = model_thread(ev->thread);
    s->temporaries += t->last_alloc == b.serial;
    /* a pair: this block and the thread's last free were allocated one
     * right after the other by this thread, at two stacks */
    bool older = t->free_prev == b.serial, younger = b.prev && b.prev == t->free_serial;
    if (t->free_serial && t->free_stack != b.stack && (older || younger)) {
        if (older)
            model.pairs[b.stack][t->free_stack]++;
        else
            model.pairs[t->free_stack][b.stack]++;
        t->free_serial = 0;
    } else {
        t->free_serial = b.serial;
        t->free_prev = b.prev;
        t->free_stack = b.stack;
    }
    return b;
}

/* The live block a directed free takes: of stack s the youngest or the
 * oldest, the thread's latest allocation, or the block its thread
 * allocated right before or after the one just freed. SIZE_MAX: none. */
enum pick { YOUNGEST, OLDEST, LATEST, NEIGHBOUR };

static size_t pick_live(enum pick how, uint32_t s, uint32_t thread,
                        const model_block_t *freed)
{
    size_t best = SIZE_MAX;
    const model_thread_t *t = how == LATEST ? model_thread(thread) : NULL;
    for (size_t i = 0; i < model.nlive; i++) {
        const model_block_t *b = &model.live[i];
        bool take;
        switch (how) {
        case YOUNGEST:
            take = b->stack == s &&
                   (best == SIZE_MAX || b->serial > model.live[best].serial);
            break;
        case OLDEST:
            take = b->stack == s &&
                   (best == SIZE_MAX || b->serial < model.live[best].serial);
            break;
        case LATEST:
            take = b->serial == t->last_alloc;
            break;
        default:
            take = b->serial == freed->prev || b->prev == freed->serial;
        }
        if (take)
            best = i;
    }
    return best;
}

/* One random event, to both. */
static void step(mk_profile_t *p, uint64_t *rng, uint64_t *now, bool grow)
{
    *now += xorshift64(rng) % 1000 + 1; /* never a tie: no free waits for its block */
    mk_event_t ev = {.time = *now,
                     .thread = pick_thread(rng),
                     .stack = 1 + (uint32_t)(xorshift64(rng) % nstacks)};
    uint64_t r = xorshift64(rng) % 100;
    bool room = model.nlive < MAX_LIVE;
    size_t d = SIZE_MAX;
    if (model.nlive && r >= 90) /* a free the findings look for */
        d = pick_live(r < 93   ? YOUNGEST
                      : r < 96 ? OLDEST
                               : LATEST,
                      ev.stack, ev.thread, NULL);
    if (d != SIZE_MAX) {
        ev.kind = MK_K_FREE;
        ev.addr = model.live[d].addr;
        if (r >= 96 || xorshift64(rng) % 2) /* the allocating thread's own free */
            ev.thread = model.live[d].thread;
        model_block_t b = model_dies(d, &ev, FREED);
        CHECK(mk_profile_event(p, &ev));
        size_t n = pick_live(NEIGHBOUR, 0, 0, &b);
        if (n == SIZE_MAX || model.live[n].thread != ev.thread || r % 2)
            return;
        /* and its neighbour, freed right after: a pair */
        ev.time = ++*now;
        ev.addr = model.live[n].addr;
        model_dies(n, &ev, FREED);
    } else if (model.nlive && (r < 40 - (grow ? 15 : 0) || !room)) {
        size_t i = xorshift64(rng) % model.nlive;
        ev.kind = MK_K_FREE;
        ev.addr = model.live[i].addr;
        model_dies(i, &ev, FREED);
    } else if (model.nlive && r < 55) {
        size_t i = xorshift64(rng) % model.nlive;
        ev.kind = MK_K_REALLOC;
        ev.old_addr = model.live[i].addr;
        ev.size = pick_size(rng);
        ev.addr = xorshift64(rng) % 2 ? ev.old_addr : fresh_addr(rng);
        model_block_t old = model_dies(i, &ev, REALLOCATED);
        if (old.from_realloc && ev.size > old.size)
            model.stacks[ev.stack].realloc_steps++;
        model_born(&ev, true, old.size);
    } else if (model.nlive && r < 57) {
        /* an allocation of a live address: the trace missed its free */
        size_t i = xorshift64(rng) % model.nlive;
        ev.kind = MK_K_MALLOC;
        ev.addr = model.live[i].addr;
        ev.size = pick_size(rng);
        model_dies(i, &ev, REPLACED);
        model_born(&ev, false, 0);
    } else {
        ev.kind = MK_K_MALLOC;
        ev.addr = fresh_addr(rng);
        ev.size = pick_size(rng);
        model_born(&ev, false, 0);
    }
    CHECK(mk_profile_event(p, &ev));
}

static const mk_stack_agg_t *agg_of(mk_profile_t *p, uint32_t stack)
{
    for (size_t i = 0; i < p->nstacks; i++)
        if (p->stacks[i].stack == stack)
            return &p->stacks[i];
    return NULL;
}

static void compare(mk_profile_t *p, unsigned long long seed)
{
    for (uint32_t id = 1; id <= nstacks; id++) {
        const model_stack_t *m = &model.stacks[id];
        const mk_stack_agg_t *a = agg_of(p, id);
        if (!a) {
            CHECK_MSG(!m->calls, "stack %u missing, seed %#llx\n", id, seed);
            continue;
        }
        CHECK_MSG(a->calls == m->calls && a->bytes == m->bytes && a->frees == m->frees,
                  "stack %u: calls %" PRIu64 "/%" PRIu64 ", frees %" PRIu64 "/%" PRIu64
                  ", seed %#llx\n",
                  id, a->calls, m->calls, a->frees, m->frees, seed);
        CHECK_MSG(a->leaked_blocks == m->live_blocks && a->leaked_bytes == m->live_bytes,
                  "stack %u: leaked %" PRIu64 "/%" PRIu64 " blocks, seed %#llx\n", id,
                  a->leaked_blocks, m->live_blocks, seed);
        CHECK_MSG(a->lifetime_ns == m->lifetime_ns && a->cross_thread == m->cross_thread,
                  "stack %u: lifetimes %" PRIu64 "/%" PRIu64 ", seed %#llx\n", id,
                  a->lifetime_ns, m->lifetime_ns, seed);
        CHECK_MSG(a->realloc_grows == m->realloc_grows &&
                      a->realloc_steps == m->realloc_steps,
                  "stack %u: realloc grows %" PRIu64 "/%" PRIu64 " steps %" PRIu64
                  "/%" PRIu64 ", seed %#llx\n",
                  id, a->realloc_grows, m->realloc_grows, a->realloc_steps,
                  m->realloc_steps, seed);
        CHECK_MSG(a->min_size == m->min_size && a->max_size == m->max_size &&
                      a->tiny == m->tiny && a->max_live_blocks == m->max_live_blocks,
                  "stack %u: sizes %" PRIu64 "-%" PRIu64 "/%" PRIu64 "-%" PRIu64
                  ", tiny %" PRIu64 "/%" PRIu64 ", live max %" PRIu64 "/%" PRIu64
                  ", seed %#llx\n",
                  id, a->min_size, a->max_size, m->min_size, m->max_size, a->tiny,
                  m->tiny, a->max_live_blocks, m->max_live_blocks, seed);
        CHECK_MSG(a->temporaries == m->temporaries && a->ordered_frees == m->ordered &&
                      a->lifo_frees == m->lifo && a->fifo_frees == m->fifo,
                  "stack %u: temporaries %" PRIu64 "/%" PRIu64 ", ordered %" PRIu64
                  "/%" PRIu64 ", lifo %" PRIu64 "/%" PRIu64 ", fifo %" PRIu64 "/%" PRIu64
                  ", seed %#llx\n",
                  id, a->temporaries, m->temporaries, a->ordered_frees, m->ordered,
                  a->lifo_frees, m->lifo, a->fifo_frees, m->fifo, seed);
    }
    /* every pair the model saw, and no other */
    uint64_t model_pairs = 0, replay_pairs = 0;
    for (uint32_t o = 1; o <= nstacks; o++)
        for (uint32_t y = 1; y <= nstacks; y++) {
            const mk_kv_t *e = mk_kv_find(&p->pairs, ((uint64_t)o << 32 | y) + 1);
            uint64_t got = e ? e->a : 0;
            model_pairs += model.pairs[o][y];
            CHECK_MSG(got == model.pairs[o][y],
                      "pair %u,%u: %" PRIu64 "/%" PRIu64 ", seed %#llx\n", o, y, got,
                      model.pairs[o][y], seed);
        }
    for (size_t i = 0; i < p->pairs.cap; i++)
        replay_pairs += p->pairs.slots[i].key ? p->pairs.slots[i].a : 0;
    CHECK_MSG(replay_pairs == model_pairs, "pairs %" PRIu64 "/%" PRIu64 ", seed %#llx\n",
              replay_pairs, model_pairs, seed);
    /* the run made each counter large, so the agreement says something */
    model_stack_t sum = {0};
    for (uint32_t id = 1; id <= nstacks; id++) {
        sum.frees += model.stacks[id].frees;
        sum.ordered += model.stacks[id].ordered;
        sum.lifo += model.stacks[id].lifo;
        sum.fifo += model.stacks[id].fifo;
        sum.temporaries += model.stacks[id].temporaries;
        sum.tiny += model.stacks[id].tiny;
    }
    CHECK_MSG(sum.lifo >= 200 && sum.fifo >= 200 && sum.temporaries >= 200 &&
                  sum.tiny >= 200 && model_pairs >= 100,
              "lifo %" PRIu64 ", fifo %" PRIu64 ", temporaries %" PRIu64 ", tiny %" PRIu64
              ", pairs %" PRIu64 "\n",
              sum.lifo, sum.fifo, sum.temporaries, sum.tiny, model_pairs);
    if (nstacks < MAX_STACKS) /* blocks the window forgot: frees it cannot judge */
        CHECK_MSG(sum.ordered + 1000 < sum.frees, "ordered %" PRIu64 " of %" PRIu64 "\n",
                  sum.ordered, sum.frees);
    CHECK(p->max_allocated == model.max_bytes);
    CHECK(p->peak_blocks == model.max_blocks);
    CHECK(p->live_blocks == model.live_blocks && p->live_bytes == model.live_bytes);
}

/* Exact counts: the model's numbers, stack by stack. */
static void run_exact(unsigned long long seed, int events, uint32_t stacks)
{
    memset(&model, 0, sizeof model);
    nstacks = stacks;
    mk_profile_t p;
    mk_profile_init(&p, NULL);
    uint64_t rng = seed | 1, now = 0;
    for (int i = 0; i < events; i++)
        step(&p, &rng, &now, i < events / 2); /* the heap grows, then shrinks */
    mk_profile_finish(&p);
    CHECK(!p.oom);
    compare(&p, seed);
    mk_profile_free(&p);
}

/* A sampled replay: whatever weights the blocks got, every one freed
 * takes its weight back off. */
static void run_sampled(unsigned long long seed, int events)
{
    memset(&model, 0, sizeof model);
    nstacks = MAX_STACKS;
    mk_profile_t p;
    mk_profile_init(&p, NULL);
    p.met_trace = true; /* no trace: say it was sampled */
    p.sampled = true;
    p.sample_mean = 512;
    p.sample_seed = seed;
    uint64_t rng = seed | 1, now = 0;
    for (int i = 0; i < events; i++)
        step(&p, &rng, &now, true);
    CHECK(p.live_blocks >= model.live_blocks); /* weights are >= 1 */
    while (model.nlive) {
        mk_event_t ev = {.time = ++now, .kind = MK_K_FREE, .addr = model.live[0].addr};
        model_dies(0, &ev, FREED);
        CHECK(mk_profile_event(&p, &ev));
    }
    CHECK_MSG(p.live_blocks == 0 && p.live_bytes == 0,
              "%" PRIu64 " blocks, %" PRIu64 " bytes left, seed %#llx\n", p.live_blocks,
              p.live_bytes, seed);
    uint64_t stack_blocks = 0;
    for (size_t i = 0; i < p.nstacks; i++)
        stack_blocks += p.stacks[i].live_blocks;
    CHECK(stack_blocks == 0);
    mk_profile_free(&p); /* not finished: that takes the exact counts of a trace */
}

int main(void)
{
    unsigned long long seed = test_seed();
    for (unsigned i = 0; i < 4; i++)
        run_exact(seed + i, 20000, MAX_STACKS);
    for (unsigned i = 0; i < 2; i++) /* more live blocks a stack than the window */
        run_exact(seed + 10 + i, 20000, 3);
    for (unsigned i = 0; i < 2; i++)
        run_sampled(seed + 100 + i, 10000);
    return check_report("test_profile");
}
