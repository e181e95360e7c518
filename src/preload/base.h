/*
 * base.h - the tracer's leaf: process and thread-local state, the real
 * functions, the bootstrap heap, messages, raw system calls, the clock and
 * the signal shield. Every other file of the tracer builds on it; it calls
 * none of them (base.c).
 *
 * The layers (docs/ARCHITECTURE.md): hooks (hooks*.c, signals.c, fds.c's
 * interposers) call the core (runtime.c, threads.c, summary.c), which calls
 * the services (output.c, stacks.c, modules.c, ...), which call
 * only this base. What a lower layer must run of a higher one (the end of
 * the trace from a fatal signal) is passed
 * down as a callback.
 *
 * Invariants:
 *  - Nothing in the tracer allocates through the hooks: every hook sets its
 *    thread's in_hook flag (the tracer's code outside hooks, the guard)
 *    before it does anything that might call malloc, and a call that finds
 *    either set goes straight to the real function, unrecorded (mk_nested,
 *    thread.h).
 *  - The tracer's own mappings and descriptors go through mk_sys_* (raw
 *    system calls), never through its own interposed mmap or close.
 *  - Any failure to write disables tracing with one message on stderr; the
 *    program runs on untouched.
 */
#ifndef MEMKIT_PRELOAD_BASE_H
#define MEMKIT_PRELOAD_BASE_H

#include "../trace/format.h"
#include "../trace/tsc.h" /* mk_fenced_begin, mk_fenced_end */

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#define MK_LIKELY(x)   __builtin_expect(!!(x), 1)
#define MK_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define MK_HIDDEN      __attribute__((visibility("hidden")))

/* The real functions, found with dlsym(RTLD_NEXT). */
typedef struct mk_real_fns {
    void *(*malloc)(size_t);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    void *(*reallocarray)(void *, size_t, size_t);
    void (*free)(void *);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*memalign)(size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
    char *(*strdup)(const char *);
    char *(*strndup)(const char *, size_t);
    wchar_t *(*wcsdup)(const wchar_t *);
    size_t (*malloc_usable_size)(void *); /* not hooked: the allocator's own */
} mk_real_fns_t;

/* What the tracer does with a call: one mode per process, decided once when
 * the configuration is read (mk_mode_decide, runtime.c) and never changed
 * but to fall back to MK_MODE_FULL when sampling cannot start. */
typedef enum mk_mode {
    MK_MODE_FULL = 0,     /* every event with its stack (memkit trace -q) */
    MK_MODE_FULL_SUMMARY, /* every event, and the summary counted beside them,
                           * sites keyed by stack id (memkit trace without -q
                           * prints it without replaying the trace) */
    MK_MODE_SUMMARY,      /* --summary-only: no events; per-site totals counted
                           * in process, one SUMMARY record at the end */
    MK_MODE_SAMPLED,      /* --sample: every call counted, sampled ones recorded
                           * (with --summary-only too: at depth 1) */
} mk_mode_t;

/* Which body malloc, free, new and delete run (mk_hook_path, hook.h): the
 * summary and sampled modes have fast bodies of their own, which do not
 * watch the break, so --syscalls sends them the general way. */
typedef enum mk_path {
    MK_PATH_GENERAL = 0,
    MK_PATH_SUMMARY,
    MK_PATH_SAMPLE,
} mk_path_t;

/* Settings, read once from the environment (MEMKIT_TRACE_*). */
typedef struct mk_config {
    mk_mode_t mode;
    bool syscalls;              /* record mmap/munmap/mremap/brk/sbrk too: any mode */
    bool times;                 /* measure the allocator's time (not --no-times) */
    bool cpu_samples;           /* sample each thread's CPU clock (oncpu.h) */
    int depth;                  /* frames kept per stack; 1 = caller only (--no-stacks) */
    uint64_t sample_mean;       /* MK_MODE_SAMPLED: mean bytes between samples */
    uint64_t sample_seed;       /* MEMKIT_SAMPLE_SEED, or drawn from the clock */
    uint64_t snapshot_every_ns; /* --snapshot-every; 0: none */
    int snapshot_signal;        /* --snapshot-signal; 0: none */
    char prefix[4096];          /* trace path prefix: <prefix>.<pid>[.<n>].mkt */
    char run_id[64];            /* ties the traces of one `memkit trace` run together */
    int test_signal; /* MEMKIT_TRACE_TEST_SIGNAL (tests only): raised once while
                      * the first EVENTS record is being written */
} mk_config_t;

/* A thread's tracer state (thread.h). */
typedef struct mk_thread mk_thread_t;

