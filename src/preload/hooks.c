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
 * malloc and free, the hottest, have a body per path behind the one
 * dispatch (MK_DISPATCH, hook.h): the general one, --summary-only's and
 * --sample's. Every body takes the caller's return address from the
 * exported function: it may or may not be a tail call. */

static __attribute__((noinline)) void *general_malloc(size_t n, uintptr_t ra)
{
    mk_thread_t *t = mk_enter();
    if (!t)
        return MK_LIKELY(mk_real.malloc != NULL) ? mk_real.malloc(n) : mk_boot_alloc(n);
    mk_span_t span;
    void *p;
    TIMED_CALL(t, span, read_size(n), p = mk_real.malloc(n));
    record_alloc(t, MK_K_MALLOC, n, 0, p, ra, span);
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
    mk_leave_unsampled(t);
    return p;
}

/* --sample's malloc: an unsampled call is counted and takes its size off
 * the budget, and is not an event at all, so it needs neither the way into
 * a hook (mk_enter: nothing it touches is the flusher's) nor a frame: the
 * real malloc is a tail call. Its bytes are not counted here: they are
 * what the budgets lost (mk_samples_write). */
static __attribute__((noinline)) MK_HOT_ALIGN void *sample_malloc(size_t n, uintptr_t ra)
{
    mk_thread_t *t = mk_sample_fast_alloc(n);
    if (MK_UNLIKELY(!t))
        return general_malloc(n, ra);
    mk_sample_of(t)->fast_mallocs++;
    return mk_real.malloc(n);
}

MK_EXPORT MK_HOT_ALIGN void *malloc(size_t n)
{
    return MK_DISPATCH(malloc, n, CALLER());
}

/* A free that is read (read_slot) or timed: out of line, so that the hot
 * path holds one copy of the encoding. Its event goes in after the call at
 * the time it began: a reuse of p is later in time all the same, and at an
 * equal time frees come first (merge.c). */
static __attribute__((noinline)) void read_free(mk_thread_t *t, void *p, uintptr_t ra,
                                                mk_index_slot_t *s, unsigned read)
{
    mk_span_t span;
    TIMED_CALL(t, span, read, mk_real.free(p));
    record_free_end(t, MK_K_FREE, p, ra, span, s);
    note_brk(t);
    mk_leave(t);
}

static __attribute__((noinline)) void general_free(void *p, uintptr_t ra)
{
    mk_thread_t *t = mk_enter();
    if (!t) {
        if (MK_LIKELY(mk_real.free != NULL))
            mk_real.free(p);
        return;
    }
    if (record_free_begin(t, MK_K_FREE, p)) {
        mk_index_slot_t *s = mk_writer_free_slot(&t->w, (uintptr_t)p);
        unsigned read =
            mk_st.timing ? read_slot(p, s) : READ_NO; /* before the free: it asks */
        if (MK_UNLIKELY(read || mk_writer_cost_due(&t->w))) {
            read_free(t, p, ra, s, read);
            return;
        }
        /* before the real free: a reuse of p is later in time */
        record_free_end(t, MK_K_FREE, p, 0, MK_NO_SPAN, s);
    }
    /* Not a tail call: the CPU samples it takes are the allocator's. */
    MK_ONCPU_CALL(t, mk_real.free(p));
    note_brk(t);
    mk_leave(t);
}

static __attribute__((noinline)) MK_HOT_ALIGN void summary_free(void *p, uintptr_t ra)
{
    if (mk_nested()) { /* C++ delete's own free... */
        mk_real.free(p);
        return;
    }
    mk_thread_t *t = mk_summary_enter();
    if (MK_UNLIKELY(!t)) {
        general_free(p, ra);
        return;
    }
    mk_summary_free(t, MK_K_FREE, (uintptr_t)p);
    mk_leave_unsampled(t);
    mk_real.free(p);
}

/* --sample's free: counted, and the real free is a tail call. */
static __attribute__((noinline)) MK_HOT_ALIGN void sample_free(void *p, uintptr_t ra)
{
    mk_thread_t *t = mk_sample_fast_free(p);
    if (MK_UNLIKELY(!t)) {
        general_free(p, ra);
        return;
    }
    mk_sample_of(t)->fast_frees++;
    if (MK_UNLIKELY(!p)) { /* free(NULL) does nothing: counted apart, not passed on */
        mk_sample_of(t)->fast_free_nulls++;
        return;
    }
    mk_real.free(p);
}

