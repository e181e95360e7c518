/*
 * record.h - encoding one event into the calling thread's buffer. Included by
 * the hook files only: the functions are inlined into each hook (or into
 * the body a hook hands its call to, general_malloc), so that no frame of
 * their own lies between the hook and the stack capture.
 */
#ifndef MEMKIT_PRELOAD_RECORD_H
#define MEMKIT_PRELOAD_RECORD_H

#include "hook.h"
#include "runtime.h"
#include "sampling.h"
#include "stacks.h"
#include "summary.h"

/* Keeps errno as the real call left it: writing a record may touch it. The
 * thread's errno address is kept in its state: __errno_location is a call. */
#define KEEP_ERRNO(t, stmt)                                                              \
    do {                                                                                 \
        int *errno_at_ = (t)->errno_at;                                                  \
        int saved_errno_ = *errno_at_;                                                   \
        stmt;                                                                            \
        *errno_at_ = saved_errno_;                                                       \
    } while (0)

/* Which calls are read around, to find the slow ones (format.h): those on
 * blocks of READ_MIN_SIZE bytes or more. Below that size glibc serves and takes blocks
 * from its per-thread caches and small bins; its slow paths (consolidating, growing or
 * trimming the heap, mapping) come with large requests and frees, or are spread over many
 * calls, which the timed stride weighs without bias. Reading every call costs a TSC read
 * more per call: 14% on the churn loop.
 * Calls on blocks of CLOCKED_MIN_SIZE bytes or more (glibc's first mmap threshold) are
 * clocked too: the thread's CPU clock and the monotonic clock are read around them,
 * which costs two system calls (half a microsecond) on calls that map, unmap or touch
 * that many bytes (tens of microseconds). A clocked call its thread was switched out
 * in keeps its time on the CPU (SWITCH_CHECK); the milliseconds a long munmap spends
 * preempted are not its own, its milliseconds of work are. */
#define READ_MIN_SIZE    1024
#define CLOCKED_MIN_SIZE (128u << 10)

enum { READ_NO, READ_TSC, READ_CLOCKED }; /* how a call is read */

static inline unsigned read_size(size_t n)
{
    return n >= CLOCKED_MIN_SIZE ? READ_CLOCKED : n >= READ_MIN_SIZE ? READ_TSC : READ_NO;
}

/* A block the thread's index knows (slot s, mk_writer_free_slot): its size
 * class says its size, up to the last class, whose blocks' sizes the
 * allocator's header says (usable: may p be asked about?). */
static inline unsigned read_class(const void *p, const mk_index_slot_t *s, bool usable)
{
    unsigned c = mk_slot_cls(s);
    if (c < mk_size_class(READ_MIN_SIZE))
        return READ_NO;
    if (c < 255 || !usable || !mk_real.malloc_usable_size)
        return READ_TSC;
    return read_size(mk_real.malloc_usable_size((void *)p)) == READ_CLOCKED ? READ_CLOCKED
                                                                            : READ_TSC;
}

/* A free of p, slot s: a block the index does not know (another thread's,
 * or evicted: a program holding a million blocks frees mostly those) asks
 * the allocator, whose malloc_usable_size reads the block's header (NULL
 * when it is not free's own: then read). */
static inline unsigned read_slot(const void *p, const mk_index_slot_t *s)
{
    if (s)
        return read_class(p, s, true);
    if (!p)
        return READ_NO;
    return mk_real.malloc_usable_size ? read_size(mk_real.malloc_usable_size((void *)p))
                                      : READ_TSC;
}

/* A delete of p (slot s), whose operator new may not be malloc: unknown to
 * the index, only a sized delete's n (0: none) says its size. */
static inline unsigned read_delete(const void *p, const mk_index_slot_t *s, size_t n)
{
    if (s) {
        unsigned level = read_class(p, s, false);
        return level && read_size(n) == READ_CLOCKED ? READ_CLOCKED : level;
    }
    return p ? read_size(n) : READ_NO;
}