/* Process-wide state. */
typedef struct mk_state {
    atomic_int phase; /* MK_PHASE_* */
    mk_path_t path;   /* from cfg.mode and cfg.syscalls, set with the mode */
    mk_config_t cfg;
    int fd; /* the trace file, or -1 */
    pid_t pid;
    uint64_t t_start; /* CLOCK_MONOTONIC ns at start */
    bool use_tsc;     /* ticks from the invariant TSC, else from the clock */
    bool timing;      /* calls are timed (format.h): a TSC, and every event written */
    uint32_t cost_overhead_x16; /* 16 x the cycles an empty span reads (runtime.c) */
    uint64_t slow_cycles;       /* a call this long is slow (runtime.c; 0: none) */
    bool switches;              /* a thread's switches show in its rseq word (below) */
    uint64_t tick_start;
    atomic_uint next_thread;
    atomic_uintptr_t threads; /* mk_thread_t list head */
    atomic_ullong events_written;
    atomic_ullong events_lost;
    atomic_uint stack_gen; /* bumped in a forked child: stacks are re-defined */
} mk_state_t;

/* PAUSED: an exec flush is under way; events are not recorded meanwhile. */
enum {
    MK_PHASE_OFF = 0,
    MK_PHASE_INIT,
    MK_PHASE_ON,
    MK_PHASE_DONE,
    MK_PHASE_FAILED,
    MK_PHASE_PAUSED
};

extern mk_real_fns_t mk_real MK_HIDDEN;
extern mk_state_t mk_st MK_HIDDEN;
/* The calling thread's tracer state, in one thread-local block so that a hook
 * finds both with one lookup of its offset. guard: set while the thread is
 * in the tracer's own code outside a hook (start-up, making its state, dlsym,
 * fork, the end): its calls go to the real functions, unrecorded. Inside a
 * hook, the state's in_hook flag says so instead (mk_nested).
 * no_state: its state could not be mapped; the thread runs untraced.
 * shielded: how many mk_shield scopes the thread is in (mk_shield). */
typedef struct mk_tls {
    mk_thread_t *self;
    int guard;
    bool no_state;
    int shielded;
    /* Inside libunwind for a capture: its signal masking is skipped
     * (signals.c's sigprocmask), and the mask it asks for is read once. */
    bool in_unwind;
    bool unwind_mask_known;
    sigset_t unwind_mask;
} mk_tls_t;
extern __thread mk_tls_t mk_tls MK_HIDDEN __attribute__((tls_model("initial-exec")));
#define mk_guard (mk_tls.guard)
#define mk_self  (mk_tls.self)

/* ---- raw system calls: the tracer's own, past its interposers ---- */

/* The kernel's system call, never through the exported syscall() (hooks_proc.c:
 * it ends the trace on exit_group, and this library's own calls would bind to
 * it). Static in each file: unit tests link single files of the tracer. */
static inline long mk_syscall_v(long nr, va_list ap)
{
    long a[6];

    /* Six arguments whatever the call has: the kernel reads only its own. */
    for (int i = 0; i < 6; i++)
        a[i] = va_arg(ap, long);
#if defined(__x86_64__)
    register long r10 __asm__("r10") = a[3];
    register long r8 __asm__("r8") = a[4];
    register long r9 __asm__("r9") = a[5];
    long ret;

    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(nr), "D"(a[0]), "S"(a[1]), "d"(a[2]), "r"(r10), "r"(r8),
                       "r"(r9)
                     : "rcx", "r11", "memory");
    if ((unsigned long)ret > -4096ul) { /* -errno: report it as libc's wrapper does */
        errno = (int)-ret;
        return -1;
    }
    return ret;
#else
    /* libc's own, found past this library (its syscall is the hook). */
    static long (*libc_syscall)(long, ...);
    if (!libc_syscall)
        libc_syscall = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
    return libc_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
#endif
}

static inline long mk_syscall(long nr, ...)
{
    va_list ap;

    va_start(ap, nr);
    long ret = mk_syscall_v(nr, ap);
    va_end(ap);
    return ret;
}

static inline void *mk_sys_mmap(void *addr, size_t n, int prot, int flags, int fd,
                                off_t off)
{
    return (void *)mk_syscall(SYS_mmap, addr, n, prot, flags, fd,
                              off); /* -1: MAP_FAILED */
}

static inline int mk_sys_munmap(void *p, size_t n)
{
    return (int)mk_syscall(SYS_munmap, p, n);
}

static inline int mk_sys_close(int fd)
{
    return (int)mk_syscall(SYS_close, fd);
}

/* Zeroed memory for the tracer's own tables, straight from mmap (the tracer
 * never mallocs); NULL when there is none. The pair fits the alloc/release
 * members of kv_table.h and addr_index.h. */
static inline void *mk_pages_zeroed(size_t n)
{
    void *p =
        mk_sys_mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p; /* fresh mappings are zeroed */
}

