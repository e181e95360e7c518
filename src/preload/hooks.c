/*
 * hooks.c - the interposed functions and the encoding of their events.
 *
 * Every allocation hook has the same shape:
 *
 *     t = mk_enter();                  NULL: nested or not tracing
 *     if (!t) return real(...);        (unrecorded: the fast way out)
 *     result = real(...);              nested calls inside it are unrecorded,
 *     record(t, ...); mk_leave(t);     so strdup is one strdup, not a malloc
 *
 * Frees are recorded before the real free, allocations after the real call,
 * so that when another thread reuses a freed address its allocation is
 * always later in time than the free.
 */
#define _GNU_SOURCE
#include "record.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <malloc.h>
#include <wchar.h>

/* With --syscalls: glibc's malloc moves the break with its own internal brk,
 * which no hook sees; its cached value (sbrk(0), no system call) tells. */
static void *last_brk;

static inline void note_brk(mk_thread_t *t)
{
    if (MK_LIKELY(!mk_st.cfg.syscalls))
        return;
    void *now = sbrk(0);
    void *was = __atomic_exchange_n(&last_brk, now, __ATOMIC_RELAXED);
    if (was && now != was)
        record_sysmap(t, MK_K_BRK, (size_t)((char *)now - (char *)was), now, NULL);
}

/* ---- the C allocation functions ----
 *
 * malloc and free, the hottest, come in two bodies behind a one-test
 * dispatch: --summary-only's (summary_malloc, summary_free) and everyone
 * else's (general_malloc, general_free). Apart, the summary path does not
 * pay for the general path's slow branches (thread states, stack capture,
 * flushing), which make the compiler save six registers on every call.
 * Both bodies take the caller's return address from the exported function:
 * they may or may not be tail calls.
 *
 * The summary path's functions start on a 64-byte boundary (MK_HOT_ALIGN),
 * so that where the linker puts them does not move their speed (fetch works
 * in 64-byte blocks), and omit the frame pointer the rest of the library
 * keeps for profilers: stacks come from libunwind's DWARF tables, never from
 * frame pointers. The figures are in docs/PERFORMANCE-LOG.md. */
#ifdef __clang__ /* no per-function optimize attribute (the fuzz build) */
#define MK_HOT_ALIGN __attribute__((aligned(64)))
#else
#define MK_HOT_ALIGN __attribute__((aligned(64), optimize("omit-frame-pointer")))
#endif

static __attribute__((noinline)) void *general_malloc(size_t n, uintptr_t ra)
{
    mk_thread_t *t = mk_enter();
    if (!t)
        return MK_LIKELY(mk_real.malloc != NULL) ? mk_real.malloc(n) : mk_boot_alloc(n);
    void *p = mk_real.malloc(n);
    record_alloc(t, MK_K_MALLOC, n, 0, p, ra);
    note_brk(t);
    mk_leave(t);
    return p;
}

static __attribute__((noinline)) MK_HOT_ALIGN void *summary_malloc(size_t n, uintptr_t ra)
{
    if (mk_nested()) /* C++ new's own malloc, strdup's... */
        return mk_real.malloc(n);
    mk_thread_t *t = mk_summary_enter();
    if (MK_UNLIKELY(!t))
        return general_malloc(n, ra);
    mk_summary_count(t, MK_K_MALLOC, n, ra);
    void *p = mk_real.malloc(n);
    mk_summary_live(t, n, (uintptr_t)p);
    mk_leave(t);
    return p;
}

/* --sample's malloc: an unsampled call is counted and takes its size off
 * the budget, and is not an event at all, so it needs neither the way into
 * a hook (mk_enter: nothing it touches is the flusher's) nor a frame: the
 * real malloc is a tail call. The one to be sampled goes the general way,
 * which counts it, samples it and records it. */
static __attribute__((noinline)) MK_HOT_ALIGN void *sample_malloc(size_t n, uintptr_t ra)
{
    mk_thread_t *t = mk_self;
    if (MK_UNLIKELY(!t || mk_sample_next(t, n))) /* no state yet, or sampled */
        return general_malloc(n, ra);
    if (MK_UNLIKELY(mk_nested())) /* operator new's own malloc... */
        return mk_real.malloc(n);
    t->fast_mallocs++;
    t->sample_left -= (int64_t)n;
    return mk_real.malloc(n);
}

