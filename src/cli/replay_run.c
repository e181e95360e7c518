/*
 * replay_run.c - one replay of a compiled trace (replay.h) in a fresh child
 * process, and the child's side of it.
 *
 * The child is this same executable started as `memkit replay --child`,
 * with LD_PRELOAD or GLIBC_TUNABLES set for the allocator under test, so
 * no allocator's heap skews another's numbers. It maps its slot table and
 * buffers and touches them before its first call, so its RSS before the
 * replay is its own and what grows after is the heap's. Each replayed
 * thread reads its operations in batches and times each allocator call
 * with the fenced span the tracer uses (tsc.h), less an empty span; each block gets
 * its first and last byte written, as a program writes what it allocates,
 * so the page faults and cache misses of where the allocator put it are
 * paid (outside the timed call). Results go back whole over a pipe.
 */
#define _GNU_SOURCE
#include "replay.h"

#include "../trace/tsc.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define BATCH 4096 /* operations read at a time */

typedef struct slot {
    void *p;
    _Atomic uint32_t gen; /* allocations made into the slot (replay.h) */
    uint32_t pad;
    uint64_t size; /* the live block's requested bytes: the live bytes' count */
} slot_t;

typedef struct child {
    const char *dir;
    int nthreads;
    uint32_t nslots, nsites;
    slot_t *slots;
    mk_rfix *fix;   /* a what-if's fixes, or NULL */
    uint64_t empty; /* an empty span's reading (tsc.h) */
    struct worker *w;
    _Atomic uint32_t
        progress; /* bumped at every thread's new window (SLEEPER: a sleeper) */
    _Atomic int ready;
    _Atomic int go;
    uint64_t t0_ns; /* the replay's start: the points' time */
} child_t;

typedef struct worker {
    _Alignas(64) _Atomic uint32_t window; /* its current window (UINT32_MAX: done) */
    child_t *c;
    int index;
    pthread_t tid;
    mk_replay_op *buf;
    uint64_t *site_ticks;
    mk_rfix_thread *fix;
    uint64_t calls, ticks;
    uint64_t fix_ticks;   /* a what-if's fixes' own calls */
    _Atomic int64_t live; /* bytes its calls made live (less those they freed) */
    uint64_t calls_left;  /* until its next point */
    uint64_t every;       /* its calls between two points */
    uint32_t npoints;
    mk_replay_point points[MK_REPLAY_POINTS];
    mk_bench_hist hist;
    char why[4400];
} worker_t;

