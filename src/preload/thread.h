/*
 * thread.h - a thread's tracer state and the way into a hook: mk_enter,
 * mk_leave, mk_room (threads.c has the rest: states made, reused, flushed).
 *
 * Invariants:
 *  - A thread's writer is written only by its owner thread; the final flush
 *    first stops new events and waits for events in flight (see mk_enter),
 *    so the event path has no lock and no atomic read-modify-write at all.
 *    The writer's streams always hold whole items.
 *  - States are never unmapped or unlinked: a state whose thread ended is
 *    reused by a new thread (claim_state, threads.c).
 */
#ifndef MEMKIT_PRELOAD_THREAD_H
#define MEMKIT_PRELOAD_THREAD_H

#include "base.h"
#include "oncpu.h"

#include "../trace/kv_table.h"
#include "../trace/writer.h"

/* Each service keeps its per-thread state in a room of its own here: the
 * service's header defines the struct that fills the room, asserts that it
 * fits and reaches it (mk_sample_of, mk_summary_of, mk_stacks_of,
 * mk_output_of); the core sizes the rooms and never reads them. A new
 * field of a service recompiles that service and its users, not the core.
 * Nothing reads a room's bytes as bytes, so each room has one type. */
#define MK_ROOM(name, size) _Alignas(8) unsigned char room_##name[size]

struct mk_thread {
    /* One cache line for everything --sample's fast bodies touch: the
     * flag, and the sampling room's first fields (sampling.h). */
    atomic_int in_hook; /* set while the owner is in a hook; see
                         * mk_enter and mk_nested */
    uint32_t index;     /* thread number within the process, from 1 */
    MK_ROOM(sample, 64);
    mk_oncpu_thread_t oncpu; /* the thread's CPU samples (oncpu.h) */
    pid_t tid;
    int *errno_at;                  /* the owner thread's errno */
    volatile uint64_t *switch_word; /* the owner's rseq_cs word (base.h's
                                     * mk_switched), or switch_none */
    uint64_t switch_none;
    atomic_bool dead;      /* no owner (a forked child's other threads) */
    atomic_int exited_tid; /* the owner's key destructor ran: reuse once
                            * this thread is gone (threads.c) */
    uint32_t state_id;     /* which state this is, from 1 (a SUMMARY_PART's) */
    mk_thread_t *next;     /* all thread states, never unlinked */
    /* The modes that count in process (mk_mode_counts_kinds): calls and
     * bytes per kind. --summary-only's sites hold the allocations; here
     * are frees, system calls and sites its table had no room for.
     * --sample counts every call here (its fast malloc and free in its
     * room: mk_samples_write adds them). */
    uint64_t counts[MK_K_COUNT];
    uint64_t bytes[MK_K_COUNT];
    MK_ROOM(summary, 128);
    MK_ROOM(stacks, 32);
    MK_ROOM(output, 32);
    mk_writer_t w; /* the current EVENTS record (writer.h) */
};

/* ---- threads.c ---- */

/* The calling thread's state, new or reused, taken (in_hook set, so that a
 * flusher waits for it); NULL (said once) when none can be mapped. */
MK_HIDDEN mk_thread_t *mk_thread_get(void);
/* Writes t's record (if it holds events) and starts the next. */
MK_HIDDEN void mk_thread_flush(mk_thread_t *t);
/* Flushes every thread's record; the phase is no longer ON. */
MK_HIDDEN void mk_threads_flush_all(void);
/* Waits until every other thread is out of its hook (after a membarrier, so
 * each sees what we stored before). */
MK_HIDDEN void mk_quiesce_others(void);
/* The live-block index ran out of memory: tracing stops, said once. */
MK_HIDDEN void mk_index_failed(void);
/* At start-up: the key whose destructor flushes an exiting thread's state,
 * and the membarrier flushes rely on. */
MK_HIDDEN void mk_threads_init(void);
/* In a forked child: every state but the caller's is ownerless. */
MK_HIDDEN void mk_threads_after_fork_child(void);

/* ---- runtime.c ---- */

/* mk_enter for a thread without a state yet, or before start-up. */
MK_HIDDEN mk_thread_t *mk_enter_slow(void);

/* ---- the way in and out of a hook ---- */

/* Leaves a hook of a body that never samples the CPU (--summary-only's
 * own: a run that samples takes the general ones, runtime.c's path_of). */
static inline void mk_leave_unsampled(mk_thread_t *t)
{
    atomic_store_explicit(&t->in_hook, 0, memory_order_release);
}

/* Leaves a hook; what the thread did since its last mark was memkit's
 * (libunwind's, libc's and the kernel's work for it too). */
static inline void mk_leave(mk_thread_t *t)
{
    mk_oncpu_mark(&t->oncpu, MK_ONCPU_TRACER);
    mk_leave_unsampled(t);
}

/* Is the calling thread inside memkit, so that its call must go to the real
 * function unrecorded (strdup's malloc, operator new's, a signal handler's
 * that interrupted a hook, libunwind's)? Inside a hook, its in_hook flag
 * says so: the one store that tells a flusher to wait also tells a nested
 * call to pass, and the hot paths pay for no second flag. Outside one, in
 * the tracer's own code, the guard does. */
static inline bool mk_nested(void)
{
    mk_thread_t *t = mk_self;
    return mk_guard || (t && atomic_load_explicit(&t->in_hook, memory_order_relaxed));
}

/* The thread (not nested, with its state) announces itself; false when
 * tracing is not on, the flag then cleared again. */
static inline bool mk_announce(mk_thread_t *t)
{
    atomic_store_explicit(&t->in_hook, 1, memory_order_relaxed);
    atomic_signal_fence(
        memory_order_seq_cst); /* compiler order; membarrier does the rest */
    if (MK_LIKELY(atomic_load_explicit(&mk_st.phase, memory_order_relaxed) ==
                  MK_PHASE_ON))
        return true;
    mk_leave(t);
    return false;
}

/* Enter a hook: returns the thread state with in_hook set, or NULL when the
 * call must go to the real function unrecorded (nested call, not tracing).
 *
 * No atomic read-modify-write here: the thread announces itself with a plain
 * store to in_hook, then reads the phase. A flusher stores the phase, then
 * runs membarrier() (a barrier on every thread), then reads in_hook: either
 * we see its phase or it sees our flag (asymmetric Dekker). */
static inline mk_thread_t *mk_enter(void)
{
    if (MK_UNLIKELY(mk_nested()))
        return NULL;
    mk_thread_t *t = mk_self;
    if (MK_UNLIKELY(!t))
        return mk_enter_slow();
    return mk_announce(t) ? t : NULL;
}

/* Makes room for one item (with a stack definition): a full or old record
 * is written first, which may fail and disable tracing. */
static inline bool mk_room(mk_thread_t *t)
{
    if (MK_LIKELY(mk_writer_has_room(&t->w)))
        return true;
    mk_thread_flush(t);
    return mk_tracing_on();
}

#endif /* MEMKIT_PRELOAD_THREAD_H */
