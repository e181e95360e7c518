/*
 * floor.c - the floor of sampled tracing: a preload that forwards malloc,
 * calloc, realloc and free to the next definition (glibc's) and takes each
 * allocation's size off a thread-local byte budget, and does nothing else.
 * What memkit trace --sample costs above this is memkit's; this much every
 * interposing sampler pays (bench/sample/run.sh shows it beside memkit).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

static void *(*next_malloc)(size_t);
static void *(*next_calloc)(size_t, size_t);
static void *(*next_realloc)(void *, size_t);
static void (*next_free)(void *);

static __thread int64_t budget = 512 << 10;
static __thread uint64_t crossed; /* kept: the compiler must not drop the budget */

/* dlsym's own calloc, before next_calloc is known: a little static memory. */
static _Alignas(16) char early[4096];
static size_t early_used;

__attribute__((constructor)) static void resolve(void)
{
    next_malloc = dlsym(RTLD_NEXT, "malloc");
    next_calloc = dlsym(RTLD_NEXT, "calloc");
    next_realloc = dlsym(RTLD_NEXT, "realloc");
    next_free = dlsym(RTLD_NEXT, "free");
}

static inline void spend(size_t n)
{
    budget -= (int64_t)n;
    if (__builtin_expect(budget < 0, 0)) {
        budget += 512 << 10;
        crossed++;
    }
}

__attribute__((visibility("default"))) void *malloc(size_t n)
{
    if (__builtin_expect(!next_malloc, 0))
        resolve();
    spend(n);
    return next_malloc(n);
}

__attribute__((visibility("default"))) void *calloc(size_t n, size_t size)
{
    if (__builtin_expect(!next_calloc, 0)) {
        size_t want = (n * size + 15) & ~(size_t)15;
        if (early_used + want > sizeof early)
            return NULL;
        void *p = early + early_used;
        early_used += want;
        return p; /* static memory: zero */
    }
    spend(n * size);
    return next_calloc(n, size);
}

__attribute__((visibility("default"))) void *realloc(void *p, size_t n)
{
    if (__builtin_expect(!next_realloc, 0))
        resolve();
    spend(n);
    return next_realloc(p, n);
}

__attribute__((visibility("default"))) void free(void *p)
{
    if ((char *)p >= early && (char *)p < early + sizeof early)
        return;
    if (__builtin_expect(!next_free, 0))
        resolve();
    next_free(p);
}
