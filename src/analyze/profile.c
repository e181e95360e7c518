/*
 * profile.c - replay: events in time order -> totals, stacks, peak, leaks,
 * lifetimes, release orders, pairs.
 *
 * Every live block has a record (mk_block_t) reached from the address table.
 * The per-event work is a hash lookup, a few counters and, for a stack with
 * several live blocks, a search in its order window: O(1) amortized, so the
 * replay runs at the speed of the trace decoder.
 */
#define _GNU_SOURCE
#include "profile.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A live block: 32 bytes, and 8 more in the live table. A parser's trace
 * holds millions at once, and a replay of one spends as much time in the
 * kernel zeroing their pages as on the events; so each field is as narrow as
 * real traces need. A block whose size, aggregate or thread is wider than
 * its field (256 MiB, 2^20 stacks, 16,383 threads) is `wide`: all three are
 * then in the wide table (wide_put), exact. Its weight (sampled traces) is
 * not kept: weight_of finds it again from its serial and size. While on the
 * free list, `serial` links to the next. */
struct mk_block {
    uint64_t addr;
    uint64_t time;          /* of its allocation */
    uint64_t serial : 40;   /* allocation number, all threads (pairs, temporaries,
                             * and the order window: ascending within a stack) */
    uint64_t prev_gap : 24; /* serial - the allocating thread's allocation before
                             * it; 0: none, or too far back to pair with */
    uint64_t size : 28;     /* these three are 0 when wide */
    uint64_t agg : 20;      /* index of its stack's aggregate */
    uint64_t thread : 14;
    uint64_t from_realloc : 1; /* a realloc's new block */
    uint64_t wide : 1;
};

_Static_assert(sizeof(struct mk_block) == 32, "a block record is 32 bytes");

#define MK_NARROW_SIZE   ((1ull << 28) - 1) /* the largest values that fit */
#define MK_NARROW_AGG    ((1u << 20) - 1)
#define MK_NARROW_THREAD ((1u << 14) - 1)
#define MK_GAP_MAX       ((1u << 24) - 1)
/* Allocations a replay numbers at most: at its ten million events a second,
 * a trace with more takes 30 hours to read. */
#define MK_SERIAL_MAX ((1ull << 40) - 1)

/* The fields a wide block keeps in the wide table. */
typedef struct block_fields {
    uint64_t size;
    uint32_t agg, thread;
} block_fields_t;

static uint64_t prev_serial(const mk_block_t *b)
{
    return b->prev_gap ? b->serial - b->prev_gap : 0;
}

/* Per thread: its latest allocation, and its latest free not yet paired. */
struct mk_thread_state {
    uint64_t last_alloc;             /* serial, 0: none */
    uint64_t free_serial, free_prev; /* the last free's block, 0: none */
    uint32_t free_stack;
    bool seen; /* counted in mk_profile_t.threads */
};

/* A free of a block not live yet; see hold_free. */
typedef struct mk_pending {
    uint64_t addr, time;
    uint32_t thread;
    uint8_t kind;
} pending_t;

void mk_profile_init(mk_profile_t *p, const mk_profile_opts_t *opts)
{
    memset(p, 0, sizeof *p);
    p->pairs = mk_kv_heap_table();
    p->stack_index = mk_kv_heap_table();
    p->thread_index = mk_kv_heap_table();
    p->wide = mk_kv_heap_table();
    p->opts.thread = -1;
    if (opts)
        p->opts = *opts;
    p->filtered =
        p->opts.stack_pass || p->opts.thread >= 0 || p->opts.from_ns || p->opts.to_ns;
    p->peak_epoch = 1; /* stacks start at epoch 0: their first touch snapshots */
    p->last_agg = UINT32_MAX;
}

/* ---- small helpers ---- */

/* Room for one more of *cap elements when used of them are taken: the array
 * doubles (from first). Not mk_grow, which zeroes what it adds: aggregates
 * are written whole when made, so a doubled array's untouched tail costs
 * address space, not memory (a compiler's trace has tens of thousands of
 * stacks). Block records grow by mk_table_resize instead (new_block). */
static bool room_for_one(void **buf, size_t *cap, size_t used, size_t first, size_t elem)
{
    if (used < *cap)
        return true;
    size_t n = *cap ? 2 * *cap : first;
    void *b = realloc(*buf, n * elem);
    if (!b)
        return false;
    *buf = b;
    *cap = n;
    return true;
}

static bool grow_stacks(mk_profile_t *p)
{
    return room_for_one((void **)&p->stacks, &p->stacks_cap, p->nstacks, 64,
                        sizeof *p->stacks);
}

mk_stack_agg_t *mk_profile_agg(mk_profile_t *p, uint32_t stack)
{
    /* Hot loops allocate from one stack again and again: remember the last. */
    if (p->last_agg != UINT32_MAX && p->stacks[p->last_agg].stack == stack)
        return &p->stacks[p->last_agg];
    bool fresh;
    mk_kv_t *e = mk_kv_put(&p->stack_index, (uint64_t)stack + 1, &fresh);
    if (!e)
        return NULL;
    if (fresh) {
        if (!grow_stacks(p)) {
            mk_kv_remove(&p->stack_index, e);
            return NULL;
        }
        e->a = p->nstacks++;
        memset(&p->stacks[e->a], 0, sizeof *p->stacks);
        p->stacks[e->a].stack = stack;
    }
    p->last_agg = (uint32_t)e->a;
    return &p->stacks[e->a];
}

/* The state of a thread, made on its first event. Consecutive events are
 * often one thread's, so the last one found is checked first. */
static mk_thread_state_t *thread_of(mk_profile_t *p, uint32_t thread)
{
    if (p->nthr && p->last_thread == thread)
        return &p->thr[p->last_thr];
    bool fresh;
    mk_kv_t *e = mk_kv_put(&p->thread_index, (uint64_t)thread + 1, &fresh);
    if (!e)
        return NULL;
    if (fresh) {
        if (!mk_grow((void **)&p->thr, &p->thr_cap, p->nthr + 1, sizeof *p->thr)) {
            mk_kv_remove(&p->thread_index, e);
            return NULL;
        }
        e->a = p->nthr++;
    }
    p->last_thread = thread;
    p->last_thr = (uint32_t)e->a;
    return &p->thr[e->a];
}

