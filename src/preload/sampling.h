/*
 * sampling.h - --sample BYTES: which allocations are recorded, and the
 * sampled blocks still live (sampling.c has the slow parts and the SAMPLES
 * record).
 *
 * Each thread keeps a byte budget, sample_left, drawn from an exponential
 * distribution of mean BYTES. Every allocation takes its size off; the one
 * that takes the budget below zero is sampled and a new budget is drawn. The
 * byte stream is then cut by a Poisson process of rate 1/BYTES, so an
 * allocation of s bytes is sampled with probability 1 - exp(-s/BYTES) no
 * matter what came before it (the process has no memory), and a reader that
 * weighs each sample by the inverse of that probability estimates counts and
 * bytes without bias (the Horvitz-Thompson estimator). The scheme is
 * tcmalloc's and heapprofd's. The unsampled fast path is a subtraction and a
 * branch, beside the exact per-kind counters.
 *
 * Frees: only a sampled block's free is recorded. The set of sampled live
 * blocks is a hash table under a lock, fronted by a counting filter whose
 * frees take no lock: per hash bucket, the number of set members in it (a
 * byte, kept under the lock) and a bit, set while that number is not 0. A
 * free whose bucket's bit is clear (nearly every free: the set is small, the
 * live heap over BYTES) is not sampled, at the cost of one load. The filter
 * has 8 buckets or more per member, and at least 4096, so that its bits stay
 * in the first-level cache: 512 bytes at first (a byte a bucket, 4 KiB, still
 * missed it on the churn loop, 5% of the loop's time; a fixed 1 MiB one 20%).
 * It grows by rebuilding a larger one from the set and publishing it; the old
 * one stays mapped for readers still holding it (the filters together take at
 * most twice the last one). Invariants:
 *  - count[h] >= the members of the set hashing to h, equal unless the
 *    count saturated at 255 (then it stays: its frees take the slow path);
 *  - bit h is set <=> count[h] != 0.
 *  - A member is in the filter a free can read: members added before a
 *    rebuild are in the new filter, and a free of a block added after it
 *    happens after the add (the program handed the block over), which
 *    happens after the publication.
 *  - A block enters the set after the real allocation returned it and leaves
 *    before the real free (or realloc) can hand its address to another
 *    thread, so one address is never in the set twice.
 */
#ifndef MEMKIT_PRELOAD_SAMPLING_H
#define MEMKIT_PRELOAD_SAMPLING_H

#include "thread.h"

/* A thread's sampling state, in its room of the thread state (thread.h):
 * the fast bodies' fields first, in the thread flag's cache line. */
struct mk_sample_thread {
    int64_t sample_left; /* bytes until the next sample */
    uint64_t fast_mallocs, fast_frees,
        fast_free_nulls;    /* the fast bodies' counts:
                             * added wherever counts[]
                             * are summed (mk_samples_write) */
    uint64_t sample_rng;    /* the generator budgets are drawn from */
    uint64_t budget_taken;  /* bytes taken off budgets before the current one */
    int64_t budget_start;   /* the current budget as drawn */
    atomic_uint budget_gen; /* odd while the two above and sample_left change */
    unsigned snapshot_gen;  /* the last snapshot this thread's record is flushed for */
};
_Static_assert(sizeof(struct mk_sample_thread) <= sizeof(((mk_thread_t *)0)->room_sample),
               "the sampling state outgrew its room (thread.h)");

static inline __attribute__((always_inline)) struct mk_sample_thread *
mk_sample_of(mk_thread_t *t)
{
    return (struct mk_sample_thread *)(void *)t->room_sample;
}

#define MK_SAMPLE_FILTER_MIN_BITS 12 /* 4 KiB */
#define MK_SAMPLE_FILTER_LOAD     8  /* buckets per member, at least */

typedef struct mk_sample_filter {
    unsigned shift;  /* 64 - log2(buckets) */
    uint8_t *count;  /* per bucket: set members hashing to it (saturating), written
                      * and read under the set's lock only */
    uint64_t bits[]; /* per bucket, the bit frees read: count != 0 */
} mk_sample_filter_t;

extern _Atomic(mk_sample_filter_t *) mk_sample_filter MK_HIDDEN;

/* sampling.c */

/* At start-up with --sample: the filter, the table, the signal. False (said
 * once) when they cannot be mapped; tracing then records every event. */
MK_HIDDEN bool mk_sampling_init(void);
/* A thread's next budget: an exponential draw from its own generator. */
MK_HIDDEN int64_t mk_sample_draw(mk_thread_t *t);
/* The bytes all allocating calls of t asked for so far (mk_sample_renew). */
MK_HIDDEN uint64_t mk_sample_bytes_taken(mk_thread_t *t);
/* Seeds a new (or reused) thread state's generator and draws its budget. */
MK_HIDDEN void mk_sample_thread_start(mk_thread_t *t);
/* A sampled block joins the set; false when the table cannot grow (the
 * block is then not recorded). */