/* The clocks a clocked call is read between: the thread's CPU time and the
 * monotonic clock, in ns, by system call (never a hooked function). */
typedef struct mk_clocks {
    uint64_t cpu, wall;
} mk_clocks_t;

static inline mk_clocks_t read_clocks(void)
{
    struct timespec c = {0, 0}, w = {0, 0};
    mk_syscall(SYS_clock_gettime, CLOCK_THREAD_CPUTIME_ID, &c);
    mk_syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &w);
    return (mk_clocks_t){(uint64_t)c.tv_sec * 1000000000u + (uint64_t)c.tv_nsec,
                         (uint64_t)w.tv_sec * 1000000000u + (uint64_t)w.tv_nsec};
}

/* Runs stmt, a real call of thread t read at level (READ_*), between the
 * TSC reads begin and end: the clocks around it too when it is clocked,
 * the thread's switch word armed (SWITCH_CHECK). */
#define READ_AROUND(t, span, level, begin, end, stmt)                                    \
    do {                                                                                 \
        mk_clocks_t c0_ = {0, 0};                                                        \
        if (MK_UNLIKELY((level) == READ_CLOCKED))                                        \
            c0_ = read_clocks();                                                         \
        uint64_t a0_ = (t)->oncpu.n[MK_ONCPU_ALLOC];                                     \
        mk_switch_arm((t)->switch_word);                                                 \
        MK_ONCPU_CALL(t, (span).t0 = (begin); stmt; (span).t1 = (end));                  \
        (span).read = (level) != READ_NO;                                                \
        SWITCH_CHECK(t, span, level, c0_, (t)->oncpu.n[MK_ONCPU_ALLOC] - a0_);           \
    } while (0)

/* Runs stmt, a real call of thread t, between unfenced TSC reads when the
 * run times calls and read_it (a READ_* level) says this one is read (the
 * later read is then the event's tick), else with no reads at all. */
#define READ_CALL(t, span, read_it, stmt)                                                \
    do {                                                                                 \
        unsigned level_ = MK_LIKELY(mk_st.timing) ? (read_it) : READ_NO;                 \
        if (level_) {                                                                    \
            READ_AROUND(t, span, level_, __rdtsc(), __rdtsc(), stmt);                    \
        } else {                                                                         \
            (span) = MK_NO_SPAN;                                                         \
            MK_ONCPU_CALL(t, stmt);                                                      \
        }                                                                                \
    } while (0)

/* Runs stmt, the real call of thread t's next event, between the span's
 * fenced reads when the writer's stride says that event is timed (format.h),
 * else as READ_CALL does. A timed call is judged slow only if it would
 * have been read: the others are the stride's to weigh. read_it is taken
 * before the call (a free's may ask the allocator about the block). */
#define TIMED_CALL(t, span, read_it, stmt)                                               \
    do {                                                                                 \
        if (MK_UNLIKELY(mk_writer_cost_due(&(t)->w))) {                                  \
            unsigned level_ = (read_it);                                                 \
            READ_AROUND(t, span, level_, mk_fenced_begin(), mk_fenced_end(), stmt);      \
        } else {                                                                         \
            READ_CALL(t, span, read_it, stmt);                                           \
        }                                                                                \
    } while (0)

/* A call the thread was switched out in (base.h's mk_switched): a clocked
 * one keeps the share of its cycles its CPU clock ran for; a read one that
 * CPU samples fell in (oncpu.h) keeps their time, at most its cycles (a
 * heap's consolidation, 100 ms a call, is switched out on a busy machine
 * and is the call that matters); any other keeps its end as the event's
 * time and has no time of its own (0 cycles: never slow; a timed one
 * weighs 0, one sample of its stride lost against milliseconds off the CPU
 * counted 64 times). */
