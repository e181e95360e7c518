/*
 * oncpu.h - the allocator's share of the run, measured as perf measures it:
 * each thread's CPU clock sampled by the kernel (a perf event, no signal),
 * each sample counted by where the thread was (oncpu.c has the rest).
 *
 * A thread with a tracer state has its own cpu-clock event, sampling every
 * period of its CPU time (mk_oncpu_period_ns) into a ring it maps. The kernel writes
 * a sample's record and moves the ring's head during the timer interrupt on
 * the thread's own CPU, so when the thread runs again the head already says
 * so. The hooks read the head on both sides of each real allocator call
 * (MK_ONCPU_CALL): records that appeared during the call are the
 * allocator's. Records that appeared elsewhere are classed when the next
 * mark takes them: at a hook's end (mk_leave) as the tracer's, before a
 * real call by their address (the tracer's own code, the allocator's, or
 * the program's). Where every call has its marks (full tracing, and
 * --summary-only --cpu-samples, which runs the general bodies) no symbol is
 * needed and any allocator is measured alike, its kernel time inside the
 * call too where the kernel lets a process sample it. --sample's fast
 * bodies are tail calls with no frame to mark in: there the address alone
 * says, against the allocator's code (the real malloc's library where it
 * is an allocator's alone, else the span of glibc's malloc.c between its
 * neighbours' dynamic symbols: elf_sym.h's mk_elf_bracket), at a tenth of
 * the rate (production), read at its sampled events. A sample stands for a period of the
 * thread's CPU time: the counts times the period estimate each class's time
 * without bias, perf's method.
 *
 * Invariants:
 *  - slot is never NULL: a thread without a ring reads the idle page, whose
 *    head stays 0; seen is 0 then (a wiped slot sets it so at the next
 *    mark), so the marks cost four loads and never take the slow way.
 *  - seen <= the ring's head; every record before seen is counted once, in
 *    exactly one class (or in lost, which LOST records report).
 *  - Only the owner thread marks, always inside a hook (in_hook set) or
 *    guarded, so a signal handler's hook never interrupts a mark: it is
 *    nested.
 */
#ifndef MEMKIT_PRELOAD_ONCPU_H
#define MEMKIT_PRELOAD_ONCPU_H

#include "base.h"

#include <linux/perf_event.h>

/* 500 Hz, an eighth of perf record's default: a sample costs the thread
 * 1-2 us in the kernel on bare metal; in a virtual machine, whose timer
 * reprogramming traps, 13-20 us in a small loop and 45-65 us in a traced
 * clang (its caches refilled after each): 2.5-3% of clang's CPU at this
 * rate, 5-6% at 1 kHz (docs/PERFORMANCE-LOG.md). A run's share from n
 * samples is within about 1 / sqrt(n) of the truth: 0.2 s of CPU gives
 * 100. */
#define MK_ONCPU_PERIOD_NS         2000000u
#define MK_ONCPU_SAMPLED_PERIOD_NS 20000000u /* --sample: 50 Hz, rings read seldom */
/* The ring's data pages: 512 samples, 1 s of a thread's CPU time (10 s under
 * --sample) without
 * a hook before the kernel drops samples (counted as lost: the program's).
 * 12 KiB a thread, within perf_event_mlock_kb's default 516 for 40 threads. */
#define MK_ONCPU_DATA_PAGES 2u

enum mk_oncpu_class {
    MK_ONCPU_ALLOC,   /* inside a real allocator call */
    MK_ONCPU_TRACER,  /* in memkit's own work */
    MK_ONCPU_PROGRAM, /* anywhere else */
    MK_ONCPU_LOST,    /* dropped by the kernel while the ring was full */
    MK_ONCPU_CLASSES,
    MK_ONCPU_BY_ADDRESS = MK_ONCPU_CLASSES /* a mark's class: the sample's address says */
};

