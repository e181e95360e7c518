/*
 * runtime.c - the tracer's life cycle: start-up (with a bootstrap heap for
 * the allocations dlsym makes before the real malloc is known), per-thread
 * buffers, flushing, fork, exec and exit.
 */
#define _GNU_SOURCE
#include "preload.h"

#include <dlfcn.h>
#include <errno.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <cpuid.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

mk_real_fns_t mk_real;
mk_state_t mk_st = {.fd = -1};
__thread mk_tls_t mk_tls __attribute__((tls_model("initial-exec")));

static pthread_key_t thread_key;

/* ---- the bootstrap heap: dlsym may allocate before malloc is resolved ---- */

_Alignas(16) uint8_t mk_boot_heap[MK_BOOT_HEAP_SIZE];
static atomic_size_t boot_used;

void *mk_boot_alloc(size_t n)
{
    size_t need = (n + 16 + 15) & ~(size_t)15;
    size_t at = atomic_fetch_add(&boot_used, need);
    if (n > sizeof mk_boot_heap || at + need > sizeof mk_boot_heap)
        return NULL;
    memcpy(mk_boot_heap + at, &n, sizeof n); /* size kept for realloc */
    return mk_boot_heap + at + 16;
}

void *mk_next_symbol(void **slot, const char *name)
{
    void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (MK_LIKELY(f != NULL))
        return f;
    mk_guard++; /* dlsym may allocate */
    f = dlsym(RTLD_NEXT, name);
    mk_guard--;
    __atomic_store_n(slot, f, __ATOMIC_RELEASE);
    return f;
}

bool mk_in_tracer(const void *p)
{
    Dl_info self, it;
    return dladdr((void *)mk_in_tracer, &self) && dladdr(p, &it) &&
           self.dli_fbase == it.dli_fbase;
}

/* ---- messages ----
 *
 * memkit's messages go to the stderr the program started with, or nowhere: a
 * program that closed fd 2 and opened a data file there must not find our
 * line in its data. The file fd 2 was at start-up is remembered by identity
 * (no descriptor is kept for it: the program sees none of ours it did not
 * see untraced), and a message is written only while fd 2 is still it. */

static struct {
    bool open; /* fd 2 was open at start-up */
    dev_t dev;
    ino_t ino;
} start_stderr;

void mk_stderr_remember(void)
{
    struct stat st;
    start_stderr.open = fstat(STDERR_FILENO, &st) == 0;
    start_stderr.dev = st.st_dev;
    start_stderr.ino = st.st_ino;
}

void mk_stderr_write(const char *msg, size_t n)
{
    struct stat st;
    if (!start_stderr.open || fstat(STDERR_FILENO, &st) != 0 ||
        st.st_dev != start_stderr.dev || st.st_ino != start_stderr.ino)
        return; /* fd 2 is something else now: say nothing */
    ssize_t w = write(STDERR_FILENO, msg, n);
    (void)w; /* nowhere left to report a failed report */
}

void mk_warn_once(const char *fmt, ...)
{
    static atomic_int said;
    char msg[512];
    va_list ap;

    if (atomic_exchange(&said, 1))
        return;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof msg - 2)
        n = sizeof msg - 2;
    msg[n++] = '\n';
    /* Shielded: write() is a cancellation point, malloc is not; and a stderr
     * whose reader is gone must not kill the program with SIGPIPE. */
    mk_shield_t shield;
    mk_shield(&shield);
    sigset_t pending_before;
    sigpending(&pending_before);
    errno = 0;
    mk_stderr_write(msg, (size_t)n);
    if (errno == EPIPE)
        mk_take_back(SIGPIPE, &pending_before);
    mk_unshield(&shield);
}

/* ---- configuration ---- */

