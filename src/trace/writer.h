/*
 * writer.h - the encoding half of the event format (format.h): one thread's
 * events into the streams of an EVENTS record. The decoding half is
 * decode.c; tests/unit/test_roundtrip.c runs random event streams through
 * both and compares them field by field.
 *
 * The writer knows nothing of threads, files or clocks: its owner (the
 * tracer's thread state) gives it stream memory, each event's tick, and a
 * place in its record, and writes the record out (mk_writer_end gives the
 * pieces). Everything here is inline: the tracer's hooks inline it so that
 * no frame lies between a hook and its stack capture.
 *
 * Invariants:
 *  - base[i] <= s[i] <= base[i] + mk_writer_stream_cap(i): the owner checks
 *    mk_writer_has_room before each event (and its stack definition).
 *  - prev_t, prev_addr, reuse and live mirror the decoder's state at the same
 *    point of the record (reset by mk_writer_begin as the decoder resets at
 *    each record); live (the block index) lives across records.
 */
#ifndef MEMKIT_TRACE_WRITER_H
#define MEMKIT_TRACE_WRITER_H

#include "addr_index.h"
#include "format.h"
#include "reuse.h"

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifndef MK_LIKELY
#define MK_LIKELY(x)   __builtin_expect(!!(x), 1)
#define MK_UNLIKELY(x) __builtin_expect(!!(x), 0)
#endif

/* Frames kept per stack at most. */
#define MK_MAX_DEPTH 128
/* An EVENTS record holds up to MK_RECORD_ITEMS events (format.h); each
 * stream has room for that many of its largest field per event
 * (mk_writer_stream_cap), so one compare on the event count tells whether an
 * event fits. DEFS is checked on its own. */
#define MK_DEFS_CAP (256u << 10)
#define MK_DEF_ROOM (MK_VARINT_MAX * (MK_MAX_DEPTH + 2))
/* The record's own head (mk_writer_end): index, tid, anchors, stream sizes,
 * the allocator times' start state (left, rng), overhead and slow bound. */
#define MK_HEAD_MAX (7 * MK_VARINT_MAX + 24 + MK_S_COUNT * MK_VARINT_MAX)
/* A record older than this many ticks (2^31 TSC cycles: 0.6-0.9 s at 2.4-3.5
 * GHz; 2.1 s of 4096-ns ticks) is closed before the next event joins it, so
 * that a SIGKILL (the OOM killer's) takes at most about a second of a busy
 * thread's events with it, not up to a full record's hours of a slow one. */
#define MK_RECORD_AGE (1ull << 19)

typedef struct mk_writer {
    uint8_t *s[MK_S_COUNT];          /* write cursors of the streams */
    uint8_t *base[MK_S_COUNT];       /* their starts; sizes: mk_writer_stream_cap */
    uint64_t anchor_ns, anchor_tick; /* the record's clock anchor */
    uint64_t prev_t, prev_addr;      /* the decoder's state at this point */
    uint32_t time_zeros;             /* events since the last TIME pair, all 0
                                      * ticks after their previous one */
    uint8_t *cached_byte;            /* CACHED's byte with only its low
                                      * nibble written, or NULL */
    uint8_t *hit_byte;               /* HIT's byte being filled, or NULL */
    unsigned hit_bits;               /* bits in it so far (< 8) */
    /* Allocator times (format.h): the owner sets cost_left (0: calls are
     * not timed), cost_rng and cost_overhead_x16 once; the record's start
     * state is kept for its head. */
    uint32_t cost_left, cost_left0; /* events to the next timed one (1: this) */
    uint64_t cost_rng, cost_rng0;
    uint32_t cost_overhead_x16; /* 16 x an empty fenced interval's cycles */
    uint64_t slow_cycles;       /* the owner's slow bound, for the head (0: none) */
    uint64_t slow_next;         /* the event after the record's last slow one */
    /* What the readers will make of the times written, summed across
     * records (the owner's summary reports it without a replay): cycles of
     * the slow calls and their count, and of the timed ones as weighed. */
    double slow_sum, timed_sum;
    uint64_t slow_calls, timed_calls;
    /* Read calls the thread was switched out in (preload/base.h): their
     * time dropped, or clocked ones' taken from the thread's CPU clock. */
    uint64_t switched, switched_clocked;
    uint64_t events;      /* events in the current record */
    mk_reuse_t *reuse;    /* recent frees by size class (reuse.h) */
    mk_addr_index_t live; /* blocks allocated, across records */
} mk_writer_t;

