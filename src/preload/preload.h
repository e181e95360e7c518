/*
 * preload.h - internals of libmemkit-preload.so, the allocation tracer.
 *
 * Data flow: a hook (hooks.c) calls the real function, then records one event
 * into the calling thread's buffer (this file's inline fast path). A full
 * buffer is compressed and appended to the trace file as one EVENTS record
 * (output.c). Stacks are captured in the hook's frame and interned in a
 * lock-free table shared by all threads (stacks.c); the module map is written
 * at start and after dlopen/dlclose (modules.c). --summary-only aggregates in
 * process instead (summary.c).
 *
 * Invariants:
 *  - Nothing here allocates through the hooks: every hook sets its thread's
 *    in_hook flag (the tracer's code outside hooks, the guard) before it does
 *    anything that might call malloc, and a call that finds either set goes
 *    straight to the real function, unrecorded (mk_nested).
 *  - A thread's buffer is written only by its owner thread; the final flush
 *    first stops new events and waits for events in flight (see mk_enter),
 *    so the event path has no lock and no atomic read-modify-write at all.
 *    buf[0, len) always holds whole items.
 *  - Any failure to write disables tracing with one message on stderr; the
 *    program runs on untouched.
 */
#ifndef MEMKIT_PRELOAD_H
#define MEMKIT_PRELOAD_H

#include "../trace/addr_index.h"
#include "../trace/format.h"
#include "../trace/kv_table.h"
#include "../trace/reuse.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <time.h>
#include <x86intrin.h>

#define MK_LIKELY(x)   __builtin_expect(!!(x), 1)
#define MK_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define MK_HIDDEN      __attribute__((visibility("hidden")))

#define MK_MAX_DEPTH 128
/* An EVENTS record holds up to MK_RECORD_ITEMS events (format.h); each
 * stream has room for that many of its largest field per event
 * (mk_stream_cap), so one compare on the event count tells whether an event
 * fits. DEFS is checked on its own. */
#define MK_DEFS_CAP (256u << 10)
#define MK_DEF_ROOM (MK_VARINT_MAX * (MK_MAX_DEPTH + 2))
#define MK_HEAD_MAX (4 * MK_VARINT_MAX + 16 + MK_S_COUNT * MK_VARINT_MAX)

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
} mk_real_fns_t;

/* Settings, read once from the environment (MEMKIT_TRACE_*). */
typedef struct mk_config {
    int depth;         /* frames kept per stack; 1 = caller only (--no-stacks) */
    bool summary_only; /* aggregate in process, write one SUMMARY record */
    bool syscalls;     /* record mmap/munmap/mremap/brk/sbrk too */
    char prefix[4096]; /* trace path prefix: <prefix>.<pid>[.<n>].mkt */
    char run_id[64];   /* ties the traces of one `memkit trace` run together */
    int test_signal;   /* MEMKIT_TRACE_TEST_SIGNAL (tests only): raised once while
                        * the first EVENTS record is being written */
} mk_config_t;

typedef struct mk_thread mk_thread_t;
struct mk_thread {
    uint32_t index; /* thread number within the process, from 1 */
    pid_t tid;
    int *errno_at;                   /* the owner thread's errno */
    atomic_bool dead;                /* no owner (a forked child's other threads) */
    atomic_int exited_tid;           /* the owner's key destructor ran: reuse once
                                      * this thread is gone (runtime.c) */
    uint8_t *s[MK_S_COUNT];          /* write cursors of the streams (format.h) */
    uint8_t *base[MK_S_COUNT];       /* their starts; sizes from mk_stream_cap */
    uint64_t anchor_ns, anchor_tick; /* the record's clock anchor */
    mk_addr_index_t live;            /* blocks this thread allocated (addr_index.h) */
    atomic_int in_hook;              /* set while the owner is in a hook; see
                                      * mk_enter and mk_nested */
    uint64_t prev_t, prev_addr;      /* decoder state of the current record */
    uint32_t time_zeros;             /* events since the last TIME pair, all 0
                                      * ticks after their previous one */
    uint8_t *cached_byte;            /* CACHED's byte with only its low
                                      * nibble written, or NULL */
    uint8_t *hit_byte;               /* HIT's byte being filled, or NULL */
    unsigned hit_bits;               /* bits in it so far (< 8) */
    mk_reuse_t *reuse;               /* recent frees by size class (reuse.h) */
    uint64_t events;                 /* events recorded in the current record */
    void *cctx;                      /* this thread's zstd context */
    uint8_t *zbuf;                   /* and its output buffer */
    size_t zcap;
    struct mk_site_table *sites;        /* --summary-only: per-thread site totals */
    struct mk_stack_cache *stack_cache; /* recent stacks by (ra, fp), see stacks.c */
    uintptr_t stack_lo, stack_hi;       /* this thread's stack, for the cache */
    uint64_t counts[MK_K_COUNT];        /* --summary-only: calls per kind not in the
                                         * site table (frees, system calls, sites
                                         * the table had no room for) */
    long long live_bytes, live_blocks;  /* --summary-only: this thread's share */
    long long sample_hi, sample_lo;     /* --summary-only: the live bytes, and */
    long long sample_hi_blocks;         /* blocks, above or below which an */
    long long sample_lo_blocks;         /* event samples the peak (summary.h) */
    uint64_t frees_unseen; /* --summary-only: free()s of NULL or of unseen blocks */
    mk_kv_t *last_site;    /* --summary-only: the site table's entry used last */
    uint64_t bytes[MK_K_COUNT];
    mk_thread_t *next; /* all thread states, never unlinked */
    uint32_t state_id; /* --summary-only: which state a SUMMARY_PART is of, from 1 */
    uint32_t checkpoint_gate;     /* --summary-only: slow-path calls, to read the */
    uint64_t checkpoint_due_ns;   /* clock now and then; the next checkpoint */
    uint64_t checkpoint_every_ns; /* (ns since start) and the gap after it */
};

