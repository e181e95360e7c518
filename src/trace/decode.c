/*
 * decode.c - the decoding half of the event format (format.h): an EVENTS
 * record's streams back into events and stack definitions. writer.h is the
 * encoding half; tests/unit/test_roundtrip.c holds the two in step.
 */
#define _GNU_SOURCE
#include "reader.h"
#include "reader_internal.h"

#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* The largest stack id a reader accepts. The tracer's intern table has 2^20
 * slots, so its ids stay far below; a damaged id above it must not make the
 * reader allocate a table of its size (2^28 ids were 4 GiB, found by
 * fuzz_events). */
#define MAX_STACK_ID (1u << 24)

static bool define_stack(mk_trace_t *tr, mk_cursor_t *c)
{
    uint64_t id = mk_get_varint(c), depth = mk_get_varint(c);
    if (c->err || id == 0 || id > MAX_STACK_ID || depth > 1024)
        return false;
    if (!mk_grow((void **)&tr->stacks, &tr->stacks_cap, id + 1, sizeof *tr->stacks))
        return false;
    uint64_t *frames = malloc((depth ? depth : 1) * sizeof *frames), prev = 0, kept = 0;
    if (!frames)
        return false;
    for (uint64_t i = 0; i < depth; i++) {
        prev += (uint64_t)mk_unzigzag(mk_get_varint(c));
        /* the tracer's frames go (never the first: the hook's caller) */
        if (i == 0 || prev < tr->own_lo || prev >= tr->own_hi)
            frames[kept++] = prev;
    }
    if (c->err) {
        free(frames);
        return false;
    }
    free(tr->stacks[id].frames); /* a redefinition (forked child) is identical */
    tr->stacks[id].frames = frames;
    tr->stacks[id].depth = (uint32_t)kept;
    return true;
}

static void *index_alloc(size_t n)
{
    return mk_table_zalloc(n);
}

static void index_release(void *p, size_t n)
{
    mk_table_free(p, n);
}

uint64_t mk_trace_tick_ns(const mk_trace_t *tr, uint64_t tick)
{
    /* One mapping for the whole trace, from the start's tick: per-record
     * anchors would each carry their own error (a thread preempted between
     * reading the TSC and the clock) and misorder threads. */
    if (tick <= tr->header.start_tick)
        return 0;
    double ns = (double)(tick - tr->header.start_tick) * tr->ns_per_tick;
    /* A damaged trace's tick or slope can put ns outside uint64_t (or make
     * it NaN): converting that is undefined, so it saturates. */
    if (!(ns >= 0))
        return 0;
    return ns >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)ns;
}

void mk_decoder_init(mk_decoder_t *d, mk_addr_state_t *scratch)
{
    memset(d, 0, sizeof *d);
    d->addr = scratch;
    d->live.alloc = index_alloc;
    d->live.release = index_release;
    d->live.lean = true; /* addr_index.h: the reader's map, sized on its own */
    d->live.zeroed = true;
}

void mk_decoder_free(mk_decoder_t *d)
{
    mk_index_free(&d->live);
}

/* The per-record state of the address fields (format.h, "Addresses"). */
typedef mk_addr_state_t addr_state_t;

static uint64_t get_split(mk_cursor_t *st, int lo)
{
    if (st[lo].p >= st[lo].end) {
        st[lo].err = 1;
        return 0;
    }
    uint64_t low = *st[lo].p++;
    return low | mk_get_varint(&st[lo + 1]) << 8;
}

static uint64_t get_raw_addr(mk_cursor_t *c, addr_state_t *a)
{
    a->prev += (uint64_t)mk_unzigzag(mk_get_varint(c));
    return a->prev;
}

static void note_free(addr_state_t *a, uint64_t addr, const mk_index_slot_t *s)
{
    if (s)
        mk_reuse_free(&a->reuse, mk_slot_cls(s), addr);
}