MK_EXPORT MK_HOT_ALIGN void *malloc(size_t n)
{
    if (MK_LIKELY(mk_st.sample_fast))
        return sample_malloc(n, CALLER());
    if (MK_LIKELY(mk_st.summary_fast))
        return summary_malloc(n, CALLER());
    return general_malloc(n, CALLER());
}

static __attribute__((noinline)) void general_free(void *p)
{
    mk_thread_t *t = mk_enter();
    if (!t) {
        if (MK_LIKELY(mk_real.free != NULL))
            mk_real.free(p);
        return;
    }
    record_free(t, MK_K_FREE, p);
    if (MK_LIKELY(!mk_st.cfg.syscalls)) {
        /* Nothing is recorded after the real free unless --syscalls watches
         * the break: leave first, so that the call is a tail call. */
        mk_leave(t);
        mk_real.free(p);
        return;
    }
    mk_real.free(p);
    note_brk(t);
    mk_leave(t);
}

static __attribute__((noinline)) MK_HOT_ALIGN void summary_free(void *p)
{
    if (mk_nested()) { /* C++ delete's own free... */
        mk_real.free(p);
        return;
    }
    mk_thread_t *t = mk_summary_enter();
    if (MK_UNLIKELY(!t)) {
        general_free(p);
        return;
    }
    mk_summary_free(t, MK_K_FREE, (uintptr_t)p);
    mk_leave(t);
    mk_real.free(p);
}

/* --sample's free: counted; the filter's one load rules out nearly every
 * block, and the real free is a tail call. A block the filter may know goes
 * the general way, which counts it and records it if it was sampled. */
static __attribute__((noinline)) MK_HOT_ALIGN void sample_free(void *p)
{
    mk_thread_t *t = mk_self;
    if (MK_UNLIKELY(!t || mk_sampled_maybe((uintptr_t)p))) {
        general_free(p);
        return;
    }
    if (MK_UNLIKELY(mk_nested())) { /* operator delete's own free... */
        mk_real.free(p);
        return;
    }
    t->fast_frees++;
    if (MK_UNLIKELY(!p)) { /* free(NULL) does nothing: counted apart, not passed on */
        t->fast_free_nulls++;
        return;
    }
    mk_real.free(p);
}

MK_EXPORT MK_HOT_ALIGN void free(void *p)
{
    if (MK_UNLIKELY(mk_is_boot(p)))
        return; /* the bootstrap heap is never reused */
    if (MK_LIKELY(mk_st.sample_fast))
        sample_free(p);
    else if (MK_LIKELY(mk_st.summary_fast))
        summary_free(p);
    else
        general_free(p);
}

MK_EXPORT void *calloc(size_t n, size_t size)
{
    mk_thread_t *t = mk_enter();
    if (!t) {
        if (MK_LIKELY(mk_real.calloc != NULL))
            return mk_real.calloc(n, size);
        size_t total;
        if (__builtin_mul_overflow(n, size, &total))
            return NULL;
        return mk_boot_alloc(total); /* static memory: already zero */
    }
    void *p = mk_real.calloc(n, size);
    size_t total = 0;
    (void)__builtin_mul_overflow(n, size, &total); /* overflow: calloc failed, size 0 */
    record_alloc(t, MK_K_CALLOC, total, 0, p, CALLER());
    note_brk(t);
    mk_leave(t);
    return p;
}

/* realloc of a bootstrap block: move it to the real heap. */
static void *realloc_boot(void *old, size_t n)
{
    size_t had;
    memcpy(&had, (uint8_t *)old - 16, sizeof had);
    void *p = mk_real.malloc ? mk_real.malloc(n) : mk_boot_alloc(n);
    if (p)
        memcpy(p, old, had < n ? had : n);
    return p;
}

MK_EXPORT void *realloc(void *old, size_t n)
{
    if (MK_UNLIKELY(mk_is_boot(old)))
        return realloc_boot(old, n);
    mk_thread_t *t = mk_enter();
    if (!t)
        return MK_LIKELY(mk_real.realloc != NULL) ? mk_real.realloc(old, n)
                                                  : mk_boot_alloc(n);
    bool old_sampled = sample_realloc_begin(old);
    void *p = mk_real.realloc(old, n);
    record_realloc(t, MK_K_REALLOC, n, old, old_sampled, p, CALLER());
    note_brk(t);
    mk_leave(t);
    return p;
}