static inline void mk_pages_release(void *p, size_t n)
{
    mk_sys_munmap(p, n);
}

/* Zeroed pages for a table read at random, such as a thread's live-block
 * index: from 4 MiB on, asked of the kernel as transparent huge pages
 * (given where it is set to "always" or "madvise"), so that a lookup in a
 * table of millions of entries misses the TLB once per 2 MiB, not once per
 * 4 KiB. Best effort: the table works the same without them. */
#define MK_HUGE_MIN (4u << 20)

static inline void *mk_pages_table(size_t n)
{
    void *p = mk_pages_zeroed(n);
    if (p && n >= MK_HUGE_MIN)
        mk_syscall(SYS_madvise, p, n, MADV_HUGEPAGE);
    return p;
}

/* A table of mk_pages_table's resized in place or moved by the kernel, its
 * pages kept (no copy faults in new ones); NULL when there is no room. A
 * shrink cannot fail. Fits addr_index.h's resize member. */
static inline void *mk_pages_resize(void *p, size_t old_size, size_t n)
{
    void *q = (void *)mk_syscall(SYS_mremap, p, old_size, n, MREMAP_MAYMOVE);
    if (q == MAP_FAILED)
        return NULL;
    if (n >= MK_HUGE_MIN)
        mk_syscall(SYS_madvise, q, n, MADV_HUGEPAGE);
    return q;
}

/* The TSC reads around a real allocator call (format.h): their difference
 * is the allocator's time, memkit's own recording outside it. Both 0 for a
 * call that is not read. The timed call of the stride (one in about
 * MK_COST_STRIDE) is read fenced: unfenced, the second read executes beside
 * a call of a few ns and misses it (an empty interval then reads as long as
 * a malloc); the others that are read, to find the slow ones, unfenced. */
typedef struct mk_span {
    uint64_t t0, t1;
    bool read; /* read to be judged slow (record.h's READ_CALL) */
} mk_span_t;

#define MK_NO_SPAN ((mk_span_t){0, 0, false})

/* Was the thread switched out during a read call? The kernel clears a
 * thread's rseq_cs word (in the rseq area glibc registers for each thread)
 * on its way back to user space after the thread was switched out
 * (preempted, blocked, migrated) or handed a signal, whenever the word
 * names a critical section the thread is not in: threads.c's switch_cs spans no
 * instruction at all. A read call arms the word before the real call; found
 * cleared after it, the call's cycles hold time off the CPU (a preemption
 * reads as milliseconds), which is not the allocator's CPU time the run's
 * share divides by: record.h's SWITCH_CHECK keeps a clocked call's time on
 * the CPU, drops any other's, and counts the call. Where the kernel or
 * glibc gives no rseq (valgrind, glibc.pthread.rseq=0), a thread's word is
 * a field of its own that nothing clears (threads.c's switch_word). */
MK_HIDDEN extern uint64_t mk_switch_cs_at; /* switch_cs's address (threads.c) */

static inline void mk_switch_arm(volatile uint64_t *word)
{
    *word = mk_switch_cs_at;
}

static inline bool mk_switched(const volatile uint64_t *word)
{
    return *word == 0;
}

static inline bool mk_tracing_on(void)
{
    return atomic_load_explicit(&mk_st.phase, memory_order_relaxed) == MK_PHASE_ON;
}

/* What the mode implies, asked by name rather than by comparing modes. */
static inline bool mk_mode_sampled(void)
{
    return mk_st.cfg.mode == MK_MODE_SAMPLED;
}

/* Is every call an event (full tracing, with or without the summary)? */
static inline bool mk_mode_full(void)
{
    return mk_st.cfg.mode == MK_MODE_FULL || mk_st.cfg.mode == MK_MODE_FULL_SUMMARY;
}

/* Are EVENTS records written (all modes but --summary-only)? */
static inline bool mk_mode_events(void)
{
    return mk_st.cfg.mode != MK_MODE_SUMMARY;
}

/* Is the summary counted in process (summary.h)? */
static inline bool mk_mode_counts_sites(void)
{
    return mk_st.cfg.mode == MK_MODE_SUMMARY || mk_st.cfg.mode == MK_MODE_FULL_SUMMARY;
}

/* Are calls and bytes counted by kind in the thread states (counts[],
 * bytes[])? The summary's and the samples' totals come from there. */
static inline bool mk_mode_counts_kinds(void)
{
    return mk_st.cfg.mode != MK_MODE_FULL;
}

/* ---- base.c ---- */

