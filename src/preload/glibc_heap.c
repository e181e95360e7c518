/*
 * glibc_heap.c - the tracer's two dealings with glibc's malloc itself:
 * applying MEMKIT_MALLOPT settings at start-up (memkit trace --mallopt), and
 * reading glibc's own view of its heap at the end (mallinfo2, and the RSS of
 * the [heap] mapping), so a report can show memory that
 * glibc holds but the program does not use.
 */
#define _GNU_SOURCE
#include "glibc_heap.h"

#include "../trace/mallopt.h"

#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
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

/* Where the [heap] mapping starts: the 47th field of /proc/self/stat
 * (start_brk, Linux 3.3 on), 0 if unknown. Fields are counted from the last
 * ')': the command name before it may hold spaces and parentheses. */
static uintptr_t heap_start(void)
{
    char buf[1024];
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t got = read(fd, buf, sizeof buf - 1);
    mk_sys_close(fd);
    if (got <= 0)
        return 0;
    buf[got] = 0;
    char *p = strrchr(buf, ')');
    if (!p)
        return 0;
    for (int field = 2; field < 47; field++) { /* ')' ends field 2 */
        p = strchr(p + 1, ' ');
        if (!p)
            return 0;
    }
    return (uintptr_t)strtoull(p + 1, NULL, 10);
}

/* The Rss of the [heap] mapping, in bytes: its pages that mincore finds
 * resident, from start_brk to the break. (Reading /proc/self/smaps walks
 * every mapping's page tables: a millisecond of every short process.) No
 * allocation: we are inside the program's exit. */
static uint64_t heap_rss(void)
{
    long page = sysconf(_SC_PAGESIZE);
    /* the break from the kernel: our own sbrk is an interposer (--syscalls) */
    uintptr_t start = heap_start(), end = (uintptr_t)mk_syscall(SYS_brk, 0);
    uint64_t pages = 0;
    unsigned char vec[4096];

    if (!start || page <= 0 || end == (uintptr_t)-1 || end <= start)
        return 0;
    start &= ~(uintptr_t)(page - 1);
    end = (end + (uintptr_t)page - 1) & ~(uintptr_t)(page - 1);
    for (uintptr_t at = start; at < end;) {
        size_t n = (end - at) / (uintptr_t)page;
        if (n > sizeof vec)
            n = sizeof vec;
        if (mincore((void *)at, n * (size_t)page, vec) != 0)
            return 0; /* not mapped after all: no answer rather than a wrong one */
        for (size_t i = 0; i < n; i++)
            pages += vec[i] & 1;
        at += n * (uintptr_t)page;
    }
    return pages * (uint64_t)page;
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