static void read_config(mk_config_t *c)
{
    const char *v;

    c->depth = 32;
    if ((v = getenv("MEMKIT_TRACE_DEPTH")) && *v) {
        long d = strtol(v, NULL, 10);
        c->depth = d < 1 ? 1 : d > MK_MAX_DEPTH ? MK_MAX_DEPTH : (int)d;
    }
    c->summary_only = (v = getenv("MEMKIT_TRACE_SUMMARY_ONLY")) && *v == '1';
    c->syscalls = (v = getenv("MEMKIT_TRACE_SYSCALLS")) && *v == '1';
    v = getenv("MEMKIT_TRACE_PREFIX");
    if (!v || !*v)
        v = "memkit";
    /* Relative to where the process started: a forked child that changed
     * directory first still writes beside its parent's trace. */
    char cwd[PATH_MAX];
    int len = -1;
    if (v[0] != '/' && getcwd(cwd, sizeof cwd))
        len = snprintf(c->prefix, sizeof c->prefix, "%s/%s", cwd, v);
    if (len < 0 || (size_t)len >= sizeof c->prefix)
        snprintf(c->prefix, sizeof c->prefix, "%s", v);
    v = getenv("MEMKIT_TRACE_RUN");
    snprintf(c->run_id, sizeof c->run_id, "%s", v ? v : "");
    v = getenv("MEMKIT_TRACE_TEST_SIGNAL");
    c->test_signal = v ? atoi(v) : 0;
}

/* ---- thread states ---- */

/* Starts a new record: its head carries a clock anchor (ns since start and
 * the tick count at that moment) from which readers convert ticks. */
static void reset_buffer(mk_thread_t *t)
{
    for (int i = 0; i < MK_S_COUNT; i++)
        t->s[i] = t->base[i];
    t->anchor_tick = mk_ticks();
    t->anchor_ns = mk_now() - mk_st.t_start;
    t->prev_t = t->anchor_tick;
    t->time_zeros = 0;
    t->cached_byte = t->hit_byte = NULL;
    t->hit_bits = 0;
    t->prev_addr = 0;
    mk_reuse_reset(t->reuse);
    t->events = 0;
}

/* A new thread (or a forked child's) starts with an empty index, as its
 * reader will. A small one is emptied in place: unmapping and mapping it
 * again cost each new thread eight system calls and the other cores a TLB
 * shootdown (a third of a short thread's traced cost); a large one goes
 * back to the system. */
#define MK_INDEX_KEEP 4096 /* entries: 188 KB with its map */

static void reset_index(mk_thread_t *t)
{
    if (t->live.cap && t->live.cap <= MK_INDEX_KEEP) {
        mk_index_clear(&t->live);
        return;
    }
    mk_index_free(&t->live);
    t->live.alloc = mk_pages_zeroed;
    t->live.release = mk_pages_release;
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
    mk_io_thread_ended(); /* before exited_tid: the end's scan skips it then */
    atomic_store_explicit(&t->exited_tid, t->tid, memory_order_release);
    atomic_store_explicit(&t->in_hook, 0, memory_order_release);
    mk_guard = guarded;
}

/* Has the thread tid of this process ended? (tgkill with signal 0 checks.)
 * A tid reused by a newer thread only delays the reclaim. */
static bool thread_gone(pid_t tid)
{
    int saved_errno = errno;
    bool gone = syscall(SYS_tgkill, mk_st.pid, tid, 0) != 0 && errno == ESRCH;
    errno = saved_errno;
    return gone;
}

bool mk_thread_ended(pid_t tid)
{
    for (mk_thread_t *t = (mk_thread_t *)atomic_load(&mk_st.threads); t; t = t->next)
        if (atomic_load_explicit(&t->exited_tid, memory_order_acquire) == tid)
            return true;
    return false;
}

/* A state for reuse: one whose thread ended (its last events, recorded after
 * its key destructor, are flushed first), or one marked dead (a forked
 * child's other threads), or NULL. */