#define SWITCH_CHECK(t, span, level, c0, samples)                                        \
    do {                                                                                 \
        if (MK_UNLIKELY(mk_switched((t)->switch_word))) {                                \
            if ((level) == READ_CLOCKED) {                                               \
                (span).t0 = (span).t1 - on_cpu_cycles((span).t1 - (span).t0, (c0));      \
                (t)->w.switched_clocked++;                                               \
            } else if ((level) != READ_NO && (samples) > 0) {                            \
                (span).t0 =                                                              \
                    (span).t1 - sampled_cycles((span).t1 - (span).t0, (samples));        \
                (t)->w.switched_clocked++;                                               \
            } else {                                                                     \
                (span).t0 = (span).t1;                                                   \
                (t)->w.switched++;                                                       \
            }                                                                            \
        }                                                                                \
    } while (0)

/* The cycles of a read call that n CPU samples fell in: their time, at the
 * TSC's rate since start-up, at most the call's cycles (out of line:
 * switches are rare). */
static __attribute__((noinline, unused)) uint64_t sampled_cycles(uint64_t cycles,
                                                                 uint64_t n)
{
    uint64_t ns = mk_now() - mk_st.t_start;
    uint64_t tsc = (mk_ticks() - mk_st.tick_start) << MK_TICK_SHIFT;
    if (ns == 0)
        return 0;
    double on_cpu = (double)n * (double)mk_oncpu_period_ns() * (double)tsc / (double)ns;
    return on_cpu < (double)cycles ? (uint64_t)on_cpu : cycles;
}

/* The cycles of a clocked call that its thread spent on the CPU: its
 * cycles times the CPU clock's advance over the monotonic clock's, since
 * c0 (out of line: switches are rare). */
static __attribute__((noinline, unused)) uint64_t on_cpu_cycles(uint64_t cycles,
                                                                mk_clocks_t c0)
{
    mk_clocks_t c1 = read_clocks();
    uint64_t cpu = c1.cpu - c0.cpu, wall = c1.wall - c0.wall;
    if (wall == 0 || cpu >= wall)
        return cycles;
    return (uint64_t)((double)cycles * (double)cpu / (double)wall);
}

/* Was the call slow (format.h): read, and at least the run's slow bound? */
static inline bool span_slow(mk_span_t span)
{
    return span.read && span.t1 - span.t0 >= mk_st.slow_cycles;
}

/* The frame address of the function that records the event (record_* are
 * inlined into it: the hook, or general_malloc), for mk_stack_id's cache. */
#define HOOK_FRAME() ((uintptr_t)__builtin_frame_address(0))

/* ---- the put_* functions: one event into the thread's record ----
 *
 * Inlined into the hook; ra is the hook's return address (mk_stack_id's
 * stacks start at the frame that returns there) and fp the recording
 * function's frame (its cache key); span the real call's TSC reads
 * (mk_span_t, base.h), whose difference is the allocator's time and whose
 * end (an allocation's) or start (a free's) is the event's time. The
 * encoding is writer.h's. */

/* The event's tick: its span's read (at, t1 or t0), else the clock now. */
static inline uint64_t span_tick(uint64_t at)
{
    return at ? at >> MK_TICK_SHIFT : mk_ticks();
}

/* Returns the event's stack id (0: none, or not recorded). */
static inline __attribute__((always_inline)) uint32_t
put_alloc(mk_thread_t *t, unsigned kind, size_t size, size_t align, const void *p,
          uintptr_t ra, uintptr_t fp, mk_span_t span)
{
    if (!mk_room(t))
        return 0;
    /* may write a definition: before the event; ra 0: no stack (--sample's
     * before libunwind is ready) */
    uint32_t stack = ra ? mk_stack_id(t, ra, fp) : 0;
    if (MK_UNLIKELY(!mk_writer_alloc(&t->w, span_tick(span.t1), span.t1 - span.t0,
                                     span_slow(span), kind, size, align, (uintptr_t)p,
                                     stack)))
        mk_index_failed();
    return stack;
}

/* The stack of a free that carries a time (mk_writer_times): out of line,
 * as few frees need it. */
