/*
 * test_profile.c - the replay's block accounting against a model.
 *
 * Random allocations, frees and reallocs go to mk_profile_event and to a
 * plain model (an array of live blocks searched linearly). Each stack's
 * calls, bytes, frees, live and leaked blocks and bytes, lifetimes,
 * cross-thread frees and realloc growth, and the heap's peak, must agree
 * exactly. Some blocks are wide (profile.c: of 256 MiB or more, or of a
 * thread numbered past 16,383), so they take the wide table's path; some
 * allocations land on a live address (a free the trace missed). A sampled
 * run checks that a block's death takes off exactly the weight its birth
 * added: its record keeps no weight.
 */
#include "check.h"
#include "../../src/analyze/profile.h"

#include <inttypes.h>

#define MAX_LIVE 3000
#define STACKS   40

typedef struct model_block {
    uint64_t addr, size, time;
    uint32_t stack, thread;
    bool from_realloc;
} model_block_t;

typedef struct model_stack {
    uint64_t calls, bytes, frees, live_blocks, live_bytes, lifetime_ns;
    uint64_t cross_thread, realloc_grows, realloc_steps;
} model_stack_t;

typedef struct model {
    model_block_t live[MAX_LIVE];
    size_t nlive;
    model_stack_t stacks[STACKS + 1]; /* by stack id, 1..STACKS */
    uint64_t live_bytes, live_blocks, max_bytes, max_blocks;
} model_t;

static model_t model;

static uint64_t pick_size(uint64_t *rng)
{
    uint64_t r = xorshift64(rng) % 100;
    if (r == 0) /* the widest narrow size, and past it */
        return (1ull << 28) - 1 + xorshift64(rng) % 3;
    if (r == 1)
        return (5ull << 30) + 16; /* past 32 bits */
    return 1 + xorshift64(rng) % 2000;
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
    s->calls++;
    s->bytes += ev->size;
    if (from_realloc && ev->size > old_size)
        s->realloc_grows++;
    model.live[model.nlive++] = (model_block_t){ev->addr,  ev->size,   ev->time,
                                                ev->stack, ev->thread, from_realloc};
    s->live_blocks++;
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
    if (how != REPLACED)
        s->frees++;
    if (how == FREED) {
        s->lifetime_ns += ev->time - b.time;
        s->cross_thread += ev->thread != b.thread;
    }
    return b;
}

/* One random event, to both. */
static void step(mk_profile_t *p, uint64_t *rng, uint64_t *now, bool grow)
{
    *now += xorshift64(rng) % 1000 + 1; /* never a tie: no free waits for its block */
    mk_event_t ev = {.time = *now,
                     .thread = pick_thread(rng),
                     .stack = 1 + (uint32_t)(xorshift64(rng) % STACKS)};
    uint64_t r = xorshift64(rng) % 100;
    bool room = model.nlive < MAX_LIVE;
    if (model.nlive && (r < 40 - (grow ? 15 : 0) || !room)) {
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
    for (uint32_t id = 1; id <= STACKS; id++) {
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
    }
    CHECK(p->max_allocated == model.max_bytes);
    CHECK(p->peak_blocks == model.max_blocks);
    CHECK(p->live_blocks == model.live_blocks && p->live_bytes == model.live_bytes);
}

/* Exact counts: the model's numbers, stack by stack. */
static void run_exact(unsigned long long seed, int events)
{
    memset(&model, 0, sizeof model);
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
        run_exact(seed + i, 20000);
    for (unsigned i = 0; i < 2; i++)
        run_sampled(seed + 100 + i, 10000);
    return check_report("test_profile");
}