/* A thread's ring: a field of the thread state itself (thread.h), not a
 * room, because mk_leave marks it. Where the ring lies is kept apart, in a
 * slot of a region the kernel wipes in a forked child (MADV_WIPEONFORK):
 * the kernel does not copy a perf ring into a child, and a child forked
 * without fork's handlers (a raw system call) would read unmapped memory.
 * A slot holds the ring's address as an offset from the idle page, so a
 * wiped or unused slot (0) names the idle page itself. */
typedef struct mk_oncpu_thread {
    const uintptr_t *slot;        /* the ring's offset from mk_oncpu_idle */
    uint64_t seen;                /* ring bytes counted so far */
    uint64_t n[MK_ONCPU_CLASSES]; /* samples by class, since start or fork */
} mk_oncpu_thread_t;

/* The idle page a thread without a ring reads (oncpu.c). */
extern const struct perf_event_mmap_page mk_oncpu_idle MK_HIDDEN;

/* The head page of o's ring, or the idle page. */
static inline __attribute__((always_inline)) const struct perf_event_mmap_page *
mk_oncpu_page(const mk_oncpu_thread_t *o)
{
    return (const struct perf_event_mmap_page *)((uintptr_t)&mk_oncpu_idle + *o->slot);
}

/* ---- oncpu.c ---- */

/* The run's period (MK_ONCPU_PERIOD_NS, or --sample's). */
MK_HIDDEN uint64_t mk_oncpu_period_ns(void);

/* At start-up: the period, and whether this run samples (runtime.c's
 * cpu_samples); what the kernel allows is asked at the first ring. */
MK_HIDDEN void mk_oncpu_init(void);
/* The calling thread took state o, the state_id-th: its ring, when the
 * run samples. */
MK_HIDDEN void mk_oncpu_thread_start(mk_oncpu_thread_t *o, uint32_t state_id);
/* The calling thread, o's owner, ends: its last records counted, its ring
 * unmapped. */
MK_HIDDEN void mk_oncpu_thread_end(mk_oncpu_thread_t *o);
/* In a forked child, for each state (the state_id-th): the counts started
 * afresh; the caller's (mine) gets a ring of its own. */
MK_HIDDEN void mk_oncpu_after_fork_child(mk_oncpu_thread_t *o, uint32_t state_id,
                                         bool mine);
/* The slow way of a mark: the records up to head taken as cls. */
MK_HIDDEN void mk_oncpu_take(mk_oncpu_thread_t *o, uint64_t head, unsigned cls);
/* For the END record: the fields oncpu adds (MK_ONCPU_END_FIELDS varints:
 * state (0 off, 1 user time only, 2 kernel time too), the errno of a
 * refused event, the period in ns, the threads sampled, then the samples
 * by class). */
#define MK_ONCPU_END_FIELDS (4 + MK_ONCPU_CLASSES)
MK_HIDDEN void mk_oncpu_end_fields(uint64_t out[MK_ONCPU_END_FIELDS]);

/* ---- the marks ---- */

/* The owner's records since its last mark are cls's. */
static inline __attribute__((always_inline)) void mk_oncpu_mark(mk_oncpu_thread_t *o,
                                                                unsigned cls)
{
    uint64_t head = __atomic_load_n(&mk_oncpu_page(o)->data_head, __ATOMIC_ACQUIRE);
    if (MK_UNLIKELY(head != o->seen))
        mk_oncpu_take(o, head, cls);
}

/* Runs stmt, a real allocator call of thread state t (inside its hook),
 * between marks: what came before is classed by address, the call's own
 * records are the allocator's. */
#define MK_ONCPU_CALL(t, stmt)                                                           \
    do {                                                                                 \
        mk_oncpu_mark(&(t)->oncpu, MK_ONCPU_BY_ADDRESS);                                 \
        stmt;                                                                            \
        mk_oncpu_mark(&(t)->oncpu, MK_ONCPU_ALLOC);                                      \
    } while (0)

#endif /* MEMKIT_PRELOAD_ONCPU_H */