static __attribute__((noinline, unused)) uint32_t free_stack(mk_thread_t *t, uintptr_t ra,
                                                             uintptr_t fp)
{
    return ra ? mk_stack_id(t, ra, fp) : 0;
}

/* s: p's slot in the thread's index (mk_writer_free_slot), unchanged since. */
static inline __attribute__((always_inline)) void put_free(mk_thread_t *t, unsigned kind,
                                                           const void *p, uintptr_t ra,
                                                           uintptr_t fp, mk_span_t span,
                                                           mk_index_slot_t *s)
{
    if (!mk_room(t))
        return;
    bool slow = span_slow(span);
    /* may write a definition: before the event */
    uint32_t stack =
        MK_UNLIKELY(mk_writer_times(&t->w, slow)) ? free_stack(t, ra, fp) : 0;
    mk_writer_free(&t->w, span_tick(span.t0), span.t1 - span.t0, slow, kind, (uintptr_t)p,
                   s, stack);
}

static inline __attribute__((always_inline)) uint32_t
put_realloc(mk_thread_t *t, unsigned kind, size_t size, const void *old, const void *p,
            uintptr_t ra, uintptr_t fp, mk_span_t span)
{
    if (!mk_room(t))
        return 0;
    uint32_t stack = ra ? mk_stack_id(t, ra, fp) : 0;
    if (MK_UNLIKELY(!mk_writer_realloc(&t->w, span_tick(span.t1), span.t1 - span.t0,
                                       span_slow(span), kind, size, (uintptr_t)old,
                                       (uintptr_t)p, stack)))
        mk_index_failed();
    return stack;
}

static inline __attribute__((always_inline)) void
put_sysmap(mk_thread_t *t, unsigned kind, size_t size, const void *p, const void *old)
{
    if (!mk_room(t))
        return;
    mk_writer_sysmap(&t->w, mk_ticks(), kind, size, (uintptr_t)p, (uintptr_t)old);
}

/* ---- --sample: the sampled path (sampling.h) ----
 *
 * Every call is counted; an allocation that is sampled joins the set of
 * sampled blocks and is recorded with its stack, and a free is recorded only
 * when its block is in the set. */

/* Before a sampled event: the snapshot that is due (this thread takes it),
 * or the flush of this thread's record for one another thread took. */
static inline void sample_snapshot(mk_thread_t *t)
{
    unsigned gen = atomic_load_explicit(&mk_snapshot_gen, memory_order_relaxed);
    if (MK_UNLIKELY(mk_snapshot_claim())) {
        mk_thread_flush(t);
        mk_sample_of(t)->snapshot_gen = atomic_fetch_add(&mk_snapshot_gen, 1) + 1;
        mk_samples_write(MK_SAMPLES_SNAPSHOT);
    } else if (MK_UNLIKELY(mk_sample_of(t)->snapshot_gen != gen)) {
        mk_thread_flush(t);
        mk_sample_of(t)->snapshot_gen = gen;
    }
}

static inline __attribute__((always_inline)) void
sample_put_alloc(mk_thread_t *t, unsigned kind, size_t size, size_t align, const void *p,
                 uintptr_t ra, uintptr_t fp, mk_span_t span)
{
    sample_snapshot(t);
    put_alloc(t, kind, size, align, p, mk_stacks_ready() ? ra : 0, fp, span);
}

/* The general path's sampled allocation, realloc and free are out of line:
 * inlined beside full tracing's events they made the compiler take the
 * writer's encoding out of general_malloc and general_free (3% on the churn
 * loop). The stack still starts at ra, and fp is the hook's. An allocation
 * the budget chose gets a new budget, and its block is recorded. */
