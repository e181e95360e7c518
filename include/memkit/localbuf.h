/*
 * memkit/localbuf.h - local buffers: storage on the caller's stack for the usual
 * case, the heap (or the thread's mk_stack frame) only when a request is larger.
 *
 * curl's curl_multi_wait() needed an array of one pollfd per socket; it kept 10
 * on the stack "for most typical cases" and called malloc only beyond that. A
 * local buffer is that fix in one line:
 *
 *     void wait_all(const int *fds, size_t n) {
 *         MK_LOCALBUF(buf, 8 * sizeof(struct pollfd));     // 64 bytes on the stack
 *         struct pollfd *ufds = mk_localbuf_array(&buf, struct pollfd, n);
 *         if (!ufds)
 *             return;                                      // n too large for memory
 *         ...                                              // no free: scope exit does it
 *     }
 *
 * Up to 8 entries this makes no heap allocation at all; beyond, one malloc, freed
 * when the enclosing block is left by any path (return, goto, break), with the
 * same __attribute__((cleanup)) mechanism as MK_SCOPE. MK_LOCALBUF_FRAME(name, N)
 * takes larger storage from the calling thread's mk_stack frame (mk_tstack())
 * instead of the heap: no malloc at all, released when that frame is popped. It
 * belongs to the frame open where it is declared (declare it right after the
 * MK_SCOPE that is to own the storage); growing it while another frame is the
 * innermost one aborts with a message, as the stack's other rules do.
 *
 * Growing. mk_localbuf_get(&b, size) returns at least `size` bytes and does not
 * keep what was there (the per-call scratch case); mk_localbuf_reserve keeps the
 * bytes in use, and mk_localbuf_append adds bytes at the end (a string or an
 * array built piece by piece), growing by doubling. A buffer never moves back to
 * its inline storage before mk_localbuf_release (which scope exit calls), so a
 * pointer stays valid until the next call that grows it.
 *
 * Errors. When the fallback storage cannot be had (or size computations
 * overflow) the calls return NULL with errno ENOMEM and leave the buffer as it
 * was. Inline storage is aligned to MK_MALLOC_ALIGN (16), fallback storage too.
 *
 * Threads. A local buffer belongs to the block that declares it.
 */
#ifndef MEMKIT_LOCALBUF_H
#define MEMKIT_LOCALBUF_H

#include <memkit/common.h>

#include <errno.h>
#include <stdbool.h>
#include <string.h>

MK__EXTERN_C_BEGIN

/* Where a buffer's storage comes from once its inline bytes are too few. */
enum mk_localbuf_fallback {
    MK_LOCALBUF_HEAP = 0,  /* malloc/realloc, freed by mk_localbuf_release */
    MK_LOCALBUF_TSTACK = 1 /* the innermost frame of mk_tstack(), freed by its pop */
};

/* A local buffer. Public so the fast paths inline: treat the fields as private. */
typedef struct mk_localbuf {
    unsigned char *data;        /* the storage in use: inline_data or a fallback block */
    size_t len;                 /* bytes in use (append, reserve) */
    size_t cap;                 /* bytes available at data */
    unsigned char *inline_data; /* the declaring block's own bytes */
    size_t inline_cap;
    unsigned fallback; /* enum mk_localbuf_fallback */
    void *frame;       /* MK_LOCALBUF_TSTACK: the frame open at declaration */
} mk_localbuf_t;

#ifdef __cplusplus
#define MK__ALIGNAS(n) alignas(n)
#else
#define MK__ALIGNAS(n) _Alignas(n)
#endif

/* Initializer over caller-provided storage (for buffers in structs, or with
 * explicit mk_localbuf_release calls instead of a scope). */
#define MK_LOCALBUF_INIT(storage, bytes, fallback)                                       \
    {                                                                                    \
        (unsigned char *)(storage), 0, (bytes), (unsigned char *)(storage), (bytes),     \
            (fallback), (fallback) == MK_LOCALBUF_TSTACK ? mk__localbuf_frame() : NULL   \
    }

/* Declares `name`, a local buffer with `bytes` bytes of inline storage (a
 * constant > 0) falling back to the heap, released at the end of the block. */
#define MK_LOCALBUF(name, bytes) MK__LOCALBUF(name, bytes, MK_LOCALBUF_HEAP)