MK_EXPORT void *reallocarray(void *old, size_t n, size_t size)
{
    mk_thread_t *t = mk_enter();
    if (!t || !mk_real.reallocarray) {
        if (t)
            mk_leave(t);
        size_t total;
        if (__builtin_mul_overflow(n, size, &total)) {
            errno = ENOMEM;
            return NULL;
        }
        return mk_real.reallocarray ? mk_real.reallocarray(old, n, size)
                                    : realloc(old, total);
    }
    bool old_sampled = sample_realloc_begin(old);
    void *p = mk_real.reallocarray(old, n, size);
    size_t total = 0;
    (void)__builtin_mul_overflow(n, size, &total);
    record_realloc(t, MK_K_REALLOCARRAY, total, old, old_sampled, p, CALLER());
    mk_leave(t);
    return p;
}

MK_EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
    mk_thread_t *t = mk_enter();
    if (!t)
        return mk_real.posix_memalign ? mk_real.posix_memalign(out, align, n) : ENOMEM;
    int rc = mk_real.posix_memalign(out, align, n);
    record_alloc(t, MK_K_POSIX_MEMALIGN, n, align, rc == 0 ? *out : NULL, CALLER());
    mk_leave(t);
    return rc;
}

/* aligned_alloc, memalign, valloc, pvalloc: one shape. */
#define ALIGNED_HOOK(name, kind, params, args, align_expr, size_expr)                    \
    MK_EXPORT void *name params                                                          \
    {                                                                                    \
        mk_thread_t *t = mk_enter();                                                     \
        if (!t)                                                                          \
            return mk_real.name ? mk_real.name args : NULL;                              \
        void *p = mk_real.name args;                                                     \
        record_alloc(t, kind, size_expr, align_expr, p, CALLER());                       \
        mk_leave(t);                                                                     \
        return p;                                                                        \
    }

ALIGNED_HOOK(aligned_alloc, MK_K_ALIGNED_ALLOC, (size_t align, size_t n), (align, n),
             align, n)
ALIGNED_HOOK(memalign, MK_K_MEMALIGN, (size_t align, size_t n), (align, n), align, n)
ALIGNED_HOOK(valloc, MK_K_VALLOC, (size_t n), (n), 0, n)
ALIGNED_HOOK(pvalloc, MK_K_PVALLOC, (size_t n), (n), 0, n)

/* Before dlsym has found the real string functions (only while it is
 * looking them up): copies from the bootstrap heap. */
static void *copy_bytes(const void *src, size_t n)
{
    void *p = malloc(n);
    if (p)
        memcpy(p, src, n);
    return p;
}

static char *copy_string(const char *s, size_t len)
{
    char *p = malloc(len + 1);
    if (p) {
        memcpy(p, s, len);
        p[len] = 0;
    }
    return p;
}

MK_EXPORT char *strdup(const char *s)
{
    mk_thread_t *t = mk_enter();
    if (!t)
        return MK_LIKELY(mk_real.strdup != NULL) ? mk_real.strdup(s)
                                                 : copy_bytes(s, strlen(s) + 1);
    char *p = mk_real.strdup(s);
    record_alloc(t, MK_K_STRDUP, strlen(s) + 1, 0, p, CALLER());
    mk_leave(t);
    return p;
}

MK_EXPORT char *strndup(const char *s, size_t n)
{
    mk_thread_t *t = mk_enter();
    if (!t)
        return MK_LIKELY(mk_real.strndup != NULL) ? mk_real.strndup(s, n)
                                                  : copy_string(s, strnlen(s, n));
    char *p = mk_real.strndup(s, n);
    record_alloc(t, MK_K_STRNDUP, strnlen(s, n) + 1, 0, p, CALLER());
    mk_leave(t);
    return p;
}

MK_EXPORT wchar_t *wcsdup(const wchar_t *s)
{
    mk_thread_t *t = mk_enter();
    if (!t)
        return MK_LIKELY(mk_real.wcsdup != NULL)
                   ? mk_real.wcsdup(s)
                   : copy_bytes(s, (wcslen(s) + 1) * sizeof(wchar_t));
    wchar_t *p = mk_real.wcsdup(s);
    record_alloc(t, MK_K_WCSDUP, (wcslen(s) + 1) * sizeof(wchar_t), 0, p, CALLER());
    mk_leave(t);
    return p;
}
