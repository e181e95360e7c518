/*
 * countalloc.c - a counting preload written apart from memkit, for the
 * independent count (tests/trace/countcheck.sh): every allocating call of
 * the malloc family and every free of a non-NULL pointer that reaches it,
 * counted with atomics, printed at exit to COUNTALLOC_OUT (or stderr).
 * C++'s operator new and strdup reach it as the one malloc each makes.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static atomic_ulong allocs, frees;

/* dlsym allocates: what it asks for before the real calloc is known comes
 * from a static buffer and is never freed. */
static _Thread_local int resolving;
static char boot[4096];
static size_t boot_used;

static void *boot_alloc(size_t n)
{
    void *p = boot + boot_used;
    boot_used += (n + 15) & ~(size_t)15;
    return boot_used <= sizeof boot ? p : NULL;
}

#define RESOLVE(type, var, name)                                                         \
    do {                                                                                 \
        if (!var) {                                                                      \
            resolving = 1;                                                               \
            var = (type)dlsym(RTLD_NEXT, name);                                          \
            resolving = 0;                                                               \
        }                                                                                \
    } while (0)

void *malloc(size_t n)
{
    static void *(*next)(size_t);
    if (!next && resolving)
        return boot_alloc(n);
    RESOLVE(void *(*)(size_t), next, "malloc");
    atomic_fetch_add(&allocs, 1);
    return next(n);
}

void *calloc(size_t a, size_t b)
{
    static void *(*next)(size_t, size_t);
    if (!next && resolving)
        return boot_alloc(a * b); /* zeroed: static */
    RESOLVE(void *(*)(size_t, size_t), next, "calloc");
    atomic_fetch_add(&allocs, 1);
    return next(a, b);
}

void *realloc(void *p, size_t n)
{
    static void *(*next)(void *, size_t);
    RESOLVE(void *(*)(void *, size_t), next, "realloc");
    atomic_fetch_add(&allocs, 1);
    return next(p, n);
}

void free(void *p)
{
    static void (*next)(void *);
    if ((char *)p >= boot && (char *)p < boot + sizeof boot)
        return;
    RESOLVE(void (*)(void *), next, "free");
    if (p)
        atomic_fetch_add(&frees, 1);
    next(p);
}

int posix_memalign(void **r, size_t a, size_t n)
{
    static int (*next)(void **, size_t, size_t);
    RESOLVE(int (*)(void **, size_t, size_t), next, "posix_memalign");
    atomic_fetch_add(&allocs, 1);
    return next(r, a, n);
}

void *aligned_alloc(size_t a, size_t n)
{
    static void *(*next)(size_t, size_t);
    RESOLVE(void *(*)(size_t, size_t), next, "aligned_alloc");
    atomic_fetch_add(&allocs, 1);
    return next(a, n);
}

void *memalign(size_t a, size_t n)
{
    static void *(*next)(size_t, size_t);
    RESOLVE(void *(*)(size_t, size_t), next, "memalign");
    atomic_fetch_add(&allocs, 1);
    return next(a, n);
}

__attribute__((destructor)) static void report(void)
{
    char b[128];
    int k = snprintf(b, sizeof b, "countalloc: %lu allocation calls, %lu frees\n",
                     (unsigned long)allocs, (unsigned long)frees);
    const char *to = getenv("COUNTALLOC_OUT"); /* programs may close stderr first */
    int fd = to ? open(to, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : 2;
    if (fd >= 0 && write(fd, b, (size_t)k) < 0)
        fd = -1;
    if (to && fd >= 0)
        close(fd);
}