static __attribute__((noinline, unused)) void sample_alloc(mk_thread_t *t, unsigned kind,
                                                           size_t size, size_t align,
                                                           const void *p, uintptr_t ra,
                                                           uintptr_t fp, mk_span_t span)
{
    t->counts[kind]++;
    t->bytes[kind] += size;
    if (MK_LIKELY(!mk_sample_due(t, size)))
        return;
    mk_sample_renew(t);
    if (p && mk_sampled_put((uintptr_t)p))
        KEEP_ERRNO(t, sample_put_alloc(t, kind, size, align, p, ra, fp, span));
}

/* A free, before the real one: counted (free(NULL)s apart, in the kind-less
 * slot: Frees counts blocks freed), and its block taken out of the set;
 * true when it was sampled, and its event is to be put once the real free
 * returned. The fast paths of free and delete (hooks.c, hooks_cxx.c) send
 * only the blocks the filter may know here. */
static __attribute__((noinline, unused)) bool
sample_free_begin(mk_thread_t *t, unsigned kind, const void *p)
{
    t->counts[kind]++;
    t->counts[MK_K_NONE] += kind == MK_K_FREE && !p;
    return mk_sampled_take((uintptr_t)p);
}

/* A realloc's old block leaves the set before the real call, so that no
 * other thread can be handed its address while it is still in: true when it
 * was sampled. */
static inline __attribute__((always_inline)) bool sample_realloc_begin(const void *old)
{
    return MK_UNLIKELY(mk_mode_sampled()) && mk_sampled_take((uintptr_t)old);
}

/* The event of a realloc touching a sampled block: the realloc itself when
 * the new block is sampled (from NULL when the old one was not), else the
 * old block's end as a free. */
static inline __attribute__((always_inline)) void
sample_put_realloc(mk_thread_t *t, unsigned kind, size_t size, const void *old,
                   bool old_sampled, bool sampled, const void *p, uintptr_t ra,
                   uintptr_t fp, mk_span_t span)
{
    sample_snapshot(t);
    if (sampled)
        put_realloc(t, kind, size, old_sampled ? old : NULL, p,
                    mk_stacks_ready() ? ra : 0, fp, span);
    else
        put_free(t, MK_K_FREE, old, ra, fp, span,
                 mk_writer_free_slot(&t->w, (uintptr_t)old));
}

static __attribute__((noinline, unused)) void
sample_realloc(mk_thread_t *t, unsigned kind, size_t size, const void *old,
               bool old_sampled, const void *p, uintptr_t ra, uintptr_t fp,
               mk_span_t span)
{
    t->counts[kind]++;
    t->bytes[kind] += size;
    if (!p && size) {                 /* failed: the old block stays as it was */
        (void)mk_sample_due(t, size); /* asked for all the same (mk_sample_renew) */
        if (old_sampled)
            mk_sampled_put((uintptr_t)old);
        return;
    }
    bool sampled = mk_sample_due(t, size);
    if (MK_LIKELY(!sampled && !old_sampled))
        return;
    if (sampled) {
        mk_sample_renew(t);
        sampled = p && mk_sampled_put((uintptr_t)p);
        if (!sampled && !old_sampled)
            return;
    }
    KEEP_ERRNO(
        t, sample_put_realloc(t, kind, size, old, old_sampled, sampled, p, ra, fp, span));
}

/* ---- the record_* functions: one event, in the process's mode ----
 *
 * The one place each event meets the mode (mk_mode_t): --summary-only
 * aggregates; --sample counts and records samples; full tracing records the
 * event, and with the summary too (memkit trace without -q) also aggregates
 * it, its site the event's stack id. Each leaves errno as it found it: the
 * summary's path cannot touch it (its slow paths keep it themselves), so
 * only the events' path pays. */

