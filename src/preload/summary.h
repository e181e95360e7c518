/*
 * summary.h - --summary-only's event path, inlined into the hooks (the slow
 * parts and the SUMMARY record are in summary.c).
 *
 * Calls and bytes per call site (the calling instruction) and kind are
 * counted per thread with no sharing; the kinds' totals are their sums. Peak
 * requested bytes need the size of every freed block: live_sizes.h keeps
 * them, without locks.
 *
 * While one thread is all there is, the peak is exact: the live totals are
 * that thread's alone. From the second thread on ("multi" mode), each thread
 * keeps its own share of the live totals and samples the peak from their sum
 * whenever its own share leaves a band around its value at its last sample:
 * MK_PEAK_SLACK bytes (MK_PEAK_SLACK_BLOCKS blocks) above or below it. No
 * event touches a shared counter, so threads do not serialize, and a thread
 * whose totals only wander (a steady state) reads the others' lines seldom.
 *
 * The bound that buys: let s be the last sample by any thread before the true
 * peak at T, or the switch to multi mode if none came after it (up to there
 * the peak is exact). No thread sampled in (s, T], so each thread's band is
 * the same at s and at T. At s its share was at or above the band's floor
 * (a free below it samples, in either mode). At T its share is at or below
 * the ceiling, 2 slacks above the floor, or else it made no allocation in
 * (s, T] (the last one would have ended above the ceiling, and sampled) and
 * is no higher than at s. Either way share(T) <= share(s) + 2 slacks, and
 * summed, the peak recorded is at most 2N slacks below the true one, N the
 * threads that allocate (up to the order in which one sample reads the
 * others' shares, which no sampling fixes). A trigger on growth alone would
 * not bound it: a thread could fall and climb back unseen.
 *
 * A thread's band starts as [-slack, slack] around its share of 0 and moves
 * only in whole samples. In single mode allocations raise the exact peak and
 * do not look at the band; frees still check its floor (a sample then is
 * needless but harmless, and saves every free a test of the mode), so a
 * thread enters multi mode at or above its floor, as the bound needs.
 */
#ifndef MEMKIT_PRELOAD_SUMMARY_H
#define MEMKIT_PRELOAD_SUMMARY_H

#include "live_sizes.h"
#include "thread.h"

/* A thread's summary state, in its room of the thread state (thread.h). */
struct mk_summary_thread {
    struct mk_site_table *sites;       /* per-thread site totals (summary.c) */
    mk_kv_t *last_site;                /* the site table's entry used last */
    long long live_bytes, live_blocks; /* this thread's share */
    long long sample_hi, sample_lo;    /* the live bytes, and blocks, above or */
    long long sample_hi_blocks;        /* below which an event samples the */
    long long sample_lo_blocks;        /* peak (see above) */
    uint64_t frees_unseen;             /* free()s of NULL or of unseen blocks */
    uint32_t checkpoint_gate;          /* slow-path calls, to read the clock now */
    uint64_t checkpoint_due_ns;        /* and then; the next checkpoint (ns since */
    uint64_t checkpoint_every_ns;      /* start) and the gap after it */
};
_Static_assert(sizeof(struct mk_summary_thread) <=
                   sizeof(((mk_thread_t *)0)->room_summary),
               "the summary state outgrew its room (thread.h)");

static inline __attribute__((always_inline)) struct mk_summary_thread *
mk_summary_of(mk_thread_t *t)
{
    return (struct mk_summary_thread *)(void *)t->room_summary;
}

#define MK_PEAK_SLACK        (8ll << 10) /* live bytes a thread moves unsampled */
#define MK_PEAK_SLACK_BLOCKS 32ll        /* and live blocks */

/* summary.c */
MK_HIDDEN void mk_summary_write(void);
MK_HIDDEN void mk_summary_after_fork_child(void);
/* A thread state is added: true when the caller must then wait for every
 * other thread to leave its hook (mk_quiesce_others). */
MK_HIDDEN bool mk_summary_thread_added(mk_thread_t *t);

extern atomic_int mk_summary_multi MK_HIDDEN; /* 0 while one thread has recorded */
extern atomic_llong mk_summary_peak_bytes MK_HIDDEN, mk_summary_peak_blocks MK_HIDDEN;
/* Where a thread's last_site points before its first site (and if a site
 * table could not grow): its key 0 matches no calling instruction. */
extern mk_kv_t mk_summary_no_site MK_HIDDEN;

/* An allocating call's entry in its thread's site table: the calling
 * instruction and the kind of call (one instruction can call malloc and
 * calloc through a pointer), whose totals are the kind's totals too, so that
 * the hot path updates one entry. Kinds sit above any user-space address. */
static inline uint64_t mk_summary_site_key(uintptr_t site, unsigned kind)
{
    return (uint64_t)site | (uint64_t)kind << MK_SITE_KIND_SHIFT;
}