MK_HIDDEN bool mk_sampled_put(uintptr_t p);
/* Takes p out of the set: true when it was there. */
MK_HIDDEN bool mk_sampled_take_slow(uintptr_t p);
/* A SAMPLES record: the mean, the seed, and the process's exact counts so
 * far (every thread state's counters summed). reason: enum mk_samples_reason. */
MK_HIDDEN void mk_samples_write(unsigned reason);
/* Is a snapshot due (its interval passed, or the snapshot signal came)?
 * True for one caller per snapshot, who then writes it. */
MK_HIDDEN bool mk_snapshot_claim(void);
/* From the snapshot signal's handler: async-signal-safe. */
MK_HIDDEN void mk_snapshot_request(void);
/* Bumped at every snapshot: a thread whose own copy differs flushes its
 * record at its next sample, so the snapshot's events reach the file. */
extern atomic_uint mk_snapshot_gen MK_HIDDEN;
MK_HIDDEN void mk_sampling_after_fork_child(void);

static inline size_t mk_sample_bucket(const mk_sample_filter_t *f, uintptr_t p)
{
    /* Blocks are 16-byte aligned: the low bits carry nothing. */
    return (size_t)(((uint64_t)(p >> 4) * 0x9e3779b97f4a7c15ull) >> f->shift);
}

/* A new budget, after a sample or at the thread's start. Every allocating
 * call takes its size off the budget, so the bytes all calls asked for are
 * budget_taken + budget_start - sample_left: malloc's fast path counts no
 * bytes of its own (mk_samples_write subtracts the other kinds' from the
 * total). The generation lets another thread read the three consistently. */
static inline void mk_sample_renew(mk_thread_t *t)
{
    int64_t d = mk_sample_draw(t);
    unsigned gen =
        atomic_load_explicit(&mk_sample_of(t)->budget_gen, memory_order_relaxed);
    atomic_store_explicit(&mk_sample_of(t)->budget_gen, gen + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    mk_sample_of(t)->budget_taken +=
        (uint64_t)(mk_sample_of(t)->budget_start - mk_sample_of(t)->sample_left);
    mk_sample_of(t)->budget_start = d;
    mk_sample_of(t)->sample_left = d;
    atomic_store_explicit(&mk_sample_of(t)->budget_gen, gen + 2, memory_order_release);
}

/* The sampling decision, and the one place a budget is spent: takes size
 * bytes off the budget, true when the allocation is sampled (the budget
 * went below zero: mk_sample_renew draws the next). */
static inline bool mk_sample_due(mk_thread_t *t, size_t size)
{
    mk_sample_of(t)->sample_left -= (int64_t)size;
    return MK_UNLIKELY(mk_sample_of(t)->sample_left < 0);
}

/* The same decision before anything is spent, for the fast bodies: true
 * (the size spent) when an allocation of size bytes is not sampled; false,
 * the budget untouched, when it is, and the general path's mk_sample_due
 * then spends it and samples it. */
static inline bool mk_sample_skip(mk_thread_t *t, size_t size)
{
    if (MK_UNLIKELY(mk_sample_of(t)->sample_left < (int64_t)size))
        return false;
    (void)mk_sample_due(t, size);
    return true;
}

/* May p be a sampled block? No (nearly always) is one load. */
static inline bool mk_sampled_maybe(uintptr_t p)
{
    if (!p)
        return false;
    const mk_sample_filter_t *f =
        atomic_load_explicit(&mk_sample_filter, memory_order_relaxed);
    size_t h = mk_sample_bucket(f, p);
    return (__atomic_load_n(&f->bits[h / 64], __ATOMIC_RELAXED) >> (h % 64)) & 1;
}

/* Was p sampled (and is it still live)? Takes it out of the set if so. */
static inline bool mk_sampled_take(uintptr_t p)
{
    if (MK_LIKELY(!mk_sampled_maybe(p)))
        return false;
    return mk_sampled_take_slow(p);
}

/* --sample's fast bodies (malloc, new: hooks.c, hooks_cxx.c): the thread
 * when the fast body serves this allocation unsampled (a state, not nested,
 * not sampled: its size spent), else NULL and the general way counts it,
 * samples it and records it. */
static inline mk_thread_t *mk_sample_fast_alloc(size_t size)
{
    mk_thread_t *t = mk_self;
    if (MK_UNLIKELY(!t) || MK_UNLIKELY(mk_nested()) || !mk_sample_skip(t, size))
        return NULL;
    return t;
}

/* And free and delete's: the thread when the block cannot be a sampled one
 * (the filter's one load), else NULL for the general way. */
static inline mk_thread_t *mk_sample_fast_free(const void *p)
{
    mk_thread_t *t = mk_self;
    if (MK_UNLIKELY(!t) || MK_UNLIKELY(mk_nested()) || mk_sampled_maybe((uintptr_t)p))
        return NULL;
    return t;
}

#endif /* MEMKIT_PRELOAD_SAMPLING_H */
