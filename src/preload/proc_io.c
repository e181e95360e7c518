/*
 * proc_io.c - the program's own I/O bytes, for the END record ("one
 * allocation per N bytes transferred").
 *
 * /proc/self/io is the wrong count as it stands: it runs from the process's
 * start (the loader reading the tracer's libraries, the tracer reading /proc
 * files), and it takes in every child the process has waited for (the
 * kernel adds a reaped child's counts to its parent's), so a traced shell
 * would be charged with its children's I/O and their trace files. So the
 * tracer counts thread by thread (/proc/self/task/TID/io is that thread's
 * alone) and from the moment tracing starts:
 *
 *   own I/O = (every live thread's counts + those of threads that ended)
 *             - every thread's counts at the start
 *             - what the tracer read itself since the start
 *
 * An ended thread's counts survive only in the process total, so a thread
 * with tracer state adds its own to `ended` as it ends (mk_io_thread_ended,
 * from its key destructor), and the end's scan skips threads whose state says
 * they ended (exited_tid) so that one caught between the two is not counted
 * twice. The tracer's trace writes are not subtracted here: the END record
 * carries them (trace_bytes) and readers take them off the written bytes.
 *
 * Not counted: threads that end without ever having allocated (no state, so
 * no destructor). A thread ending at the very moment the process ends may
 * be counted twice or not at all. Nothing here allocates: it runs inside
 * exit, _exit, exec and signal handlers. And nothing here is a cancellation
 * point (raw system calls, not open and read): a thread ending with a
 * cancellation pending must end as it would have (tests/trace cancel).
 */
#define _GNU_SOURCE
#include "proc_io.h"

#include "thread.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The counters' names in an io file, in mk_io_t's order. */
static const char *const io_names[MK_IO_FIELDS] = {
    "rchar: ", "wchar: ", "read_bytes: ", "write_bytes: "};

static mk_io_t at_start;                  /* every thread's counts then */
static atomic_ullong ended[MK_IO_FIELDS]; /* threads that ended since */
static atomic_ullong own_reads;           /* bytes the tracer read since */
static uint64_t trace_at_start;           /* mk_st.bytes_written then */
/* Whose counts are in already (mk_io_start's caller: threads.c's). */
static bool (*thread_ended)(pid_t tid);
static atomic_bool started; /* at_start holds this process's */

static int open_nocancel(const char *path, int flags)
{
    return (int)mk_syscall(SYS_openat, AT_FDCWD, path, flags | O_CLOEXEC);
}

/* Adds the counts in the io file at path to *sum; false if it cannot be
 * read. *cost gets the bytes this read itself took (they count on the
 * calling thread once the read returns, not in what it read). */
static bool add_io_file(const char *path, mk_io_t *sum, uint64_t *cost)
{
    char buf[512];
    int fd = open_nocancel(path, O_RDONLY);
    if (fd < 0)
        return false;
    ssize_t n = mk_syscall(SYS_read, fd, buf, sizeof buf - 1);
    mk_syscall(SYS_close, fd);
    if (n <= 0)
        return false;
    buf[n] = 0;
    *cost += (uint64_t)n;
    for (int i = 0; i < MK_IO_FIELDS; i++) {
        const char *p = strstr(buf, io_names[i]);
        if (p)
            sum->v[i] += strtoull(p + strlen(io_names[i]), NULL, 10);
    }
    return true;
}

/* The calling thread's counts into *sum. */
static bool add_own_thread(mk_io_t *sum, uint64_t *cost)
{
    return add_io_file("/proc/thread-self/io", sum, cost);
}

/* Every live thread's counts, the caller's first (the later reads count on
 * it, and belong in *cost, not in the sum), skipping threads whose state
 * says they ended (already in `ended`). False if /proc cannot be read. */