/* Process-wide state. */
typedef struct mk_state {
    atomic_int phase;  /* MK_PHASE_* */
    bool summary_fast; /* --summary-only without --syscalls: malloc and free
                        * take the summary's own path (summary.h) */
    mk_config_t cfg;
    int fd; /* the trace file, or -1 */
    pid_t pid;
    uint64_t t_start; /* CLOCK_MONOTONIC ns at start */
    bool use_tsc;     /* ticks from the invariant TSC, else from the clock */
    uint64_t tick_start;
    atomic_ullong bytes_written; /* to the trace: the process's I/O minus ours */
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
} mk_tls_t;
extern __thread mk_tls_t mk_tls MK_HIDDEN __attribute__((tls_model("initial-exec")));
#define mk_guard (mk_tls.guard)
#define mk_self  (mk_tls.self)

/* Zeroed memory for the tracer's own tables, straight from mmap (the tracer
 * never mallocs); NULL when there is none. The pair fits the alloc/release
 * members of kv_table.h and addr_index.h. */
static inline void *mk_pages_zeroed(size_t n)
{
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p; /* fresh mappings are zeroed */
}

static inline void mk_pages_release(void *p, size_t n)
{
    munmap(p, n);
}

/* runtime.c */
MK_HIDDEN void mk_init(void);
MK_HIDDEN mk_thread_t *mk_thread_get(void);
MK_HIDDEN void mk_thread_flush(mk_thread_t *t);
MK_HIDDEN void mk_index_failed(void);
MK_HIDDEN void mk_finish(int reason);
MK_HIDDEN void mk_before_exec(void);
/* Has thread tid of this process run its state's key destructor? */
MK_HIDDEN bool mk_thread_ended(pid_t tid);

/* proc_io.c: the program's own I/O bytes while traced, without its children's
 * and the tracer's own (see there). */
enum { MK_IO_RCHAR, MK_IO_WCHAR, MK_IO_READ_BYTES, MK_IO_WRITE_BYTES, MK_IO_FIELDS };
typedef struct mk_io {
    uint64_t v[MK_IO_FIELDS];
} mk_io_t;
#define MK_IO_NO_MARK UINT64_MAX
/* Counting starts: at start-up once the trace's head is written, and in a
 * forked child. */
MK_HIDDEN void mk_io_start(void);
/* From a thread's key destructor: its counts outlive it only here. */
MK_HIDDEN void mk_io_thread_ended(void);
/* Around a read the tracer makes where the program would not have (glibc's
 * /proc/self/maps read for the main thread's stack): mark = mk_io_mark(),
 * the read, mk_io_own_since(mark). */
MK_HIDDEN uint64_t mk_io_mark(void);
MK_HIDDEN void mk_io_own_since(uint64_t mark);
/* The counts since the start into *out (false: /proc not readable, all 0),
 * and the trace bytes written since into *trace_bytes. */
MK_HIDDEN bool mk_io_end(mk_io_t *out, uint64_t *trace_bytes);

