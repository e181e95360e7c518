/*
 * memkit/fifo.h - FIFO allocator.
 *
 * For blocks freed roughly in the order they were allocated: request contexts,
 * queue entries, log records. Allocation bumps a pointer through large chunks
 * (mapped with mmap, aligned to their size, so they never fragment the malloc
 * heap); each chunk counts its blocks, and freeing a block is one increment of
 * its chunk's count of frees. A chunk whose blocks have all been freed is
 * recycled: kept as a spare while the retention policy keeps it (memkit/common.h:
 * spares that stay unused go back to the OS), or returned at once.
 * Blocks carry no header: an 8-byte object takes 8 bytes.
 *
 *     mk_fifo_t *q = mk_fifo_create(NULL);
 *     req_t *r = mk_fifo_new(q, req_t, 1);
 *     char *body = mk_fifo_alloc(q, len);
 *     ...
 *     mk_fifo_free(q, body);
 *     mk_fifo_free(q, r);
 *     mk_fifo_destroy(q);
 *
 * Order. Any order of frees is correct; FIFO order is what keeps memory small,
 * because a chunk is recycled only when its last block is freed. One long-lived
 * block pins its whole chunk.
 *
 * Realloc. mk_fifo_realloc grows or shrinks the newest block in place when its
 * chunk has room; any other block is moved (allocate, copy, free). The caller
 * passes the size the block has now, like C++'s sized delete: it is how the
 * newest block is recognised (it ends where the next allocation would start) and
 * what is copied when a block moves.
 *
 * Threads. A FIFO is single-threaded: one thread at a time may call it, and nothing
 * synchronizes calls. For blocks released by other threads, see memkit/ring.h.
 *
 * Debug mode (MK_FIFO_DEBUG). Every free is checked against a per-chunk bitmap of
 * block starts: a pointer that is not a live block of this FIFO (foreign, inside a
 * block, or already freed) aborts with a message naming it. In a build with
 * AddressSanitizer (where the bitmap is always kept, to know each block's size)
 * freed blocks are poisoned; under Valgrind each block is described to memcheck.
 *
 * Errors. Size overflow or mmap failing returns NULL with errno ENOMEM and leaves
 * the FIFO as it was. An allocation of 0 bytes returns a unique pointer.
 */
#ifndef MEMKIT_FIFO_H
#define MEMKIT_FIFO_H

#include <memkit/common.h>
#include <stdbool.h>

MK__EXTERN_C_BEGIN

/* Flags for mk_fifo_config_t.flags. */
enum {
    MK_FIFO_DEBUG = 1 << 0, /* check every free: double free, foreign pointer */
};

/* Blocks are multiples of this size, and at least this aligned. */
#define MK_FIFO_GRAIN 8

typedef struct mk_fifo_config {
    size_t chunk_size;       /* a power of two >= 64 KiB; 0: 2 MiB (one huge page) */
    size_t max_spare_chunks; /* empty chunks kept at most; 0: as the retention
                                policy decides (common.h); SIZE_MAX keeps all */
    unsigned flags;          /* MK_FIFO_* */
    unsigned decay_ms;       /* spares unused this long go back; 0: MK_DECAY_MS */
} mk_fifo_config_t;

typedef struct mk_fifo_stats {
    size_t live_blocks;  /* allocated and not freed */
    size_t chunks;       /* chunks mapped, spares included */
    size_t spare_chunks; /* of which are empty, kept for reuse */
    size_t peak_chunks;  /* high-water mark of chunks */
    size_t mapped_bytes;
} mk_fifo_stats_t;

typedef struct mk_fifo mk_fifo_t;

/* A chunk header, at the start of every chunk. Public only for the inline fast
 * paths: treat every field as private. */
struct mk__fifo_chunk {
    size_t freed;  /* blocks of this chunk freed so far */
    size_t blocks; /* blocks allocated in it; SIZE_MAX while it is the current chunk
                      (the FIFO counts those), so a free never finds it empty */
    mk_fifo_t *fifo;
    size_t size;                        /* bytes mapped */
    uintptr_t payload;                  /* first byte blocks may use */
    uintptr_t top;                      /* end of the last block (current: fifo->pos) */
    struct mk__fifo_chunk *prev, *next; /* chunks in use, or the spare list */
    uint8_t *starts; /* debug/ASan: bitmaps of all block starts, then of live ones */
    uint32_t magic;
};

