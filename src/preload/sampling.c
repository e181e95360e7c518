/*
 * sampling.c - the slow parts of --sample (sampling.h): the thread's
 * generator and draws, the set of sampled live blocks, snapshots and the
 * SAMPLES record.
 */
#define _GNU_SOURCE
#include "sampling.h"

#include "ln_unit.h"
#include "output.h"

#include "../trace/kv_table.h"

#include <sys/mman.h>

_Atomic(mk_sample_filter_t *) mk_sample_filter;
atomic_uint mk_snapshot_gen;

/* The set: key the block's address. Its lock is a spin lock: it is held for a
 * probe or two, and a sampled event is rare. */
static mk_kv_table_t sampled = {.alloc = mk_pages_table, .release = mk_pages_release};
static atomic_int sampled_lock;

/* Snapshots: the next one is due at this many ns since the start (0: no
 * interval), or at once when the signal asked for one. */
static _Atomic uint64_t snapshot_due_ns;
static atomic_bool snapshot_asked;

static void set_lock(void)
{
    while (atomic_exchange_explicit(&sampled_lock, 1, memory_order_acquire))
        __builtin_ia32_pause();
}

static void set_unlock(void)
{
    atomic_store_explicit(&sampled_lock, 0, memory_order_release);
}

/* Under the lock, or on a filter no thread reads yet: bucket h gains (+1) or
 * loses (-1) a member. A count that saturated stays, and so does its bit. */
static void filter_count(mk_sample_filter_t *f, size_t h, int by)
{
    uint8_t v = f->count[h];
    uint64_t bit = (uint64_t)1 << (h % 64),
             w = __atomic_load_n(&f->bits[h / 64], __ATOMIC_RELAXED);

    if (v == 255)
        return;
    f->count[h] = (uint8_t)(v + by);
    if (f->count[h] == 0)
        __atomic_store_n(&f->bits[h / 64], w & ~bit, __ATOMIC_RELAXED);
    else if (v == 0)
        __atomic_store_n(&f->bits[h / 64], w | bit, __ATOMIC_RELAXED);
}

/* A filter of 2^bits buckets holding the set's members; NULL when it
 * cannot be mapped. Under the lock, or before any thread samples. */
static mk_sample_filter_t *filter_build(unsigned bits)
{
    size_t buckets = (size_t)1 << bits, words = buckets / 64;
    mk_sample_filter_t *f = mk_pages_zeroed(sizeof *f + words * 8 + buckets);
    if (!f)
        return NULL;
    f->shift = 64 - bits;
    f->count = (uint8_t *)&f->bits[words];
    for (size_t i = 0; i < sampled.cap; i++) {
        uintptr_t p = sampled.slots[i].key;
        if (p)
            filter_count(f, mk_sample_bucket(f, p), +1);
    }
    return f;
}

/* Under the lock, after a member joined: a larger filter when this one has
 * fewer than MK_SAMPLE_FILTER_LOAD buckets per member. If none can be
 * mapped, this one stays (more frees take the slow path, none is missed). */
static void filter_grow(mk_sample_filter_t *f)
{
    unsigned bits = 64 - f->shift;
    if ((sampled.used * MK_SAMPLE_FILTER_LOAD) >> bits == 0 || bits >= 40)
        return;
    mk_sample_filter_t *g = filter_build(bits + 1);
    if (g)
        atomic_store_explicit(&mk_sample_filter, g, memory_order_release);
}

bool mk_sampling_init(void)
{
    mk_sample_filter_t *f = filter_build(MK_SAMPLE_FILTER_MIN_BITS);
    if (!f) {
        mk_warn_once("memkit: cannot map the sampling filter; every event is recorded");
        return false;
    }
    atomic_store(&mk_sample_filter, f);
    if (mk_st.cfg.snapshot_every_ns)
        atomic_store(&snapshot_due_ns, mk_st.cfg.snapshot_every_ns);
    return true;
}

/* splitmix64: a seed per thread from the run's seed and the thread's number,
 * so a seeded run samples the same allocations again (threads numbered in
 * the same order). */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