/* A FREEREF field: the address, and its live index's slot (or NULL). */
static uint64_t get_freeref(mk_cursor_t *st, addr_state_t *a, const mk_decoder_t *d,
                            mk_index_slot_t **slot)
{
    uint64_t code = get_split(st, MK_S_FREEREF_LO);
    *slot = NULL;
    if (code == 0)
        return 0;
    if (code == 1)
        return get_raw_addr(&st[MK_S_ADDR], a);
    if (code - 2 >= d->live.n) {
        st[MK_S_FREEREF_LO].err = 1;
        return 0;
    }
    *slot = mk_index_slot_at(&d->live, (uint32_t)(code - 2));
    return a->prev = d->live.addr[code - 2];
}

/* What decoding a record keeps besides its cursors: the format version,
 * version 2's TIME pair being given out, whether the next code of NEWADDR
 * (version 2) or CACHED (version 3) is in the high nibble of its byte, and
 * the next HIT bit. */
typedef struct record_state {
    uint32_t version;
    uint64_t zeros, d;   /* the pair: zeros left, then d */
    bool pair_pending;   /* a pair is read and its d not yet given */
    bool high_nibble[2]; /* [0] NEWADDR, [1] CACHED */
    unsigned hit_bit;    /* of HIT's current byte, 0-7 */
    bool timed;          /* version 5 with allocator times (format.h) */
    uint32_t cost_left;  /* events to the next timed one (1: this) */
    uint64_t cost_rng;
    double overhead;   /* the cycles a fenced reading adds to a timed call */
    uint64_t event_at; /* the current event's index in the record (SLOW) */
    uint64_t slow_at;  /* the index of the next slow call (UINT64_MAX: none) */
} record_state_t;

/* The stream count of a version's EVENTS records. */
static int stream_count(uint32_t version)
{
    return version == 1   ? MK_S_COUNT_V1
           : version == 2 ? MK_S_COUNT_V2
           : version < 5  ? MK_S_COUNT_V4
           : version < 6  ? MK_S_COUNT_V5
                          : MK_S_COUNT;
}

/* Ticks since the previous event (format.h, TIME). */
static uint64_t get_ticks(mk_cursor_t *time, record_state_t *rs)
{
    if (rs->version == 1)
        return mk_get_varint(time);
    if (!rs->pair_pending) {
        rs->zeros = mk_get_varint(time);
        rs->d = mk_get_varint(time);
        rs->pair_pending = true;
    }
    if (rs->zeros) {
        rs->zeros--;
        return 0;
    }
    rs->pair_pending = false;
    return rs->d;
}

/* The stream a new address's code is in: CACHED after a missed guess
 * (version 3), else NEWADDR. */
static int code_stream(bool after_guess)
{
    return after_guess ? MK_S_CACHED : MK_S_NEWADDR;
}

/* The nibble a packed code stream's next code starts with; c must not be
 * at its end. */
static unsigned code_nibble(const mk_cursor_t *c, const record_state_t *rs, bool cached)
{
    return rs->high_nibble[cached] ? *c->p >> 4 : *c->p & 15;
}

/* Whether a code stream holds a varint per code (format.h): NEWADDR in
 * versions 1 and 3; else two codes per byte. */
static bool code_varints(const record_state_t *rs, bool cached)
{
    return rs->version == 1 || (rs->version >= 3 && !cached);
}

/* The next code of NEWADDR or CACHED. */
static uint64_t get_code(mk_cursor_t *st, record_state_t *rs, bool cached)
{
    mk_cursor_t *s = &st[code_stream(cached)];
    if (code_varints(rs, cached))
        return mk_get_varint(s);
    if (s->p >= s->end) {
        s->err = 1;
        return 0;
    }
    unsigned nibble = code_nibble(s, rs, cached);
    if (rs->high_nibble[cached])
        s->p++; /* both nibbles taken */
    rs->high_nibble[cached] = !rs->high_nibble[cached];
    return nibble < 15 ? nibble : 15 + mk_get_varint(&st[MK_S_NEWADDR_HI]);
}

/* The next HIT bit (version 3); at the stream's end, an error. */
static unsigned get_hit(mk_cursor_t *st, record_state_t *rs)
{
    mk_cursor_t *s = &st[MK_S_HIT];
    if (s->p >= s->end) {
        s->err = 1;
        return 0;
    }
    unsigned bit = *s->p >> rs->hit_bit & 1;
    if (++rs->hit_bit == 8) {
        rs->hit_bit = 0;
        s->p++;
    }
    return bit;
}

