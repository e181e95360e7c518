/*
 * tune_run.c - one run of the user's command under one candidate of `memkit
 * tune`: started with posix_spawn (a vfork-style clone, so the tool's own cost
 * per run stays in microseconds), timed from just before the spawn to the
 * moment wait4 returns, with user/sys time, peak RSS and faults from wait4's
 * rusage (which covers the descendants it waited for too).
 *
 * The command's stdout goes to /dev/null, or to a memfd that is hashed after
 * the run when outputs are compared; its stderr goes to a memfd so a failed
 * run can be explained by its last line. Both are files, not pipes: the
 * command never blocks on us and we read nothing while it runs.
 */
#define _GNU_SOURCE
#include "tune.h"
#include "workload.h" /* mk_bench_now: the monotonic clock in seconds */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

bool mk_tune_runner_open(mk_tune_runner *r, const mk_tune_opts *o, char *err, size_t len)
{
    r->out_fd = o->check_output ? memfd_create("memkit-tune-stdout", MFD_CLOEXEC)
                                : open("/dev/null", O_WRONLY | O_CLOEXEC);
    r->err_fd = memfd_create("memkit-tune-stderr", MFD_CLOEXEC);
    if (r->out_fd < 0 || r->err_fd < 0) {
        snprintf(err, len, "cannot create the files for the command's output: %s",
                 strerror(errno));
        mk_tune_runner_close(r);
        return false;
    }
    return true;
}

void mk_tune_runner_close(mk_tune_runner *r)
{
    if (r->out_fd >= 0)
        close(r->out_fd);
    if (r->err_fd >= 0)
        close(r->err_fd);
    r->out_fd = r->err_fd = -1;
}

/* Empties a memfd for the next run; the child's descriptor shares its offset. */
static void rewind_file(int fd)
{
    if (ftruncate(fd, 0) == 0)
        lseek(fd, 0, SEEK_SET);
}

/* FNV-1a over what the command wrote to stdout. */
static void hash_output(int fd, mk_tune_outcome *res)
{
    uint64_t h = 0xcbf29ce484222325ull;
    off_t size = lseek(fd, 0, SEEK_END);

    res->out_len = size > 0 ? (uint64_t)size : 0;
    if (size > 0) {
        const unsigned char *p = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            res->out_hash = 0;
            return;
        }
        for (off_t i = 0; i < size; i++)
            h = (h ^ p[i]) * 0x100000001b3ull;
        munmap((void *)p, (size_t)size);
    }
    res->out_hash = h;
}

/* The last non-empty line the command wrote to stderr, for a failure message. */
static void last_stderr_line(int fd, char *buf, size_t len)
{
    char tail[512];
    off_t size = lseek(fd, 0, SEEK_END);
    off_t from = size > (off_t)sizeof tail - 1 ? size - (off_t)sizeof tail + 1 : 0;
    ssize_t n = size > 0 ? pread(fd, tail, (size_t)(size - from), from) : 0;

    buf[0] = 0;
    if (n <= 0)
        return;
    while (n > 0 && (tail[n - 1] == '\n' || tail[n - 1] == '\r'))
        n--;
    tail[n] = 0;
    const char *line = strrchr(tail, '\n');
    line = line ? line + 1 : tail;
    size_t n_line = strlen(line);
    if (n_line >= len)
        n_line = len - 1;
    memcpy(buf, line, n_line);
    buf[n_line] = 0;
}

/* Waits for pid, killing it when the time limit passes (SIGCHLD is blocked
 * in this thread, so sigtimedwait sleeps until the child changes state). */
static pid_t wait_child(pid_t pid, double timeout_s, int *status, struct rusage *ru,
                        bool *timed_out)
{
    pid_t got;

    *timed_out = false;
    if (timeout_s > 0) {
        double deadline = mk_bench_now() + timeout_s;
        sigset_t chld;

        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        while ((got = wait4(pid, status, WNOHANG, ru)) == 0) {
            double left = deadline - mk_bench_now();
            if (left <= 0) {
                kill(pid, SIGKILL);
                *timed_out = true;
                break;
            }
            struct timespec ts = {(time_t)left,
                                  (long)((left - (double)(time_t)left) * 1e9)};
            sigtimedwait(&chld, NULL, &ts);
        }
        if (got != 0)
            return got;
    }
    while ((got = wait4(pid, status, 0, ru)) < 0 && errno == EINTR)
        ;
    return got;
}

static void describe_failure(int status, bool timed_out, double timeout_s, int err_fd,
                             mk_tune_outcome *res)
{
    char line[160];
    int n;

    if (timed_out)
        n = snprintf(res->why, sizeof res->why, "ran longer than --timeout %g s",
                     timeout_s);
    else if (WIFSIGNALED(status))
        n = snprintf(res->why, sizeof res->why, "killed by signal %d (%s)",
                     WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        n = snprintf(res->why, sizeof res->why, "exit status %d", WEXITSTATUS(status));
    last_stderr_line(err_fd, line, sizeof line);
    if (line[0] && n > 0 && (size_t)n < sizeof res->why)
        snprintf(res->why + n, sizeof res->why - (size_t)n, ": %s", line);
}

bool mk_tune_run(mk_tune_runner *r, const mk_tune_candidate *c, const mk_tune_opts *o,
                 mk_tune_sample *s, mk_tune_outcome *res, char *err, size_t len)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t none, chld, old;
    struct rusage ru;
    int status = 0, in_fd, rc;
    bool timed_out;
    pid_t pid;

    memset(res, 0, sizeof *res);
    in_fd = open(o->input ? o->input : "/dev/null", O_RDONLY | O_CLOEXEC);
    if (in_fd < 0) {
        snprintf(err, len, "cannot open %s: %s", o->input ? o->input : "/dev/null",
                 strerror(errno));
        return false;
    }
    if (o->check_output)
        rewind_file(r->out_fd);
    rewind_file(r->err_fd);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in_fd, STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&fa, r->out_fd, STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa, r->err_fd, STDERR_FILENO);
    /* The child starts with no signal blocked, whatever we block to wait. */
    sigemptyset(&none);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    pthread_sigmask(SIG_BLOCK, &chld, &old);

    double t0 = mk_bench_now();
    rc = posix_spawnp(&pid, o->cmd[0], &fa, &attr, o->cmd, c->envp);
    if (rc == 0)
        pid = wait_child(pid, o->timeout_s, &status, &ru, &timed_out);
    s->wall_s = mk_bench_now() - t0;

    pthread_sigmask(SIG_SETMASK, &old, NULL);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    close(in_fd);
    if (rc != 0) {
        snprintf(err, len, "cannot run '%s': %s", o->cmd[0], strerror(rc));
        return false;
    }
    if (pid < 0) {
        snprintf(err, len, "cannot wait for '%s': %s", o->cmd[0], strerror(errno));
        return false;
    }
    s->user_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6;
    s->sys_s = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
    s->peak_rss_bytes = (uint64_t)ru.ru_maxrss * 1024;
    s->minor_faults = (uint64_t)ru.ru_minflt;
    s->major_faults = (uint64_t)ru.ru_majflt;
    res->ok = !timed_out && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!res->ok)
        describe_failure(status, timed_out, o->timeout_s, r->err_fd, res);
    else if (o->check_output)
        hash_output(r->out_fd, res);
    return true;
}
