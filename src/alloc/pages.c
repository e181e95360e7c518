/*
 * pages.c - mapping memory from the OS for the allocators' chunks and slabs, marking
 * it usable or off limits for ASan and Valgrind, and the small process-wide facts
 * (page size, bypass switch) they share.
 */
#include "internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

const char *mk_version(void)
{
    return MK_VERSION_STRING;
}

void mk__die(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(msg, sizeof msg - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if ((size_t)n > sizeof msg - 2)
        n = sizeof msg - 2;
    msg[n] = '\n';
    /* write(2), not stdio: we may be dying inside an allocator or a signal path. */
    if (write(STDERR_FILENO, "memkit: ", 8) < 0 || write(STDERR_FILENO, msg, n + 1) < 0) {
        /* nothing left to report with */
    }
    abort();
}

size_t mk__page_size(void)
{
    /* Threads racing the first call compute the same value; relaxed atomics
     * make the race defined, and cost a plain load. */
    static _Atomic size_t page;
    size_t p = atomic_load_explicit(&page, memory_order_relaxed);

    if (!p) {
        p = (size_t)sysconf(_SC_PAGESIZE);
        atomic_store_explicit(&page, p, memory_order_relaxed);
    }
    return p;
}

bool mk__bypass_enabled(void)
{
    static _Atomic int state = -1; /* -1 unread; racing first reads agree */
    int s = atomic_load_explicit(&state, memory_order_relaxed);

    if (s < 0) {
        const char *v = getenv("MEMKIT_BYPASS");
        s = v && *v && strcmp(v, "0") != 0;
        atomic_store_explicit(&state, s, memory_order_relaxed);
    }
    return s;
}

void *mk__pages_map(size_t size, size_t align)
{
    size_t page = mk__page_size();
    size_t extra;
    char *raw, *p;

    if (size >= MK_HUGE_PAGE && align < MK_HUGE_PAGE)
        align = MK_HUGE_PAGE;
    if (align <= page) {
        p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        return p == MAP_FAILED ? NULL : p;
    }
    /* Over-map by the alignment, then unmap the misaligned head and the tail. */
    extra = align - page;
    if (size > SIZE_MAX - extra) {
        errno = ENOMEM;
        return NULL;
    }
    raw = mmap(NULL, size + extra, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
               -1, 0);
    if (raw == MAP_FAILED)
        return NULL;
    p = (char *)mk__align_up((uintptr_t)raw, align);
    if (p > raw)
        munmap(raw, (size_t)(p - raw));
    if (raw + size + extra > p + size)
        munmap(p + size, (size_t)(raw + size + extra - (p + size)));
    return p;
}

void mk__pages_unmap(void *p, size_t size)
{
    if (p)
        munmap(p, size);
}

void mk__set_access(void *p, size_t n, bool usable, bool valgrind)
{
    if (usable) {
        MK_UNPOISON(p, n);
        if (valgrind)
            VALGRIND_MAKE_MEM_UNDEFINED(p, n);
    } else {
        MK_POISON(p, n);
        if (valgrind)
            VALGRIND_MAKE_MEM_NOACCESS(p, n);
    }
}
