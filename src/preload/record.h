/*
 * record.h - encoding one event into the calling thread's buffer. Included by
 * the hook files only: the functions are inlined into each hook (or into
 * the body a hook hands its call to, general_malloc), so that no frame of
 * their own lies between the hook and the stack capture.
 */
#ifndef MEMKIT_PRELOAD_RECORD_H
#define MEMKIT_PRELOAD_RECORD_H

#include "runtime.h"
#include "stacks.h"
#include "summary.h"

#define MK_EXPORT __attribute__((visibility("default")))

/* The next definition of a symbol, looked up once per call site (after
 * that, one load: no call). */
#define NEXT(type, name)                                                                 \
    ({                                                                                   \
        static void *slot_;                                                              \
        void *next_ = __atomic_load_n(&slot_, __ATOMIC_ACQUIRE);                         \
        (type)(MK_LIKELY(next_ != NULL) ? next_ : mk_next_symbol(&slot_, name));         \
    })
#define CALLER() ((uintptr_t)__builtin_return_address(0))

/* Keeps errno as the real call left it: writing a record may touch it. The
 * thread's errno address is kept in its state: __errno_location is a call. */
#define KEEP_ERRNO(t, stmt)                                                              \
    do {                                                                                 \
        int *errno_at_ = (t)->errno_at;                                                  \
        int saved_errno_ = *errno_at_;                                                   \
        stmt;                                                                            \
        *errno_at_ = saved_errno_;                                                       \
    } while (0)

/* The frame address of the function that records the event (record_* are
 * inlined into it: the hook, or general_malloc), for mk_stack_id's cache. */
#define HOOK_FRAME() ((uintptr_t)__builtin_frame_address(0))

/* ---- the put_* functions: one event into the thread's record ----
 *
 * Inlined into the hook; ra is the hook's return address (mk_stack_id's
 * stacks start at the frame that returns there) and fp the recording
 * function's frame (its cache key). The encoding is writer.h's. */

/* Returns the event's stack id (0: none, or not recorded). */
static inline __attribute__((always_inline)) uint32_t
put_alloc(mk_thread_t *t, unsigned kind, size_t size, size_t align, const void *p,
          uintptr_t ra, uintptr_t fp)
{
    if (!mk_room(t))
        return 0;
    uint32_t stack =
        mk_stack_id(t, ra, fp); /* may write a definition: before the event */
    if (MK_UNLIKELY(
            !mk_writer_alloc(&t->w, mk_ticks(), kind, size, align, (uintptr_t)p, stack)))
        mk_index_failed();
    return stack;
}

static inline __attribute__((always_inline)) void put_free(mk_thread_t *t, unsigned kind,
                                                           const void *p)
{
    if (!mk_room(t))
        return;
    mk_writer_free(&t->w, mk_ticks(), kind, (uintptr_t)p);
}

static inline __attribute__((always_inline)) uint32_t
put_realloc(mk_thread_t *t, unsigned kind, size_t size, const void *old, const void *p,
            uintptr_t ra, uintptr_t fp)
{
    if (!mk_room(t))
        return 0;
    uint32_t stack = mk_stack_id(t, ra, fp);
    if (MK_UNLIKELY(!mk_writer_realloc(&t->w, mk_ticks(), kind, size, (uintptr_t)old,
                                       (uintptr_t)p, stack)))
        mk_index_failed();
    return stack;
}

static inline __attribute__((always_inline)) void
put_sysmap(mk_thread_t *t, unsigned kind, size_t size, const void *p, const void *old)
{
    if (!mk_room(t))
        return;
    mk_writer_sysmap(&t->w, mk_ticks(), kind, size, (uintptr_t)p, (uintptr_t)old);
}

/* ---- the record_* functions: one event, in any mode ----
 *
 * --summary-only aggregates; full tracing records the event, and with the
 * summary too (memkit trace without -q) also aggregates it, its site the
 * event's stack id. Each leaves errno as it found it: the summary's path
 * cannot touch it (its slow paths keep it themselves), so only the events'
 * path pays. */

static inline __attribute__((always_inline)) void
record_alloc(mk_thread_t *t, unsigned kind, size_t size, size_t align, const void *p,
             uintptr_t ra)
{
    if (mk_st.cfg.summary_only) {
        mk_summary_alloc(t, kind, size, (uintptr_t)p, ra);
        return;
    }
    uint32_t stack;
    KEEP_ERRNO(t, stack = put_alloc(t, kind, size, align, p, ra, HOOK_FRAME()));
    if (MK_UNLIKELY(mk_st.cfg.summary_too))
        mk_summary_alloc(t, kind, size, (uintptr_t)p, stack);
}

static inline void record_free(mk_thread_t *t, unsigned kind, const void *p)
{
    if (!mk_st.cfg.summary_only)
        KEEP_ERRNO(t, put_free(t, kind, p));
    if (mk_st.cfg.summary_only || MK_UNLIKELY(mk_st.cfg.summary_too))
        mk_summary_free(t, kind, (uintptr_t)p);
}

/* The summary's half of a realloc: a failed one leaves the old block; one
 * that returns NULL for size 0 freed it. */
static inline __attribute__((always_inline)) void
summary_realloc(mk_thread_t *t, unsigned kind, size_t size, const void *old,
                const void *p, uintptr_t site)
{
    if (old && (p || size == 0))
        mk_summary_free(t, MK_K_NONE, (uintptr_t)old);
    mk_summary_alloc(t, kind, size, (uintptr_t)p, site);
}

static inline __attribute__((always_inline)) void
record_realloc(mk_thread_t *t, unsigned kind, size_t size, const void *old, const void *p,
               uintptr_t ra)
{
    if (mk_st.cfg.summary_only) {
        summary_realloc(t, kind, size, old, p, ra);
        return;
    }
    uint32_t stack;
    KEEP_ERRNO(t, stack = put_realloc(t, kind, size, old, p, ra, HOOK_FRAME()));
    if (MK_UNLIKELY(mk_st.cfg.summary_too))
        summary_realloc(t, kind, size, old, p, stack);
}

static inline void record_sysmap(mk_thread_t *t, unsigned kind, size_t size,
                                 const void *p, const void *old)
{
    if (!mk_st.cfg.summary_only)
        KEEP_ERRNO(t, put_sysmap(t, kind, size, p, old));
    if (mk_st.cfg.summary_only || mk_st.cfg.summary_too) {
        t->counts[kind]++;
        t->bytes[kind] += size;
    }
}

#endif /* MEMKIT_PRELOAD_RECORD_H */
