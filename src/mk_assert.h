/*
 * mk_assert.h - MK_ASSERT, the internal invariants of every part of memkit:
 * the allocators, the trace format's tables, the tracer and the analysis.
 *
 * On where CMake sets MK_CHECK_INVARIANTS: Debug builds (make test-debug)
 * and the sanitizer and fuzz builds. Off in RelWithDebInfo and Release,
 * which keep C's assert() (cheap checks off the fast paths) but not these:
 * some sit on fast paths (TLSF's lists, the trace's live index). A broken invariant is a
 * bug of memkit's: one line on stderr, written without allocating (the tracer may be
 * inside malloc), then abort.
 */
#ifndef MEMKIT_MK_ASSERT_H
#define MEMKIT_MK_ASSERT_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#if defined(MK_CHECK_INVARIANTS)
#define MK_ASSERTS_ON 1
#define MK_ASSERT(cond)                                                                  \
    (__builtin_expect(!!(cond), 1) ? (void)0                                             \
                                   : mk_assert_failed(#cond, __FILE__, __LINE__))
#else
#define MK_ASSERTS_ON   0
#define MK_ASSERT(cond) ((void)0)
#endif

__attribute__((noreturn, cold, unused)) static void
mk_assert_failed(const char *what, const char *file, int line)
{
    char msg[512];
    int n = snprintf(msg, sizeof msg, "memkit: internal invariant broken: %s (%s:%d)\n",
                     what, file, line);
    if (n > 0)
        (void)!write(2, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
    abort();
}

#endif /* MEMKIT_MK_ASSERT_H */
