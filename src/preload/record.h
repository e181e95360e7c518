/*
 * record.h - encoding one event into the calling thread's buffer. Included by
 * the hook files only: the functions are inlined into each hook so that the
 * stack capture's caller is the hook itself (mk_stack_capture skips it).
 */
#ifndef MEMKIT_PRELOAD_RECORD_H
#define MEMKIT_PRELOAD_RECORD_H

#include "preload.h"

#define MK_EXPORT __attribute__((visibility("default")))
#define CALLER() ((uintptr_t)__builtin_return_address(0))

/* Inlined into each hook, so the capture's caller is the hook itself. */
static inline __attribute__((always_inline)) uint32_t stack_of(mk_thread_t *t, uintptr_t ra)
{
    uintptr_t frames[MK_MAX_DEPTH];
    int n;

    if (mk_st.cfg.depth > 1) {
        n = mk_stack_capture(frames, mk_st.cfg.depth);
    } else {
        frames[0] = ra; /* --no-stacks: the calling instruction only, no unwinding */
        n = 1;
    }
    return mk_stack_intern(t, frames, n);
}

static inline __attribute__((always_inline)) void
record_alloc(mk_thread_t *t, unsigned kind, size_t size, size_t align, const void *p,
             uintptr_t ra)
{
    if (mk_st.cfg.summary_only) {
        mk_summary_alloc(t, kind, size, (uintptr_t)p, ra);
        return;
    }
    if (!mk_room(t))
        return;
    uint32_t stack = stack_of(t, ra); /* may write a definition: before the event */
    uint8_t *q = mk_put_head(t, t->buf + t->len, kind);
    q = mk_put_varint(q, size);
    if (mk_kind_has_align(kind))
        q = mk_put_varint(q, align);
    q = mk_put_new_addr(t, q, (uintptr_t)p);
    q = mk_put_varint(q, stack);
    t->len = (size_t)(q - t->buf);
    t->events++;
}

static inline void record_free(mk_thread_t *t, unsigned kind, const void *p)
{
    if (mk_st.cfg.summary_only) {
        mk_summary_free(t, kind, (uintptr_t)p);
        return;
    }
    if (!mk_room(t))
        return;
    uint8_t *q = mk_put_head(t, t->buf + t->len, kind);
    q = mk_put_addr(t, q, (uintptr_t)p);
    if (p)
        mk_ring_push(t, (uintptr_t)p);
    t->len = (size_t)(q - t->buf);
    t->events++;
}

static inline __attribute__((always_inline)) void
record_realloc(mk_thread_t *t, unsigned kind, size_t size, const void *old, const void *p,
               uintptr_t ra)
{
    if (mk_st.cfg.summary_only) {
        /* A failed realloc leaves the old block; one that returns NULL for size
         * 0 freed it. */
        if (old && (p || size == 0))
            mk_summary_free(t, MK_K_NONE, (uintptr_t)old);
        mk_summary_alloc(t, kind, size, (uintptr_t)p, ra);
        return;
    }
    if (!mk_room(t))
        return;
    uint32_t stack = stack_of(t, ra);
    uint8_t *q = mk_put_head(t, t->buf + t->len, kind);
    q = mk_put_varint(q, size);
    q = mk_put_addr(t, q, (uintptr_t)old);
    q = mk_put_addr(t, q, (uintptr_t)p);
    q = mk_put_varint(q, stack);
    t->len = (size_t)(q - t->buf);
    t->events++;
}

static inline void record_sysmap(mk_thread_t *t, unsigned kind, size_t size, const void *p,
                                 const void *old)
{
    if (mk_st.cfg.summary_only) {
        t->counts[kind]++;
        t->bytes[kind] += size;
        return;
    }
    if (!mk_room(t))
        return;
    uint8_t *q = mk_put_head(t, t->buf + t->len, kind);
    q = mk_put_varint(q, size);
    q = mk_put_addr(t, q, (uintptr_t)p);
    if (kind == MK_K_MREMAP)
        q = mk_put_addr(t, q, (uintptr_t)old);
    t->len = (size_t)(q - t->buf);
    t->events++;
}

/* Keeps errno as the real call left it: recording may touch it. */
#define KEEP_ERRNO(stmt)                                                                      \
    do {                                                                                      \
        int saved_errno_ = errno;                                                             \
        stmt;                                                                                 \
        errno = saved_errno_;                                                                 \
    } while (0)

#endif /* MEMKIT_PRELOAD_RECORD_H */