/* Bytes a stream needs at most for a full record. */
static inline size_t mk_writer_stream_cap(int stream)
{
    static const uint8_t per_item[MK_S_COUNT] = {
        [MK_S_TAG] = 2,                  /* an event, and a stack definition before it */
        [MK_S_TIME] = 3 + MK_VARINT_MAX, /* z < MK_RECORD_ITEMS: 3 bytes */
        [MK_S_SIZE_LO] = 1,
        [MK_S_SIZE_HI] = 2 * MK_VARINT_MAX,
        [MK_S_FREEREF_LO] = 1,
        [MK_S_FREEREF_HI] = MK_VARINT_MAX,
        [MK_S_NEWADDR] = 1,
        [MK_S_ADDR] = 2 * MK_VARINT_MAX,
        [MK_S_STACK] = 5,
        [MK_S_RECENT] = 2,     /* d - 1 < MK_REUSE_RECENT */
        [MK_S_NEWADDR_HI] = 1, /* code - 15 < 128 */
        [MK_S_HIT] = 1,        /* (an eighth) */
        [MK_S_CACHED] = 1,
        [MK_S_COST] = MK_VARINT_MAX,
        [MK_S_SLOW] = 3 + MK_VARINT_MAX, /* an index < MK_RECORD_ITEMS: 3 bytes */
        [MK_S_FREE_STACK] = 5,
    };
    return stream == MK_S_DEFS ? MK_DEFS_CAP : (size_t)per_item[stream] * MK_RECORD_ITEMS;
}

/* Starts a new record whose clock anchor is (tick, ns since the start). */
static inline void mk_writer_begin(mk_writer_t *w, uint64_t tick, uint64_t ns)
{
    for (int i = 0; i < MK_S_COUNT; i++)
        w->s[i] = w->base[i];
    w->anchor_tick = tick;
    w->anchor_ns = ns;
    w->prev_t = tick;
    w->time_zeros = 0;
    w->cached_byte = w->hit_byte = NULL;
    w->hit_bits = 0;
    w->cost_left0 = w->cost_left; /* the stride runs on across records */
    w->cost_rng0 = w->cost_rng;
    w->slow_next = 0;
    w->prev_addr = 0;
    mk_reuse_reset(w->reuse);
    w->events = 0;
}

static inline bool mk_writer_empty(const mk_writer_t *w)
{
    return w->s[MK_S_TAG] == w->base[MK_S_TAG];
}

/* Does one more event, with a stack definition, fit the record? The bound is
 * on events, not on the TAG stream's bytes: an event without a definition
 * takes one TAG byte of the two it is given, and a record of 2 x
 * MK_RECORD_ITEMS mallocs would overrun the one-byte streams (SIZE_LO,
 * NEWADDR) into their neighbours. The age check uses the last event's tick,
 * so it costs no clock read. */
static inline bool mk_writer_has_room(const mk_writer_t *w)
{
    return w->events < MK_RECORD_ITEMS &&
           w->s[MK_S_DEFS] - w->base[MK_S_DEFS] <
               (ptrdiff_t)(MK_DEFS_CAP - MK_DEF_ROOM) &&
           w->prev_t - w->anchor_tick < MK_RECORD_AGE;
}

/* ---- fields ---- */

static inline void mk_writer_put(mk_writer_t *w, int stream, uint64_t v)
{
    w->s[stream] = mk_put_varint(w->s[stream], v);
}

static inline void mk_writer_raw_addr(mk_writer_t *w, uintptr_t addr)
{
    mk_writer_put(w, MK_S_ADDR, mk_zigzag((int64_t)(addr - w->prev_addr)));
    w->prev_addr = addr;
}

/* A split number (format.h): low byte, then the rest as a varint. */
static inline void mk_writer_split(mk_writer_t *w, int lo, uint64_t v)
{
    *w->s[lo]++ = (uint8_t)v;
    w->s[lo + 1] = mk_put_varint(w->s[lo + 1], v >> 8);
}

/* An event's tag and time: a run of events in the same tick is one count
 * (format.h, TIME pairs), closed by the next event in a later tick or by
 * mk_writer_end. */