MK_EXPORT MK_HOT_ALIGN void free(void *p)
{
    if (MK_UNLIKELY(mk_is_boot(p)))
        return; /* the bootstrap heap is never reused */
    MK_DISPATCH(free, p, CALLER());
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
    mk_span_t span;
    void *p;
    TIMED_CALL(t, span, read_size(n), p = mk_real.realloc(old, n));
    record_realloc(t, MK_K_REALLOC, n, old, old_sampled, p, CALLER(), span);
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
    mk_span_t span;
    void *p;
    size_t total = SIZE_MAX; /* an overflow: read (the call fails) */
    (void)__builtin_mul_overflow(n, size, &total);
    TIMED_CALL(t, span, read_size(total), p = mk_real.reallocarray(old, n, size));
    if (total == SIZE_MAX)
        total = 0;
    record_realloc(t, MK_K_REALLOCARRAY, total, old, old_sampled, p, CALLER(), span);
    mk_leave(t);
    return p;
}

MK_EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
    mk_thread_t *t = mk_enter();
    if (!t)
        return mk_real.posix_memalign ? mk_real.posix_memalign(out, align, n) : ENOMEM;
    mk_span_t span;
    int rc;
    TIMED_CALL(t, span, read_size(n), rc = mk_real.posix_memalign(out, align, n));
    record_alloc(t, MK_K_POSIX_MEMALIGN, n, align, rc == 0 ? *out : NULL, CALLER(), span);
    mk_leave(t);
    return rc;
}

/* ---- the other allocating functions, from one table ----
 *
 * One row per function: its name and kind, its parameters and arguments,
 * the bytes and alignment it asks for, and what serves it before dlsym has
 * found the real one (only while dlsym itself is looking). Each row is
 * the same short hook: the real call, then the event, as malloc's general
 * body. */

/* n * size, or 0 when it overflows (the call then fails). */
static inline size_t times(size_t n, size_t size)
{
    size_t total;
    return __builtin_mul_overflow(n, size, &total) ? 0 : total;
}

/* Before dlsym has found the real functions: the bootstrap heap, which is
 * static memory, so already zero for calloc. */
static void *boot_calloc(size_t n, size_t size)
{
    size_t total;
    return __builtin_mul_overflow(n, size, &total) ? NULL : mk_boot_alloc(total);
}

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

#define ALLOC_HOOK(type, name, kind, params, args, size_expr, align_expr, boot)          \
    MK_EXPORT type *name params                                                          \
    {                                                                                    \
        mk_thread_t *t = mk_enter();                                                     \
        if (!t)                                                                          \
            return MK_LIKELY(mk_real.name != NULL) ? mk_real.name args : (boot);         \
        mk_span_t span;                                                                  \
        type *p;                                                                         \
        size_t size_ = (size_expr);                                                      \
        TIMED_CALL(t, span, read_size(size_), p = mk_real.name args);                    \
        record_alloc(t, kind, size_, align_expr, p, CALLER(), span);                     \
        note_brk(t);                                                                     \
        mk_leave(t);                                                                     \
        return p;                                                                        \
    }

/* clang-format off */
ALLOC_HOOK(void, calloc, MK_K_CALLOC, (size_t n, size_t size), (n, size),
           times(n, size), 0, boot_calloc(n, size))
ALLOC_HOOK(void, aligned_alloc, MK_K_ALIGNED_ALLOC, (size_t align, size_t n), (align, n),
           n, align, NULL)
ALLOC_HOOK(void, memalign, MK_K_MEMALIGN, (size_t align, size_t n), (align, n),
           n, align, NULL)
ALLOC_HOOK(void, valloc, MK_K_VALLOC, (size_t n), (n), n, 0, NULL)
ALLOC_HOOK(void, pvalloc, MK_K_PVALLOC, (size_t n), (n), n, 0, NULL)
ALLOC_HOOK(char, strdup, MK_K_STRDUP, (const char *s), (s),
           strlen(s) + 1, 0, copy_bytes(s, strlen(s) + 1))
ALLOC_HOOK(char, strndup, MK_K_STRNDUP, (const char *s, size_t n), (s, n),
           strnlen(s, n) + 1, 0, copy_string(s, strnlen(s, n)))
ALLOC_HOOK(wchar_t, wcsdup, MK_K_WCSDUP, (const wchar_t *s), (s),
           (wcslen(s) + 1) * sizeof(wchar_t), 0,
           copy_bytes(s, (wcslen(s) + 1) * sizeof(wchar_t)))
/* clang-format on */
