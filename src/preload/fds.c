/*
 * fds.c - the tracer's own file descriptors, kept out of the program's way.
 *
 * A traced program must see the descriptors it would see untraced. The
 * tracer holds a few: the trace file, and the pipe libunwind opens to check
 * that memory is readable before it follows a frame chain. Left where open()
 * put them (3, 4, 5...), they shift every number the program's own open()
 * returns, and a program that closes every descriptor (daemons, shells
 * before exec) closes them, then gets their numbers for its own files.
 * Left there, libunwind, finding its pipe broken, closes the program's file
 * to make a new pipe, and the trace's next record goes into the program's
 * file.
 *
 * So the tracer's descriptors are "private":
 *   - they move above the numbers programs use (F_DUPFD from mk_fd_base,
 *     16 below the soft RLIMIT_NOFILE or 1024, whichever is lower);
 *   - close() and close_range() called by the program leave them open and
 *     answer as if they were not there (close: EBADF, as the untraced run
 *     would get);
 *   - a pipe made inside memkit (libunwind's, made again when it finds the
 *     old one gone) is moved up and made private the same way.
 * What bypasses the hooks (closefrom, a raw close_range system call, dup2
 * onto a private number) is caught where it matters: the trace file is
 * checked by identity before every write (output.c) and reopened by path,
 * and libunwind's next check fails on its closed pipe and makes a new one.
 * A program listing /proc/self/fd with readdir (ls, Python's os.listdir,
 * shells) does not see them either: readdir skips a private number when
 * the directory read is this process's fd directory.
 * Left: a program that dup2()s onto libunwind's pipe (a number near the
 * descriptor limit) gives libunwind its file to read one byte from; one that
 * lists its descriptors with the raw getdents64 system call (Chromium's
 * crashpad) sees them, and gets EBADF closing them; and one that opens files
 * until EMFILE gets as many fewer as memkit holds (1 with --summary-only,
 * 3 with stacks: the trace and libunwind's pipe).
 */
#define _GNU_SOURCE
#include "fds.h"

#include "hook.h"
#include "thread.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define MK_FD_SLOTS 8 /* the trace file, libunwind's pipe, and a spare reopening */

typedef struct private_fd {
    atomic_int fd; /* -1: a free slot */
    dev_t dev;     /* what it was when made private: a number the program */
    ino_t ino;     /* reused behind our back is not ours to close */
} private_fd_t;

static private_fd_t private_fds[MK_FD_SLOTS] = {[0 ... MK_FD_SLOTS - 1] = {.fd = -1}};
static atomic_int private_count; /* slots in use: 0 lets close() skip the search */

static int (*next_close(void))(int)
{
    return NEXT(int (*)(int), "close");
}

/* The lowest number private descriptors take. */
static int fd_base(void)
{
    static atomic_int base;
    int b = atomic_load_explicit(&base, memory_order_relaxed);
    if (b)
        return b;
    struct rlimit rl;
    rlim_t limit = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? rl.rlim_cur : 1024;
    if (limit > 1024)
        limit = 1024; /* a huge limit: no need to grow the table that far */
    b = limit > 32 ? (int)limit - 16 : 3;
    atomic_store_explicit(&base, b, memory_order_relaxed);
    return b;
}

static private_fd_t *find_private(int fd)
{
    if (fd < 0 || !atomic_load_explicit(&private_count, memory_order_acquire))
        return NULL;
    for (int i = 0; i < MK_FD_SLOTS; i++)
        if (atomic_load_explicit(&private_fds[i].fd, memory_order_acquire) == fd)
            return &private_fds[i];
    return NULL;
}

/* Does fd still refer to the file it was when made private? */
static bool still_ours(const private_fd_t *p, int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 && st.st_dev == p->dev && st.st_ino == p->ino;
}

int mk_fd_make_private(int fd, bool cloexec)
{
    int saved_errno = errno;
    int high = fcntl(fd, cloexec ? F_DUPFD_CLOEXEC : F_DUPFD, fd_base());
    if (high >= 0) {
        next_close()(fd);
        fd = high;
    } /* else no room up there: it stays private where it is */
    struct stat st;
    for (int i = 0; i < MK_FD_SLOTS && fstat(fd, &st) == 0; i++) {
        int none = -1;
        private_fd_t *p = &private_fds[i];
        if (atomic_load_explicit(&p->fd, memory_order_relaxed) != -1)
            continue;
        p->dev = st.st_dev;
        p->ino = st.st_ino;
        if (atomic_compare_exchange_strong(&p->fd, &none, fd)) {
            atomic_fetch_add(&private_count, 1);
            break;
        }
    }
    errno = saved_errno;
    return fd;
}

/* Forgets a private number without closing it (it may be the program's now). */
static void forget(private_fd_t *p)
{
    atomic_store(&p->fd, -1);
    atomic_fetch_sub(&private_count, 1);
}