/* A block record: a freed one, else the next of the array. */
static uint64_t new_block(mk_profile_t *p)
{
    if (p->free_block) {
        uint64_t i = p->free_block - 1;
        p->free_block = p->blocks[i].serial;
        return i;
    }
    if (p->blocks_used == p->blocks_cap) {
        size_t cap = p->blocks_cap ? 2 * p->blocks_cap : 1024;
        mk_block_t *b =
            mk_table_resize(p->blocks, p->blocks_cap * sizeof *b, cap * sizeof *b);
        if (!b)
            return UINT64_MAX;
        p->blocks = b;
        p->blocks_cap = cap;
    }
    return p->blocks_used++;
}

/* Block record i keeps its wide fields (block_born decided it is wide). */
static bool wide_put(mk_profile_t *p, uint64_t i, block_fields_t f)
{
    bool fresh;
    mk_kv_t *e = mk_kv_put(&p->wide, i + 1, &fresh);
    if (!e)
        return false;
    e->a = f.size;
    e->b = (uint64_t)f.thread << 32 | f.agg;
    return true;
}

static block_fields_t fields_of(const mk_profile_t *p, const mk_block_t *b, uint64_t i)
{
    if (__builtin_expect(!b->wide, 1))
        return (block_fields_t){b->size, b->agg, b->thread};
    const mk_kv_t *e = mk_kv_find(&p->wide, i + 1);
    assert(e);
    return (block_fields_t){e->a, (uint32_t)e->b, (uint32_t)(e->b >> 32)};
}

static void drop_block(mk_profile_t *p, uint64_t i)
{
    if (p->blocks[i].wide) {
        mk_kv_t *e = mk_kv_find(&p->wide, i + 1);
        assert(e);
        mk_kv_remove(&p->wide, e);
    }
    p->blocks[i].serial = p->free_block;
    p->free_block = i + 1;
}

/* ---- the live table: address -> block record (mk_live_table_t) ---- */

/* The slot holding addr, else the empty slot that ends its probe run: where
 * it goes. One probe serves a new block's check and its placement. */
static mk_live_slot_t *live_probe(const mk_profile_t *p, uint64_t addr, uint32_t key)
{
    const mk_live_table_t *t = &p->live;
    assert(t->used < t->cap);
    for (size_t i = mk_addr_key_home(key, t->cap);; i = (i + 1) & (t->cap - 1)) {
        mk_live_slot_t *s = &t->slots[i];
        /* the key tells most neighbours apart without reading their records */
        if (!s->block1 || (s->key == key && p->blocks[s->block1 - 1].addr == addr))
            return s;
    }
}

static mk_live_slot_t *live_find(const mk_profile_t *p, uint64_t addr)
{
    if (!p->live.cap)
        return NULL;
    mk_live_slot_t *s = live_probe(p, addr, mk_addr_key(addr));
    return s->block1 ? s : NULL;
}

static void live_place(mk_live_slot_t *slots, size_t cap, uint32_t block1, uint32_t key)
{
    size_t i = mk_addr_key_home(key, cap);
    while (slots[i].block1)
        i = (i + 1) & (cap - 1);
    slots[i] = (mk_live_slot_t){block1, key};
}

static bool live_grow(mk_profile_t *p)
{
    mk_live_table_t *t = &p->live;
    size_t cap = t->cap ? t->cap * 2 : 1024;
    if (cap > (1ull << 32)) /* block numbers are 32 bits */
        return false;
    mk_live_slot_t *s = mk_table_zalloc(cap * sizeof *s);
    if (!s)
        return false;
    for (size_t i = 0; i < t->cap; i++)
        if (t->slots[i].block1)
            live_place(s, cap, t->slots[i].block1, t->slots[i].key);
    mk_table_free(t->slots, t->cap * sizeof *t->slots);
    t->slots = s;
    t->cap = cap;
    return true;
}

/* Room for one more block, the load kept at 3/4 at most. */
static bool live_room(mk_profile_t *p)
{
    const mk_live_table_t *t = &p->live;
    return (t->used + 1) * 4 <= t->cap * 3 || live_grow(p);
}

/* Backward-shift deletion, as kv_table.h's: no tombstones. */
static void live_remove(mk_profile_t *p, mk_live_slot_t *s)
{
    mk_live_table_t *t = &p->live;
    size_t mask = t->cap - 1, hole = (size_t)(s - t->slots);
    for (size_t i = (hole + 1) & mask; t->slots[i].block1; i = (i + 1) & mask) {
        if (mk_probe_moves_back(i, mk_addr_key_home(t->slots[i].key, t->cap), hole,
                                mask)) {
            t->slots[hole] = t->slots[i];
            hole = i;
        }
    }
    t->slots[hole].block1 = 0;
    t->used--;
}

/* Peak snapshots, lazily: when the heap reaches a new peak the epoch moves
 * on, and a stack's counters are copied the first time they change after
 * that. So a stack's share of the latest peak is its snapshot if it changed
 * since, else its current value: O(1) per event instead of a copy of every
 * stack at every new peak. */
static void touch(const mk_profile_t *p, mk_stack_agg_t *a)
{
    if (a->snap_epoch != p->peak_epoch) {
        a->snap_bytes = a->live_bytes;
        a->snap_blocks = a->live_blocks;
        a->snap_epoch = p->peak_epoch;
    }
}

/* ---- the timeline ---- */

/* The slices halve with the timeline: each pair becomes one. */
static void slices_halve(mk_profile_t *p)
{
    for (size_t k = 0; k < p->nstacks; k++)
        mk_slices_halve(&p->stacks[k].slices);
}

static void timeline_halve(mk_profile_t *p)
{
    mk_timeline_bucket_t *t = p->timeline;
    if (p->opts.slices)
        slices_halve(p);
    for (uint32_t i = 0; i < MK_TIMELINE / 2; i++) {
        mk_timeline_bucket_t a = t[2 * i], b = t[2 * i + 1];
        bool b_used = 2 * i + 1 < p->nbuckets;
        t[i] = (mk_timeline_bucket_t){
            .allocs = a.allocs + b.allocs,
            .bytes = a.bytes + b.bytes,
            .max_live = a.max_live > b.max_live ? a.max_live : b.max_live,
            .end_live = b_used ? b.end_live : a.end_live,
            .max_blocks = a.max_blocks > b.max_blocks ? a.max_blocks : b.max_blocks,
        };
    }
    memset(&t[MK_TIMELINE / 2], 0, sizeof t[0] * (MK_TIMELINE / 2));
    p->nbuckets = (p->nbuckets + 1) / 2;
    p->bucket_shift++;
}

