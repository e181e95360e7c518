/*
 * memkit/smallvec.h - a small vector for C: a growable array of one element
 * type whose first N elements live on the caller's stack (a local buffer,
 * memkit/localbuf.h), with the heap (or the thread's mk_stack frame) used only
 * past N. Released at the end of the declaring block.
 *
 *     MK_SMALLVEC(fds, int, 8);                  // 8 ints inline
 *     for (...)
 *         if (!mk_smallvec_push_value(&fds, int, fd))
 *             return -1;                         // out of memory
 *     int *all = mk_smallvec_data(&fds, int);
 *     for (size_t i = 0; i < mk_smallvec_len(&fds); i++) use(all[i]);
 *
 * Elements are moved with memcpy when the vector grows, so they must not point
 * into themselves; their alignment must be at most MK_MALLOC_ALIGN (16).
 * Pointers to elements stay valid until the next push or reserve that grows it.
 */
#ifndef MEMKIT_SMALLVEC_H
#define MEMKIT_SMALLVEC_H

#include <memkit/localbuf.h>

MK__EXTERN_C_BEGIN

/* A small vector: a local buffer whose bytes in use are whole elements. */
typedef struct mk_smallvec {
    mk_localbuf_t buf;
    size_t elem_size;
} mk_smallvec_t;

/* Declares `name`, a vector of `type` with room for n elements inline (n > 0). */
#define MK_SMALLVEC(name, type, n) MK__SMALLVEC(name, type, n, MK_LOCALBUF_HEAP)
/* The same, growing into the calling thread's innermost mk_stack frame. */
#define MK_SMALLVEC_FRAME(name, type, n) MK__SMALLVEC(name, type, n, MK_LOCALBUF_TSTACK)

#define MK__SMALLVEC(name, type, n, fallback)                                            \
    MK__ALIGNAS(MK_MALLOC_ALIGN) unsigned char name##_mk_inline[(n) * sizeof(type)];     \
    MK_STATIC_ASSERT(MK_ALIGNOF(type) <= MK_MALLOC_ALIGN, "element alignment above 16"); \
    mk_smallvec_t name __attribute__((cleanup(mk_smallvec_release))) = {                 \
        MK_LOCALBUF_INIT(name##_mk_inline, sizeof name##_mk_inline, (fallback)),         \
        sizeof(type)}

static inline void mk_smallvec_release(mk_smallvec_t *v)
{
    mk_localbuf_release(&v->buf);
}

static inline size_t mk_smallvec_len(const mk_smallvec_t *v)
{
    return v->buf.len / v->elem_size;
}

static inline size_t mk_smallvec_capacity(const mk_smallvec_t *v)
{
    return v->buf.cap / v->elem_size;
}

/* The elements, as an array of `type`. */
#define mk_smallvec_data(v, type) ((type *)(v)->buf.data)

/* Element i (i < len), or NULL when out of range. */
static inline void *mk_smallvec_at(const mk_smallvec_t *v, size_t i)
{
    return i < mk_smallvec_len(v) ? v->buf.data + i * v->elem_size : NULL;
}

/* Adds one element at the end; returns its (uninitialized) slot, or NULL with
 * errno ENOMEM. */
static inline void *mk_smallvec_push(mk_smallvec_t *v)
{
    return mk_localbuf_append(&v->buf, NULL, v->elem_size);
}

/* Pushes `value` (an expression of `type`); true, or false when out of memory. */
#define mk_smallvec_push_value(v, type, value)                                           \
    __extension__({                                                                      \
        type *mk__slot = (type *)mk_smallvec_push(v);                                    \
        if (mk__slot)                                                                    \
            *mk__slot = (value);                                                         \
        mk__slot != NULL;                                                                \
    })

/* Removes the last element; returns it (valid until the next push), or NULL
 * when the vector is empty. */
static inline void *mk_smallvec_pop(mk_smallvec_t *v)
{
    if (v->buf.len == 0)
        return NULL;
    v->buf.len -= v->elem_size;
    return v->buf.data + v->buf.len;
}

/* Makes room for n elements in all; 0, or -1 with errno ENOMEM. */
static inline int mk_smallvec_reserve(mk_smallvec_t *v, size_t n)
{
    size_t bytes;

    if (__builtin_mul_overflow(n, v->elem_size, &bytes)) {
        errno = ENOMEM;
        return -1;
    }
    return mk_localbuf_reserve(&v->buf, bytes) ? 0 : -1;
}

/* Empties the vector, keeping its storage. */
static inline void mk_smallvec_clear(mk_smallvec_t *v)
{
    v->buf.len = 0;
}

MK__EXTERN_C_END

#endif /* MEMKIT_SMALLVEC_H */
