/*
 * snapshot.c - memkit trace --snapshot PID[,PID...]: asks processes traced
 * with --sample to mark their live heap now.
 *
 * The request is the process's snapshot signal (memkit trace put its number
 * in the environment, where the tracer reads it) sent with sigqueue and
 * MK_SNAPSHOT_SIGVAL. kill cannot send that value, so the tracer tells a
 * request from the same signal sent to the program, which keeps its own
 * meaning (by default: the process ends). A process the request is not for
 * would die of it, so it goes only to one whose memory holds the tracer.
 */
#define _GNU_SOURCE
#include "cli.h"

#include "../trace/format.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIGNAL_VAR "MEMKIT_TRACE_SNAPSHOT_SIGNAL="

/* The snapshot signal of process pid, from its environment: 0 when it has
 * none (not sampled, or --snapshot-signal none), -1 (errno set) when the
 * environment cannot be read. */
static int snapshot_signal_of(pid_t pid)
{
    char path[64], buf[1 << 16];
    snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    int err = ferror(f) ? errno : 0;
    fclose(f);
    if (err) {
        errno = err;
        return -1;
    }
    buf[n] = '\0';
    for (size_t at = 0; at < n; at += strlen(buf + at) + 1)
        if (strncmp(buf + at, SIGNAL_VAR, sizeof SIGNAL_VAR - 1) == 0)
            return atoi(buf + at + sizeof SIGNAL_VAR - 1);
    return 0;
}

/* Whether pid has the tracer loaded (its maps name the preload library). */
static bool traced(pid_t pid)
{
    char path[64], line[4096];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "re");
    bool found = false;
    if (!f)
        return false;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, "/libmemkit-preload.so") != NULL;
    fclose(f);
    return found;
}

static int ask_one(pid_t pid)
{
    if (kill(pid, 0) != 0 && errno == ESRCH)
        return mk_usage_error("trace: --snapshot: there is no process %d", (int)pid);
    int sig = snapshot_signal_of(pid);
    if (sig < 0)
        return mk_usage_error("trace: --snapshot: cannot read process %d's environment "
                              "(%s)",
                              (int)pid, strerror(errno));
    if (sig == 0 || !traced(pid))
        return mk_usage_error(
            "trace: --snapshot: process %d is not traced with --sample and a snapshot "
            "signal (memkit trace --sample BYTES -- CMD); nothing was sent",
            (int)pid);
    if (sigqueue(pid, sig, (union sigval){.sival_int = MK_SNAPSHOT_SIGVAL}) != 0)
        return mk_usage_error("trace: --snapshot: cannot signal process %d: %s", (int)pid,
                              strerror(errno));
    return MK_EXIT_OK;
}

int mk_trace_snapshot(const char *pids)
{
    const char *p = pids;
    int rc = MK_EXIT_OK;
    do {
        char *end;
        errno = 0;
        long pid = strtol(p, &end, 10);
        if (errno || end == p || pid <= 0 || pid > INT32_MAX || (*end && *end != ','))
            return mk_usage_error("trace: --snapshot wants process ids (PID[,PID...]), "
                                  "not '%s'",
                                  pids);
        if (ask_one((pid_t)pid) != MK_EXIT_OK)
            rc = MK_EXIT_USAGE; /* said; the others are still asked */
        p = *end ? end + 1 : end;
    } while (*p);
    return rc;
}