int64_t mk_sample_draw(mk_thread_t *t)
{
    /* xorshift64*: 53 bits of a uniform u in (0, 1], then -mean ln u. */
    uint64_t x = mk_sample_of(t)->sample_rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    mk_sample_of(t)->sample_rng = x;
    double u = (double)((x * 0x2545f4914f6cdd1dull) >> 11 | 1) * 0x1p-53;
    double d = -mk_ln_unit(u) * (double)mk_st.cfg.sample_mean;
    /* At least 1: a budget of 0 would sample the next allocation of 0 bytes. */
    return d < 1 ? 1 : d > 0x1p62 ? (int64_t)1 << 62 : (int64_t)d;
}

/* Tries before a torn read is taken as it is: a generation that stays odd
 * is a renewal that never ends, the caller's own interrupted by the signal
 * whose handler ends the trace, or an owner thread a fork left behind. */
#define MK_BUDGET_READ_TRIES 100000

uint64_t mk_sample_bytes_taken(mk_thread_t *t)
{
    for (int tries = 0;; tries++) {
        unsigned gen =
            atomic_load_explicit(&mk_sample_of(t)->budget_gen, memory_order_acquire);
        uint64_t taken =
            __atomic_load_n(&mk_sample_of(t)->budget_taken, __ATOMIC_RELAXED);
        int64_t start = __atomic_load_n(&mk_sample_of(t)->budget_start, __ATOMIC_RELAXED);
        int64_t left = __atomic_load_n(&mk_sample_of(t)->sample_left, __ATOMIC_RELAXED);
        atomic_thread_fence(memory_order_acquire);
        bool whole =
            !(gen & 1) && gen == atomic_load_explicit(&mk_sample_of(t)->budget_gen,
                                                      memory_order_relaxed);
        if (whole || t == mk_self || tries == MK_BUDGET_READ_TRIES)
            return taken + (uint64_t)(start - left);
        __builtin_ia32_pause(); /* its owner is drawing a new budget: a moment */
    }
}

void mk_sample_thread_start(mk_thread_t *t)
{
    mk_sample_of(t)->sample_rng =
        mix(mk_st.cfg.sample_seed ^ mix(t->index)) | 1; /* never 0 */
    mk_sample_renew(t);
    mk_sample_of(t)->snapshot_gen =
        atomic_load_explicit(&mk_snapshot_gen, memory_order_relaxed);
}

bool mk_sampled_put(uintptr_t p)
{
    bool fresh;
    set_lock();
    mk_sample_filter_t *f = atomic_load_explicit(&mk_sample_filter, memory_order_relaxed);
    mk_kv_t *e = mk_addr_put(&sampled, p, &fresh);
    /* Not fresh: a block whose free went unseen (a nested call's) left its
     * entry; the address is live again, and its count is already there. */
    if (e && fresh) {
        filter_count(f, mk_sample_bucket(f, p), +1);
        filter_grow(f);
    }
    set_unlock();
    if (!e)
        mk_warn_once("memkit: cannot grow the table of sampled blocks; some samples "
                     "are not recorded");
    return e != NULL;
}

bool mk_sampled_take_slow(uintptr_t p)
{
    set_lock();
    mk_sample_filter_t *f = atomic_load_explicit(&mk_sample_filter, memory_order_relaxed);
    mk_kv_t *e = mk_addr_find(&sampled, p);
    if (e) {
        mk_addr_remove(&sampled, e);
        filter_count(f, mk_sample_bucket(f, p), -1);
    }
    set_unlock();
    return e != NULL;
}