/* The index of the record's next slow call, gap events after the one
 * before it (format.h, SLOW); UINT64_MAX when there is none. */
static uint64_t next_slow(mk_cursor_t *slow, uint64_t from)
{
    if (slow->p >= slow->end)
        return UINT64_MAX;
    return from + mk_get_varint(slow);
}

/* An event's allocator time (format.h): true for a timed event or a slow
 * call, whose cycles go into *cost: a timed one's less the reading's own
 * cost and weighed by the events it stands for, a slow one's as they are;
 * false (cost 0) for the others and before version 5. *slow: it was slow. */
static bool get_cost(mk_cursor_t *st, record_state_t *rs, double *cost, bool *slow)
{
    *cost = 0;
    *slow = false;
    if (!rs->timed)
        return false;
    bool timed = false;
    if (__builtin_expect(rs->event_at == rs->slow_at, 0)) {
        *cost = (double)mk_get_varint(&st[MK_S_SLOW]);
        *slow = timed = true;
        rs->slow_at = next_slow(&st[MK_S_SLOW], rs->event_at + 1);
    }
    if (rs->cost_left != 1) {
        rs->cost_left -= rs->cost_left != 0;
        return timed;
    }
    double c = (double)mk_get_varint(&st[MK_S_COST]) - rs->overhead;
    rs->cost_left = mk_cost_stride(&rs->cost_rng);
    *cost += c > 0 ? c * MK_COST_STRIDE : 0;
    return true;
}

/* Whether class cls's next new address (not a realloc's) starts with a HIT
 * bit: version 3 and a guess in the model. */
static bool has_guess(const addr_state_t *a, const record_state_t *rs, unsigned cls)
{
    return rs->version >= 3 && mk_reuse_cached(&a->reuse, cls);
}

/* Whether the next NEWADDR code is not 0 (a realloc's new block is not
 * NULL, and its old one was freed), without taking it. A realloc's new
 * address is always a NEWADDR code (format.h). At the stream's end,
 * get_code will say so. */
static bool next_code_nonzero(const mk_cursor_t *st, const record_state_t *rs)
{
    mk_cursor_t peek = st[MK_S_NEWADDR];
    if (code_varints(rs, false))
        return mk_get_varint(&peek) != 0;
    return peek.p < peek.end && code_nibble(&peek, rs, false) != 0;
}

/* NEWADDR code 2+MK_REUSE_MISS: a free d frees back, d in RECENT. */
static uint64_t get_recent_addr(mk_cursor_t *st, addr_state_t *a)
{
    uint64_t d = mk_get_varint(&st[MK_S_RECENT]) + 1;
    if (d > mk_reuse_recent_count(&a->reuse)) {
        st[MK_S_RECENT].err = 1;
        return 0;
    }
    return a->prev = mk_reuse_recent(&a->reuse, (uint32_t)d);
}

static unsigned class_of(const record_state_t *rs, uint64_t size)
{
    return rs->version == 1 ? mk_size_class_v1(size) : mk_size_class(size);
}

/* Candidate j of class cls: version 3 counts the cache first and leaves the
 * model's update to mk_reuse_claim (with the block's place in the ring when
 * it came from there: an address repeated in the ring is named by its
 * first); before, the rings alone. */
static bool get_candidate(addr_state_t *a, const record_state_t *rs, unsigned cls,
                          unsigned j, uint64_t *addr, unsigned *ring_j)
{
    if (rs->version >= 3) {
        unsigned nc = mk_reuse_cached(&a->reuse, cls);
        if (j >= nc)
            *ring_j = j - nc;
        return mk_reuse_candidate(&a->reuse, cls, j, addr);
    }
    if (j >= mk_reuse_count(&a->reuse, cls))
        return false;
    *addr = mk_reuse_take(&a->reuse, cls, j);
    return true;
}