static inline __attribute__((always_inline)) void
record_alloc(mk_thread_t *t, unsigned kind, size_t size, size_t align, const void *p,
             uintptr_t ra, mk_span_t span)
{
    mk_mode_t mode = mk_st.cfg.mode;
    if (mode == MK_MODE_SUMMARY) {
        mk_summary_alloc(t, kind, size, (uintptr_t)p, ra);
        return;
    }
    if (MK_UNLIKELY(mode == MK_MODE_SAMPLED)) {
        sample_alloc(t, kind, size, align, p, ra, HOOK_FRAME(), span);
        return;
    }
    uint32_t stack;
    KEEP_ERRNO(t, stack = put_alloc(t, kind, size, align, p, ra, HOOK_FRAME(), span));
    if (MK_UNLIKELY(mode == MK_MODE_FULL_SUMMARY))
        mk_summary_alloc(t, kind, size, (uintptr_t)p, stack);
}

/* A free comes in two halves around the real free. Before it, what must
 * precede it: the summary's block leaves the table of live sizes, a sampled
 * block the set (no other thread may be handed the address while it is
 * still in). True when the event is to be put after it, with the call's
 * span (record_free_end). */
static inline __attribute__((always_inline)) bool
record_free_begin(mk_thread_t *t, unsigned kind, const void *p)
{
    mk_mode_t mode = mk_st.cfg.mode;
    if (mode == MK_MODE_SUMMARY) {
        mk_summary_free(t, kind, (uintptr_t)p);
        return false;
    }
    if (MK_UNLIKELY(mode == MK_MODE_SAMPLED))
        return sample_free_begin(t, kind, p);
    if (MK_UNLIKELY(mode == MK_MODE_FULL_SUMMARY))
        mk_summary_free(t, kind, (uintptr_t)p);
    return true;
}

/* The event: after the real free at the time it started when the call was
 * read, else before it; ra is the hook's return address (a free that
 * carries a time names its caller's stack), s the block's slot in the
 * thread's index (mk_writer_free_slot). */
static inline __attribute__((always_inline)) void
record_free_end(mk_thread_t *t, unsigned kind, const void *p, uintptr_t ra,
                mk_span_t span, mk_index_slot_t *s)
{
    KEEP_ERRNO(t, put_free(t, kind, p, ra, HOOK_FRAME(), span, s));
}

/* The summary's half of a realloc: a failed one leaves the old block; one
 * that returns NULL for size 0 freed it. */
static inline __attribute__((always_inline)) void
summary_realloc(mk_thread_t *t, unsigned kind, size_t size, const void *old,
                const void *p, uintptr_t site)
{
    if (old && (p || size == 0))
        mk_summary_free(t, MK_K_NONE, (uintptr_t)old);
    mk_summary_alloc(t, kind, size, (uintptr_t)p, site);
}

/* old_sampled: sample_realloc_begin's answer (false unless sampled). */
static inline __attribute__((always_inline)) void
record_realloc(mk_thread_t *t, unsigned kind, size_t size, const void *old,
               bool old_sampled, const void *p, uintptr_t ra, mk_span_t span)
{
    mk_mode_t mode = mk_st.cfg.mode;
    if (mode == MK_MODE_SUMMARY) {
        summary_realloc(t, kind, size, old, p, ra);
        return;
    }
    if (MK_UNLIKELY(mode == MK_MODE_SAMPLED)) {
        sample_realloc(t, kind, size, old, old_sampled, p, ra, HOOK_FRAME(), span);
        return;
    }
    uint32_t stack;
    KEEP_ERRNO(t, stack = put_realloc(t, kind, size, old, p, ra, HOOK_FRAME(), span));
    if (MK_UNLIKELY(mode == MK_MODE_FULL_SUMMARY))
        summary_realloc(t, kind, size, old, p, stack);
}

/* A system call that maps or moves memory (--syscalls, any mode): an event
 * where the mode writes events, and counted once by kind where it counts. */
static inline void record_sysmap(mk_thread_t *t, unsigned kind, size_t size,
                                 const void *p, const void *old)
{
    if (mk_mode_events())
        KEEP_ERRNO(t, put_sysmap(t, kind, size, p, old));
    if (mk_mode_counts_kinds()) {
        t->counts[kind]++;
        t->bytes[kind] += size;
    }
}

#endif /* MEMKIT_PRELOAD_RECORD_H */