/* The bucket of time t, after carrying the heap through the empty ones.
 * Widths are powers of two: a shift, not a division, per event. */
static mk_timeline_bucket_t *timeline_at(mk_profile_t *p, uint64_t t)
{
    uint64_t i = t >> p->bucket_shift;
    if (__builtin_expect(i < p->nbuckets, 1))
        return &p->timeline[i];
    while (i >= MK_TIMELINE) {
        timeline_halve(p);
        i = t >> p->bucket_shift;
    }
    while (p->nbuckets <= i) {
        mk_timeline_bucket_t *b = &p->timeline[p->nbuckets++];
        b->max_live = b->end_live = p->live_bytes;
        b->max_blocks = p->live_blocks;
    }
    return &p->timeline[i];
}

/* Adds v to field f of a's slice at time t (opts.slices). */
static void slice_add(mk_profile_t *p, mk_stack_agg_t *a, uint64_t t, int f, double v)
{
    if (!p->opts.slices || !a || v == 0)
        return;
    uint64_t i = (uint64_t)(timeline_at(p, t) - p->timeline) / MK_SLICE_WIDTH;
    if (!mk_slices_put(&a->slices, (int)i, f, v))
        p->oom = true;
}

static void timeline_note(mk_profile_t *p, uint64_t t, uint64_t allocs, uint64_t bytes)
{
    mk_timeline_bucket_t *b = timeline_at(p, t);
    b->allocs += allocs;
    b->bytes += bytes;
    b->end_live = p->live_bytes;
    if (p->live_bytes > b->max_live)
        b->max_live = p->live_bytes;
    if (p->live_blocks > b->max_blocks)
        b->max_blocks = p->live_blocks;
}

/* ---- the order window: is a free of the youngest or the oldest? ---- */

static bool order_push(mk_order_window_t *w, uint64_t seq)
{
    if (w->len == w->cap) {
        if (w->cap == MK_ORDER_WINDOW) { /* full: forget the oldest */
            w->head = (w->head + 1) & (w->cap - 1);
            w->len--;
        } else {
            uint32_t cap = w->cap ? w->cap * 2 : 4;
            uint64_t *s = malloc(cap * sizeof *s);
            if (!s)
                return false;
            for (uint32_t i = 0; i < w->len; i++)
                s[i] = w->seq[(w->head + i) & (w->cap - 1)];
            free(w->seq);
            w->seq = s;
            w->cap = cap;
            w->head = 0;
        }
    }
    w->seq[(w->head + w->len++) & (w->cap - 1)] = seq;
    return true;
}

#define AT(w, i) ((w)->seq[((w)->head + (i)) & ((w)->cap - 1)])

/* Takes seq out of the window. Returns 0 if the window did not hold it
 * (forgotten), else 1 plus 2 if it was the youngest, plus 4 if the oldest. */
