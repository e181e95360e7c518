/*
 * memkit/ring.h - ring allocator: frames built by one thread, released by any.
 *
 * For messages a producer builds for other threads: a request parsed into a few
 * blocks and handed to a worker, a batch of records passed down a pipeline. The
 * owner thread opens a frame, allocates into it (a pointer bump, no atomic
 * operation), and seals it; the frame's memory stays valid until some thread
 * releases the frame, with one atomic store. The owner reuses the memory of
 * released frames at the oldest end, without returning it to the OS.
 *
 *     mk_ring_t *ring = mk_ring_create(NULL);
 *     // owner thread
 *     mk_ring_frame_t *f = mk_ring_open(ring);
 *     msg_t *m = mk_ring_new(ring, msg_t, 1);
 *     m->body = mk_ring_alloc(ring, len);
 *     m->frame = f;
 *     mk_ring_seal(ring);
 *     queue_push(q, m);
 *     // any thread, later
 *     msg_t *m = queue_pop(q);
 *     ...
 *     mk_ring_release(m->frame);   // m is gone
 *
 * Order. Frames are laid out one after another in large chunks (mmap, 2 MiB by
 * default). Releasing frames in the order they were opened keeps memory small;
 * releasing any other frame is allowed, and its memory is reused once every older
 * frame is released too. One frame never released pins every chunk after it.
 *
 * Threads. mk_ring_open, the allocation functions, mk_ring_seal, mk_ring_reclaim,
 * mk_ring_stats and mk_ring_destroy belong to the owner thread (one thread at a
 * time). mk_ring_release may be called from any thread, concurrently, and is
 * lock-free: the owner finds released frames when it next needs room. Whatever
 * passes a frame to another thread (a queue, a mutex) must order the owner's writes
 * before the release, as for any shared data.
 *
 * Checks. Always: allocating with no open frame or into a sealed frame, opening a
 * frame while one is open, and releasing something that is not a frame (bad magic)
 * abort with a message. Debug mode (MK_RING_DEBUG) also catches a double release
 * and the release of a frame still open; a frame whose memory was already reused
 * cannot be told from a new one, so a late double release may go unnoticed. In a
 * build with AddressSanitizer, or under Valgrind, a released frame's memory is
 * poisoned (the part in the frame's first chunk), so use after release is reported.
 *
 * Errors. Size overflow or mmap failing returns NULL with errno ENOMEM; the open
 * frame stays open and valid.
 */
#ifndef MEMKIT_RING_H
#define MEMKIT_RING_H

#include <memkit/common.h>
#include <stdbool.h>

MK__EXTERN_C_BEGIN

/* Flags for mk_ring_config_t.flags. */
enum {
    MK_RING_DEBUG = 1 << 0, /* catch double release and release of an open frame */
};

/* Blocks are multiples of this size, and at least this aligned. */
#define MK_RING_GRAIN 8

typedef struct mk_ring_config {
    size_t chunk_size;       /* bytes per chunk, a power of two >= 64 KiB; 0: 2 MiB */
    size_t max_spare_chunks; /* empty chunks kept at most; 0: as the retention
                                policy decides (common.h); SIZE_MAX keeps all */
    unsigned flags;          /* MK_RING_* */
    unsigned decay_ms;       /* spares unused this long go back; 0: MK_DECAY_MS */
} mk_ring_config_t;

typedef struct mk_ring_stats {
    size_t frames;       /* frames not yet released (the open one included) */
    size_t chunks;       /* chunks mapped, spares included */
    size_t spare_chunks; /* of which are empty, kept for reuse */
    size_t peak_chunks;  /* high-water mark of chunks */
    size_t mapped_bytes;
} mk_ring_stats_t;

typedef struct mk_ring mk_ring_t;
typedef struct mk_ring_frame mk_ring_frame_t;

/* The ring's state; public for inlining: treat every field as private. */
struct mk_ring {
    uintptr_t pos, end;    /* free room of the current chunk; end 0: slow path */
    uintptr_t cur_end;     /* end of the current chunk (end may be 0 instead) */
    mk_ring_frame_t *open; /* the frame being built, or NULL */
    bool sealed;           /* the last frame was sealed (for the error message) */
    unsigned slow;         /* nonzero: every allocation takes the slow path */
    unsigned flags;
    struct mk__chunks src;               /* chunk_size, spares, counts (common.h) */
    struct mk__ring_chunk *cur;          /* the chunk allocations bump through, or NULL */
    struct mk__ring_chunk *oldest_chunk; /* chunks in use, oldest first ... */
    mk_ring_frame_t *oldest, *newest;    /* frames not yet reclaimed, oldest first */
};

/* Creates a ring; config may be NULL for the defaults. NULL with errno EINVAL (bad
 * config) or ENOMEM. */
MK_API mk_ring_t *mk_ring_create(const mk_ring_config_t *config);
/* Returns every chunk to the OS. No thread may release a frame of it afterwards. */
MK_API void mk_ring_destroy(mk_ring_t *ring);

/* Opens a frame (owner thread); NULL with errno ENOMEM. Aborts if one is open. */
MK_API mk_ring_frame_t *mk_ring_open(mk_ring_t *ring);
/* Seals the open frame (owner thread): no more allocation into it; its memory
 * stays valid until it is released. Returns the frame. */
MK_API mk_ring_frame_t *mk_ring_seal(mk_ring_t *ring);
/* Releases a sealed frame, from any thread: all its blocks are gone. */
MK_API void mk_ring_release(mk_ring_frame_t *frame);
/* Owner thread: reuses the memory of frames released so far now, rather than when
 * the current chunk fills up; the retention policy decides which spares stay. */
MK_API void mk_ring_reclaim(mk_ring_t *ring);
/* Owner thread: reclaims, then returns every spare chunk to the OS now. */
MK_API void mk_ring_trim(mk_ring_t *ring);
MK_API void mk_ring_stats(mk_ring_t *ring, mk_ring_stats_t *out);

MK_API void *mk__ring_alloc_slow(mk_ring_t *ring, size_t size, size_t align);

/* Returns size bytes of the open frame aligned to align (a power of two, at least
 * MK_RING_GRAIN), or NULL with errno ENOMEM. Fast path: a bump, no atomics. */
static inline void *mk_ring_alloc_aligned(mk_ring_t *ring, size_t size, size_t align)
{
    /* The chunk's end is page-aligned, pos a multiple of the grain (mk__bump). */
    void *p = mk__bump(&ring->pos, ring->end, size, align, MK_RING_GRAIN);

    return MK_LIKELY(p != NULL) ? p : mk__ring_alloc_slow(ring, size, align);
}

/* Returns size bytes of the open frame aligned like malloc's (16). */
static inline void *mk_ring_alloc(mk_ring_t *ring, size_t size)
{
    return mk_ring_alloc_aligned(ring, size, MK_MALLOC_ALIGN);
}

static inline void *mk__ring_new(mk_ring_t *ring, size_t size, size_t n, size_t align)
{
    size_t bytes;

    if (MK_UNLIKELY(__builtin_mul_overflow(size, n, &bytes)))
        bytes = SIZE_MAX; /* the slow path reports ENOMEM */
    return mk_ring_alloc_aligned(ring, bytes, align);
}

/* n objects of type in the open frame, aligned to the type only. */
#define mk_ring_new(ring, type, n)                                                       \
    ((type *)mk__ring_new((ring), sizeof(type), (n),                                     \
                          MK_ALIGNOF(type) > MK_RING_GRAIN ? MK_ALIGNOF(type)            \
                                                           : MK_RING_GRAIN))

MK__EXTERN_C_END

#endif /* MEMKIT_RING_H */