/* The FIFO's state; public for inlining: treat every field as private. */
struct mk_fifo {
    uintptr_t pos, end;         /* free room of the current chunk; end 0: slow path */
    size_t cur_blocks;          /* blocks allocated in the current chunk */
    uintptr_t chunk_mask;       /* ~(chunk_size - 1) */
    struct mk__fifo_chunk *cur; /* NULL before the first allocation */
    uintptr_t cur_end;          /* end of the current chunk (end may be 0 instead) */
    unsigned slow;              /* nonzero: every call takes the slow path */
    bool tracked;               /* chunks keep a bitmap of block starts */
    unsigned flags;
    struct mk__chunks src;      /* chunk_size, spares, counts (common.h) */
    struct mk__fifo_chunk *all; /* every chunk in use (not spares) */
};

/* Creates a FIFO; config may be NULL for the defaults. NULL with errno EINVAL (bad
 * config) or ENOMEM. */
MK_API mk_fifo_t *mk_fifo_create(const mk_fifo_config_t *config);
/* Returns every chunk to the OS, live blocks included. NULL is ignored. */
MK_API void mk_fifo_destroy(mk_fifo_t *fifo);

MK_API void *mk__fifo_alloc_slow(mk_fifo_t *fifo, size_t size, size_t align);
MK_API void mk__fifo_free_slow(mk_fifo_t *fifo, void *p);
MK_API void mk__fifo_chunk_empty(mk_fifo_t *fifo, struct mk__fifo_chunk *c);

/* Returns size bytes aligned to align (a power of two, at least MK_FIFO_GRAIN), or
 * NULL with errno ENOMEM. Fast path: a bump in the current chunk. */
static inline void *mk_fifo_alloc_aligned(mk_fifo_t *fifo, size_t size, size_t align)
{
    /* The chunk's end is page-aligned, pos a multiple of the grain (mk__bump). */
    void *p = mk__bump(&fifo->pos, fifo->end, size, align, MK_FIFO_GRAIN);

    if (MK_LIKELY(p != NULL)) {
        fifo->cur_blocks++;
        return p;
    }
    return mk__fifo_alloc_slow(fifo, size, align);
}

/* Returns size bytes aligned like malloc's (16). */
static inline void *mk_fifo_alloc(mk_fifo_t *fifo, size_t size)
{
    return mk_fifo_alloc_aligned(fifo, size, MK_MALLOC_ALIGN);
}

/* n objects of type, aligned to the type only (8-byte nodes pack 8 bytes apart);
 * NULL with errno ENOMEM when n * sizeof(type) overflows. */
#define mk_fifo_new(fifo, type, n)                                                       \
    ((type *)mk__fifo_new((fifo), sizeof(type), (n),                                     \
                          MK_ALIGNOF(type) > MK_FIFO_GRAIN ? MK_ALIGNOF(type)            \
                                                           : MK_FIFO_GRAIN))

static inline void *mk__fifo_new(mk_fifo_t *fifo, size_t size, size_t n, size_t align)
{
    size_t bytes;

    if (MK_UNLIKELY(__builtin_mul_overflow(size, n, &bytes)))
        bytes = SIZE_MAX; /* the slow path reports ENOMEM */
    return mk_fifo_alloc_aligned(fifo, bytes, align);
}

/* Frees a block; NULL is ignored. Fast path: count the free in the block's chunk;
 * the slow path runs only when that was the chunk's last live block. */
static inline void mk_fifo_free(mk_fifo_t *fifo, void *p)
{
    struct mk__fifo_chunk *c;

    if (MK_UNLIKELY(fifo->slow || p == NULL)) {
        mk__fifo_free_slow(fifo, p);
        return;
    }
    c = (struct mk__fifo_chunk *)((uintptr_t)p & fifo->chunk_mask);
    if (MK_UNLIKELY(++c->freed == c->blocks))
        mk__fifo_chunk_empty(fifo, c);
}

/* Resizes p (allocated with old_size bytes; NULL allocates). The newest block
 * changes size in place when its chunk has room; others move. NULL with errno
 * ENOMEM leaves p as it was. */
MK_API void *mk_fifo_realloc(mk_fifo_t *fifo, void *p, size_t old_size, size_t new_size);

MK_API void mk_fifo_stats(mk_fifo_t *fifo, mk_fifo_stats_t *out);
/* Returns every spare chunk to the OS now (the chunks with live blocks stay). */
MK_API void mk_fifo_trim(mk_fifo_t *fifo);

MK__EXTERN_C_END

#endif /* MEMKIT_FIFO_H */
