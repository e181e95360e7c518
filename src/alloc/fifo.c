/*
 * fifo.c - the FIFO allocator: chunks, the slow paths, and debug mode.
 *
 * The inline fast paths in fifo.h bump through the current chunk (alloc) and
 * count a free in the block's own chunk (free). Everything else is here:
 *   - taking a new current chunk when a block does not fit (a spare first), or
 *     rewinding the current one when every block in it has been freed;
 *   - blocks larger than a chunk, which get a chunk of their own;
 *   - recycling a chunk whose last block was freed (spare or munmap);
 *   - every call when fifo->slow is set (debug, ASan, Valgrind).
 *
 * Invariants:
 *   - cur == NULL <=> no chunk was ever needed, and then pos == end == 0;
 *   - cur->blocks == SIZE_MAX (the FIFO counts cur's blocks in cur_blocks), so a
 *     free in the fast path never finds the current chunk empty;
 *   - every other chunk in use has freed < blocks: the free that makes them equal
 *     recycles it at once;
 *   - chunks are aligned to chunk_size and every block starts in the first
 *     chunk_size bytes of its chunk, so masking a block's address finds the header
 *     (a large chunk is several chunk sizes long, with its one block at the front).
 */
#include "internal.h"

#include <memkit/fifo.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_MAGIC   0x6d6b6669u /* "mkfi" */
#define CHUNK_DEFAULT MK_HUGE_PAGE
#define CHUNK_MIN     ((size_t)64 << 10)
#define FIFO_ASAN     (1u << 8) /* slow because of AddressSanitizer */
#define FIFO_VALGRIND (1u << 9) /* slow because memcheck is watching */

typedef struct mk__fifo_chunk chunk_t;

/* ------------------------------------------------------------------------ */
/* creation                                                                  */

mk_fifo_t *mk_fifo_create(const mk_fifo_config_t *config)
{
    mk_fifo_config_t cfg = config ? *config : (mk_fifo_config_t){0};
    mk_fifo_t *fifo;

    if (!cfg.chunk_size)
        cfg.chunk_size = CHUNK_DEFAULT;
    if (!mk__is_pow2(cfg.chunk_size) || cfg.chunk_size < CHUNK_MIN ||
        cfg.chunk_size > ((size_t)1 << 40) || (cfg.flags & ~(unsigned)MK_FIFO_DEBUG)) {
        errno = EINVAL;
        return NULL;
    }
    if (!(fifo = calloc(1, sizeof *fifo))) {
        errno = ENOMEM;
        return NULL;
    }
    /* Chunks aligned to their size: masking a block's address finds its header. */
    mk__chunks_init(&fifo->src, cfg.chunk_size, cfg.max_spare_chunks, cfg.decay_ms, true);
    fifo->chunk_mask = ~(uintptr_t)(cfg.chunk_size - 1);
    fifo->flags = cfg.flags;
    fifo->slow = cfg.flags & MK_FIFO_DEBUG;
#ifdef MK_ASAN
    fifo->slow |= FIFO_ASAN;
#endif
    if (MK_ON_VALGRIND()) {
        fifo->slow |= FIFO_VALGRIND;
        VALGRIND_CREATE_MEMPOOL(fifo, 0, 0);
    }
    /* Debug checks need the bitmap; so does poisoning, to know a block's size. */
    fifo->tracked = fifo->slow & (MK_FIFO_DEBUG | FIFO_ASAN);
    return fifo;
}

/* ------------------------------------------------------------------------ */
/* chunks                                                                    */

/* Bytes before the first block: the header and, when tracked, one bit per grain
 * of the first chunk_size bytes (no block starts beyond, even in a large chunk),
 * twice: every start since the chunk was reset, then the live ones. */
static size_t payload_offset(const mk_fifo_t *fifo)
{
    size_t bitmap = fifo->tracked ? 2 * (fifo->src.chunk_size / MK_FIFO_GRAIN / 8) : 0;

    return mk__align_up(sizeof(chunk_t) + bitmap, 64);
}

static void chunk_link(chunk_t **list, chunk_t *c)
{
    c->prev = NULL;
    c->next = *list;
    if (*list)
        (*list)->prev = c;
    *list = c;
}

static void chunk_unlink(chunk_t **list, chunk_t *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        *list = c->next;
    if (c->next)
        c->next->prev = c->prev;
}