static mk_thread_t *claim_state(void)
{
    for (mk_thread_t *t = (mk_thread_t *)atomic_load(&mk_st.threads); t; t = t->next) {
        bool dead = true;
        if (atomic_load_explicit(&t->dead, memory_order_relaxed) &&
            atomic_compare_exchange_strong(&t->dead, &dead, false))
            return t;
        pid_t tid = atomic_load_explicit(&t->exited_tid, memory_order_acquire);
        if (tid && thread_gone(tid) &&
            atomic_compare_exchange_strong(&t->exited_tid, &tid, 0)) {
            /* As its owner in a hook: the exit path's flush waits for us,
             * or we see its phase (mk_enter's protocol). */
            atomic_store(&t->in_hook, 1);
            if (atomic_load(&mk_st.phase) == MK_PHASE_ON)
                mk_thread_flush(t);
            return t;
        }
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

mk_thread_t *mk_thread_get(void)
{
    mk_thread_t *t = claim_state();

    if (!t) {
        size_t size = (sizeof(mk_thread_t) + 63) & ~(size_t)63;
        size_t lifo = (sizeof(mk_reuse_t) + 63) & ~(size_t)63, streams = 0;
        bool events = !mk_st.cfg.summary_only; /* --summary-only writes none */
        for (int i = 0; events && i < MK_S_COUNT; i++)
            streams += mk_stream_cap(i);
        /* Reserved, not committed: pages are touched only as streams fill. */
        void *m = mmap(NULL, size + lifo + streams, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED)
            return no_thread_state();
        t = m;
        t->reuse = (mk_reuse_t *)((uint8_t *)m + size);
        uint8_t *at = (uint8_t *)m + size + lifo;
        for (int i = 0; i < MK_S_COUNT; i++) {
            t->base[i] = at;
            at += events ? mk_stream_cap(i) : 0;
        }
        static atomic_uint states;
        t->state_id = atomic_fetch_add(&states, 1) + 1;
        uintptr_t head = atomic_load(&mk_st.threads);
        do
            t->next = (mk_thread_t *)head;
        while (!atomic_compare_exchange_weak(&mk_st.threads, &head, (uintptr_t)t));
    }
    t->index = atomic_fetch_add(&mk_st.next_thread, 1);
    t->tid = (pid_t)syscall(SYS_gettid);
    t->errno_at = &errno;
    /* counts/bytes/sites carry over: --summary-only totals are per process. */
    reset_buffer(t);
    reset_index(t);
    mk_self = t;
    if (mk_st.cfg.summary_only)
        mk_summary_thread_added(t);
    pthread_setspecific(thread_key, t); /* thread_exit flushes it */
    return t;
}

/* mk_enter for a thread without a state yet, or before start-up. */
mk_thread_t *mk_enter_slow(void)
{
    int phase = atomic_load(&mk_st.phase);
    if (phase == MK_PHASE_OFF) {
        int cancel = mk_cancel_off();
        mk_init(); /* the process's first call: constructors may not have run */
        mk_cancel_restore(cancel);
        phase = atomic_load(&mk_st.phase);
    }
    if (phase != MK_PHASE_ON || mk_tls.no_state)
        return NULL;
    mk_guard = 1;
    int cancel = mk_cancel_off();
    mk_thread_t *t = mk_thread_get();
    mk_cancel_restore(cancel);
    if (!t) {
        mk_guard = 0;
        return NULL;
    }
    atomic_store(&t->in_hook, 1); /* seq_cst, as in mk_enter's protocol */
    mk_guard = 0;                 /* the flag says "nested" from here on (mk_nested) */
    if (atomic_load(&mk_st.phase) != MK_PHASE_ON) {
        mk_leave(t);
        return NULL;
    }
    return t;
}

void mk_thread_flush(mk_thread_t *t)
{
    uint8_t head[MK_HEAD_MAX], *p = head;
    const void *part[1 + MK_S_COUNT];
    size_t len[1 + MK_S_COUNT];

    if (t->s[MK_S_TAG] == t->base[MK_S_TAG]) {
        reset_buffer(t);
        return; /* nothing recorded */
    }
    if (t->time_zeros) { /* the last events' pair: z - 1 zeros, then a 0 */
        mk_put(t, MK_S_TIME, t->time_zeros - 1);
        mk_put(t, MK_S_TIME, 0);
        t->time_zeros = 0;
    }
    p = mk_put_varint(p, t->index);
    p = mk_put_varint(p, (uint64_t)t->tid);
    p = mk_put_u64(p, t->anchor_ns);
    p = mk_put_u64(p, t->anchor_tick);
    p = mk_put_varint(p, MK_S_COUNT);
    for (int i = 0; i < MK_S_COUNT; i++) {
        len[1 + i] = (size_t)(t->s[i] - t->base[i]);
        part[1 + i] = t->base[i];
        p = mk_put_varint(p, len[1 + i]);
    }
    part[0] = head;
    len[0] = (size_t)(p - head);
    /* Shielded until the buffer is reset too: a handler that exits in
     * between would write these events a second time. */
    mk_shield_t shield;
    mk_shield(&shield);
    if (mk_output_parts(t, MK_REC_EVENTS, part, len, 1 + MK_S_COUNT))
        atomic_fetch_add(&mk_st.events_written, t->events);
    else
        atomic_fetch_add(&mk_st.events_lost, t->events);
    reset_buffer(t);
    mk_unshield(&shield);
}

static bool membarrier_ok;

/* After the phase left ON: a barrier on every thread, so each either saw the
 * new phase or has its in_hook flag visible to us. */
static void barrier_all_threads(void)
{
    if (membarrier_ok &&
        syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0)
        return;
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) == 0)
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

/* Flushes every thread's buffer. The phase is no longer ON, so no thread
 * starts an event; one inside a hook is waited for (it is never long). */
static void flush_all(void)
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

/* ---- the END record ---- */

static void write_end(int reason)
{
    uint8_t raw[256], *p = raw;
    struct rusage ru;
    mk_io_t io;
    uint64_t trace_bytes;

    mk_io_end(&io, &trace_bytes); /* first: the reads below are ours */
    getrusage(RUSAGE_SELF, &ru);
    p = mk_put_varint(p, (uint64_t)reason);
    p = mk_put_varint(p, atomic_load(&mk_st.events_written));
    p = mk_put_varint(p, atomic_load(&mk_st.events_lost));
    p = mk_put_varint(p, atomic_load(&mk_st.next_thread) - 1);
    p = mk_put_varint(p, (uint64_t)ru.ru_maxrss);
    p = mk_put_varint(p, (uint64_t)ru.ru_minflt);
    p = mk_put_varint(p, (uint64_t)ru.ru_majflt);
    p = mk_put_varint(p, (uint64_t)ru.ru_utime.tv_sec * 1000000u +
                             (uint64_t)ru.ru_utime.tv_usec);
    p = mk_put_varint(p, (uint64_t)ru.ru_stime.tv_sec * 1000000u +
                             (uint64_t)ru.ru_stime.tv_usec);
    for (int i = 0; i < MK_IO_FIELDS; i++)
        p = mk_put_varint(p, io.v[i]);
    p = mk_put_varint(p, mk_now() - mk_st.t_start);
    p = mk_put_varint(p, mk_ticks());
    p = mk_put_varint(p, trace_bytes); /* ours, to subtract from wchar */
    /* Added later, so optional: glibc's view of its heap. Not after _exit,
     * which is often called from a signal handler, nor from ours: either may
     * have interrupted malloc holding the arena lock mallinfo2 takes. */
    if (reason == MK_END_EXIT || reason == MK_END_EXEC) {
        uint64_t view[MK_HEAP_VIEW_FIELDS];

        mk_glibc_heap_view(view);
        p = mk_put_varint(p, MK_HEAP_VIEW_FIELDS);
        for (int i = 0; i < MK_HEAP_VIEW_FIELDS; i++)
            p = mk_put_varint(p, view[i]);
    }
    mk_output_record(NULL, MK_REC_END, raw, (size_t)(p - raw));
}

/* The end of a program image: every buffer, the summary, the END record. */
static void end_image(int reason)
{
    flush_all();
    if (mk_st.cfg.summary_only)
        mk_summary_write();
    write_end(reason);
}

/* Ends tracing: every buffer flushed, the END record written. Later calls
 * (and events) are ignored. */
void mk_finish(int reason)
{
    int on = MK_PHASE_ON;
    int guarded = mk_guard;

    /* A vfork child (its exec failed, it calls _exit) shares our memory: the
     * parent's trace goes on after it. */
    if (getpid() != mk_st.pid)
        return;
    mk_guard = 1;
    if (atomic_compare_exchange_strong(&mk_st.phase, &on, MK_PHASE_DONE))
        end_image(reason);
    mk_guard = guarded;
}

/* Before exec: flush and write an END; the new image starts its own trace.
 * If exec fails, tracing goes on and a later END supersedes this one. */
void mk_before_exec(void)
{
    int guarded = mk_guard;

    int on = MK_PHASE_ON;
    /* A vfork child shares our memory and must not touch the parent's state. */
    if (getpid() != mk_st.pid ||
        !atomic_compare_exchange_strong(&mk_st.phase, &on, MK_PHASE_PAUSED))
        return;
    mk_guard = 1;
    end_image(MK_END_EXEC);
    atomic_store(&mk_st.phase, MK_PHASE_ON); /* exec failed if we get to run on */
    mk_guard = guarded;
}

/* ---- fork ---- */

static void fork_prepare(void)
{
    mk_guard++;
    mk_output_lock();
}

static void fork_parent(void)
{
    mk_output_unlock();
    mk_guard--;
}

static void fork_child(void)
{
    mk_output_after_fork_child();
    mk_modules_after_fork_child();
    if (atomic_load(&mk_st.phase) != MK_PHASE_ON) {
        mk_guard--;
        return;
    }
    mk_st.pid = getpid();
    atomic_store(&mk_st.events_written, 0);
    atomic_store(&mk_st.events_lost, 0);
    atomic_store(&mk_st.next_thread, 1);
    /* Only this thread exists here; the others' buffers are the parent's. */
    for (mk_thread_t *t = (mk_thread_t *)atomic_load(&mk_st.threads); t; t = t->next) {
        atomic_store(&t->in_hook, 0);
        atomic_store(&t->exited_tid,
                     0); /* the parent's threads' tids mean nothing here */
        if (t != mk_self)
            atomic_store(&t->dead, true);
    }
    membarrier_ok =
        syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
    /* Stacks are defined again in the child's file. */
    atomic_fetch_add(&mk_st.stack_gen, 1);
    if (mk_self) {
        mk_self->index = atomic_fetch_add(&mk_st.next_thread, 1);
        mk_self->tid = (pid_t)syscall(SYS_gettid);
        reset_buffer(mk_self);
        reset_index(mk_self);
    }
    mk_summary_after_fork_child();
    if (mk_output_open()) {
        mk_modules_write();
        mk_shadowed_write();
    }
    mk_io_start(); /* the child's counts began at 0 with it; the head is ours */
    mk_guard--;
}

/* ---- start-up ---- */

/* CPUID 0x80000007 EDX bit 8: the TSC runs at a constant rate in all states. */
static bool invariant_tsc(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000007, &a, &b, &c, &d))
        return false;
    return (d >> 8) & 1;
}