/* summary.c: a site other than the thread's last one; a peak sample. */
MK_HIDDEN void mk_summary_count_site(mk_thread_t *t, uint64_t key, size_t size);
MK_HIDDEN void mk_summary_sample_peak(mk_thread_t *t);

/* Live totals change only by their owner thread (others read them to sample
 * the peak), never by a shared read-modify-write. */
static inline void mk_summary_live_set(mk_thread_t *t, long long bytes, long long blocks)
{
    __atomic_store_n(&mk_summary_of(t)->live_bytes, bytes, __ATOMIC_RELAXED);
    __atomic_store_n(&mk_summary_of(t)->live_blocks, blocks, __ATOMIC_RELAXED);
}

/* A block left: the totals fall; below the band, a sample (see above). */
static inline void mk_summary_live_drop(mk_thread_t *t, long long size)
{
    long long bytes = mk_summary_of(t)->live_bytes - size,
              blocks = mk_summary_of(t)->live_blocks - 1;
    mk_summary_live_set(t, bytes, blocks);
    if (MK_UNLIKELY(bytes < mk_summary_of(t)->sample_lo ||
                    blocks < mk_summary_of(t)->sample_lo_blocks))
        mk_summary_sample_peak(t);
}

/* A block came: the totals rise, and so may the peak. */
static inline void mk_summary_live_raise(mk_thread_t *t, long long size)
{
    long long bytes = mk_summary_of(t)->live_bytes + size,
              blocks = mk_summary_of(t)->live_blocks + 1;
    mk_summary_live_set(t, bytes, blocks);
    if (MK_UNLIKELY(atomic_load_explicit(&mk_summary_multi, memory_order_relaxed))) {
        if (MK_UNLIKELY(bytes > mk_summary_of(t)->sample_hi ||
                        blocks > mk_summary_of(t)->sample_hi_blocks))
            mk_summary_sample_peak(t);
        return;
    }
    /* The only thread: its totals are the process's, and exact. */
    if (bytes > atomic_load_explicit(&mk_summary_peak_bytes, memory_order_relaxed))
        atomic_store_explicit(&mk_summary_peak_bytes, bytes, memory_order_relaxed);
    if (blocks > atomic_load_explicit(&mk_summary_peak_blocks, memory_order_relaxed))
        atomic_store_explicit(&mk_summary_peak_blocks, blocks, memory_order_relaxed);
}

/* mk_enter for --summary-only's own hook bodies (hooks.c, hooks_cxx.c),
 * which have sent a nested call to the real function already: NULL for a
 * thread without its state yet or tracing not on, which then goes the
 * general way. No slow path here, so the fast one never merges with one. */
static inline __attribute__((always_inline)) mk_thread_t *mk_summary_enter(void)
{
    mk_thread_t *t = mk_self;
    if (MK_UNLIKELY(t == NULL))
        return NULL;
    return mk_announce(t) ? t : NULL;
}

/* An allocating call of the given kind at site, counted whether or not it
 * succeeds: before the real call, so that the site need not be kept across
 * it (one register fewer to save in summary_malloc). */
static inline __attribute__((always_inline)) void
mk_summary_count(mk_thread_t *t, unsigned kind, size_t size, uintptr_t site)
{
    uint64_t key = mk_summary_site_key(site, kind);
    if (MK_LIKELY(mk_summary_of(t)->last_site->key == key)) {
        mk_summary_of(t)->last_site->a++; /* a hot loop: the same site again */
        mk_summary_of(t)->last_site->b += size;
    } else {
        mk_summary_count_site(t, key, size);
    }
}

/* The call returned addr (0: failed): a block of size bytes became live. */
static inline __attribute__((always_inline)) void
mk_summary_live(mk_thread_t *t, size_t size, uintptr_t addr)
{
    if (MK_UNLIKELY(!addr))
        return; /* failed: nothing became live */
    long long was = mk_live_put(addr, size);
    if (MK_UNLIKELY(was >= 0))
        mk_summary_live_drop(t, was); /* freed where no hook saw it */
    mk_summary_live_raise(t, (long long)size);
}

/* Both, after the call. */
static inline __attribute__((always_inline)) void
mk_summary_alloc(mk_thread_t *t, unsigned kind, size_t size, uintptr_t addr,
                 uintptr_t site)
{
    mk_summary_count(t, kind, size, site);
    mk_summary_live(t, size, addr);
}

/* A free of addr; kind MK_K_NONE is the free half of a realloc, not a call. */
static inline __attribute__((always_inline)) void
mk_summary_free(mk_thread_t *t, unsigned kind, uintptr_t addr)
{
    t->counts[kind]++;
    long long size = MK_LIKELY(addr != 0) ? mk_live_take(addr) : -1;
    if (MK_LIKELY(size >= 0))
        mk_summary_live_drop(t, size); /* a thread's share may go below 0 */
    else /* memanalyze's Frees are of blocks seen allocated: count the others */
        mk_summary_of(t)->frees_unseen += kind == MK_K_FREE;
}

#endif /* MEMKIT_PRELOAD_SUMMARY_H */