/* Makes c's payload ready for blocks: no block, nothing freed, memory poisoned. */
static void chunk_reset(mk_fifo_t *fifo, chunk_t *c)
{
    c->freed = 0;
    c->blocks = 0;
    c->top = c->payload;
    if (c->starts)
        memset(c->starts, 0, (c->payload - (uintptr_t)c->starts));
    MK_POISON((void *)c->payload, (uintptr_t)c + c->size - c->payload);
    if (fifo->slow & FIFO_VALGRIND)
        VALGRIND_MAKE_MEM_NOACCESS((void *)c->payload,
                                   (uintptr_t)c + c->size - c->payload);
}

/* A chunk of `size` bytes (a multiple of chunk_size), in use: spare or fresh. */
static chunk_t *chunk_get(mk_fifo_t *fifo, size_t size)
{
    bool fresh;
    chunk_t *c = mk__chunks_get(&fifo->src, size, &fresh);

    if (!c)
        return NULL;
    if (fresh) { /* a spare keeps these (its first word, freed, is reset below) */
        c->fifo = fifo;
        c->size = size;
        c->magic = CHUNK_MAGIC;
        c->payload = (uintptr_t)c + payload_offset(fifo);
        c->starts = fifo->tracked ? (uint8_t *)(c + 1) : NULL;
    }
    chunk_reset(fifo, c);
    chunk_link(&fifo->all, c);
    return c;
}

/* c (not the current chunk) has no live block: a spare, or back to the OS. */
void mk__fifo_chunk_empty(mk_fifo_t *fifo, chunk_t *c)
{
    MK_ASSERT(c->magic == CHUNK_MAGIC && c->fifo == fifo);
    MK_ASSERT(c != fifo->cur && c->freed == c->blocks);
    chunk_unlink(&fifo->all, c);
    if (c->size == fifo->src.chunk_size)
        chunk_reset(fifo, c); /* it may stay a spare: poisoned meanwhile */
    mk__chunks_put(&fifo->src, c, c->size);
}

/* ------------------------------------------------------------------------ */
/* the block-start bitmap (debug mode and ASan)                              */

static size_t start_bit(const chunk_t *c, uintptr_t p)
{
    return (p - (uintptr_t)c) / MK_FIFO_GRAIN;
}

/* The live-start bitmap follows the all-starts one. */
static uint8_t *live_map(const mk_fifo_t *fifo, const chunk_t *c)
{
    return c->starts + fifo->src.chunk_size / MK_FIFO_GRAIN / 8;
}

static bool bit_get(const uint8_t *map, size_t b)
{
    return map[b / 8] >> (b % 8) & 1;
}

/* Is p the start of a live block of c? */
static bool start_test(const mk_fifo_t *fifo, const chunk_t *c, uintptr_t p)
{
    return bit_get(live_map(fifo, c), start_bit(c, p));
}

/* A block starts at p: in both bitmaps. */
static void start_mark(const mk_fifo_t *fifo, chunk_t *c, uintptr_t p)
{
    size_t b = start_bit(c, p);

    c->starts[b / 8] |= (uint8_t)(1u << (b % 8));
    live_map(fifo, c)[b / 8] |= (uint8_t)(1u << (b % 8));
}

static void start_unmark_live(const mk_fifo_t *fifo, chunk_t *c, uintptr_t p)
{
    size_t b = start_bit(c, p);

    live_map(fifo, c)[b / 8] &= (uint8_t) ~(1u << (b % 8));
}

/* Where the block at p ends: the next block's start (live or freed: the
 * all-starts bitmap, so the scan is as long as the block, not as the freed
 * blocks after it), or the chunk's top. */
static uintptr_t block_end(const mk_fifo_t *fifo, const chunk_t *c, uintptr_t p)
{
    uintptr_t top = c == fifo->cur ? fifo->pos : c->top;
    uintptr_t starts_end = (uintptr_t)c + fifo->src.chunk_size; /* the bitmap's reach */
    uintptr_t lim = top < starts_end ? top : starts_end;

    for (uintptr_t q = p + MK_FIFO_GRAIN; q < lim; q += MK_FIFO_GRAIN)
        if (bit_get(c->starts, start_bit(c, q)))
            return q;
    return top;
}

/* ------------------------------------------------------------------------ */
/* allocation                                                                */

/* Records a block handed out in the slow path (bitmap, poisoning, memcheck). */
static void *block_out(mk_fifo_t *fifo, chunk_t *c, uintptr_t p, size_t size)
{
    if (fifo->tracked)
        start_mark(fifo, c, p);
    MK_UNPOISON((void *)p, size);
    if (fifo->slow & FIFO_VALGRIND)
        VALGRIND_MEMPOOL_ALLOC(fifo, (void *)p, size);
    return (void *)p;
}