/* A new block's address (format.h); may_guess is false for a realloc's. */
static uint64_t get_newaddr(mk_cursor_t *st, addr_state_t *a, mk_decoder_t *d,
                            uint64_t size, record_state_t *rs, bool may_guess)
{
    unsigned cls = class_of(rs, size);
    bool guessed = may_guess && has_guess(a, rs, cls);
    mk_cursor_t *s = &st[code_stream(guessed)];
    uint64_t code, addr;
    unsigned ring_j = MK_REUSE_UNKNOWN;
    if (guessed && get_hit(st, rs)) {
        addr = mk_reuse_guess(&a->reuse, cls);
        goto named;
    }
    code = get_code(st, rs, guessed);
    if (code == 0)
        return 0;
    if (code - 1 < MK_REUSE_MISS) {
        if (!get_candidate(a, rs, cls, (unsigned)(code - 1), &addr, &ring_j)) {
            s->err = 1;
            return 0;
        }
    } else if (code - 1 == MK_REUSE_MISS) {
        addr = get_raw_addr(&st[MK_S_ADDR], a);
    } else if (code - 2 == MK_REUSE_MISS && rs->version > 1) {
        addr = get_recent_addr(st, a);
        if (st[MK_S_RECENT].err)
            return 0;
    } else {
        s->err = 1;
        return 0;
    }
named:
    if (addr == 0) { /* NULL is code 0, never a name: damage */
        s->err = 1;
        return 0;
    }
    a->prev = addr;
    if (rs->version >= 3)
        mk_reuse_claim(&a->reuse, cls, addr, ring_j);
    if (!mk_index_add(&d->live, addr, cls))
        s->err = 1; /* out of memory: stop rather than diverge */
    return addr;
}

/* An EVENTS record's head (format.h), up to its streams. */
typedef struct events_head {
    uint32_t thread;
    uint64_t tick;             /* the clock anchor's */
    uint64_t lens[MK_S_COUNT]; /* 0 past the version's streams */
    bool timed;                /* version 5 on, with allocator times */
    uint32_t cost_left;        /* the stride's start state */
    uint64_t cost_rng;
    double overhead; /* cycles of an empty fenced reading */
} events_head_t;

/* Reads the head at c into h (c->err set when it is malformed); the slow
 * bound it carries (version 6) raises tr's. */
static void get_head(mk_cursor_t *c, mk_trace_t *tr, events_head_t *h)
{
    uint32_t version = tr->header.version;
    memset(h, 0, sizeof *h);
    /* (its anchor_ns is calibration's, read from the record's head) */
    mk_events_anchor_t anchor = mk_get_events_anchor(c);
    h->thread = (uint32_t)anchor.thread;
    h->tick = anchor.anchor_tick;
    int count = stream_count(version);
    if (mk_get_varint(c) != (uint64_t)count)
        c->err = 1;
    for (int i = 0; i < count && !c->err; i++)
        h->lens[i] = mk_get_varint(c);
    if (version >= 5) {
        h->cost_left = (uint32_t)mk_get_varint(c);
        h->cost_rng = mk_get_u64(c);
        h->overhead = (double)mk_get_varint(c) / 16;
        h->timed = (tr->header.flags & MK_TF_COSTS) != 0;
    }
    if (version >= 6) { /* the slow bound: SLOW says which calls were */
        uint64_t bound = mk_get_varint(c);
        if (!c->err && bound > tr->slow_cycles)
            tr->slow_cycles = bound;
    }
}

/* A record being decoded an event at a time: what the decoding loop keeps
 * between two events. The record's bytes must stay as they are meanwhile. */
struct mk_event_cursor {
    mk_cursor_t c, st[MK_S_COUNT];
    record_state_t rs;
    uint64_t tick;
    mk_event_t ev; /* the thread's, and the fields each event sets */
    bool done;     /* at the end, or the record is malformed */
    bool ok;       /* done without fault (a record cut inside its last item is
                    * the end of a process that exited inside a hook) */
};

mk_event_cursor_t *mk_events_new(void)
{
    return calloc(1, sizeof(mk_event_cursor_t));
}

void mk_events_free(mk_event_cursor_t *ec)
{
    free(ec);
}

