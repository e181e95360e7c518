/*
 * stacks.c - call-stack capture and interning for the tracer.
 *
 * Capture uses libunwind's unw_backtrace with a per-thread cache: it reads
 * the DWARF unwind tables, so programs built without frame pointers (all of
 * Debian) get full stacks, and the cache makes repeated stacks cheap.
 *
 * Interning: a lock-free open-addressing table maps a stack (hash, frames) to
 * a small id. Records live in an mmap'd arena bumped with one atomic add; a
 * slot is claimed with one CAS, so threads never wait on each other. Ids are
 * dense from 1; 0 means "no stack" (table or arena full: counted, said once).
 *
 * A stack's definition is written by the first thread that uses it in the
 * current file (generation): another thread may use the id in an event that
 * reaches the file first, so readers resolve ids at the end, not in order.
 */
#define _GNU_SOURCE
#include "preload.h"

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#define TABLE_BITS 20                    /* 1M slots, 8 MiB of address space */
#define TABLE_LIMIT ((1u << TABLE_BITS) / 4 * 3) /* stop at 75% load */
#define ARENA_SIZE (256ul << 20)        /* reserved, touched only as used */

typedef struct stack_rec {
    uint64_t hash;
    uint32_t id;
    atomic_uint gen; /* generation (file) in which the definition was written */
    uint32_t depth;
    uintptr_t frames[];
} stack_rec_t;

static _Atomic(stack_rec_t *) *table;
static uint8_t *arena;
static atomic_size_t arena_used;
static atomic_uint next_id = 1;

void mk_stacks_init(void)
{
    /* Per-thread caches: no lock inside libunwind on the capture path. */
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
    table = mmap(NULL, sizeof(*table) << TABLE_BITS, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    arena = mmap(NULL, ARENA_SIZE, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (table == MAP_FAILED || arena == MAP_FAILED) {
        table = NULL;
        arena = NULL;
        mk_warn_once("memkit: cannot map the stack table; stacks are not recorded");
    }
}

void mk_stacks_flush_cache(void)
{
    unw_flush_cache(unw_local_addr_space, 0, 0); /* after dlclose: stale entries */
}

/* Frames of the caller of the hook that called us: skip this function and
 * the hook. */
__attribute__((noinline)) int mk_stack_capture(uintptr_t *frames, int max)
{
    void *buf[MK_MAX_DEPTH + 2];
    int n = unw_backtrace(buf, max + 2);
    if (n <= 2)
        return 0;
    memcpy(frames, buf + 2, (size_t)(n - 2) * sizeof(void *));
    return n - 2;
}

static uint64_t hash_frames(const uintptr_t *f, int depth)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)depth;
    for (int i = 0; i < depth; i++) {
        h ^= f[i];
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    return h;
}

static stack_rec_t *rec_new(uint64_t h, const uintptr_t *f, int depth)
{
    size_t need = (sizeof(stack_rec_t) + (size_t)depth * sizeof(uintptr_t) + 15) & ~(size_t)15;
    size_t at = atomic_fetch_add_explicit(&arena_used, need, memory_order_relaxed);
    if (at + need > ARENA_SIZE)
        return NULL;
    stack_rec_t *r = (stack_rec_t *)(arena + at);
    r->hash = h;
    r->depth = (uint32_t)depth;
    memcpy(r->frames, f, (size_t)depth * sizeof(uintptr_t));
    r->id = atomic_fetch_add_explicit(&next_id, 1, memory_order_relaxed);
    atomic_store_explicit(&r->gen, 0, memory_order_relaxed);
    return r;
}

static inline bool rec_equal(const stack_rec_t *r, uint64_t h, const uintptr_t *f, int depth)
{
    if (r->hash != h || r->depth != (uint32_t)depth)
        return false;
    for (int i = 0; i < depth; i++) /* a few words: cheaper inline than memcmp */
        if (r->frames[i] != f[i])
            return false;
    return true;
}

/* Writes the definition item into the thread's buffer (the caller made room). */
static void write_definition(mk_thread_t *t, const stack_rec_t *r)
{
    uint8_t *p = t->buf + t->len;
    uintptr_t prev = 0;
    *p++ = MK_ITEM_STACK;
    p = mk_put_varint(p, r->id);
    p = mk_put_varint(p, r->depth);
    for (uint32_t i = 0; i < r->depth; i++) {
        p = mk_put_varint(p, mk_zigzag((int64_t)(r->frames[i] - prev)));
        prev = r->frames[i];
    }
    t->len = (size_t)(p - t->buf);
}

static uint32_t use_rec(mk_thread_t *t, stack_rec_t *r)
{
    unsigned gen = atomic_load_explicit(&mk_st.stack_gen, memory_order_relaxed);
    unsigned had = atomic_load_explicit(&r->gen, memory_order_relaxed);
    /* The one thread whose CAS moves gen forward writes the definition. */
    if (had != gen &&
        atomic_compare_exchange_strong_explicit(&r->gen, &had, gen, memory_order_relaxed,
                                                memory_order_relaxed))
        write_definition(t, r);
    return r->id;
}

uint32_t mk_stack_intern(mk_thread_t *t, uintptr_t *frames, int depth)
{
    static atomic_uint used_slots;

    if (MK_UNLIKELY(!table || depth <= 0))
        return 0;
    uint64_t h = hash_frames(frames, depth);
    size_t mask = ((size_t)1 << TABLE_BITS) - 1;
    stack_rec_t *mine = NULL;

    for (size_t i = h & mask;; i = (i + 1) & mask) {
        stack_rec_t *r = atomic_load_explicit(&table[i], memory_order_acquire);
        if (r) {
            if (rec_equal(r, h, frames, depth))
                return use_rec(t, r); /* the hot path: one probe, one compare */
            continue;
        }
        /* An empty slot: the stack is new. Claim the slot for it. */
        if (atomic_load_explicit(&used_slots, memory_order_relaxed) >= TABLE_LIMIT) {
            mk_warn_once("memkit: more than %u distinct stacks; further new stacks are "
                         "recorded without a stack",
                         TABLE_LIMIT);
            return 0;
        }
        if (!mine) {
            mine = rec_new(h, frames, depth);
            if (!mine) {
                mk_warn_once("memkit: stack arena full; further new stacks are recorded "
                             "without a stack");
                return 0;
            }
        }
        stack_rec_t *expected = NULL;
        /* Release: a thread that finds the record in the slot sees its fields. */
        if (atomic_compare_exchange_strong_explicit(&table[i], &expected, mine,
                                                    memory_order_acq_rel,
                                                    memory_order_acquire)) {
            atomic_fetch_add_explicit(&used_slots, 1, memory_order_relaxed);
            return use_rec(t, mine);
        }
        /* Lost the race for this slot; the winner may hold our very stack. An id
         * burned here leaves a gap, which readers accept. */
        if (rec_equal(expected, h, frames, depth))
            return use_rec(t, expected);
    }
}