/* Closes the current chunk: from now on it counts its own blocks. */
static void cur_retire(mk_fifo_t *fifo)
{
    chunk_t *c = fifo->cur;

    MK_ASSERT(c->blocks == SIZE_MAX && c->freed <= fifo->cur_blocks);
    c->blocks = fifo->cur_blocks;
    c->top = fifo->pos;
    fifo->cur = NULL;
    fifo->pos = fifo->end = fifo->cur_end = 0;
    if (c->freed == c->blocks)
        mk__fifo_chunk_empty(fifo, c);
}

static void cur_set(mk_fifo_t *fifo, chunk_t *c)
{
    MK_ASSERT(fifo->cur == NULL && c->freed == 0 && c->top == c->payload);
    c->blocks = SIZE_MAX;
    fifo->cur = c;
    fifo->cur_blocks = 0;
    fifo->pos = c->payload;
    fifo->cur_end = (uintptr_t)c + c->size;
    fifo->end = fifo->slow ? 0 : fifo->cur_end;
}

/* Bumps n bytes aligned to align in the current chunk; 0 if they do not fit. */
static uintptr_t cur_bump(mk_fifo_t *fifo, size_t n, size_t align)
{
    uintptr_t p;

    if (!fifo->cur)
        return 0;
    p = mk__align_up(fifo->pos, align);
    if (p > fifo->cur_end || n > fifo->cur_end - p)
        return 0;
    fifo->pos = p + n;
    fifo->cur_blocks++;
    /* every block starts in the chunk's first chunk_size bytes (masking) */
    MK_ASSERT((p & fifo->chunk_mask) == (uintptr_t)fifo->cur);
    return p;
}

/* A block too large for a chunk gets a chunk of its own, never current. */
static void *alloc_large(mk_fifo_t *fifo, size_t n, size_t size, size_t align)
{
    size_t head = mk__align_up(payload_offset(fifo), align);
    size_t bytes;
    chunk_t *c;

    if (head + n < n || head >= fifo->src.chunk_size)
        goto nomem;
    bytes = mk__align_up(head + n, fifo->src.chunk_size);
    if (bytes < head + n || !(c = chunk_get(fifo, bytes)))
        goto nomem;
    c->blocks = 1;
    c->top = (uintptr_t)c + head + n;
    return block_out(fifo, c, (uintptr_t)c + head, size);
nomem:
    errno = ENOMEM;
    return NULL;
}

void *mk__fifo_alloc_slow(mk_fifo_t *fifo, size_t size, size_t align)
{
    size_t n = mk__align_up(size ? size : 1, MK_FIFO_GRAIN);
    uintptr_t p;
    chunk_t *c;

    if (!mk__is_pow2(align) || align < MK_FIFO_GRAIN || align > fifo->src.chunk_size / 4)
        mk__die("mk_fifo_alloc_aligned: alignment %zu is not a power of two in [%d, "
                "chunk size / 4]",
                align, MK_FIFO_GRAIN);
    if (size > SIZE_MAX - MK_FIFO_GRAIN) {
        errno = ENOMEM;
        return NULL;
    }
    if ((p = cur_bump(fifo, n, align)))
        return block_out(fifo, fifo->cur, p, size);
    /* Would the block fit in an empty chunk at all? */
    if (payload_offset(fifo) + align + n > fifo->src.chunk_size)
        return alloc_large(fifo, n, size, align);
    /* The current chunk is full. If all its blocks were freed, start it over. */
    if (fifo->cur && fifo->cur->freed == fifo->cur_blocks) {
        fifo->cur->freed = 0;
        fifo->pos = fifo->cur->payload;
        fifo->cur_blocks = 0;
        if (fifo->tracked)
            memset(fifo->cur->starts, 0,
                   fifo->cur->payload - (uintptr_t)fifo->cur->starts);
    } else {
        if (!(c = chunk_get(fifo, fifo->src.chunk_size))) {
            errno = ENOMEM;
            return NULL; /* the current chunk stays as it was */
        }
        if (fifo->cur)
            cur_retire(fifo);
        cur_set(fifo, c);
    }
    p = cur_bump(fifo, n, align);
    MK_ASSERT(p != 0);
    return block_out(fifo, fifo->cur, p, size);
}

/* ------------------------------------------------------------------------ */
/* free                                                                      */

/* Debug mode: c must be a chunk of this FIFO in use (walking the list rather than
 * reading the header first, so a foreign pointer never reads unmapped memory). */
static chunk_t *debug_chunk_of(mk_fifo_t *fifo, uintptr_t p)
{
    for (chunk_t *c = fifo->all; c; c = c->next)
        if (p >= c->payload && p < (uintptr_t)c + c->size &&
            (p & fifo->chunk_mask) == (uintptr_t)c)
            return c;
    mk__die("mk_fifo_free: %p is not a block of this FIFO (foreign pointer)", (void *)p);
}