MK_HIDDEN void mk_warn_once(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The program's path (/proc/self/exe), read once per program image: the
 * trace's header and the module map both name it. "" when unreadable. */
MK_HIDDEN const char *mk_exe_path(size_t *len);

/* Messages go to the stderr of start-up only: mk_stderr_remember (at init)
 * notes which file fd 2 is; mk_stderr_write writes there while fd 2 is still
 * that file, else drops the message. */
MK_HIDDEN void mk_stderr_remember(void);
MK_HIDDEN void mk_stderr_write(const char *msg, size_t n);
MK_HIDDEN void *mk_boot_alloc(size_t n);
/* The next definition of name (dlsym(RTLD_NEXT)), cached in *slot; NULL if
 * there is none. */
MK_HIDDEN void *mk_next_symbol(void **slot, const char *name);
/* glibc's dlopen, not the tracer's interposer (hooks_proc.c: it would write a
 * module map), for the libraries the tracer loads for itself; NULL as dlopen
 * returns it, or when dlopen cannot be found. */
MK_HIDDEN void *mk_own_dlopen(const char *file, int mode);
/* Is the code or data at p part of the tracer itself (libmemkit-preload.so)? */
MK_HIDDEN bool mk_in_tracer(const void *p);
/* The bootstrap heap (mk_boot_alloc): blocks handed out before dlsym found
 * the real malloc. They are never freed, and realloc copies them out. */
#define MK_BOOT_HEAP_SIZE (64u << 10)
extern uint8_t mk_boot_heap[MK_BOOT_HEAP_SIZE] MK_HIDDEN;
static inline bool mk_is_boot(const void *p)
{
    /* One unsigned compare: addresses below the heap wrap around to large. */
    return (uintptr_t)p - (uintptr_t)mk_boot_heap < MK_BOOT_HEAP_SIZE;
}

/* ---- the clock ---- */

static inline uint64_t mk_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Event time in ticks of 4096 TSC cycles (or 4096 ns without an invariant
 * TSC): rdtsc costs half a clock_gettime here, and microsecond order is all
 * the analysis needs; finer ticks cost trace size. Records carry clock
 * anchors to convert ticks. */
static inline uint64_t mk_ticks(void)
{
    if (MK_LIKELY(mk_st.use_tsc))
        return __rdtsc() >> MK_TICK_SHIFT;
    return mk_now() >> MK_TICK_SHIFT;
}

/* ---- cancellation and signals around the tracer's own work ---- */

/* The tracer's slow paths make system calls that are cancellation points
 * (open, read, write: libunwind's memory checks, /proc reads, records); the
 * hooks' functions are not. With cancellation off there, a pending request
 * waits for the program's own next cancellation point, as untraced. Cheap
 * (no system call), but not free: slow paths only. */
static inline int mk_cancel_off(void)
{
    int was;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &was);
    return was;
}

static inline void mk_cancel_restore(int was)
{
    pthread_setcancelstate(was, NULL);
}

/* What the program's signals and thread cancellation must not interrupt:
 * writing a record (output.c) and resetting the buffer it came from. A
 * handler that exits there flushed the same buffer again, on the lock its
 * own thread held; a cancellation request acted on in our write() made
 * malloc, which is no cancellation point, cancel the thread. */
typedef struct mk_shield {
    sigset_t signals;
    int cancel_state;
} mk_shield_t;

/* Scopes nest (a thread's flush shields the record's write and the buffer's
 * reset, and the write shields itself for its other callers): only the
 * outermost one blocks and restores, two pthread_sigmask calls in all. */
static inline void mk_shield(mk_shield_t *s)
{
    if (mk_tls.shielded++)
        return; /* already shielded: signals stay blocked, cancellation off */
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &s->signals);
    s->cancel_state = mk_cancel_off();
}

/* Under mk_shield: takes back sig if it was not pending before the system
 * call that may have raised it (SIGXFSZ for a write past the file-size
 * limit, SIGPIPE for one into a closed pipe), whose default action would
 * kill a program that did nothing to earn it. */
static inline void mk_take_back(int sig, const sigset_t *pending_before)
{
    if (sigismember(pending_before, sig))
        return; /* the program's own, or not ours to tell apart */
    sigset_t one, now;
    sigpending(&now);
    if (!sigismember(&now, sig))
        return;
    sigemptyset(&one);
    sigaddset(&one, sig);
    struct timespec zero = {0, 0};
    int saved_errno = errno;
    sigtimedwait(&one, NULL, &zero);
    errno = saved_errno;
}

static inline void mk_unshield(const mk_shield_t *s)
{
    if (--mk_tls.shielded)
        return; /* an inner scope: the outermost one restores */
    mk_cancel_restore(s->cancel_state);
    pthread_sigmask(SIG_SETMASK, &s->signals, NULL);
}

#endif /* MEMKIT_PRELOAD_BASE_H */
