/*
 * localbuf.c - the slow paths of local buffers (memkit/localbuf.h): moving off
 * the inline storage when a request is larger, growing the fallback block, and
 * releasing it at scope exit. The fast paths are the header's inline checks.
 */
#include <memkit/localbuf.h>
#include <memkit/stack.h>

#include "internal.h"

#include <stdint.h>
#include <stdlib.h>

/* Requests grow by doubling, so appending n bytes one at a time costs O(n). */
static size_t grown_capacity(const mk_localbuf_t *b, size_t size)
{
    size_t twice = b->cap <= SIZE_MAX / 2 ? b->cap * 2 : SIZE_MAX;

    return size > twice ? size : twice;
}

void *mk__localbuf_frame(void)
{
    return mk_tstack()->frame;
}

/* Heap fallback: realloc when the bytes are kept and already on the heap,
 * otherwise a fresh block (no copy of bytes the caller does not want). */
static unsigned char *grow_on_heap(mk_localbuf_t *b, size_t cap, bool keep)
{
    bool on_heap = b->data != b->inline_data;
    unsigned char *p;

    if (keep && on_heap)
        return realloc(b->data, cap);
    if (!(p = malloc(cap)))
        return NULL;
    if (keep)
        memcpy(p, b->data, b->len);
    if (on_heap)
        free(b->data);
    return p;
}

/* Frame fallback: the block lives in the frame open at declaration, which must
 * still be the innermost one (an inner frame's pop would free it too early). */
static unsigned char *grow_in_frame(mk_localbuf_t *b, size_t cap, bool keep)
{
    mk_stack_t *st = mk_tstack();

    if (st->frame != b->frame)
        mk__die("mk_localbuf: a MK_LOCALBUF_FRAME buffer grows while a frame other than "
                "the one open at its declaration is innermost (pop it first, or declare "
                "the buffer inside that frame)");
    if (keep && b->data != b->inline_data)
        return mk_stack_realloc(st, b->data, b->cap, cap); /* in place when newest */
    unsigned char *p = mk_stack_alloc(st, cap);
    if (p && keep)
        memcpy(p, b->data, b->len);
    return p; /* an old frame block is released with the frame */
}

void *mk__localbuf_grow(mk_localbuf_t *b, size_t size, bool keep)
{
    size_t cap = grown_capacity(b, size);
    unsigned char *p;

    /* no allocator hands out more than PTRDIFF_MAX bytes; say so without asking */
    if (size > PTRDIFF_MAX) {
        errno = ENOMEM;
        return NULL;
    }
    if (cap > PTRDIFF_MAX)
        cap = size;

    /* invariants: len within cap; the inline storage has its declared size */
    MK_ASSERT(b->len <= b->cap);
    MK_ASSERT(b->data != b->inline_data || b->cap == b->inline_cap);
    MK_ASSERT(size > b->cap); /* the inline paths grow only when it does not fit */
    p = b->fallback == MK_LOCALBUF_TSTACK ? grow_in_frame(b, cap, keep)
                                          : grow_on_heap(b, cap, keep);
    if (!p) {
        errno = ENOMEM;
        return NULL;
    }
    b->data = p;
    b->cap = cap;
    if (!keep)
        b->len = 0;
    MK_ASSERT(b->cap >= size && b->len <= b->cap);
    return p;
}

void mk__localbuf_release_slow(mk_localbuf_t *b)
{
    MK_ASSERT(b->data != b->inline_data);
    if (b->fallback == MK_LOCALBUF_HEAP)
        free(b->data);
    b->data = b->inline_data;
    b->cap = b->inline_cap;
    b->len = 0;
}
