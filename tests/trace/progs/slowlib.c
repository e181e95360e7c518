/*
 * slowlib.c - an allocator that blocks: preloaded after memkit's tracer,
 * its malloc is the one the tracer's hooks call, and for a block of 64 KiB
 * or more it sleeps 2 ms before glibc's malloc serves it. The thread is off
 * the CPU for those 2 ms: none of it is the allocator's CPU time, which the
 * tracer must not count (tests/trace/run.sh, switched).
 */
#include <stddef.h>
#include <time.h>

void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t n);
void __libc_free(void *p);

#define SLEEPY (64u << 10)

void *malloc(size_t n)
{
    if (n >= SLEEPY) {
        struct timespec nap = {0, 2000000};
        nanosleep(&nap, NULL);
    }
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    return __libc_realloc(p, n);
}

void free(void *p)
{
    __libc_free(p);
}
