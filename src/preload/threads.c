/*
 * threads.c - the tracer's thread states (thread.h): made on a thread's first
 * event, flushed by its key destructor, reused once the thread is gone;
 * flushing one, and all of them at the end.
 */
#define _GNU_SOURCE
#include "thread.h"
#include "sampling.h"

#include "output.h"
#include "stacks.h"
#include "summary.h"

#include <linux/membarrier.h>
#include <sys/rseq.h>
#include <string.h>

static pthread_key_t thread_key;

/* ---- thread states ---- */

/* Starts a new record: its head carries a clock anchor (ns since start and
 * the tick count at that moment) from which readers convert ticks. */
static void reset_buffer(mk_thread_t *t)
{
    mk_writer_begin(&t->w, mk_ticks(), mk_now() - mk_st.t_start);
}

/* A new thread (or a forked child's) starts with an empty index, as its
 * reader will. A small one is emptied in place: unmapping and mapping it
 * again cost each new thread eight system calls and the other cores a TLB
 * shootdown (a third of a short thread's traced cost); a large one goes
 * back to the system. */
#define MK_INDEX_KEEP 4096 /* entries: 112 KB with its map */

static void reset_index(mk_thread_t *t)
{
    mk_addr_index_t *live = &t->w.live;
    if (live->cap && live->cap <= MK_INDEX_KEEP) {
        mk_index_clear(live);
        return;
    }
    mk_index_free(live);
    live->alloc = mk_pages_table;
    live->release = mk_pages_release;
    live->resize = mk_pages_resize;
    live->zeroed = true;
    mk_index_set_version(live, MK_TRACE_VERSION);
}

void mk_index_failed(void)
{
    atomic_store(&mk_st.phase, MK_PHASE_FAILED);
    mk_warn_once("memkit: out of memory for the live-block index; the program runs on "
                 "untraced from here");
}

/* The thread's key destructor: its buffer is flushed, but the state stays
 * the thread's. The thread still runs other keys' destructors and glibc's
 * own teardown, which frees through the hooks (free(NULL) of its strsignal
 * buffer, at least), and those calls are recorded in this state. Released
 * here, the state was claimed again by that last free and never released:
 * one state (about 80 KB) and one longer list to search per thread that
 * ever ran. The state is reclaimed once the thread is gone (claim_state). */
static void thread_exit(void *arg)
{
    mk_thread_t *t = arg;
    int guarded = mk_guard;

    mk_guard = 1;
    atomic_store(&t->in_hook, 1); /* seq_cst: a flusher waits for us, or we see it */
    if (atomic_load(&mk_st.phase) == MK_PHASE_ON)
        mk_thread_flush(t);
    mk_oncpu_thread_end(&t->oncpu); /* its calls from here on are not sampled */
    atomic_store_explicit(&t->exited_tid, t->tid, memory_order_release);
    atomic_store_explicit(&t->in_hook, 0, memory_order_release);
    mk_guard = guarded;
}

/* Has the thread tid of this process ended? (tgkill with signal 0 checks.)
 * A tid reused by a newer thread only delays the reclaim. */
static bool thread_gone(pid_t tid)
{
    int saved_errno = errno;
    bool gone = mk_syscall(SYS_tgkill, mk_st.pid, tid, 0) != 0 && errno == ESRCH;
    errno = saved_errno;
    return gone;
}

/* Takes t as its owner would in a hook, so that a flusher (which reads
 * in_hook after storing the phase and a barrier) either waits for the taker
 * or had already begun with t, and then the taker sees the phase and lets
 * go. Without it an exit's flush met a state half made (its streams' ends
 * still 0: a record of 2^64-byte streams, zstd looping for ever) or one being
 * taken over. */
static bool take_state(mk_thread_t *t)
{
    int out = 0;
    if (!atomic_compare_exchange_strong(&t->in_hook, &out, 1))
        return false; /* another taker's, or its owner is in a hook */
    if (atomic_load(&mk_st.phase) == MK_PHASE_ON)
        return true;
    atomic_store(&t->in_hook, 0);
    return false;
}

/* A state for reuse, taken (in_hook set): one whose thread ended (its last
 * events, recorded after its key destructor, are flushed first), or one
 * marked dead (a forked child's other threads), or NULL. */
static mk_thread_t *claim_state(void)
{
    for (mk_thread_t *t = (mk_thread_t *)atomic_load(&mk_st.threads); t; t = t->next) {
        bool dead = atomic_load_explicit(&t->dead, memory_order_relaxed);
        pid_t tid = atomic_load_explicit(&t->exited_tid, memory_order_acquire);
        if (!dead && !(tid && thread_gone(tid)))
            continue;
        if (!take_state(t))
            continue;
        if (dead ? atomic_compare_exchange_strong(&t->dead, &dead, false)
                 : atomic_compare_exchange_strong(&t->exited_tid, &tid, 0)) {
            if (!dead)
                mk_thread_flush(t);
            return t;
        }
        atomic_store(&t->in_hook, 0); /* another taker's since */
    }
    return NULL;
}