void mk_events_open(mk_trace_t *tr, mk_decoder_t *d, mk_event_cursor_t *ec,
                    const uint8_t *raw, size_t len)
{
    addr_state_t *a = d->addr; /* per record: reset here */
    memset(ec, 0, sizeof *ec);
    ec->c = (mk_cursor_t){raw, raw + len, 0};
    a->prev = 0;
    mk_reuse_reset(&a->reuse);
    if (!d->live.max) /* the index's bound: once (a test may set its own) */
        mk_index_set_version(&d->live, tr->header.version);

    events_head_t h;
    get_head(&ec->c, tr, &h);
    ec->ev.thread = h.thread;
    ec->tick = h.tick;
    ec->rs = (record_state_t){.version = tr->header.version,
                              .event_at = UINT64_MAX,
                              .timed = h.timed,
                              .cost_left = h.cost_left,
                              .cost_rng = h.cost_rng,
                              .overhead = h.overhead};
    const uint8_t *p = ec->c.p;
    for (int i = 0; i < MK_S_COUNT && !ec->c.err; i++) { /* lens[i] = 0 past count */
        if (h.lens[i] > (uint64_t)(ec->c.end - p)) {
            ec->c.err = 1;
            break;
        }
        ec->st[i] = (mk_cursor_t){p, p + h.lens[i], 0};
        p += h.lens[i];
    }
    ec->rs.slow_at = ec->c.err ? UINT64_MAX : next_slow(&ec->st[MK_S_SLOW], 0);
    ec->ok = true;
}

/* The record's next event into *out; false at its end (ec->done). */
static bool next_event(mk_trace_t *tr, mk_decoder_t *d, mk_event_cursor_t *ec,
                       mk_event_t *out)
{
    addr_state_t *a = d->addr;
    mk_cursor_t *st = ec->st, *tags = &st[MK_S_TAG], *addrs = &st[MK_S_ADDR];
    record_state_t *rs = &ec->rs;
    mk_event_t *ev = &ec->ev;
    bool cut = false;
    if (ec->done)
        return false;
    /* a malformed head or stream lengths leave c.err set: the loop does not
     * run, and the record is damaged below */
    while (!ec->c.err && tags->p < tags->end) {
        unsigned tag = *tags->p++;
        if (tag == MK_ITEM_STACK) {
            if (!define_stack(tr, &st[MK_S_DEFS]))
                ec->c.err = 1;
            continue;
        }
        enum mk_kind_class cls = mk_kind_class(tag);
        if (cls == MK_CLASS_NONE) {
            ec->c.err = 1;
            break;
        }
        ev->kind = (uint8_t)tag;
        rs->event_at++; /* from UINT64_MAX: the first is 0 */
        ec->tick += get_ticks(&st[MK_S_TIME], rs);
        ev->time = mk_trace_tick_ns(tr, ec->tick);
        ev->size = ev->align = ev->old_addr = ev->addr = 0;
        ev->stack = 0;
        double cost = 0;
        bool slow = false;
        ev->timed = cls != MK_CLASS_SYSMAP && get_cost(st, rs, &cost, &slow);
        ev->slow = slow;
        ev->cost = (float)cost;
        mk_index_slot_t *slot;
        switch (cls) {
        case MK_CLASS_ALLOC:
            ev->size = get_split(st, MK_S_SIZE_LO);
            if (mk_kind_has_align(tag))
                ev->align = mk_get_varint(&st[MK_S_SIZE_HI]);
            ev->addr = get_newaddr(st, a, d, ev->size, rs, true);
            ev->stack = (uint32_t)mk_get_varint(&st[MK_S_STACK]);
            break;
        case MK_CLASS_FREE:
            ev->addr = get_freeref(st, a, d, &slot);
            if (slot) {
                note_free(a, ev->addr, slot);
                mk_index_remove_slot(&d->live, slot);
            }
            if (ev->timed && rs->version >= 6) /* the caller's stack (format.h) */
                ev->stack = (uint32_t)mk_get_varint(&st[MK_S_FREE_STACK]);
            break;
        case MK_CLASS_REALLOC:
            ev->size = get_split(st, MK_S_SIZE_LO);
            ev->old_addr = get_freeref(st, a, d, &slot);
            /* The new address's code decides whether the old block was freed. */
            {
                bool freed = ev->old_addr && (next_code_nonzero(st, rs) || ev->size == 0);
                if (freed && slot) {
                    note_free(a, ev->old_addr, slot);
                    mk_index_remove_slot(&d->live, slot);
                }
            }
            ev->addr = get_newaddr(st, a, d, ev->size, rs, false);
            ev->stack = (uint32_t)mk_get_varint(&st[MK_S_STACK]);
            break;
        case MK_CLASS_SYSMAP:
            ev->size = get_split(st, MK_S_SIZE_LO);
            ev->addr = get_raw_addr(addrs, a);
            if (tag == MK_K_MREMAP)
                ev->old_addr = get_raw_addr(addrs, a);
            break;
        default:
            break;
        }
        for (int i = 0; i < MK_S_COUNT; i++)
            ec->c.err |= st[i].err;
        if (ec->c.err) {
            /* A stream ran dry inside the last item: a process that exited
             * inside a hook. The end, not damage. */
            cut = tags->p == tags->end;
            break;
        }
        tr->events_read++;
        *out = *ev;
        return true;
    }
    ec->done = true;
    ec->ok = !ec->c.err || cut;
    if (!ec->ok)
        mk_trace_damage(tr, "malformed events in the record ending at offset %" PRIu64,
                        tr->offset);
    return false;
}