static bool add_all_threads(mk_io_t *sum, uint64_t *cost)
{
    pid_t self = (pid_t)mk_syscall(SYS_gettid);
    if (!add_own_thread(sum, cost))
        return false;
    /* A task directory links to itself, its parent and each thread: 3 says
     * the caller is the only thread (most processes at their start, many at
     * their end), and one stat saves opening and listing the directory. */
    struct stat st;
    if (mk_syscall(SYS_newfstatat, AT_FDCWD, "/proc/self/task", &st, 0) == 0 &&
        st.st_nlink == 3)
        return true;
    int dir = open_nocancel("/proc/self/task", O_RDONLY | O_DIRECTORY);
    if (dir < 0)
        return true;
    /* getdents64, not readdir: opendir allocates. */
    _Alignas(struct dirent64) char buf[4096];
    long n;
    while ((n = mk_syscall(SYS_getdents64, dir, buf, sizeof buf)) > 0) {
        for (long at = 0; at < n;) {
            struct dirent64 *d = (struct dirent64 *)(buf + at);
            at += d->d_reclen;
            char *end;
            long tid = strtol(d->d_name, &end, 10);
            if (*end || end == d->d_name || tid == self || thread_ended((pid_t)tid))
                continue;
            char path[64];
            snprintf(path, sizeof path, "/proc/self/task/%ld/io", tid);
            add_io_file(path, sum, cost); /* a thread gone meanwhile: nothing */
        }
    }
    mk_syscall(SYS_close, dir);
    return true;
}

void mk_io_start(bool (*is_ended)(pid_t tid))
{
    thread_ended = is_ended;
    uint64_t cost = 0;
    mk_io_t now = {{0}};

    for (int i = 0; i < MK_IO_FIELDS; i++)
        atomic_store(&ended[i], 0);
    bool ok = add_all_threads(&now, &cost);
    at_start = now;
    atomic_store(&own_reads, cost);
    trace_at_start = atomic_load(&mk_st.bytes_written);
    atomic_store(&started, ok);
}

void mk_io_thread_ended(void)
{
    uint64_t cost = 0;
    mk_io_t mine = {{0}};

    if (!atomic_load(&started) || !add_own_thread(&mine, &cost))
        return;
    for (int i = 0; i < MK_IO_FIELDS; i++)
        atomic_fetch_add(&ended[i], mine.v[i]);
}

uint64_t mk_io_mark(void)
{
    uint64_t cost = 0;
    mk_io_t mine = {{0}};
    return atomic_load(&started) && add_own_thread(&mine, &cost) ? mine.v[MK_IO_RCHAR]
                                                                 : MK_IO_NO_MARK;
}

void mk_io_own_since(uint64_t mark)
{
    uint64_t cost = 0;
    mk_io_t mine = {{0}};

    if (mark == MK_IO_NO_MARK || !add_own_thread(&mine, &cost) ||
        mine.v[MK_IO_RCHAR] < mark)
        return;
    /* Everything the thread read from the mark on was ours: the mark's own
     * read, what it bracketed, and this read (counted once it returns). */
    atomic_fetch_add(&own_reads, mine.v[MK_IO_RCHAR] - mark + cost);
}

static uint64_t less(uint64_t a, uint64_t b)
{
    return a > b ? a - b : 0;
}

bool mk_io_end(mk_io_t *out, uint64_t *trace_bytes)
{
    uint64_t cost = 0;
    mk_io_t now = {{0}};

    memset(out, 0, sizeof *out);
    *trace_bytes = less(atomic_load(&mk_st.bytes_written), trace_at_start);
    if (!atomic_load(&started) || !add_all_threads(&now, &cost))
        return false;
    for (int i = 0; i < MK_IO_FIELDS; i++)
        out->v[i] = less(now.v[i] + atomic_load(&ended[i]), at_start.v[i]);
    out->v[MK_IO_RCHAR] = less(out->v[MK_IO_RCHAR], atomic_load(&own_reads));
    return true;
}