/* A thread whose state cannot be mapped (an address-space limit, say) runs
 * untraced: said once per process, tried once per thread. */
static mk_thread_t *no_thread_state(void)
{
    int saved_errno = errno;
    mk_tls.no_state = true;
    atomic_fetch_add(&mk_st.events_lost, 1);
    mk_warn_once("memkit: cannot map a thread's trace buffers (%s); that thread's "
                 "allocations are not recorded",
                 strerror(saved_errno));
    errno = saved_errno;
    return NULL;
}

/* ---- switches (base.h's mk_switched) ---- */

/* A critical section of no instruction: its abort address follows the
 * signature the kernel checks before it, as glibc registered it. */
static const struct {
    uint32_t sig, after;
} switch_abort = {RSEQ_SIG, 0};
static struct rseq_cs switch_cs __attribute__((aligned(32)));
uint64_t mk_switch_cs_at = 1; /* any non-zero: switch_none, armed, stays armed */

static volatile uint64_t *rseq_word(void)
{
    struct rseq *rs = (struct rseq *)((char *)__builtin_thread_pointer() + __rseq_offset);
    /* a thread whose registration failed reads RSEQ_CPU_ID_REGISTRATION_FAILED */
    return __rseq_size > 0 && (int32_t)rs->cpu_id >= 0
               ? (volatile uint64_t *)(void *)&rs->rseq_cs
               : NULL;
}

static volatile uint64_t *switch_word(mk_thread_t *t)
{
    volatile uint64_t *w = mk_st.switches ? rseq_word() : NULL;
    return w ? w : &t->switch_none;
}

/* Does the kernel clear the word here? A sleep switches the thread out;
 * without rseq, or with a kernel that keeps the word, calls switched out
 * keep their time (the END record says which). 60 us at start-up, most of
 * it the sleep's timer slack. A sleep whose timer has fired before the
 * thread could block returns without a switch (a preempted virtual CPU):
 * a kernel that clears the word is tried 4 times before it is taken to
 * keep it. */
static void detect_switches(void)
{
    volatile uint64_t *w = mk_st.timing ? rseq_word() : NULL;
    if (!w)
        return;
    switch_cs = (struct rseq_cs){.start_ip = (uintptr_t)&switch_abort.after,
                                 .abort_ip = (uintptr_t)&switch_abort.after};
    mk_switch_cs_at = (uintptr_t)&switch_cs;
    for (int tries = 0; tries < 4 && !mk_st.switches; tries++) {
        mk_switch_arm(w);
        struct timespec nap = {0, 1000 << (3 * tries)};
        nanosleep(&nap, NULL);
        mk_st.switches = mk_switched(w);
    }
}

mk_thread_t *mk_thread_get(void)
{
    mk_thread_t *t = claim_state();

    if (!t) {
        size_t size = (sizeof(mk_thread_t) + 63) & ~(size_t)63;
        size_t lifo = (sizeof(mk_reuse_t) + 63) & ~(size_t)63, streams = 0;
        bool events = mk_mode_events(); /* --summary-only writes none */
        for (int i = 0; events && i < MK_S_COUNT; i++)
            streams += mk_writer_stream_cap(i);
        /* Reserved, not committed: pages are touched only as streams fill. */
        void *m = mk_sys_mmap(NULL, size + lifo + streams, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED)
            return no_thread_state();
        t = m;
        t->w.reuse = (mk_reuse_t *)((uint8_t *)m + size);
        uint8_t *at = (uint8_t *)m + size + lifo;
        for (int i = 0; i < MK_S_COUNT; i++) {
            t->w.base[i] = at;
            at += events ? mk_writer_stream_cap(i) : 0;
        }
        static atomic_uint states;
        t->state_id = atomic_fetch_add(&states, 1) + 1;
        /* Taken before it is listed (take_state says why); the list's
         * exchange publishes the flag with it. */
        atomic_store_explicit(&t->in_hook, 1, memory_order_relaxed);
        uintptr_t head = atomic_load(&mk_st.threads);
        do
            t->next = (mk_thread_t *)head;
        while (!atomic_compare_exchange_weak(&mk_st.threads, &head, (uintptr_t)t));
    }
    t->index = atomic_fetch_add(&mk_st.next_thread, 1);
    t->tid = (pid_t)mk_syscall(SYS_gettid);
    t->errno_at = &errno;
    t->switch_word = switch_word(t);
    mk_stacks_thread_start(t);
    mk_oncpu_thread_start(&t->oncpu, t->state_id);
    /* The stride of timed calls (format.h), from the run's seed where one
     * is given (MEMKIT_SAMPLE_SEED: a run repeats its choices), else the
     * clock; 0 left: calls are not timed. */
    t->w.cost_overhead_x16 = mk_st.cost_overhead_x16;
    t->w.slow_cycles = mk_st.slow_cycles;
    t->w.cost_rng = (mk_st.cfg.sample_seed ? mk_st.cfg.sample_seed : mk_ticks()) ^
                    ((uint64_t)t->index * 0x9e3779b97f4a7c15ull);
    t->w.cost_left = mk_st.timing ? mk_cost_stride(&t->w.cost_rng) : 0;
    /* counts/bytes/sites carry over: --summary-only totals are per process. */
    reset_buffer(t);
    reset_index(t);
    if (mk_mode_sampled())
        mk_sample_thread_start(t);
    mk_self = t;
    if (mk_mode_counts_sites() && mk_summary_thread_added(t))
        mk_quiesce_others();
    pthread_setspecific(thread_key, t); /* thread_exit flushes it */
    return t;
}