#define RESOLVE(name) (mk_real.name = (__typeof__(mk_real.name))dlsym(RTLD_NEXT, #name))

static void resolve_real(void)
{
    RESOLVE(malloc);
    RESOLVE(calloc);
    RESOLVE(realloc);
    RESOLVE(reallocarray);
    RESOLVE(free);
    RESOLVE(posix_memalign);
    RESOLVE(aligned_alloc);
    RESOLVE(memalign);
    RESOLVE(valloc);
    RESOLVE(pvalloc);
    RESOLVE(strdup);
    RESOLVE(strndup);
    RESOLVE(wcsdup);
}

void mk_init(void)
{
    int off = MK_PHASE_OFF;

    if (!atomic_compare_exchange_strong(&mk_st.phase, &off, MK_PHASE_INIT))
        return; /* already done, or another thread is at it */
    mk_guard++;
    mk_stderr_remember();
    resolve_real();
    if (!mk_real.malloc || !mk_real.free || !mk_real.calloc || !mk_real.realloc) {
        atomic_store(&mk_st.phase, MK_PHASE_FAILED);
        mk_warn_once("memkit: cannot find the real malloc; the program runs untraced");
        mk_guard--;
        return;
    }
    read_config(&mk_st.cfg);
    mk_glibc_apply_mallopt();
    mk_proc_init();
    mk_st.pid = getpid();
    mk_st.t_start = mk_now();
    mk_st.use_tsc = invariant_tsc();
    mk_st.tick_start = mk_ticks();
    membarrier_ok =
        syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
    atomic_store(&mk_st.next_thread, 1);
    atomic_store(&mk_st.stack_gen, 1);
    pthread_key_create(&thread_key, thread_exit);
    if (!mk_st.cfg.summary_only)
        mk_stacks_init(); /* --summary-only keeps calling instructions only */
    if (!mk_output_open()) {
        mk_guard--;
        return;
    }
    mk_modules_write();
    mk_shadowed_find();
    mk_shadowed_write();
    mk_io_start(); /* after the head: its reads and writes are ours */
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    mk_st.summary_fast = mk_st.cfg.summary_only && !mk_st.cfg.syscalls;
    atomic_store_explicit(&mk_st.phase, MK_PHASE_ON, memory_order_release);
    mk_signals_arm();
    mk_guard--;
}

__attribute__((constructor)) static void mk_constructor(void)
{
    mk_init();
}

__attribute__((destructor)) static void mk_destructor(void)
{
    mk_finish(MK_END_EXIT);
}