/* The same, falling back to the calling thread's innermost mk_stack frame. */
#define MK_LOCALBUF_FRAME(name, bytes) MK__LOCALBUF(name, bytes, MK_LOCALBUF_TSTACK)

#define MK__LOCALBUF(name, bytes, fallback)                                              \
    MK__ALIGNAS(MK_MALLOC_ALIGN) unsigned char name##_mk_inline[(bytes)];                \
    mk_localbuf_t name __attribute__((cleanup(mk_localbuf_release))) =                   \
        MK_LOCALBUF_INIT(name##_mk_inline, sizeof name##_mk_inline, (fallback))

/* ---- the slow paths (src/alloc/localbuf.c) ---- */

/* The innermost frame of mk_tstack() (NULL if none is open). */
MK_API void *mk__localbuf_frame(void);

/* Makes room for `size` bytes, keeping the first b->len bytes when `keep`. */
MK_API void *mk__localbuf_grow(mk_localbuf_t *b, size_t size, bool keep);

MK_API void mk__localbuf_release_slow(mk_localbuf_t *b);

/* Frees fallback storage and returns the buffer to its inline bytes, empty.
 * Scope exit calls it; calling it earlier is allowed (and again, harmlessly).
 * Inline, so the usual exit (still on the inline bytes) is two stores. */
static inline void mk_localbuf_release(mk_localbuf_t *b)
{
    if (MK_UNLIKELY(b->data != b->inline_data))
        mk__localbuf_release_slow(b);
    b->len = 0;
}

/* ---- the fast paths ---- */

/* At least `size` bytes; what the buffer held is not kept (len becomes 0). */
static inline void *mk_localbuf_get(mk_localbuf_t *b, size_t size)
{
    b->len = 0;
    if (MK_LIKELY(size <= b->cap))
        return b->data;
    return mk__localbuf_grow(b, size, false);
}

/* Room for n objects of `type` (mk_localbuf_get with an overflow check). */
#define mk_localbuf_array(b, type, n)                                                    \
    ((type *)mk__localbuf_get_array((b), (n), sizeof(type)))

static inline void *mk__localbuf_get_array(mk_localbuf_t *b, size_t n, size_t size)
{
    size_t total;

    if (MK_UNLIKELY(__builtin_mul_overflow(n, size, &total))) {
        errno = ENOMEM;
        return NULL;
    }
    return mk_localbuf_get(b, total);
}

/* At least `size` bytes, keeping the bytes in use. */
static inline void *mk_localbuf_reserve(mk_localbuf_t *b, size_t size)
{
    if (MK_LIKELY(size <= b->cap))
        return b->data;
    return mk__localbuf_grow(b, size, true);
}

/* Appends n bytes of src (NULL: leaves them uninitialized); returns where they
 * went, inside the buffer, or NULL with errno ENOMEM. */
static inline void *mk_localbuf_append(mk_localbuf_t *b, const void *src, size_t n)
{
    size_t need;

    if (MK_UNLIKELY(__builtin_add_overflow(b->len, n, &need))) {
        errno = ENOMEM;
        return NULL;
    }
    if (MK_UNLIKELY(need > b->cap) && !mk__localbuf_grow(b, need, true))
        return NULL;
    unsigned char *at = b->data + b->len;
    if (src && n)
        memcpy(at, src, n);
    b->len = need;
    return at;
}

/* The storage (valid until the next call that may grow it) and the bytes in use. */
static inline void *mk_localbuf_data(const mk_localbuf_t *b)
{
    return b->data;
}
static inline size_t mk_localbuf_len(const mk_localbuf_t *b)
{
    return b->len;
}
/* Sets the bytes in use (at most the capacity): after writing into get's storage. */
static inline void mk_localbuf_set_len(mk_localbuf_t *b, size_t len)
{
    b->len = len <= b->cap ? len : b->cap;
}
static inline size_t mk_localbuf_capacity(const mk_localbuf_t *b)
{
    return b->cap;
}
/* True while the buffer still uses its inline storage. */
static inline bool mk_localbuf_is_inline(const mk_localbuf_t *b)
{
    return b->data == b->inline_data;
}

MK__EXTERN_C_END

#endif /* MEMKIT_LOCALBUF_H */