void mk_fd_forget(int fd)
{
    private_fd_t *p = find_private(fd);
    if (p)
        forget(p);
}

/* Closes a private number only if it still holds what we made private; it
 * is forgotten either way. */
static int close_private(private_fd_t *p, int fd)
{
    bool ours = still_ours(p, fd);
    forget(p);
    if (!ours) {
        errno = EBADF;
        return -1;
    }
    return next_close()(fd);
}

void mk_fd_close_private(int fd)
{
    private_fd_t *p = find_private(fd);
    if (p) {
        int saved_errno = errno;
        close_private(p, fd);
        errno = saved_errno;
    }
}

void mk_fd_close(int fd)
{
    private_fd_t *p = find_private(fd);
    int saved_errno = errno;
    if (p)
        close_private(p, fd);
    else
        mk_sys_close(fd);
    errno = saved_errno;
}

/* ---- the hooks ---- */

MK_EXPORT int close(int fd)
{
    private_fd_t *p = find_private(fd);
    if (MK_LIKELY(p == NULL))
        return next_close()(fd);
    if (!mk_nested()) {
        errno = EBADF; /* the program never opened it */
        return -1;
    }
    return close_private(p, fd); /* memkit's own: libunwind dropping its pipe */
}

/* close_range over the parts of [first, last] that hold no private number. */
MK_EXPORT int close_range(unsigned first, unsigned last, int flags)
{
    typedef int (*close_range_fn)(unsigned, unsigned, int);
    close_range_fn next = NEXT(close_range_fn, "close_range");
    if (!next) {
        errno = ENOSYS;
        return -1;
    }
    if (mk_nested() || !atomic_load_explicit(&private_count, memory_order_acquire))
        return next(first, last, flags);
    for (unsigned from = first;;) {
        unsigned hole = last; /* the lowest private number in [from, last] */
        bool found = false;
        for (int i = 0; i < MK_FD_SLOTS; i++) {
            int fd = atomic_load_explicit(&private_fds[i].fd, memory_order_acquire);
            if (fd >= 0 && (unsigned)fd >= from && (unsigned)fd <= hole) {
                hole = (unsigned)fd;
                found = true;
            }
        }
        if (!found)
            return next(from, last, flags);
        if (hole > from && next(from, hole - 1, flags) != 0)
            return -1;
        if (hole == last)
            return 0;
        from = hole + 1;
    }
}

static int pipe_made(int rc, int fds[2], int flags)
{
    if (rc == 0 && mk_nested()) { /* made inside memkit: libunwind's */
        bool cloexec = (flags & O_CLOEXEC) != 0;
        fds[0] = mk_fd_make_private(fds[0], cloexec);
        fds[1] = mk_fd_make_private(fds[1], cloexec);
    }
    return rc;
}

MK_EXPORT int pipe2(int fds[2], int flags)
{
    typedef int (*pipe2_fn)(int[2], int);
    return pipe_made(NEXT(pipe2_fn, "pipe2")(fds, flags), fds, flags);
}

MK_EXPORT int pipe(int fds[2])
{
    typedef int (*pipe_fn)(int[2]);
    return pipe_made(NEXT(pipe_fn, "pipe")(fds), fds, 0);
}

/* ---- listings of /proc/self/fd ---- */

/* Is the entry `name` of directory d one of our numbers in this process's
 * own fd directory? The cheap test (a private number) comes first: the
 * directory is looked at only for the few names that pass it. */
static bool hidden_entry(DIR *d, const char *name)
{
    if (!atomic_load_explicit(&private_count, memory_order_acquire))
        return false;
    char *end;
    long fd = strtol(name, &end, 10);
    if (*end || end == name || fd < 0 || fd > INT32_MAX || !find_private((int)fd))
        return false;
    char link[64], target[128], self[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd(d));
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n <= 0)
        return false;
    target[n] = 0;
    int len = snprintf(self, sizeof self, "/proc/%d/", (int)getpid());
    /* /proc/PID/fd, or a thread's /proc/PID/task/TID/fd */
    return strncmp(target, self, (size_t)len) == 0 && n >= 3 &&
           strcmp(target + n - 3, "/fd") == 0;
}

MK_EXPORT struct dirent *readdir(DIR *d)
{
    typedef struct dirent *(*readdir_fn)(DIR *);
    readdir_fn next = NEXT(readdir_fn, "readdir");
    int saved_errno = errno;
    struct dirent *e;
    while ((e = next(d)) && MK_UNLIKELY(hidden_entry(d, e->d_name)))
        errno = saved_errno;
    return e;
}

MK_EXPORT struct dirent64 *readdir64(DIR *d)
{
    typedef struct dirent64 *(*readdir64_fn)(DIR *);
    readdir64_fn next = NEXT(readdir64_fn, "readdir64");
    int saved_errno = errno;
    struct dirent64 *e;
    while ((e = next(d)) && MK_UNLIKELY(hidden_entry(d, e->d_name)))
        errno = saved_errno;
    return e;
}
