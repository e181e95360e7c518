/*
 * glibc_heap.c - the tracer's two dealings with glibc's malloc itself:
 * applying MEMKIT_MALLOPT settings at start-up (memkit trace --mallopt), and
 * reading glibc's own view of its heap at the end (mallinfo2, and the RSS of
 * the [heap] mapping from /proc/self/smaps), so a report can show memory that
 * glibc holds but the program does not use.
 */
#define _GNU_SOURCE
#include "glibc_heap.h"

#include "../trace/mallopt.h"

#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Start-up messages are few and each matters, so this is not mk_warn_once
 * (which keeps its one message for a tracing failure). */
static void say(const char *msg)
{
    mk_stderr_write(msg, strlen(msg));
}

void mk_glibc_apply_mallopt(void)
{
    const char *spec = getenv("MEMKIT_MALLOPT");
    mk_mallopt set[MK_MALLOPT_MAX];
    char err[256], msg[400];
    int n;

    if (!spec || !*spec)
        return;
    if ((n = mk_mallopt_parse(spec, set, err, sizeof err)) < 0) {
        snprintf(msg, sizeof msg, "memkit: MEMKIT_MALLOPT: %s; no setting applied\n",
                 err);
        say(msg);
        return;
    }
    for (int i = 0; i < n; i++)
        if (mallopt(set[i].param, set[i].value) != 1) {
            snprintf(msg, sizeof msg,
                     "memkit: mallopt(%s, %d) was refused by the C library\n",
                     set[i].name, set[i].value);
            say(msg);
        }
}

/* The Rss of the [heap] mapping, in bytes: smaps is read a buffer at a time
 * with no allocation (we are inside the program's exit). */
static uint64_t heap_rss(void)
{
    char buf[8192];
    size_t have = 0;
    bool in_heap = false;
    uint64_t kb = 0;
    int fd = open("/proc/self/smaps", O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return 0;
    for (;;) {
        ssize_t got = read(fd, buf + have, sizeof buf - 1 - have);
        if (got <= 0)
            break;
        have += (size_t)got;
        buf[have] = 0;
        char *line = buf, *nl;
        while ((nl = strchr(line, '\n'))) {
            *nl = 0;
            size_t len = (size_t)(nl - line);
            if (len >= 6 && strcmp(nl - 6, "[heap]") == 0)
                in_heap = true;
            else if (in_heap && strncmp(line, "Rss:", 4) == 0) {
                kb = strtoull(line + 4, NULL, 10);
                mk_sys_close(fd);
                return kb * 1024;
            }
            line = nl + 1;
        }
        /* keep the unfinished line; a line longer than the buffer is dropped */
        have = (size_t)(buf + have - line);
        if (have == sizeof buf - 1)
            have = 0;
        memmove(buf, line, have);
    }
    mk_sys_close(fd);
    return 0;
}

void mk_glibc_heap_view(uint64_t v[MK_HEAP_VIEW_FIELDS])
{
    struct mallinfo2 mi = mallinfo2();

    v[0] = mi.arena;    /* bytes of heap glibc took from the system (brk and arenas) */
    v[1] = mi.uordblks; /* of which in use */
    v[2] = mi.fordblks; /* of which free */
    v[3] = mi.hblkhd;   /* bytes in blocks mmapped one by one */
    v[4] = heap_rss();
}