void mk_samples_write(unsigned reason)
{
    uint64_t counts[MK_K_COUNT] = {0}, bytes[MK_K_COUNT] = {0}, taken = 0;
    uint8_t raw[64 + 2 * MK_K_COUNT * MK_VARINT_MAX], *p = raw;

    /* Other threads count on while we add: a snapshot's totals are each
     * thread's at some moment of the sum, as a profiler's can be. */
    for (mk_thread_t *t = (mk_thread_t *)atomic_load(&mk_st.threads); t; t = t->next) {
        for (int k = 0; k < MK_K_COUNT; k++) {
            counts[k] += __atomic_load_n(&t->counts[k], __ATOMIC_RELAXED);
            bytes[k] += __atomic_load_n(&t->bytes[k], __ATOMIC_RELAXED);
        }
        counts[MK_K_MALLOC] +=
            __atomic_load_n(&mk_sample_of(t)->fast_mallocs, __ATOMIC_RELAXED);
        counts[MK_K_FREE] +=
            __atomic_load_n(&mk_sample_of(t)->fast_frees, __ATOMIC_RELAXED);
        counts[MK_K_NONE] +=
            __atomic_load_n(&mk_sample_of(t)->fast_free_nulls, __ATOMIC_RELAXED);
        taken += mk_sample_bytes_taken(t);
    }
    /* malloc's fast path counts no bytes: they are what the budgets lost
     * that the other allocating kinds did not ask for. */
    uint64_t others = mk_allocated_bytes(bytes);
    if (taken > others)
        bytes[MK_K_MALLOC] += taken - others;
    p = mk_put_varint(p, mk_st.cfg.sample_mean);
    p = mk_put_varint(p, mk_st.cfg.sample_seed);
    p = mk_put_varint(p, reason);
    p = mk_put_varint(p, mk_now() - mk_st.t_start);
    p = mk_put_varint(p, MK_K_COUNT);
    for (int k = 0; k < MK_K_COUNT; k++)
        p = mk_put_varint(p, counts[k]);
    for (int k = 0; k < MK_K_COUNT; k++)
        p = mk_put_varint(p, bytes[k]);
    /* No lock: this may run in the handler of a signal that interrupted
     * this very thread holding it; the count is a figure, not a promise. */
    size_t live = __atomic_load_n(&sampled.used, __ATOMIC_RELAXED);
    p = mk_put_varint(p, live);
    mk_output_record(NULL, MK_REC_SAMPLES, raw, (size_t)(p - raw));
}

bool mk_snapshot_claim(void)
{
    if (atomic_load_explicit(&snapshot_asked, memory_order_relaxed) &&
        atomic_exchange(&snapshot_asked, false))
        return true;
    uint64_t due = atomic_load_explicit(&snapshot_due_ns, memory_order_relaxed);
    if (!due)
        return false;
    uint64_t now = mk_now() - mk_st.t_start;
    if (now < due)
        return false;
    /* One thread wins the interval; the next is counted from now, so a
     * program that stopped allocating for a while takes one snapshot when it
     * comes back, not one per interval missed. */
    return atomic_compare_exchange_strong(&snapshot_due_ns, &due,
                                          now + mk_st.cfg.snapshot_every_ns);
}

void mk_snapshot_request(void)
{
    atomic_store(&snapshot_asked, true);
}

void mk_sampling_after_fork_child(void)
{
    /* The lock may have been held by a thread the child does not have; the
     * parent's sampled blocks stay sampled (and live) in the child. The
     * child's counts start at 0, as its trace does. */
    atomic_store(&sampled_lock, 0);
    for (mk_thread_t *t = (mk_thread_t *)atomic_load(&mk_st.threads); t; t = t->next) {
        memset(t->counts, 0, sizeof t->counts);
        memset(t->bytes, 0, sizeof t->bytes);
        mk_sample_of(t)->fast_mallocs = mk_sample_of(t)->fast_frees =
            mk_sample_of(t)->fast_free_nulls = 0;
        mk_sample_of(t)->budget_taken =
            (uint64_t)(mk_sample_of(t)->sample_left -
                       mk_sample_of(t)->budget_start); /* 0 taken */
        /* even again: a parent thread mid-renewal at the fork never ends it here */
        atomic_store(&mk_sample_of(t)->budget_gen,
                     (atomic_load(&mk_sample_of(t)->budget_gen) | 1) + 1);
    }
    if (mk_st.cfg.snapshot_every_ns)
        atomic_store(&snapshot_due_ns,
                     mk_now() - mk_st.t_start + mk_st.cfg.snapshot_every_ns);
}