void mk_events_streams(const mk_event_cursor_t *ec, const uint8_t *p[MK_S_COUNT],
                       const uint8_t *end[MK_S_COUNT])
{
    for (int i = 0; i < MK_S_COUNT; i++) {
        p[i] = ec->st[i].p;
        end[i] = ec->st[i].end;
    }
}

void mk_events_move_stream(mk_event_cursor_t *ec, int i, const uint8_t *p,
                           const uint8_t *end)
{
    assert(i >= 0 && i < MK_S_COUNT && p <= end);
    ec->st[i].p = p;
    ec->st[i].end = end;
}

size_t mk_events_read(mk_trace_t *tr, mk_decoder_t *d, mk_event_cursor_t *ec,
                      mk_event_t *out, size_t max)
{
    size_t n = 0;
    while (n < max && next_event(tr, d, ec, &out[n]))
        n++;
    return n;
}

bool mk_trace_decode_events(mk_trace_t *tr, mk_decoder_t *d, const uint8_t *raw,
                            size_t len, mk_event_fn fn, void *ctx)
{
    mk_event_cursor_t ec;
    mk_event_t ev;
    mk_events_open(tr, d, &ec, raw, len);
    while (next_event(tr, d, &ec, &ev))
        if (!fn(ctx, &ev))
            return true;
    return ec.ok;
}

bool mk_trace_decode_stacks(mk_trace_t *tr, const uint8_t *raw, size_t len)
{
    mk_cursor_t c = {raw, raw + len, 0};
    events_head_t h;
    get_head(&c, tr, &h);
    uint64_t before = 0, defs = h.lens[MK_S_DEFS];
    for (int i = 0; i < MK_S_DEFS; i++)
        before += h.lens[i];
    /* The streams follow the head in order; DEFS holds only definitions. */
    if (c.err || before > (uint64_t)(c.end - c.p) ||
        defs > (uint64_t)(c.end - c.p) - before) {
        mk_trace_damage(tr, "malformed events in the record ending at offset %" PRIu64,
                        tr->offset);
        return false;
    }
    mk_cursor_t d = {c.p + before, c.p + before + defs, 0};
    while (d.p < d.end)
        if (!define_stack(tr, &d)) {
            mk_trace_damage(tr, "malformed stack in the record ending at offset %" PRIu64,
                            tr->offset);
            return false;
        }
    return true;
}

const mk_stack_def_t *mk_trace_stack(const mk_trace_t *tr, uint32_t id)
{
    if (id == 0 || id >= tr->stacks_cap || !tr->stacks[id].frames)
        return NULL;
    return &tr->stacks[id];
}