/* signals.c: where the program leaves a fatal signal at its default action,
 * a handler that ends the trace first. Called once tracing is on. */
MK_HIDDEN void mk_signals_arm(void);
static inline bool mk_tracing_on(void)
{
    return atomic_load_explicit(&mk_st.phase, memory_order_relaxed) == MK_PHASE_ON;
}
MK_HIDDEN void mk_warn_once(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Messages go to the stderr of start-up only: mk_stderr_remember (at init)
 * notes which file fd 2 is; mk_stderr_write writes there while fd 2 is still
 * that file, else drops the message. */
MK_HIDDEN void mk_stderr_remember(void);
MK_HIDDEN void mk_stderr_write(const char *msg, size_t n);
MK_HIDDEN void *mk_boot_alloc(size_t n);
/* The next definition of name (dlsym(RTLD_NEXT)), cached in *slot; NULL if
 * there is none. */
MK_HIDDEN void *mk_next_symbol(void **slot, const char *name);
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

/* stacks.c: id of a captured stack (0: none or table full). Writes the
 * definition into t's buffer the first time this file sees the stack. */
MK_HIDDEN uint32_t mk_stack_intern(mk_thread_t *t, uintptr_t *frames, int depth);
/* The id of the calling hook's caller's stack; ra and fp are the hook's
 * return and frame addresses. */
MK_HIDDEN uint32_t mk_stack_id(mk_thread_t *t, uintptr_t ra, uintptr_t fp);
MK_HIDDEN void mk_stacks_init(void);
MK_HIDDEN void mk_stacks_flush_cache(void);

/* hooks_proc.c */
MK_HIDDEN void mk_proc_init(void);

/* glibc_heap.c: MEMKIT_MALLOPT applied; glibc's view of its heap at the end:
 * arena, in use, free, mmapped (mallinfo2) and the [heap] mapping's RSS. */
#define MK_HEAP_VIEW_FIELDS 5
MK_HIDDEN void mk_glibc_apply_mallopt(void);
MK_HIDDEN void mk_glibc_heap_view(uint64_t v[MK_HEAP_VIEW_FIELDS]);

/* modules.c */
MK_HIDDEN void mk_modules_write(void);
/* shadowed.c: which allocation functions the program defines ahead of ours
 * (found once at start-up), written as a NOTES record after the modules. */
MK_HIDDEN void mk_shadowed_find(void);
MK_HIDDEN void mk_shadowed_write(void);
MK_HIDDEN void mk_modules_after_fork_child(void);

/* fds.c: the tracer's own descriptors, out of the program's way. */
MK_HIDDEN int mk_fd_make_private(int fd, bool cloexec); /* returns its new number */
MK_HIDDEN void mk_fd_forget(int fd);        /* no longer ours: never close it */
MK_HIDDEN void mk_fd_close_private(int fd); /* closes it if it still is ours */

/* output.c */
MK_HIDDEN bool mk_output_open(void);
MK_HIDDEN bool mk_output_record(mk_thread_t *t, unsigned type, const void *raw,
                                size_t len);
MK_HIDDEN bool mk_output_parts(mk_thread_t *t, unsigned type, const void *const *part,
                               const size_t *len, int nparts);
MK_HIDDEN void mk_output_lock(void);
MK_HIDDEN void mk_output_unlock(void);
MK_HIDDEN void mk_output_after_fork_child(void);

/* summary.c (the event path is inline, in summary.h) */
MK_HIDDEN void mk_summary_write(void);
MK_HIDDEN void mk_summary_after_fork_child(void);
MK_HIDDEN void mk_summary_thread_added(mk_thread_t *t);
/* runtime.c: waits until every other thread is out of its hook (after a
 * membarrier, so each sees what we stored before). */
MK_HIDDEN void mk_quiesce_others(void);

/* ---- the fast path ---- */

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

MK_HIDDEN mk_thread_t *mk_enter_slow(void);

/* Enter a hook: returns the thread state with in_hook set, or NULL when the
 * call must go to the real function unrecorded (nested call, not tracing).
 *
 * No atomic read-modify-write here: the thread announces itself with a plain
 * store to in_hook, then reads the phase. A flusher stores the phase, then
 * runs membarrier() (a barrier on every thread), then reads in_hook: either
 * we see its phase or it sees our flag (asymmetric Dekker). */
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

static inline void mk_leave(mk_thread_t *t)
{
    atomic_store_explicit(&t->in_hook, 0, memory_order_release);
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

static inline mk_thread_t *mk_enter(void)
{
    if (MK_UNLIKELY(mk_nested()))
        return NULL;
    mk_thread_t *t = mk_self;
    if (MK_UNLIKELY(!t))
        return mk_enter_slow();
    return mk_announce(t) ? t : NULL;
}

/* Bytes a stream needs per item at most. */
static inline size_t mk_stream_cap(int stream)
{
    static const uint8_t per_item[MK_S_COUNT] = {
        [MK_S_TAG] = 2,                  /* an event, and a stack definition before it */
        [MK_S_TIME] = 3 + MK_VARINT_MAX, /* z < MK_RECORD_ITEMS: 3 bytes */
        [MK_S_SIZE_LO] = 1,
        [MK_S_SIZE_HI] = 2 * MK_VARINT_MAX,
        [MK_S_FREEREF_LO] = 1,
        [MK_S_FREEREF_HI] = MK_VARINT_MAX,
        [MK_S_NEWADDR] = 1,
        [MK_S_ADDR] = 2 * MK_VARINT_MAX,
        [MK_S_STACK] = 5,
        [MK_S_RECENT] = 2,     /* d - 1 < MK_REUSE_RECENT */
        [MK_S_NEWADDR_HI] = 1, /* code - 15 < 128 */
        [MK_S_HIT] = 1,        /* (an eighth) */
        [MK_S_CACHED] = 1,
    };
    return stream == MK_S_DEFS ? MK_DEFS_CAP : (size_t)per_item[stream] * MK_RECORD_ITEMS;
}

/* A record older than this many ticks (2^31 TSC cycles: 0.6-0.9 s at 2.4-3.5
 * GHz; 2.1 s of 4096-ns ticks) is written before the next event joins it, so
 * that a SIGKILL (the OOM killer's) takes at most about a second of a busy
 * thread's events with it, not up to a full record's hours of a slow one. */
#define MK_RECORD_AGE (1ull << 19)

/* Makes room for one item (with a stack definition); flushing may fail and
 * disable tracing. The bound is on events, not on the TAG stream's bytes: an
 * event without a stack definition takes one TAG byte of the two it is given,
 * and a record of 2 x MK_RECORD_ITEMS mallocs would overrun the one-byte
 * streams (SIZE_LO, NEWADDR) into their neighbours. The age check uses the
 * last event's tick, so it costs no clock read. */
static inline bool mk_room(mk_thread_t *t)
{
    if (MK_LIKELY(t->events < MK_RECORD_ITEMS &&
                  t->s[MK_S_DEFS] - t->base[MK_S_DEFS] <
                      (ptrdiff_t)(MK_DEFS_CAP - MK_DEF_ROOM) &&
                  t->prev_t - t->anchor_tick < MK_RECORD_AGE))
        return true;
    mk_thread_flush(t);
    return mk_tracing_on();
}

static inline void mk_put(mk_thread_t *t, int stream, uint64_t v)
{
    t->s[stream] = mk_put_varint(t->s[stream], v);
}

static inline void mk_put_raw_addr(mk_thread_t *t, uintptr_t addr)
{
    mk_put(t, MK_S_ADDR, mk_zigzag((int64_t)(addr - t->prev_addr)));
    t->prev_addr = addr;
}

/* A split number (format.h): low byte, then the rest as a varint. */
static inline void mk_put_split(mk_thread_t *t, int lo, uint64_t v)
{
    *t->s[lo]++ = (uint8_t)v;
    t->s[lo + 1] = mk_put_varint(t->s[lo + 1], v >> 8);
}

/* An event's tag and time: a run of events in the same tick is one count
 * (format.h, TIME pairs), closed by the next event in a later tick or by
 * mk_thread_flush. */
static inline void mk_put_head(mk_thread_t *t, unsigned kind)
{
    uint64_t now = mk_ticks();
    *t->s[MK_S_TAG]++ = (uint8_t)kind;
    if (now > t->prev_t) {
        mk_put(t, MK_S_TIME, t->time_zeros);
        mk_put(t, MK_S_TIME, now - t->prev_t);
        t->time_zeros = 0;
        t->prev_t = now;
    } else {
        t->time_zeros++;
    }
    t->events++;
}

/* A freed block joins the reuse model if it is in the live index (i >= 0:
 * then its class is known). */
static inline void mk_note_free(mk_thread_t *t, uintptr_t addr, int64_t i)
{
    if (i >= 0)
        mk_reuse_free(t->reuse, t->live.cls[i], addr);
}

/* A freed block: its live index when this thread allocated it (about 14 bits
 * for 10,000 live blocks), else its address. Does not remove it. */
static inline int64_t mk_put_freeref(mk_thread_t *t, uintptr_t addr)
{
    int64_t i = mk_index_find(&t->live, addr);
    if (!addr) {
        mk_put_split(t, MK_S_FREEREF_LO, 0);
    } else if (i >= 0) {
        mk_put_split(t, MK_S_FREEREF_LO, 2 + (uint64_t)i);
        t->prev_addr = addr;
    } else {
        mk_put_split(t, MK_S_FREEREF_LO, 1);
        mk_put_raw_addr(t, addr);
    }
    return i;
}

/* A code of NEWADDR (pending NULL: a byte each) or of CACHED, whose
 * half-filled byte is *pending (two to a byte; format.h says why each). */
static inline void mk_put_code(mk_thread_t *t, int stream, uint8_t **pending,
                               unsigned code)
{
    if (!pending) {
        mk_put(t, stream, code);
        return;
    }
    unsigned nibble = code < 15 ? code : 15;
    if (*pending) {
        **pending |= (uint8_t)(nibble << 4);
        *pending = NULL;
    } else {
        *pending = t->s[stream]++;
        **pending = (uint8_t)nibble;
    }
    if (MK_UNLIKELY(code >= 15))
        mk_put(t, MK_S_NEWADDR_HI, code - 15);
}

/* A HIT bit: whether the new block is the reuse model's guess. */
static inline void mk_put_hit(mk_thread_t *t, unsigned hit)
{
    if (!t->hit_byte) {
        t->hit_byte = t->s[MK_S_HIT]++;
        *t->hit_byte = 0;
    }
    *t->hit_byte |= (uint8_t)(hit << t->hit_bits);
    if (++t->hit_bits == 8) {
        t->hit_byte = NULL;
        t->hit_bits = 0;
    }
}

/* A new block's address that is not the model's guess, as a code in stream
 * (NEWADDR, or CACHED after a missed guess; pending as for mk_put_code):
 * its place among its class's candidates; else a recent free of another
 * class (split or merged by the allocator), named by how many frees back;
 * else the distance from the previous address. Returns its place in its
 * class's ring for mk_reuse_claim. */
static inline unsigned mk_put_named_addr(mk_thread_t *t, int stream, uint8_t **pending,
                                         unsigned cls, uintptr_t addr)
{
    unsigned ring_j, pos = mk_reuse_locate(t->reuse, cls, addr, &ring_j);
    uint32_t d;
    if (MK_LIKELY(pos < MK_REUSE_MISS)) {
        mk_put_code(t, stream, pending, 1 + pos);
    } else if ((d = mk_reuse_recent_find(t->reuse, addr)) != 0) {
        mk_put_code(t, stream, pending, 2 + MK_REUSE_MISS);
        mk_put(t, MK_S_RECENT, d - 1);
    } else {
        mk_put_code(t, stream, pending, 1 + MK_REUSE_MISS);
        mk_put_raw_addr(t, addr);
    }
    return ring_j;
}

/* A new block's address: the allocator usually hands back the block of the
 * same size class freed last that its cache took, which the model guesses
 * (one bit); else name it (above). It joins the index. A realloc's never
 * takes the guess's bit (may_guess false: format.h says why). */
static inline void mk_put_newaddr(mk_thread_t *t, uintptr_t addr, uint64_t size,
                                  bool may_guess)
{
    unsigned cls = mk_size_class(size), ring_j = MK_REUSE_UNKNOWN;
    bool guessed = may_guess && mk_reuse_cached(t->reuse, cls) != 0;
    if (guessed) {
        bool hit = addr && addr == mk_reuse_guess(t->reuse, cls);
        mk_put_hit(t, hit);
        if (!hit) {
            if (!addr)
                mk_put_code(t, MK_S_CACHED, &t->cached_byte, 0);
            else
                ring_j = mk_put_named_addr(t, MK_S_CACHED, &t->cached_byte, cls, addr);
        }
    } else if (!addr) {
        mk_put_code(t, MK_S_NEWADDR, NULL, 0);
    } else {
        ring_j = mk_put_named_addr(t, MK_S_NEWADDR, NULL, cls, addr);
    }
    if (!addr)
        return;
    t->prev_addr = addr;
    mk_reuse_claim(t->reuse, cls, addr, ring_j);
    if (MK_UNLIKELY(!mk_index_add(&t->live, addr, cls)))
        mk_index_failed();
}

#endif /* MEMKIT_PRELOAD_H */