static inline void mk_writer_head(mk_writer_t *w, unsigned kind, uint64_t now)
{
    *w->s[MK_S_TAG]++ = (uint8_t)kind;
    if (now > w->prev_t) {
        mk_writer_put(w, MK_S_TIME, w->time_zeros);
        mk_writer_put(w, MK_S_TIME, now - w->prev_t);
        w->time_zeros = 0;
        w->prev_t = now;
    } else {
        w->time_zeros++;
    }
    w->events++;
}

/* A freed block joins the reuse model if it is in the live index (then its
 * class is known). */
static inline void mk_writer_note_free(mk_writer_t *w, uintptr_t addr,
                                       const mk_index_slot_t *s)
{
    if (s)
        mk_reuse_free(w->reuse, mk_slot_cls(s), addr);
}

/* A freed block: its live index when this writer allocated it (about 14
 * bits for 10,000 live blocks: s, its slot), else its address. Does not
 * remove it. */
static inline void mk_writer_freeref(mk_writer_t *w, uintptr_t addr, mk_index_slot_t *s)
{
    if (!addr) {
        mk_writer_split(w, MK_S_FREEREF_LO, 0);
    } else if (s) {
        mk_writer_split(w, MK_S_FREEREF_LO, 2 + (uint64_t)mk_slot_idx(s));
        w->prev_addr = addr;
    } else {
        mk_writer_split(w, MK_S_FREEREF_LO, 1);
        mk_writer_raw_addr(w, addr);
    }
}

/* A code of NEWADDR (pending NULL: a byte each) or of CACHED, whose
 * half-filled byte is *pending (two to a byte; format.h says why each). */
static inline void mk_writer_code(mk_writer_t *w, int stream, uint8_t **pending,
                                  unsigned code)
{
    if (!pending) {
        mk_writer_put(w, stream, code);
        return;
    }
    unsigned nibble = code < 15 ? code : 15;
    if (*pending) {
        **pending |= (uint8_t)(nibble << 4);
        *pending = NULL;
    } else {
        *pending = w->s[stream]++;
        **pending = (uint8_t)nibble;
    }
    if (MK_UNLIKELY(code >= 15))
        mk_writer_put(w, MK_S_NEWADDR_HI, code - 15);
}

/* A HIT bit: whether the new block is the reuse model's guess. */
static inline void mk_writer_hit(mk_writer_t *w, unsigned hit)
{
    if (!w->hit_byte) {
        w->hit_byte = w->s[MK_S_HIT]++;
        *w->hit_byte = 0;
    }
    *w->hit_byte |= (uint8_t)(hit << w->hit_bits);
    if (++w->hit_bits == 8) {
        w->hit_byte = NULL;
        w->hit_bits = 0;
    }
}

/* Is the next event's call to be timed (format.h)? The owner asks before
 * the call, so that it can read the clock around it. */
static inline bool mk_writer_cost_due(const mk_writer_t *w)
{
    return w->cost_left == 1;
}

/* Will the next event carry a time: the timed one of the stride, or a
 * slow call (its owner's judgement)? A free that does names its caller's
 * stack too (format.h), which its owner captures first. */
static inline bool mk_writer_times(const mk_writer_t *w, bool slow)
{
    return w->cost_left == 1 || slow;
}

/* An event that may carry a time: cycles is its call's, read fenced when
 * mk_writer_cost_due said so, unfenced (or 0: not read) otherwise. A slow
 * call (slow: the owner read it around and found it at least its
 * slow_cycles) goes into SLOW as it is; the timed one's cycles into COST. */
static inline void mk_writer_cost(mk_writer_t *w, uint64_t cycles, bool slow)
{
    if (MK_UNLIKELY(slow)) {
        mk_writer_put(w, MK_S_SLOW, w->events - 1 - w->slow_next); /* head counted it */
        mk_writer_put(w, MK_S_SLOW, cycles);
        w->slow_next = w->events;
        w->slow_sum += (double)cycles;
        w->slow_calls++;
        cycles = 0; /* counted once, as itself */
    }
    if (MK_LIKELY(w->cost_left != 1)) {
        w->cost_left -= w->cost_left != 0;
        return;
    }
    mk_writer_put(w, MK_S_COST, cycles);
    w->cost_left = mk_cost_stride(&w->cost_rng);
    double c = (double)cycles - (double)w->cost_overhead_x16 / 16; /* as decode.c */
    w->timed_sum += c > 0 ? c * MK_COST_STRIDE : 0;
    w->timed_calls++;
}