static unsigned order_take(mk_order_window_t *w, uint64_t seq)
{
    if (!w->len || seq < AT(w, 0) || seq > AT(w, w->len - 1))
        return 0;
    uint32_t lo = 0, hi = w->len - 1; /* ascending: binary search */
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (AT(w, mid) < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (AT(w, lo) != seq)
        return 0;
    unsigned r = 1 | (lo == w->len - 1 ? 2u : 0u) | (lo == 0 ? 4u : 0u);
    if (lo < w->len / 2) { /* close the gap from the shorter side */
        for (uint32_t i = lo; i > 0; i--)
            AT(w, i) = AT(w, i - 1);
        w->head = (w->head + 1) & (w->cap - 1);
    } else {
        for (uint32_t i = lo; i + 1 < w->len; i++)
            AT(w, i) = AT(w, i + 1);
    }
    w->len--;
    return r;
}

#undef AT

/* ---- sampled traces ---- */

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* How many allocations a sampled block of this size stands for: 1/p, p its
 * chance to be sampled (format.h), rounded down or up at random (by a hash
 * of serial, the allocations before it, so every report of a trace agrees)
 * with the odds that keep the sum's expectation. The hash takes in the
 * trace's seed: traces of one program sample different blocks with the
 * same serials, and their roundings must be independent too. A weight must
 * be whole: blocks, frees and histograms count in whole blocks. A block's
 * birth and death compute it alike, so its record need not keep it. */
static uint64_t weight_of(const mk_profile_t *p, uint64_t serial, uint64_t size)
{
    if (!p->sampled || !size)
        return 1; /* size 0: never sampled by the tracer; a damaged trace's */
    double w = 1.0 / -expm1(-(double)size / (double)p->sample_mean);
    if (w >= (double)UINT32_MAX)
        return UINT32_MAX;
    uint64_t whole = (uint64_t)w;
    double u = (double)(mix64(serial ^ mix64(p->sample_seed)) >> 11) * 0x1p-53;
    return whole + (u < w - (double)whole);
}

/* A new sampled block's weight; its variance joins the stack's. */
static uint64_t sample_weight(mk_profile_t *p, mk_stack_agg_t *a, uint64_t size)
{
    if (size) {
        double q = -expm1(-(double)size / (double)p->sample_mean);
        double var = (1.0 - q) / (q * q);
        a->samples++;
        a->calls_var += var;
        a->bytes_var += var * (double)size * (double)size;
    }
    return weight_of(p, p->serial, size);
}

/* ---- blocks born and dying ---- */

static bool note_pair(mk_profile_t *p, uint32_t older, uint32_t younger)
{
    bool fresh;
    mk_kv_t *e = mk_kv_put(&p->pairs, ((uint64_t)older << 32 | younger) + 1, &fresh);
    if (!e)
        return false;
    e->a++;
    return true;
}

enum death { DIES_FREED, DIES_REALLOCATED, DIES_REPLACED };

/* The allocator's time of ev's call, w times (a sampled trace's weight),
 * to stack a (NULL: no stack takes it). */
static void add_cost(mk_profile_t *p, mk_stack_agg_t *a, const mk_event_t *ev, uint64_t w)
{
    double ns = (double)ev->cost * p->ns_per_cycle * (double)w;
    p->timed_calls += ev->timed;
    p->alloc_ns += ns;
    if (ev->slow) {
        p->slow_ns += ns;
        p->slow_calls += w;
    }
    if (a && mk_kind_class(ev->kind) != MK_CLASS_FREE) { /* its own call (a free's:
                                                          * free_caller) */
        a->call_ns += ns;
        a->call_slow_ns += ev->slow ? ns : 0;
    }
    if (a) {
        a->alloc_ns += ns;
        a->slow_ns += ev->slow ? ns : 0;
        slice_add(p, a, ev->time, MK_SLICE_NS, ns);
    } else {
        p->alloc_ns_unattributed += ns;
    }
}

/* A block dies at event ev. Returns false if the address was not live. */
static bool block_dies(mk_profile_t *p, uint64_t addr, const mk_event_t *ev,
                       enum death how, mk_block_t *was)
{
    mk_live_slot_t *l = live_find(p, addr);
    if (!l)
        return false;
    uint64_t bi = l->block1 - 1;
    mk_block_t b = p->blocks[bi];
    block_fields_t f = fields_of(p, &b, bi);
    uint64_t size = f.size;
    live_remove(p, l);
    drop_block(p, bi);
    if (was)
        *was = b;
    uint64_t w = weight_of(p, b.serial - 1, size);
    p->live_bytes -= size * w;
    p->live_blocks -= w;

    mk_stack_agg_t *a = &p->stacks[f.agg];
    touch(p, a);
    a->live_bytes -= size * w;
    a->live_blocks -= w;
    if (how == DIES_REPLACED) {
        order_take(&a->order, b.serial);
        return true;
    }
    a->frees += w;
    if (how == DIES_FREED)
        add_cost(p, a, ev, w);
    if (how == DIES_REALLOCATED) {
        order_take(&a->order, b.serial);
        return true;
    }
    uint64_t life = ev->time >= b.time ? ev->time - b.time : 0;
    unsigned hb = mk_hist_bucket(life);
    a->lifetime_ns += life * w;
    mk_hist_add(&a->life_hist, hb, (uint32_t)w);
    p->life_hist[hb] += (uint32_t)w;
    unsigned ord = order_take(&a->order, b.serial);
    if (ord) {
        a->ordered_frees += w;
        a->lifo_frees += (ord & 2) ? w : 0;
        a->fifo_frees += (ord & 4) ? w : 0;
    }
    if (ev->thread != f.thread) {
        a->cross_thread += w;
        return true;
    }
    mk_thread_state_t *t = thread_of(p, ev->thread);
    if (!t) {
        p->oom = true;
        return true;
    }
    if (t->last_alloc == b.serial) {
        a->temporaries += w;
        p->temporaries += w;
    }
    /* Two blocks allocated one after the other and now freed one after the
     * other (either way round) were probably one object in two pieces. */
    if (t->free_serial && t->free_stack != a->stack &&
        (prev_serial(&b) == t->free_serial || t->free_prev == b.serial)) {
        bool b_older = t->free_prev == b.serial;
        if (!note_pair(p, b_older ? a->stack : t->free_stack,
                       b_older ? t->free_stack : a->stack))
            p->oom = true;
        t->free_serial = 0; /* a block pairs once */
    } else {
        t->free_serial = b.serial;
        t->free_prev = prev_serial(&b);
        t->free_stack = a->stack;
    }
    return true;
}

/* The growth points (profile.h): the trace's snapshots, thinned to at most
 * MK_GROWTH_MAX, or MK_GROWTH_POINTS even times over its run when it has
 * none and its length is known. */
static void growth_setup(mk_profile_t *p, const mk_trace_t *tr)
{
    const mk_trace_sampling_t *s = &tr->sampling;
    size_t n = s->nsnapshots;
    uint64_t span = tr->end.present ? tr->end.duration_ns : 0;
    if (!n && !span)
        return;
    size_t step = n > MK_GROWTH_MAX ? (n + MK_GROWTH_MAX - 1) / MK_GROWTH_MAX : 1;
    size_t k = n ? (n + step - 1) / step : MK_GROWTH_POINTS;
    p->growth.times = calloc(k, sizeof *p->growth.times);
    if (!p->growth.times) {
        p->oom = true;
        return;
    }
    for (size_t i = 0; i < k; i++)
        p->growth.times[i] = n ? s->snapshots[i * step] : span / k * (i + 1);
    p->growth.n = k;
    p->growth.snapshots = n > 0;
}

/* The stacks' live bytes at every growth point up to time t. */
static void growth_take(mk_profile_t *p, uint64_t t)
{
    mk_growth_t *g = &p->growth;
    for (; g->next < g->n && g->times[g->next] <= t; g->next++)
        for (size_t i = 0; i < p->nstacks; i++) {
            mk_stack_agg_t *a = &p->stacks[i];
            if (!a->growth && !a->live_bytes)
                continue;
            if (!a->growth && !(a->growth = calloc(g->n, sizeof *a->growth))) {
                p->oom = true;
                continue;
            }
            a->growth[g->next] = a->live_bytes;
        }
}

/* On the first event (the walk has read the trace's small records by then)
 * or at the end: is the trace sampled, and where are its growth points? */
static void meet_trace(mk_profile_t *p)
{
    const mk_trace_t *tr = p->tr;
    p->met_trace = true;
    if (!tr)
        return;
    if (tr->header.flags & MK_TF_COSTS) {
        p->timed = true;
        p->ns_per_cycle = tr->ns_per_tick / (double)(1u << MK_TICK_SHIFT);
    }
    if (tr->sampling.present) {
        p->sampled = true;
        p->sample_mean = tr->sampling.mean;
        p->sample_seed = tr->sampling.seed;
    }
    if (p->opts.growth)
        growth_setup(p, tr);
}

/* A block is born at ev (an allocation, or a realloc's new block with the
 * old block's record in `from`). Returns false when memory ran out. */
static bool block_born(mk_profile_t *p, const mk_event_t *ev, const mk_block_t *from,
                       uint64_t from_size)
{
    mk_stack_agg_t *a = mk_profile_agg(p, ev->stack);
    mk_thread_state_t *t = thread_of(p, ev->thread);
    if (!a || !t)
        return false;
    uint64_t size = ev->size;
    uint64_t w = p->sampled ? sample_weight(p, a, size) : 1;
    p->born_weight = w;
    add_cost(p, a, ev, w);
    if (!a->calls || size < a->min_size)
        a->min_size = size;
    if (size > a->max_size)
        a->max_size = size;
    a->calls += w;
    a->bytes += size * w;
    slice_add(p, a, ev->time, MK_SLICE_CALLS, (double)w);
    slice_add(p, a, ev->time, MK_SLICE_BYTES, (double)(size * w));
    mk_hist_add(&a->size_hist, mk_hist_bucket(size), (uint32_t)w);
    p->size_hist[mk_hist_bucket(size)] += (uint32_t)w;
    if (size < MK_TINY_SIZE) {
        a->tiny += w;
        p->tiny += w;
    }
    if (!a->first_thread)
        a->first_thread = ev->thread + 1;
    else if (a->first_thread != ev->thread + 1)
        a->multi_thread = true;
    if (from && size > from_size) {
        a->realloc_grows += w;
        if (from->from_realloc)
            a->realloc_steps += w;
    }
    if (!ev->addr) {
        p->failed += w;
        return true;
    }

    if (!live_room(p) || p->serial >= MK_SERIAL_MAX)
        return false;
    uint32_t key = mk_addr_key(ev->addr);
    mk_live_slot_t *s = live_probe(p, ev->addr, key);
    if (s->block1) {
        /* Live already: its free was not seen (another thread's, inside the
         * same instant, or before tracing). Retire the old block. */
        block_dies(p, ev->addr, ev, DIES_REPLACED, NULL);
        s = live_probe(p, ev->addr, key);
    }
    uint64_t bi = new_block(p);
    if (bi == UINT64_MAX || bi >= UINT32_MAX)
        return false;
    p->serial++;
    uint64_t gap = t->last_alloc ? p->serial - t->last_alloc : 0;
    block_fields_t f = {size, (uint32_t)(a - p->stacks), ev->thread};
    bool wide =
        f.size > MK_NARROW_SIZE || f.agg > MK_NARROW_AGG || f.thread > MK_NARROW_THREAD;
    p->blocks[bi] = (mk_block_t){
        .addr = ev->addr,
        .time = ev->time,
        .serial = p->serial,
        .prev_gap = gap <= MK_GAP_MAX ? gap : 0,
        .size = wide ? 0 : f.size,
        .agg = wide ? 0 : f.agg,
        .thread = wide ? 0 : f.thread,
        .from_realloc = from != NULL,
        .wide = wide,
    };
    if (wide && !wide_put(p, bi, f)) {
        p->blocks[bi].wide = false; /* nothing to take out of the wide table */
        drop_block(p, bi);
        return false;
    }
    *s = (mk_live_slot_t){(uint32_t)bi + 1, key};
    p->live.used++;
    t->last_alloc = p->serial;

    touch(p, a);
    a->live_bytes += size * w;
    a->live_blocks += w;
    if (a->live_blocks > a->max_live_blocks)
        a->max_live_blocks = a->live_blocks;
    if (!order_push(&a->order, p->serial))
        return false;

    p->live_bytes += size * w;
    p->live_blocks += w;
    p->total_allocated += size * w;
    if (p->live_bytes > p->max_allocated) {
        p->max_allocated = p->live_bytes;
        p->peak_time = ev->time;
        p->peak_epoch++;
    }
    if (p->live_blocks > p->peak_blocks)
        p->peak_blocks = p->live_blocks;
    return true;
}

/* ---- frees that come before their allocation ---- */

/* A free of a block that is not live: either its allocation is another
 * thread's event in the same tick that the time order put after it (a
 * producer/consumer pair), or it is a block allocated before tracing. Hold
 * it for a moment; an allocation of the address within the tie window takes
 * it, the rest are unknown frees. Few: a short array. */
static void expire_pending(mk_profile_t *p, uint64_t now)
{
    size_t keep = 0;
    for (size_t i = 0; i < p->npending; i++) {
        if (p->pending[i].time + p->tie_ns < now)
            p->free_unknown++;
        else
            p->pending[keep++] = p->pending[i];
    }
    p->npending = keep;
}

/* Frees held at once, at most: real traces hold a handful (one clock
 * tick's worth); a damaged one could hold thousands and make every event
 * pay for scanning them. Past this, the oldest is judged unknown at once. */
#define MK_PENDING_MAX 256

static bool hold_free(mk_profile_t *p, const mk_event_t *ev)
{
    if (p->npending == MK_PENDING_MAX) {
        p->free_unknown++;
        memmove(p->pending, p->pending + 1, (p->npending - 1) * sizeof *p->pending);
        p->npending--;
    }
    if (!mk_grow((void **)&p->pending, &p->pending_cap, p->npending + 1,
                 sizeof *p->pending))
        return false;
    p->pending[p->npending++] = (pending_t){ev->addr, ev->time, ev->thread, ev->kind};
    return true;
}

/* After a block became live: a held free of its address within the tie
 * window was its free. */
static void take_pending(mk_profile_t *p, const mk_event_t *ev)
{
    for (size_t i = 0; i < p->npending; i++) {
        if (p->pending[i].addr != ev->addr)
            continue;
        pending_t h = p->pending[i];
        p->pending[i] = p->pending[--p->npending];
        mk_event_t fe = *ev;
        fe.thread = h.thread;
        fe.kind = h.kind;
        fe.cost = 0; /* its time was counted when it was held */
        if (block_dies(p, ev->addr, &fe, DIES_FREED, NULL)) {
            p->calls[h.kind]++;
            if (h.kind == MK_K_FREE)
                p->frees++;
        }
        return;
    }
}

/* ---- one event ---- */

static bool passes(const mk_profile_t *p, const mk_event_t *ev)
{
    const mk_profile_opts_t *o = &p->opts;
    if (ev->time < o->from_ns || (o->to_ns && ev->time > o->to_ns))
        return false;
    return o->thread < 0 || ev->thread == (uint64_t)o->thread;
}

static bool stack_passes(const mk_profile_t *p, uint32_t stack)
{
    return !p->opts.stack_pass || p->opts.stack_pass(p->opts.filter_ctx, stack);
}

static bool on_alloc(mk_profile_t *p, const mk_event_t *ev)
{
    if (!stack_passes(p, ev->stack))
        return true;
    p->calls[ev->kind]++;
    p->bytes[ev->kind] += ev->size;
    if (!block_born(p, ev, NULL, 0))
        return false;
    if (p->npending && ev->addr)
        take_pending(p, ev);
    timeline_note(p, ev->time, p->born_weight, ev->size * p->born_weight);
    return true;
}

/* A free that carries a time names the stack that called it: its time
 * goes there too, as a call made from it (call_ns). After block_dies: a new
 * aggregate may move the others. */
static void free_caller(mk_profile_t *p, const mk_event_t *ev)
{
    if (!ev->stack || !ev->cost || p->filtered)
        return;
    mk_stack_agg_t *a = mk_profile_agg(p, ev->stack);
    double ns = (double)ev->cost * p->ns_per_cycle;
    if (a) {
        a->call_ns += ns;
        a->call_slow_ns += ev->slow ? ns : 0;
    }
}

static bool on_free(mk_profile_t *p, const mk_event_t *ev)
{
    free_caller(p, ev);
    if (!ev->addr) {
        if (!p->filtered) {
            p->calls[ev->kind]++;
            p->free_null++;
            add_cost(p, NULL, ev, 1);
        }
        return true;
    }
    if (!block_dies(p, ev->addr, ev, DIES_FREED, NULL)) {
        /* With a filter, a block not live is most likely one filtered out. */
        if (p->filtered)
            return true;
        p->calls[ev->kind]++;
        add_cost(p, NULL, ev, 1);
        return hold_free(p, ev);
    }
    p->calls[ev->kind]++;
    if (ev->kind == MK_K_FREE)
        p->frees++;
    timeline_note(p, ev->time, 0, 0);
    return true;
}

static bool on_realloc(mk_profile_t *p, const mk_event_t *ev)
{
    mk_live_slot_t *old_slot = ev->old_addr ? live_find(p, ev->old_addr) : NULL;
    bool old_live = old_slot != NULL;
    if (!old_live && !stack_passes(p, ev->stack))
        return true;
    p->calls[ev->kind]++;
    p->bytes[ev->kind] += ev->size;
    /* NULL back with a size: failed, the old block stays. NULL back for size
     * 0: the old block was freed. */
    mk_block_t old;
    uint64_t old_size = 0;
    bool moved = false;
    if (old_live && (ev->addr || ev->size == 0)) {
        uint64_t oi = old_slot->block1 - 1;
        old_size = fields_of(p, &p->blocks[oi], oi).size;
        moved = block_dies(p, ev->old_addr, ev, DIES_REALLOCATED, &old);
    }
    if (!ev->addr && ev->size == 0) {
        mk_stack_agg_t *a = mk_profile_agg(p, ev->stack);
        if (a) {
            a->calls++;
            slice_add(p, a, ev->time, MK_SLICE_CALLS, 1);
            add_cost(p, a, ev, 1);
        }
        timeline_note(p, ev->time, 1, 0);
        return a != NULL;
    }
    if (!block_born(p, ev, moved ? &old : NULL, old_size))
        return false;
    timeline_note(p, ev->time, p->born_weight, ev->size * p->born_weight);
    return true;
}

bool mk_profile_event(mk_profile_t *p, const mk_event_t *ev)
{
    unsigned k = ev->kind;
    if (k >= MK_K_COUNT || !passes(p, ev))
        return true;
    if (__builtin_expect(!p->met_trace, 0))
        meet_trace(p);
    if (p->growth.next < p->growth.n && ev->time >= p->growth.times[p->growth.next])
        growth_take(p, ev->time);
    p->events++;
    mk_thread_state_t *t = thread_of(p, ev->thread);
    if (!t) {
        p->oom = true;
        return false;
    }
    if (!t->seen) {
        t->seen = true;
        p->threads++;
    }
    p->last_time = ev->time;
    if (p->npending)
        expire_pending(p, ev->time);
    bool ok;
    switch (mk_kind_class(k)) {
    case MK_CLASS_ALLOC:
        ok = on_alloc(p, ev);
        break;
    case MK_CLASS_FREE:
        ok = on_free(p, ev);
        break;
    case MK_CLASS_REALLOC:
        ok = on_realloc(p, ev);
        break;
    default:
        p->calls[k]++; /* the memory system calls are not heap blocks */
        ok = true;
    }
    if (!ok)
        p->oom = true;
    return ok;
}

/* ---- the end ---- */

static void derive_totals(mk_profile_t *p)
{
    const uint64_t *c = p->calls;
    p->mallocs = c[MK_K_MALLOC];
    p->callocs = c[MK_K_CALLOC];
    p->reallocs = c[MK_K_REALLOC] + c[MK_K_REALLOCARRAY];
    p->strdups = c[MK_K_STRDUP] + c[MK_K_STRNDUP];
    p->wcsdups = c[MK_K_WCSDUP];
    p->allocations = p->mallocs + p->callocs + p->reallocs + p->strdups + p->wcsdups;
    p->news =
        c[MK_K_NEW] + c[MK_K_NEW_ARRAY] + c[MK_K_NEW_ALIGNED] + c[MK_K_NEW_ARRAY_ALIGNED];
    p->deletes = c[MK_K_DELETE] + c[MK_K_DELETE_ARRAY];
    p->aligned = c[MK_K_POSIX_MEMALIGN] + c[MK_K_ALIGNED_ALLOC] + c[MK_K_MEMALIGN] +
                 c[MK_K_VALLOC] + c[MK_K_PVALLOC] + c[MK_K_NEW_ALIGNED] +
                 c[MK_K_NEW_ARRAY_ALIGNED];
    p->allocation_calls = p->allocations + p->news + c[MK_K_POSIX_MEMALIGN] +
                          c[MK_K_ALIGNED_ALLOC] + c[MK_K_MEMALIGN] + c[MK_K_VALLOC] +
                          c[MK_K_PVALLOC];
}

/* What only the replay of events needs (live blocks, threads, frees held
 * back, each stack's order window): gone once the profile is whole, before
 * the report builds its rows beside the aggregates. */
static void release_events(mk_profile_t *p)
{
    for (size_t i = 0; i < p->nstacks; i++) {
        free(p->stacks[i].order.seq);
        p->stacks[i].order = (mk_order_window_t){0};
    }
    mk_table_free(p->live.slots, p->live.cap * sizeof *p->live.slots);
    p->live = (mk_live_table_t){0};
    mk_table_free(p->blocks, p->blocks_cap * sizeof *p->blocks);
    free(p->wide.slots);
    p->wide = mk_kv_heap_table();
    free(p->thr);
    free(p->thread_index.slots);
    free(p->pending);
    p->thread_index = mk_kv_heap_table();
    p->blocks = NULL;
    p->blocks_cap = p->blocks_used = 0;
    p->free_block = 0;
    p->thr = NULL;
    p->nthr = p->thr_cap = 0;
    p->pending = NULL;
    p->npending = p->pending_cap = 0;
}

/* A sampled trace's totals by kind are its exact counts; the frees it
 * could not see are not unknown, only unsampled. */
static void take_exact_counts(mk_profile_t *p)
{
    const mk_trace_sampling_t *s = &p->tr->sampling;
    memcpy(p->calls, s->counts, sizeof p->calls);
    memcpy(p->bytes, s->bytes, sizeof p->bytes);
    p->free_null = p->calls[MK_K_NONE]; /* format.h: the free(NULL)s */
    p->calls[MK_K_NONE] = 0;
    p->free_unknown = p->failed = 0;
    p->total_allocated = mk_allocated_bytes(s->bytes);
}

/* The timed calls' times, stacks and totals, times f. */
static void scale_times(mk_profile_t *p, double f)
{
    for (size_t i = 0; i < p->nstacks; i++) {
        mk_stack_agg_t *a = &p->stacks[i];
        a->alloc_ns *= f;
        a->slow_ns *= f;
        a->call_ns *= f;
        a->call_slow_ns *= f;
        mk_slices_scale(&a->slices, MK_SLICE_NS, f);
    }
    p->alloc_ns *= f;
    p->alloc_ns_unattributed *= f;
    p->slow_ns *= f;
}

/* The END's CPU samples (preload/oncpu.h): memkit's own time leaves the
 * CPU time, and the allocator's time is theirs where nothing else measured
 * it, or where MK_ONCPU_ENOUGH of them fell in the allocator beside timed
 * calls (below, the estimate's relative error, 1 / sqrt(n), passes 22%,
 * the timed calls' own bias on fast calls: docs/PERFORMANCE.md). A short
 * process's few samples still count: a tree's sum takes them all, and
 * mk_profile_time_measured judges the sum. */
static void take_samples(mk_profile_t *p, const mk_trace_end_t *e)
{
    uint64_t all = e->oncpu_alloc + e->oncpu_tracer + e->oncpu_program + e->oncpu_lost;
    p->cpu_sampling = e->oncpu == 2    ? MK_CPU_SAMPLING_USER_KERNEL
                      : e->oncpu == 1  ? MK_CPU_SAMPLING_USER
                      : e->oncpu_errno ? MK_CPU_SAMPLING_REFUSED
                                       : MK_CPU_SAMPLING_NONE;
    p->cpu_sampling_errno = e->oncpu ? 0 : (int)e->oncpu_errno;
    if (!e->oncpu || all == 0)
        return;
    double period = (double)e->oncpu_period_ns;
    double alloc_ns = (double)e->oncpu_alloc * period;
    p->oncpu_samples = all;
    p->oncpu_alloc_samples = e->oncpu_alloc;
    p->tracer_ns = (double)e->oncpu_tracer * period;
    if (p->cpu_ns > 0) /* a sample's period and the clock's ticks differ a little */
        p->cpu_ns =
            p->cpu_ns - p->tracer_ns > alloc_ns ? p->cpu_ns - p->tracer_ns : alloc_ns;
    if (p->timed && p->timed_calls && e->oncpu_alloc < MK_ONCPU_ENOUGH)
        return; /* the timed calls say more */
    if (p->alloc_ns > 0)
        scale_times(p, alloc_ns / p->alloc_ns);
    p->alloc_ns = alloc_ns;
    p->alloc_from_samples = true;
    p->timed = true;
}

bool mk_profile_time_measured(const mk_profile_t *p)
{
    if (p->alloc_from_samples)
        return p->oncpu_samples >= MK_ONCPU_ENOUGH;
    return p->timed;
}

/* What the END record and the streams' heads say of the run's times. */
static void take_end(mk_profile_t *p, const mk_trace_t *tr)
{
    if (tr && tr->end.present) /* all its threads', the tracer's work too */
        p->cpu_ns = (double)(tr->end.utime_us + tr->end.stime_us) * 1e3;
    if (tr && p->timed) {
        p->slow_bound_ns = (double)tr->slow_cycles * p->ns_per_cycle;
        p->switched_calls = tr->end.switched_calls;
        p->switched_clocked = tr->end.switched_clocked;
        p->switches_unseen = !tr->end.switches_seen;
    }
    if (tr && tr->end.present)
        take_samples(p, &tr->end);
    p->site_times =
        p->timed && !p->from_summary && (p->timed_calls || p->oncpu_samples == 0);
}

void mk_profile_finish(mk_profile_t *p)
{
    if (!p->met_trace)
        meet_trace(p);
    take_end(p, p->tr);
    growth_take(p, UINT64_MAX); /* points after the last event: the heap as it ended */
    p->free_unknown += p->npending; /* held to the end: never allocated */
    p->npending = 0;
    if (p->sampled)
        take_exact_counts(p);
    derive_totals(p);
    if (p->sampled) /* memanalyze's Frees: of blocks, not of NULL */
        p->frees =
            p->calls[MK_K_FREE] -
            (p->free_null < p->calls[MK_K_FREE] ? p->free_null : p->calls[MK_K_FREE]);
    /* What is still live is leaked at the end; charge it to its stacks. */
    for (size_t i = 0; i < p->live.cap; i++) {
        const mk_live_slot_t *l = &p->live.slots[i];
        if (!l->block1)
            continue;
        uint64_t bi = l->block1 - 1;
        block_fields_t f = fields_of(p, &p->blocks[bi], bi);
        uint64_t w = weight_of(p, p->blocks[bi].serial - 1, f.size);
        mk_stack_agg_t *a = &p->stacks[f.agg];
        a->leaked_blocks += w;
        a->leaked_bytes += f.size * w;
    }
    /* Each stack's share of the latest peak (see touch). */
    for (size_t i = 0; i < p->nstacks; i++) {
        mk_stack_agg_t *a = &p->stacks[i];
        bool changed = a->snap_epoch == p->peak_epoch;
        a->peak_bytes = changed ? a->snap_bytes : a->live_bytes;
        a->peak_blocks = changed ? a->snap_blocks : a->live_blocks;
    }
    release_events(p);
}

/* A trace's SUMMARY: its totals, and its sites. A --summary-only trace's
 * sites are calling instructions: site i becomes stack i + 1. With
 * site_stacks they are the trace's own stack ids. */
static bool from_summary(mk_profile_t *p, const mk_trace_t *tr, bool site_stacks)
{
    const mk_trace_summary_t *s = &tr->summary;
    memcpy(p->calls, s->counts, sizeof p->calls);
    memcpy(p->bytes, s->bytes, sizeof p->bytes);
    p->max_allocated = s->peak_bytes;
    p->peak_blocks = s->peak_blocks;
    p->live_blocks = s->live_blocks;
    p->live_bytes = s->live_bytes;
    p->from_summary = true;
    p->site_stacks = site_stacks;
    derive_totals(p);
    p->frees = s->frees_live;
    p->total_allocated = mk_allocated_bytes(s->bytes);
    if (s->has_times && (tr->header.flags & MK_TF_COSTS)) {
        /* totals only: the sites' times are the events' (site_times) */
        double ns_per_tick = tr->ns_per_tick; /* the END's anchor, where there is one */
        if (tr->end.present && tr->end.end_tick > tr->header.start_tick &&
            tr->end.duration_ns > 1000000)
            ns_per_tick = (double)tr->end.duration_ns /
                          (double)(tr->end.end_tick - tr->header.start_tick);
        p->timed = true;
        p->ns_per_cycle = ns_per_tick / (double)(1u << MK_TICK_SHIFT);
        p->alloc_ns = (double)s->alloc_cycles * p->ns_per_cycle;
        p->slow_ns = (double)s->slow_cycles * p->ns_per_cycle;
        p->slow_calls = s->slow_calls;
        p->timed_calls = s->timed_calls;
    }
    if (p->opts.counts_only)
        return true; /* a process table's row: no site is shown */
    /* the sites come in the tracer's table order: reserve (kv_table.h) */
    if (!mk_kv_reserve(&p->stack_index, p->stack_index.used + s->nsites))
        return false;
    for (size_t i = 0; i < s->nsites; i++) {
        uint64_t id = site_stacks ? s->sites[i].pc : i + 1;
        if (id > UINT32_MAX)
            continue; /* damage: no stack id is that large */
        mk_stack_agg_t *a = mk_profile_agg(p, (uint32_t)id);
        if (!a)
            return false;
        a->calls += s->sites[i].calls;
        a->bytes += s->sites[i].bytes;
    }
    return true;
}

/* A SUMMARY beside the events (MK_TF_SITE_STACKS): its sites are stack ids,
 * whose definitions come from the EVENTS records' DEFS streams, the events
 * themselves skipped. False when there is no summary to read (a process
 * killed before it and before any checkpoint): tr is then rewound for the
 * replay. */
static bool summary_pass(mk_profile_t *p, mk_trace_t *tr)
{
    uint64_t start = tr->offset;
    mk_record_head_t h;
    unsigned type;
    const uint8_t *raw;
    size_t len;
    while (mk_trace_next_head(tr, &h) == 1) {
        if (h.type == MK_REC_EVENTS && p->opts.counts_only)
            continue; /* not even decompressed */
        uint64_t next = tr->offset;
        if (mk_trace_record_at(tr, h.offset, &type, &raw, &len) != 1)
            break;
        tr->offset = next;
        bool ok = type == MK_REC_EVENTS ? mk_trace_decode_stacks(tr, raw, len)
                                        : mk_trace_absorb(tr, type, raw, len);
        if (!ok)
            break;
    }
    if (!tr->summary.present && !mk_trace_summary_from_parts(tr))
        return false;
    if (!tr->summary.present) {
        tr->offset = start;
        tr->damage[0] = 0; /* the replay finds the same fault again */
        return false;
    }
    if (!from_summary(p, tr, true))
        p->oom = true;
    return true;
}

static bool walk_event(void *ctx, const mk_event_t *ev)
{
    return mk_profile_event(ctx, ev);
}

bool mk_profile_build(mk_profile_t *p, mk_trace_t *tr)
{
    bool site_stacks = tr->header.flags & MK_TF_SITE_STACKS;
    if (site_stacks && p->opts.summary_first && summary_pass(p, tr)) {
        take_end(p, tr);
        return !p->oom;
    }
    /* Times are whole ticks: events of two threads in one tick, or the next,
     * are not ordered by time. ns_per_tick is known once the walk calibrated
     * it; until then the default is close enough for a window. */
    p->tie_ns = (uint64_t)(2 * tr->ns_per_tick) + 1;
    p->tr = tr;
    p->bucket_shift = 10; /* about a microsecond; doubles as needed */
    /* Decoding and replay take about the same time: with no filter reading
     * the stack table during the walk, they run on two threads. */
    bool ok = p->opts.stack_pass ? mk_trace_walk(tr, walk_event, p)
                                 : mk_trace_walk_pipelined(tr, walk_event, p);
    /* The events are the whole story where there are any; a SUMMARY beside
     * them is the same run counted in process. */
    if (!site_stacks && !mk_trace_summary_from_parts(tr)) /* checkpoints only */
        ok = false;
    if (!site_stacks && tr->summary.present) {
        for (size_t i = 0; i < p->nstacks; i++)
            free(p->stacks[i].order.seq);
        p->nstacks = 0;
        p->last_agg = UINT32_MAX;
        free(p->stack_index.slots);
        p->stack_index.slots = NULL;
        p->stack_index.cap = p->stack_index.used = 0;
        bool counted = from_summary(p, tr, false);
        take_end(p, tr);
        return counted;
    }
    mk_profile_finish(p);
    return ok && !p->oom;
}

void mk_profile_release_replay(mk_profile_t *p)
{
    release_events(p);
    free(p->stack_index.slots);
    p->stack_index = mk_kv_heap_table();
    p->last_agg = UINT32_MAX;
}

void mk_agg_release(mk_stack_agg_t *a)
{
    mk_hist_free(&a->size_hist);
    mk_hist_free(&a->life_hist);
    mk_slices_free(&a->slices);
}

void mk_profile_free(mk_profile_t *p)
{
    mk_profile_release_replay(p);
    for (size_t i = 0; i < p->nstacks; i++) {
        free(p->stacks[i].growth);
        mk_agg_release(&p->stacks[i]);
    }
    free(p->growth.times);
    free(p->stacks);
    free(p->pairs.slots);
    memset(p, 0, sizeof *p);
}