void mk_thread_flush(mk_thread_t *t)
{
    uint8_t head[MK_HEAD_MAX];
    const void *part[1 + MK_S_COUNT];
    size_t len[1 + MK_S_COUNT];

    if (mk_writer_empty(&t->w)) {
        reset_buffer(t);
        return; /* nothing recorded */
    }
    mk_writer_end(&t->w, t->index, (uint64_t)t->tid, head, part, len);
    /* Shielded until the buffer is reset too: a handler that exits in
     * between would write these events a second time. */
    mk_shield_t shield;
    mk_shield(&shield);
    if (mk_output_parts(t, MK_REC_EVENTS, part, len, 1 + MK_S_COUNT))
        atomic_fetch_add(&mk_st.events_written, t->w.events);
    else
        atomic_fetch_add(&mk_st.events_lost, t->w.events);
    reset_buffer(t);
    mk_unshield(&shield);
}

static bool membarrier_ok;

/* After the phase left ON: a barrier on every thread, so each either saw the
 * new phase or has its in_hook flag visible to us. */
static void barrier_all_threads(void)
{
    if (membarrier_ok &&
        mk_syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0)
        return;
    if (mk_syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) == 0)
        return;
    usleep(20000); /* no membarrier: give stragglers time to see the phase */
}

/* Waits (bounded) until thread t is out of its hook; false if it stays in. */
static bool wait_out_of_hook(mk_thread_t *t)
{
    for (long spins = 0; atomic_load_explicit(&t->in_hook, memory_order_acquire);
         spins++) {
        if (spins > 100000000)
            return false; /* stuck (stopped by a debugger?) */
        __builtin_ia32_pause();
    }
    return true;
}

void mk_quiesce_others(void)
{
    barrier_all_threads();
    for (mk_thread_t *t = (mk_thread_t *)atomic_load(&mk_st.threads); t; t = t->next)
        if (t != mk_self && !atomic_load(&t->dead))
            wait_out_of_hook(t);
}

/* The phase is no longer ON, so no thread starts an event; one inside a
 * hook is waited for (it is never long). */
void mk_threads_flush_all(void)
{
    barrier_all_threads();
    for (mk_thread_t *t = (mk_thread_t *)atomic_load(&mk_st.threads); t; t = t->next) {
        if (atomic_load(&t->dead))
            continue;
        if (t != mk_self && !wait_out_of_hook(t))
            continue; /* its buffer is lost */
        /* Our own thread may be inside a hook (exit from a signal handler):
         * then its last item may be cut, which readers take as the end. */
        mk_thread_flush(t);
    }
}

void mk_threads_init(void)
{
    membarrier_ok =
        mk_syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
    pthread_key_create(&thread_key, thread_exit);
    detect_switches();
}

void mk_threads_after_fork_child(void)
{
    /* Only this thread exists here; the others' buffers are the parent's. */
    for (mk_thread_t *t = (mk_thread_t *)atomic_load(&mk_st.threads); t; t = t->next) {
        atomic_store(&t->in_hook, 0);
        atomic_store(&t->exited_tid,
                     0); /* the parent's threads' tids mean nothing here */
        if (t != mk_self)
            atomic_store(&t->dead, true);
        mk_oncpu_after_fork_child(&t->oncpu, t->state_id, t == mk_self);
    }
    membarrier_ok =
        mk_syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
    if (mk_self) {
        mk_self->index = atomic_fetch_add(&mk_st.next_thread, 1);
        mk_self->tid = (pid_t)mk_syscall(SYS_gettid);
        reset_buffer(mk_self);
        reset_index(mk_self);
    }
}