/* A new block's address that is not the model's guess, as a code in stream
 * (NEWADDR, or CACHED after a missed guess; pending as for mk_writer_code):
 * its place among its class's candidates; else a recent free of another
 * class (split or merged by the allocator), named by how many frees back;
 * else the distance from the previous address. Returns its place in its
 * class's ring for mk_reuse_claim. */
static inline unsigned mk_writer_named_addr(mk_writer_t *w, int stream, uint8_t **pending,
                                            unsigned cls, uintptr_t addr)
{
    unsigned ring_j, pos = mk_reuse_locate(w->reuse, cls, addr, &ring_j);
    uint32_t d;
    if (MK_LIKELY(pos < MK_REUSE_MISS)) {
        mk_writer_code(w, stream, pending, 1 + pos);
    } else if ((d = mk_reuse_recent_find(w->reuse, addr)) != 0) {
        mk_writer_code(w, stream, pending, 2 + MK_REUSE_MISS);
        mk_writer_put(w, MK_S_RECENT, d - 1);
    } else {
        mk_writer_code(w, stream, pending, 1 + MK_REUSE_MISS);
        mk_writer_raw_addr(w, addr);
    }
    return ring_j;
}

/* A new block's address: the allocator usually hands back the block of the
 * same size class freed last that its cache took, which the model guesses
 * (one bit); else name it (above). It joins the index. A realloc's never
 * takes the guess's bit (may_guess false: format.h says why). False when the
 * index has no memory left (the event is still whole). */
static inline bool mk_writer_newaddr(mk_writer_t *w, uintptr_t addr, uint64_t size,
                                     bool may_guess)
{
    unsigned cls = mk_size_class(size), ring_j = MK_REUSE_UNKNOWN;
    bool guessed = may_guess && mk_reuse_cached(w->reuse, cls) != 0;
    if (guessed) {
        bool hit = addr && addr == mk_reuse_guess(w->reuse, cls);
        mk_writer_hit(w, hit);
        if (!hit) {
            if (!addr)
                mk_writer_code(w, MK_S_CACHED, &w->cached_byte, 0);
            else
                ring_j = mk_writer_named_addr(w, MK_S_CACHED, &w->cached_byte, cls, addr);
        }
    } else if (!addr) {
        mk_writer_code(w, MK_S_NEWADDR, NULL, 0);
    } else {
        ring_j = mk_writer_named_addr(w, MK_S_NEWADDR, NULL, cls, addr);
    }
    if (!addr)
        return true;
    w->prev_addr = addr;
    mk_reuse_claim(w->reuse, cls, addr, ring_j);
    return MK_LIKELY(mk_index_add(&w->live, addr, cls));
}

/* ---- items: one per event or stack definition ---- */

/* A stack's definition: frames innermost first. Goes before the first event
 * that names it. */
static inline void mk_writer_define_stack(mk_writer_t *w, uint32_t id, uint32_t depth,
                                          const uintptr_t *frames)
{
    uintptr_t prev = 0;
    *w->s[MK_S_TAG]++ = MK_ITEM_STACK;
    mk_writer_put(w, MK_S_DEFS, id);
    mk_writer_put(w, MK_S_DEFS, depth);
    for (uint32_t i = 0; i < depth; i++) {
        mk_writer_put(w, MK_S_DEFS, mk_zigzag((int64_t)(frames[i] - prev)));
        prev = frames[i];
    }
}

/* malloc-like events (align for the kinds that have one). False: the index
 * is out of memory (see mk_writer_newaddr). */
static inline bool mk_writer_alloc(mk_writer_t *w, uint64_t now, uint64_t cycles,
                                   bool slow, unsigned kind, size_t size, size_t align,
                                   uintptr_t addr, uint32_t stack)
{
    mk_writer_head(w, kind, now);
    mk_writer_cost(w, cycles, slow);
    mk_writer_split(w, MK_S_SIZE_LO, size);
    if (mk_kind_has_align(kind))
        mk_writer_put(w, MK_S_SIZE_HI, align);
    bool ok = mk_writer_newaddr(w, addr, size, true);
    mk_writer_put(w, MK_S_STACK, stack);
    return ok;
}

/* always_inline: the free hook's whole body, and the compiler took it out
 * of line when the hook gained a --sample branch (7% on the churn loop). */
/* The live index's slot of a block about to be freed (NULL: not this
 * thread's, or evicted), for mk_writer_free: its owner may look first, to
 * judge the call by the block's size class. */
