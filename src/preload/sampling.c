/*
 * sampling.c - the slow parts of --sample (sampling.h): the thread's
 * generator and draws, the set of sampled live blocks, snapshots and the
 * SAMPLES record.
 */
#define _GNU_SOURCE
#include "sampling.h"

#include "output.h"

#include "../trace/kv_table.h"

#include <math.h>
#include <sys/mman.h>

uint8_t *mk_sample_filter;
atomic_uint mk_snapshot_gen;

/* The set: key the block's address. Its lock is a spin lock: it is held for a
 * probe or two, and a sampled event is rare. */
static mk_kv_table_t sampled = {.alloc = mk_pages_zeroed, .release = mk_pages_release};
static atomic_int sampled_lock;

/* Snapshots: the next one is due at this many ns since the start (0: no
 * interval), or at once when the signal asked for one. */
static atomic_ullong snapshot_due_ns;
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

bool mk_sampling_init(void)
{
    size_t n = (size_t)1 << MK_SAMPLE_FILTER_BITS;
    /* Reserved: only the pages of buckets ever used are backed. */
    void *f = mk_sys_mmap(NULL, n, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (f == MAP_FAILED) {
        mk_warn_once("memkit: cannot map the sampling filter; every event is recorded");
        return false;
    }
    mk_sample_filter = f;
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
    uint64_t x = t->sample_rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    t->sample_rng = x;
    double u = (double)((x * 0x2545f4914f6cdd1dull) >> 11 | 1) * 0x1p-53;
    double d = -log(u) * (double)mk_st.cfg.sample_mean;
    /* At least 1: a budget of 0 would sample the next allocation of 0 bytes. */
    return d < 1 ? 1 : d > 0x1p62 ? (int64_t)1 << 62 : (int64_t)d;
}

void mk_sample_thread_start(mk_thread_t *t)
{
    t->sample_rng = mix(mk_st.cfg.sample_seed ^ mix(t->index)) | 1; /* never 0 */
    t->sample_left = mk_sample_draw(t);
    t->snapshot_gen = atomic_load_explicit(&mk_snapshot_gen, memory_order_relaxed);
}

bool mk_sampled_put(uintptr_t p)
{
    uint8_t *f = &mk_sample_filter[mk_sample_bucket(p)];
    bool fresh;
    set_lock();
    mk_kv_t *e = mk_kv_put(&sampled, p, &fresh);
    /* Not fresh: a block whose free went unseen (a nested call's) left its
     * entry; the address is live again, and its count is already there. */
    if (e && fresh) {
        uint8_t c = __atomic_load_n(f, __ATOMIC_RELAXED);
        if (c < 255)
            __atomic_store_n(f, (uint8_t)(c + 1), __ATOMIC_RELAXED);
    }
    set_unlock();
    if (!e)
        mk_warn_once("memkit: cannot grow the table of sampled blocks; some samples "
                     "are not recorded");
    return e != NULL;
}

bool mk_sampled_take_slow(uintptr_t p)
{
    uint8_t *f = &mk_sample_filter[mk_sample_bucket(p)];
    set_lock();
    mk_kv_t *e = mk_kv_find(&sampled, p);
    if (e) {
        mk_kv_remove(&sampled, e);
        uint8_t c = __atomic_load_n(f, __ATOMIC_RELAXED);
        if (c < 255) /* a saturated count stays: it no longer knows its members */
            __atomic_store_n(f, (uint8_t)(c - 1), __ATOMIC_RELAXED);
    }
    set_unlock();
    return e != NULL;
}

void mk_samples_write(unsigned reason)
{
    uint64_t counts[MK_K_COUNT] = {0}, bytes[MK_K_COUNT] = {0};
    uint8_t raw[64 + 2 * MK_K_COUNT * MK_VARINT_MAX], *p = raw;

    /* Other threads count on while we add: a snapshot's totals are each
     * thread's at some moment of the sum, as a profiler's can be. */
    for (mk_thread_t *t = (mk_thread_t *)atomic_load(&mk_st.threads); t; t = t->next)
        for (int k = 0; k < MK_K_COUNT; k++) {
            counts[k] += __atomic_load_n(&t->counts[k], __ATOMIC_RELAXED);
            bytes[k] += __atomic_load_n(&t->bytes[k], __ATOMIC_RELAXED);
        }
    p = mk_put_varint(p, mk_st.cfg.sample_mean);
    p = mk_put_varint(p, mk_st.cfg.sample_seed);
    p = mk_put_varint(p, reason);
    p = mk_put_varint(p, mk_now() - mk_st.t_start);
    p = mk_put_varint(p, MK_K_COUNT);
    for (int k = 0; k < MK_K_COUNT; k++)
        p = mk_put_varint(p, counts[k]);
    for (int k = 0; k < MK_K_COUNT; k++)
        p = mk_put_varint(p, bytes[k]);
    set_lock();
    size_t live = sampled.used;
    set_unlock();
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
    }
    if (mk_st.cfg.snapshot_every_ns)
        atomic_store(&snapshot_due_ns,
                     mk_now() - mk_st.t_start + mk_st.cfg.snapshot_every_ns);
}