static void *map_zeroed(size_t bytes)
{
    void *p = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* A slot's generation is its low 31 bits (replay.h); the top bit says a
 * thread sleeps on it. A waiter spins a little (the allocation it waits for
 * is usually moments away), then sleeps on the word, so that threads
 * waiting on a machine with fewer CPUs than threads never take the CPU from
 * the thread inside an allocator call (whose time would then include
 * theirs). */
#define SLEEPER 0x80000000u

static void wait_for(slot_t *s, uint32_t gen)
{
    for (unsigned spins = 0;; spins++) {
        uint32_t v = atomic_load_explicit(&s->gen, memory_order_acquire);
        if ((v & ~SLEEPER) == gen)
            return;
        if (spins < 200) {
            __builtin_ia32_pause();
            continue;
        }
        if (!(v & SLEEPER) && !atomic_compare_exchange_weak(&s->gen, &v, v | SLEEPER))
            continue;
        syscall(SYS_futex, &s->gen, FUTEX_WAIT_PRIVATE, v | SLEEPER, NULL, NULL, 0);
    }
}

static void bump_progress(child_t *c)
{
    uint32_t v = atomic_load_explicit(&c->progress, memory_order_relaxed);

    while (!atomic_compare_exchange_weak(&c->progress, &v, (v + 1) & ~SLEEPER))
        ;
    if (v & SLEEPER)
        syscall(SYS_futex, &c->progress, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

/* Thread w enters window `at`: once every other thread is in at - 1 or later. */
static void enter_window(worker_t *w, uint32_t at)
{
    child_t *c = w->c;

    atomic_store_explicit(&w->window, at, memory_order_release);
    bump_progress(c);
    for (unsigned spins = 0;; spins++) {
        uint32_t seen = atomic_load_explicit(&c->progress, memory_order_acquire);
        int j = 0;
        while (
            j < c->nthreads &&
            (j == w->index ||
             (uint64_t)atomic_load_explicit(&c->w[j].window, memory_order_acquire) + 1 >=
                 at))
            j++;
        if (j == c->nthreads)
            return;
        if (spins < 200) {
            __builtin_ia32_pause();
            continue;
        }
        if (!(seen & SLEEPER) &&
            !atomic_compare_exchange_weak(&c->progress, &seen, seen | SLEEPER))
            continue;
        syscall(SYS_futex, &c->progress, FUTEX_WAIT_PRIVATE, seen | SLEEPER, NULL, NULL,
                0);
    }
}

/* A block written as a program writes what it asked for: its first and
 * last bytes, and a byte of every page between, so its pages are faulted
 * in (outside the timed call) and its free pays for unmapping pages that
 * hold data, as the program's free does. */
#define TOUCH_STRIDE 4096
static inline void touch(void *p, uint64_t size)
{
    if (p && size) {
        volatile char *c = p;
        c[0] = 1;
        for (uint64_t at = TOUCH_STRIDE; at < size; at += TOUCH_STRIDE)
            c[at] = 1;
        c[size - 1] = 1;
    }
}

/* The slot's new block, published to a thread that waits for it. */
static inline void publish(slot_t *s, void *p)
{
    uint32_t v = atomic_load_explicit(&s->gen, memory_order_relaxed);

    s->p = p;
    while (!atomic_compare_exchange_weak_explicit(
        &s->gen, &v, (v + 1) & ~SLEEPER, memory_order_release, memory_order_relaxed))
        ;
    if (v & SLEEPER)
        syscall(SYS_futex, &s->gen, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

/* A heap call's ticks counted. */
static inline void count_call(worker_t *w, const mk_replay_op *op, uint64_t d)
{
    w->ticks += d;
    w->calls++;
    w->site_ticks[op->site] += d;
    mk_bench_hist_add(&w->hist, d);
}

/* The call's block, when it has one, touched and put in its slot, and the
 * live bytes counted (the trace's requested sizes, whoever serves them). */
static inline void place(worker_t *w, const mk_replay_op *op, slot_t *s, void *p,
                         uint64_t touched, uint64_t size)
{
    int64_t live =
        atomic_load_explicit(&w->live, memory_order_relaxed) - (int64_t)s->size;

    if (op->kind == MK_ROP_FREE) {
        atomic_store_explicit(&w->live, live, memory_order_relaxed);
        s->size = 0;
        s->p = NULL;
        return;
    }
    atomic_store_explicit(&w->live, live + (int64_t)size, memory_order_relaxed);
    s->size = size; /* before publish: the freeing thread reads it */
    touch(p, touched);
    if (w->c->nthreads > 1)
        publish(s, p);
    else
        s->p = p; /* no thread waits: no atomic read-modify-write between calls */
}

/* A call a what-if's fix may serve: true when handled (served, or failed
 * with why set and *ok false). */
static bool perform_fixed(worker_t *w, const mk_replay_op *op, uint64_t size, bool *ok)
{
    slot_t *s = &w->c->slots[op->slot];
    void *p = s->p;
    uint64_t touched, d;
    int rc = mk_rfix_call(w->fix, op, size, &p, &touched, &d, w->why, sizeof w->why);

    *ok = rc >= 0;
    if (rc == 1) /* the fix's time is its own, not the heap's */
        w->fix_ticks += d;
    else if (rc == 2)
        count_call(w, op, d);
    if (rc >= 1)
        place(w, op, s, p, touched, size);
    return rc != 0;
}

static bool perform(worker_t *w, const mk_replay_op *op, uint64_t size)
{
    slot_t *s = &w->c->slots[op->slot];
    uint64_t t0, t1;
    void *p = NULL;
    bool ok;

    if (w->fix && perform_fixed(w, op, size, &ok))
        return ok;
    switch (op->kind) {
    case MK_ROP_MALLOC:
        t0 = mk_fenced_begin();
        p = malloc(size);
        t1 = mk_fenced_end();
        break;
    case MK_ROP_CALLOC:
        t0 = mk_fenced_begin();
        p = calloc(1, size);
        t1 = mk_fenced_end();
        break;
    case MK_ROP_ALIGNED:
        t0 = mk_fenced_begin();
        if (posix_memalign(&p, (size_t)1 << op->align_log2, size) != 0)
            p = NULL;
        t1 = mk_fenced_end();
        break;
    case MK_ROP_REALLOC:
        t0 = mk_fenced_begin();
        p = realloc(s->p, size);
        t1 = mk_fenced_end();
        break;
    case MK_ROP_FREE:
        p = s->p;
        t0 = mk_fenced_begin();
        free(p);
        t1 = mk_fenced_end();
        s->p = NULL;
        p = NULL;
        break;
    default:
        snprintf(w->why, sizeof w->why, "operation of unknown kind %u", op->kind);
        return false;
    }
    uint64_t d = t1 - t0 > w->c->empty ? t1 - t0 - w->c->empty : 0;
    if (op->kind != MK_ROP_FREE && !p && size) {
        /* malloc(0) may give NULL: as the program saw it, nothing failed */
        snprintf(w->why, sizeof w->why, "the allocator failed a call of %llu bytes",
                 (unsigned long long)size);
        return false;
    }
    count_call(w, op, d);
    place(w, op, s, p, size, size);
    return true;
}

static uint64_t rss_bytes(void);

/* A point of the heap's RSS against the live bytes of every thread, taken
 * by each thread every `every` of its calls (outside any timed call); the
 * counters' RSS, as smaps' page walk would cost a replay of many small
 * processes more than their calls. */
static void take_point(worker_t *w)
{
    child_t *c = w->c;
    int64_t live = 0;

    w->calls_left = w->every;
    if (w->npoints == MK_REPLAY_POINTS)
        return;
    for (int j = 0; j < c->nthreads; j++)
        live += atomic_load_explicit(&c->w[j].live, memory_order_relaxed);
    w->points[w->npoints++] =
        (mk_replay_point){.t_ns = mk_bench_now_ns() - c->t0_ns,
                          .live_bytes = live > 0 ? (uint64_t)live : 0,
                          .rss_bytes = rss_bytes()};
}

static void *work(void *arg)
{
    worker_t *w = arg;
    char path[4200];
    uint64_t hi = 0;
    int fd;

    snprintf(path, sizeof path, "%s/t%d.ops", w->c->dir, w->index);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb; /* its operations, so its points spread over its calls */
    uint64_t ops =
        fd >= 0 && fstat(fd, &sb) == 0 ? (uint64_t)sb.st_size / sizeof *w->buf : 0;
    w->every = ops / MK_REPLAY_POINTS + 1;
    w->calls_left = w->every;
    atomic_fetch_add(&w->c->ready, 1);
    while (!atomic_load_explicit(&w->c->go, memory_order_acquire))
        sched_yield();
    if (fd < 0) { /* a thread with no calls */
        atomic_store_explicit(&w->window, UINT32_MAX, memory_order_release);
        bump_progress(w->c);
        return NULL;
    }
    for (;;) {
        ssize_t n = read(fd, w->buf, BATCH * sizeof *w->buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 || n % (ssize_t)sizeof *w->buf) {
            snprintf(w->why, sizeof w->why, "cannot read %s: %s", path,
                     n < 0 ? strerror(errno) : "a cut operation");
            break;
        }
        if (n == 0)
            break;
        for (size_t i = 0; i < (size_t)n / sizeof *w->buf; i++) {
            const mk_replay_op *op = &w->buf[i];
            if (op->slot >= w->c->nslots || op->site >= w->c->nsites) {
                snprintf(w->why, sizeof w->why, "an operation out of range in %s", path);
                goto out;
            }
            if (op->kind == MK_ROP_SIZE_HI) {
                hi = (uint64_t)op->arg << 32;
                continue;
            }
            if (op->kind == MK_ROP_WAIT) {
                wait_for(&w->c->slots[op->slot], op->arg);
                continue;
            }
            if (op->kind == MK_ROP_TIME) {
                enter_window(w, op->arg);
                continue;
            }
            if (!perform(w, op, hi | op->arg))
                goto out;
            hi = 0;
            if (--w->calls_left == 0)
                take_point(w);
        }
    }
out:
    close(fd);
    atomic_store_explicit(&w->window, UINT32_MAX, memory_order_release);
    bump_progress(w->c);
    return NULL;
}

/* What the /proc file path holds (its first len - 1 bytes) into buf, read
 * without stdio: no allocator call of ours lands in the heap measured,
 * mid-replay included. False when it cannot be read. */
static bool read_proc(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, len - 1) : -1;

    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return false;
    buf[n] = 0;
    return true;
}

/* The RSS as the kernel's counters have it (statm: cheap, a batch of pages
 * per CPU behind). */
static uint64_t rss_bytes(void)
{
    char buf[128];
    unsigned long long pages, resident;

    if (!read_proc("/proc/self/statm", buf, sizeof buf) ||
        sscanf(buf, "%llu %llu", &pages, &resident) != 2)
        return 0;
    return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* The RSS counted page by page (smaps_rollup walks the page tables), where
 * statm's counters lag by up to a batch of pages per CPU: a small heap's
 * end state would read a few hundred KB off. statm's when the kernel has
 * no smaps_rollup. */
static uint64_t exact_rss_bytes(void)
{
    char buf[4096];
    unsigned long long kb;
    const char *at = read_proc("/proc/self/smaps_rollup", buf, sizeof buf)
                         ? strstr(buf, "\nRss:")
                         : NULL;

    return at && sscanf(at + 5, "%llu", &kb) == 1 ? (uint64_t)kb * 1024 : rss_bytes();
}

/* The peak RSS since reset_peak (VmHWM), 0 when unknown. */
static uint64_t peak_rss_bytes(void)
{
    char line[256];
    unsigned long long kb = 0;
    FILE *f = fopen("/proc/self/status", "r");

    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %llu kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return (uint64_t)kb * 1024;
}

/* Resets the peak RSS to the current RSS (Linux: clear_refs 5), so that the
 * peak measured is the replay's, not start-up's. */
static bool reset_peak(void)
{
    int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
    bool ok = fd >= 0 && write(fd, "5", 1) == 1;

    if (fd >= 0)
        close(fd);
    return ok;
}

static bool write_all(int fd, const void *p, size_t n)
{
    const char *c = p;

    while (n) {
        ssize_t k = write(fd, c, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return false;
        c += k;
        n -= (size_t)k;
    }
    return true;
}

static int by_time(const void *x, const void *y)
{
    const mk_replay_point *a = x, *b = y;
    return (a->t_ns > b->t_ns) - (a->t_ns < b->t_ns);
}

void mk_replay_point_add(mk_replay_point *pts, uint32_t *n, mk_replay_point p)
{
    if (*n == MK_REPLAY_POINTS) {
        for (uint32_t k = 0; k < MK_REPLAY_POINTS / 2; k++)
            pts[k] = pts[2 * k + 1];
        *n = MK_REPLAY_POINTS / 2;
    }
    pts[(*n)++] = p;
}

/* Every thread's points into the result's, in time order. */
static void merge_points(mk_replay_result *res, const worker_t *w, int nthreads)
{
    static mk_replay_point all[64 * MK_REPLAY_POINTS]; /* 64 threads at most */
    size_t n = 0;

    for (int i = 0; i < nthreads; i++)
        for (uint32_t k = 0; k < w[i].npoints; k++)
            all[n++] = w[i].points[k];
    qsort(all, n, sizeof *all, by_time);
    for (size_t i = 0; i < n; i++)
        mk_replay_point_add(res->points, &res->npoints, all[i]);
}

int mk_replay_child(int argc, char **argv)
{
    child_t c = {0};
    mk_replay_result res = {0};
    struct rusage ru0, ru1;

    if (argc != 6 && argc != 7)
        return mk_usage_error(
            "replay --child: DIR NTHREADS NSLOTS NSITES [FIXES] expected");
    c.dir = argv[2];
    c.nthreads = atoi(argv[3]);
    c.nslots = (uint32_t)strtoul(argv[4], NULL, 10);
    c.nsites = (uint32_t)strtoul(argv[5], NULL, 10);
    if (c.nthreads < 1 || c.nthreads > 64 || c.nsites == 0)
        return mk_usage_error("replay --child: bad arguments");
    worker_t *w = map_zeroed(sizeof *w * (size_t)c.nthreads);
    c.w = w;
    c.slots = map_zeroed(sizeof *c.slots * (c.nslots ? c.nslots : 1));
    if (!w || !c.slots)
        return mk_usage_error("replay --child: out of memory");
    char why[4400];
    if (argc == 7 &&
        !(c.fix = mk_rfix_load(argv[6], c.nsites, c.nslots, why, sizeof why)))
        return mk_usage_error("replay --child: %s", why);
    for (int i = 0; i < c.nthreads; i++) {
        w[i].c = &c;
        w[i].index = i;
        w[i].buf = map_zeroed(BATCH * sizeof *w[i].buf);
        w[i].site_ticks = map_zeroed(sizeof *w[i].site_ticks * c.nsites);
        if (!w[i].buf || !w[i].site_ticks)
            return mk_usage_error("replay --child: out of memory");
    }
    res.ns_per_tick = mk_bench_ns_per_tick();
    c.empty = mk_tsc_empty(); /* as the tracer takes it off (tsc.h) */
    for (int i = 0; i < c.nthreads && c.fix; i++)
        if (!(w[i].fix = mk_rfix_thread_new(c.fix, i, c.empty)))
            return mk_usage_error("replay --child: out of memory");
    /* The first replayed thread is the trace's first, its main thread
     * as a rule: it runs on this one, so its calls reach glibc's main arena
     * (brk, trimmed at its top), as the program's did, not a thread's
     * mmapped arena. */
    for (int i = 1; i < c.nthreads; i++)
        if (pthread_create(&w[i].tid, NULL, work, &w[i]) != 0)
            return mk_usage_error("replay --child: cannot start a thread");
    while (atomic_load(&c.ready) < c.nthreads - 1)
        sched_yield();
    bool peak_reset = reset_peak();
    res.base_rss_bytes = rss_bytes();
    uint64_t base_exact = exact_rss_bytes();
    getrusage(RUSAGE_SELF, &ru0);
    uint64_t t0 = mk_bench_now_ns();
    c.t0_ns = t0;
    atomic_store_explicit(&c.go, 1, memory_order_release);
    work(&w[0]);
    for (int i = 1; i < c.nthreads; i++)
        pthread_join(w[i].tid, NULL);
    res.wall_ns = mk_bench_now_ns() - t0;
    res.end_rss_bytes = exact_rss_bytes() - base_exact + res.base_rss_bytes;
    getrusage(RUSAGE_SELF, &ru1);
    res.peak_rss_bytes = peak_reset ? peak_rss_bytes() : 0;
    if (!res.peak_rss_bytes) /* no /proc: the life's peak, start-up's included */
        res.peak_rss_bytes = (uint64_t)ru1.ru_maxrss * 1024;
    res.minor_faults = (uint64_t)(ru1.ru_minflt - ru0.ru_minflt);
    for (int i = 0; i < c.nthreads; i++) {
        if (w[i].why[0]) {
            fprintf(stderr, "%s\n", w[i].why);
            return MK_EXIT_FAIL;
        }
        res.calls += w[i].calls;
        res.alloc_ticks += w[i].ticks;
        res.fix_calls += w[i].fix ? mk_rfix_removed(w[i].fix) : 0;
        res.fix_ticks += w[i].fix_ticks;
        mk_bench_hist_merge(&res.hist, &w[i].hist);
        if (i > 0)
            for (uint32_t s = 0; s < c.nsites; s++)
                w[0].site_ticks[s] += w[i].site_ticks[s];
    }
    merge_points(&res, w, c.nthreads);
    if (!write_all(STDOUT_FILENO, &res, sizeof res) ||
        !write_all(STDOUT_FILENO, w[0].site_ticks, sizeof *w[0].site_ticks * c.nsites))
        return MK_EXIT_FAIL;
#if defined(__SANITIZE_ADDRESS__)
    /* The leak checker scans no mapping of ours: the blocks the slots hold
     * would read as leaks */
    for (uint32_t i = 0; i < c.nslots; i++)
        if (mk_rfix_heap_block(c.fix, i))
            free(c.slots[i].p);
    for (int i = 0; i < c.nthreads; i++)
        mk_rfix_thread_release(w[i].fix);
#endif
    return MK_EXIT_OK; /* the blocks still live stay so, as at a program's exit */
}

/* ------------------------------------------------------------------------ */
/* the parent side                                                           */

static bool read_all(int fd, void *p, size_t n)
{
    char *c = p;

    while (n) {
        ssize_t k = read(fd, c, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return false;
        c += k;
        n -= (size_t)k;
    }
    return true;
}

bool mk_replay_run(const mk_replay_prog *prog, char *const *env, const char *fixes,
                   mk_replay_result *res, uint64_t *site_ticks, char *why, size_t whylen)
{
    char nthreads[16], nslots[16], nsites[16];
    int out[2], err = memfd_create("memkit-replay-err", MFD_CLOEXEC), status;
    uint64_t *ticks = calloc(prog->nsites ? prog->nsites : 1, sizeof *ticks);
    bool ok = false;

    why[0] = 0;
    if (err < 0 || !ticks || pipe2(out, O_CLOEXEC) != 0) {
        snprintf(why, whylen, "cannot start the replay: %s", strerror(errno));
        if (err >= 0)
            close(err);
        free(ticks);
        return false;
    }
    snprintf(nthreads, sizeof nthreads, "%d", prog->nthreads);
    snprintf(nslots, sizeof nslots, "%u", prog->nslots);
    snprintf(nsites, sizeof nsites, "%u", prog->nsites);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        char *args[] = {"memkit", "replay", "--child", (char *)prog->dir,
                        nthreads, nslots,   nsites,    (char *)fixes,
                        NULL};
        dup2(out[1], STDOUT_FILENO);
        dup2(err, STDERR_FILENO);
        unsetenv("LD_PRELOAD");
        unsetenv("GLIBC_TUNABLES");
        for (size_t i = 0; env && env[i]; i++)
            putenv(env[i]);
        execv("/proc/self/exe", args);
        _exit(127);
    }
    close(out[1]);
    if (pid > 0)
        ok = read_all(out[0], res, sizeof *res) &&
             read_all(out[0], ticks, sizeof *ticks * prog->nsites);
    close(out[0]);
    if (pid < 0) {
        snprintf(why, whylen, "cannot start the replay: %s", strerror(errno));
        ok = false;
    } else {
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            ok = false;
            mk_last_line(err, why, whylen);
            if (!why[0] && WIFSIGNALED(status))
                snprintf(why, whylen, "the replay was killed by signal %d (%s)",
                         WTERMSIG(status), strsignal(WTERMSIG(status)));
            else if (!why[0])
                snprintf(why, whylen, "the replay exited with status %d",
                         WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        }
    }
    close(err);
    if (ok && site_ticks)
        for (uint32_t s = 0; s < prog->nsites; s++)
            site_ticks[s] += ticks[s];
    free(ticks);
    return ok;
}