static inline mk_index_slot_t *mk_writer_free_slot(const mk_writer_t *w, uintptr_t addr)
{
    return addr ? mk_index_slot_of(&w->live, addr) : NULL;
}

/* always_inline: the free hook's whole body, and the compiler took it out
 * of line when the hook gained a --sample branch (7% on the churn loop).
 * s: mk_writer_free_slot's answer for addr, the index unchanged since. */
static inline __attribute__((always_inline)) void
mk_writer_free(mk_writer_t *w, uint64_t now, uint64_t cycles, bool slow, unsigned kind,
               uintptr_t addr, mk_index_slot_t *s, uint32_t stack)
{
    bool timed = mk_writer_times(w, slow);
    mk_writer_head(w, kind, now);
    mk_writer_cost(w, cycles, slow);
    mk_writer_freeref(w, addr, s);
    mk_writer_note_free(w, addr, s);
    if (s)
        mk_index_remove_slot(&w->live, s);
    if (MK_UNLIKELY(timed)) /* its caller's stack (mk_writer_times) */
        mk_writer_put(w, MK_S_FREE_STACK, stack);
}

/* realloc-like events: old freed when the call returned a block or size was 0. */
static inline bool mk_writer_realloc(mk_writer_t *w, uint64_t now, uint64_t cycles,
                                     bool slow, unsigned kind, size_t size, uintptr_t old,
                                     uintptr_t addr, uint32_t stack)
{
    mk_writer_head(w, kind, now);
    mk_writer_cost(w, cycles, slow);
    mk_writer_split(w, MK_S_SIZE_LO, size);
    mk_index_slot_t *s = mk_writer_free_slot(w, old);
    mk_writer_freeref(w, old, s);
    if (old && (addr || size == 0)) { /* the old block was freed */
        mk_writer_note_free(w, old, s);
        if (s)
            mk_index_remove_slot(&w->live, s);
    }
    bool ok = mk_writer_newaddr(w, addr, size, false);
    mk_writer_put(w, MK_S_STACK, stack);
    return ok;
}

/* mmap, munmap, mremap (with its old address), brk, sbrk. */
static inline void mk_writer_sysmap(mk_writer_t *w, uint64_t now, unsigned kind,
                                    size_t size, uintptr_t addr, uintptr_t old)
{
    mk_writer_head(w, kind, now);
    mk_writer_split(w, MK_S_SIZE_LO, size);
    mk_writer_raw_addr(w, addr);
    if (kind == MK_K_MREMAP)
        mk_writer_raw_addr(w, old);
}

/* Closes the record: the record's head (thread index and tid, anchors,
 * stream sizes, the allocator times' sums) into head, then head and the streams as parts
 * (part[0] the head): 1 + MK_S_COUNT of them, the EVENTS record's payload in order. */
static inline void mk_writer_end(mk_writer_t *w, uint32_t index, uint64_t tid,
                                 uint8_t head[MK_HEAD_MAX],
                                 const void *part[1 + MK_S_COUNT],
                                 size_t len[1 + MK_S_COUNT])
{
    uint8_t *p = head;
    if (w->time_zeros) { /* the last events' pair: z - 1 zeros, then a 0 */
        mk_writer_put(w, MK_S_TIME, w->time_zeros - 1);
        mk_writer_put(w, MK_S_TIME, 0);
        w->time_zeros = 0;
    }
    p = mk_put_varint(p, index);
    p = mk_put_varint(p, tid);
    p = mk_put_u64(p, w->anchor_ns);
    p = mk_put_u64(p, w->anchor_tick);
    p = mk_put_varint(p, MK_S_COUNT);
    for (int i = 0; i < MK_S_COUNT; i++) {
        assert(w->s[i] >= w->base[i] &&
               (size_t)(w->s[i] - w->base[i]) <= mk_writer_stream_cap(i));
        len[1 + i] = (size_t)(w->s[i] - w->base[i]);
        part[1 + i] = w->base[i];
        p = mk_put_varint(p, len[1 + i]);
    }
    p = mk_put_varint(p, w->cost_left0);
    p = mk_put_u64(p, w->cost_rng0);
    p = mk_put_varint(p, w->cost_overhead_x16);
    p = mk_put_varint(p, w->slow_cycles);
    part[0] = head;
    len[0] = (size_t)(p - head);
}

#endif /* MEMKIT_TRACE_WRITER_H */