void mk__fifo_free_slow(mk_fifo_t *fifo, void *ptr)
{
    uintptr_t p = (uintptr_t)ptr;
    chunk_t *c;

    if (!ptr)
        return;
    c = fifo->flags & MK_FIFO_DEBUG ? debug_chunk_of(fifo, p)
                                    : (chunk_t *)(p & fifo->chunk_mask);
    if (fifo->tracked) {
        if (!start_test(fifo, c, p))
            mk__die(
                "mk_fifo_free: %p is not a live block (freed twice, or inside a block)",
                ptr);
        uintptr_t end = block_end(fifo, c, p);
        start_unmark_live(fifo, c, p);
        MK_POISON(ptr, end - p);
    }
    if (fifo->slow & FIFO_VALGRIND)
        VALGRIND_MEMPOOL_FREE(fifo, ptr);
    MK_ASSERT(c->magic == CHUNK_MAGIC && c->fifo == fifo && c->freed < c->blocks);
    if (++c->freed == c->blocks)
        mk__fifo_chunk_empty(fifo, c);
}

/* ------------------------------------------------------------------------ */
/* realloc, stats, destroy                                                   */

void *mk_fifo_realloc(mk_fifo_t *fifo, void *ptr, size_t old_size, size_t new_size)
{
    uintptr_t p = (uintptr_t)ptr;
    size_t n = mk__align_up(new_size ? new_size : 1, MK_FIFO_GRAIN);
    size_t old_n = mk__align_up(old_size ? old_size : 1, MK_FIFO_GRAIN);
    void *q;

    if (!ptr)
        return mk_fifo_alloc(fifo, new_size);
    if (new_size > SIZE_MAX - MK_FIFO_GRAIN) {
        errno = ENOMEM;
        return NULL;
    }
    if ((fifo->flags & MK_FIFO_DEBUG) && !start_test(fifo, debug_chunk_of(fifo, p), p))
        mk__die("mk_fifo_realloc: %p is not a live block (freed, or inside a block)",
                ptr);
    /* The newest block ends at pos (no block of another chunk can: each lies
     * inside its own chunk, before the current chunk's header): move pos. */
    if (fifo->cur && old_size <= SIZE_MAX - MK_FIFO_GRAIN && p + old_n == fifo->pos &&
        n <= fifo->cur_end - p) {
        fifo->pos = p + n;
        MK_UNPOISON(ptr, new_size);
        MK_POISON((void *)(p + n), fifo->cur_end - (p + n));
        if (fifo->slow & FIFO_VALGRIND) {
            /* MEMPOOL_CHANGE resizes the record only: the access bits are ours. */
            VALGRIND_MEMPOOL_CHANGE(fifo, ptr, ptr, new_size);
            if (new_size > old_size)
                VALGRIND_MAKE_MEM_UNDEFINED((char *)ptr + old_size, new_size - old_size);
            else
                VALGRIND_MAKE_MEM_NOACCESS((char *)ptr + new_size, old_size - new_size);
        }
        return ptr;
    }
    if (new_size <= old_size)
        return ptr; /* shrinks where it is; the tail is reclaimed with the block */
    if (!(q = mk_fifo_alloc(fifo, new_size)))
        return NULL;
    memcpy(q, ptr, old_size);
    mk_fifo_free(fifo, ptr);
    return q;
}

void mk_fifo_stats(mk_fifo_t *fifo, mk_fifo_stats_t *out)
{
    size_t live = 0;

    for (chunk_t *c = fifo->all; c; c = c->next)
        live += (c == fifo->cur ? fifo->cur_blocks : c->blocks) - c->freed;
    *out = (mk_fifo_stats_t){
        .live_blocks = live,
        .chunks = fifo->src.chunks,
        .spare_chunks = fifo->src.spare,
        .peak_chunks = fifo->src.peak_chunks,
        .mapped_bytes = fifo->src.mapped,
    };
}

void mk_fifo_trim(mk_fifo_t *fifo)
{
    mk__chunks_trim(&fifo->src, 0);
}

void mk_fifo_destroy(mk_fifo_t *fifo)
{
    chunk_t *c, *next;

    if (!fifo)
        return;
    for (c = fifo->all; c; c = next) {
        next = c->next;
        mk__chunks_unmap(&fifo->src, c, c->size);
    }
    mk__chunks_trim(&fifo->src, 0);
    if (fifo->slow & FIFO_VALGRIND)
        VALGRIND_DESTROY_MEMPOOL(fifo);
    free(fifo);
}
