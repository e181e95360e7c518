/*
 * ring.c - the ring allocator: frames, chunks, reclaiming released frames.
 *
 * Memory is a list of chunks in the order they were filled, oldest first; the
 * last one is the current chunk. Frames follow one another through the chunks;
 * each starts with a header holding its state, which is the only thing other
 * threads write (one atomic store, in mk_ring_release). The owner keeps the
 * frames it has not reclaimed in a list, oldest first, and reclaims lazily: when
 * the current chunk is full it walks from the oldest frame over released ones,
 * and every chunk before the chunk of the oldest frame still unreleased holds
 * only released frames, so it becomes a spare (or goes back to the OS).
 *
 * Invariants (owner side):
 *   - oldest..newest are the frames opened and not reclaimed, in opening order;
 *     open, when set, is newest;
 *   - the chunks oldest_chunk..cur are in use; every unreclaimed frame starts in
 *     one of them; chunks are only recycled from the oldest end;
 *   - end is 0 unless a frame is open and the ring is not in slow mode.
 *
 * Memory order: release stores RELEASED with memory_order_release, and the owner
 * loads it with memory_order_acquire before reusing the frame's memory, so the
 * releasing thread's last reads and writes of the frame happen before the
 * owner's new writes into it.
 */
#include "internal.h"

#include <memkit/ring.h>

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define FRAME_MAGIC   0x6d6b7266u /* "mkrf" */
#define CHUNK_DEFAULT MK_HUGE_PAGE
#define CHUNK_MIN     ((size_t)64 << 10)
#define RING_ASAN     (1u << 8)
#define RING_VALGRIND (1u << 9)

enum { FRAME_OPEN = 1, FRAME_SEALED = 2, FRAME_RELEASED = 3 };

typedef struct mk__ring_chunk {
    struct mk__ring_chunk *next; /* the next newer chunk in use, or the next spare */
    size_t size;                 /* bytes mapped */
} chunk_t;

struct mk_ring_frame {
    _Atomic uint32_t state; /* FRAME_*: the only field other threads write */
    uint32_t magic;
    mk_ring_t *ring;
    mk_ring_frame_t *next; /* the next newer frame (owner only) */
    chunk_t *chunk;        /* the chunk the frame starts in */
    uintptr_t end;         /* where the frame ended, if in its first chunk; else 0 */
};

#define FRAME_SIZE mk__align_up(sizeof(mk_ring_frame_t), 16)
#define CHUNK_HEAD mk__align_up(sizeof(chunk_t), 64)

/* ------------------------------------------------------------------------ */
/* poisoning: ASan and Valgrind both see freed ring memory as off limits      */

static void ring_poison(const mk_ring_t *ring, uintptr_t p, size_t n)
{
    if (ring->slow)
        mk__set_access((void *)p, n, false, ring->slow & RING_VALGRIND);
}

static void ring_unpoison(const mk_ring_t *ring, uintptr_t p, size_t n)
{
    if (ring->slow)
        mk__set_access((void *)p, n, true, ring->slow & RING_VALGRIND);
}

/* ------------------------------------------------------------------------ */
/* creation and chunks                                                       */

mk_ring_t *mk_ring_create(const mk_ring_config_t *config)
{
    mk_ring_config_t cfg = config ? *config : (mk_ring_config_t){0};
    mk_ring_t *ring;

    if (!cfg.chunk_size)
        cfg.chunk_size = CHUNK_DEFAULT;
    if (!mk__is_pow2(cfg.chunk_size) || cfg.chunk_size < CHUNK_MIN ||
        cfg.chunk_size > ((size_t)1 << 40) || (cfg.flags & ~(unsigned)MK_RING_DEBUG)) {
        errno = EINVAL;
        return NULL;
    }
    if (!(ring = calloc(1, sizeof *ring))) {
        errno = ENOMEM;
        return NULL;
    }
    mk__chunks_init(&ring->src, cfg.chunk_size, cfg.max_spare_chunks, cfg.decay_ms,
                    false);
    ring->flags = cfg.flags;
#ifdef MK_ASAN
    ring->slow |= RING_ASAN;
#endif
    if (MK_ON_VALGRIND())
        ring->slow |= RING_VALGRIND;
    return ring;
}

static chunk_t *chunk_get(mk_ring_t *ring, size_t size)
{
    bool fresh;
    chunk_t *c = mk__chunks_get(&ring->src, size, &fresh);

    if (!c)
        return NULL;
    c->size = size;
    c->next = NULL;
    ring_poison(ring, (uintptr_t)c + CHUNK_HEAD, size - CHUNK_HEAD);
    return c;
}

/* A chunk whose frames are all released: spare or back to the OS. */
static void chunk_recycle(mk_ring_t *ring, chunk_t *c)
{
    if (c->size == ring->src.chunk_size)
        ring_poison(ring, (uintptr_t)c + CHUNK_HEAD, c->size - CHUNK_HEAD);
    mk__chunks_put(&ring->src, c, c->size);
}

/* Appends c to the chunks in use and makes it current. */
static void cur_set(mk_ring_t *ring, chunk_t *c)
{
    if (ring->cur)
        ring->cur->next = c;
    else
        ring->oldest_chunk = c;
    ring->cur = c;
    ring->pos = (uintptr_t)c + CHUNK_HEAD;
    ring->cur_end = (uintptr_t)c + c->size;
    ring->end = ring->open && !ring->slow ? ring->cur_end : 0;
}

/* ------------------------------------------------------------------------ */
/* reclaiming released frames (owner thread)                                 */

static bool frame_released(mk_ring_frame_t *f)
{
    return atomic_load_explicit(&f->state, memory_order_acquire) == FRAME_RELEASED;
}

void mk_ring_reclaim(mk_ring_t *ring)
{
    chunk_t *keep;

    while (ring->oldest && ring->oldest != ring->open && frame_released(ring->oldest)) {
        MK_ASSERT(ring->oldest->magic == FRAME_MAGIC && ring->oldest->ring == ring);
        ring->oldest = ring->oldest->next;
        if (!ring->oldest)
            ring->newest = NULL;
    }
    /* Chunks before the oldest live frame's chunk hold only released frames. */
    keep = ring->oldest ? ring->oldest->chunk : ring->cur;
    MK_ASSERT(!ring->open || ring->oldest); /* the open frame is never reclaimed */
    while (ring->oldest_chunk && ring->oldest_chunk != keep) {
        chunk_t *c = ring->oldest_chunk;
        MK_ASSERT(c != ring->cur); /* keep is at or before cur: the walk stops first */

        ring->oldest_chunk = c->next;
        chunk_recycle(ring, c);
    }
    /* Nothing live at all: the current chunk starts over. */
    if (!ring->oldest && ring->cur) {
        ring->pos = (uintptr_t)ring->cur + CHUNK_HEAD;
        ring_poison(ring, ring->pos, ring->cur_end - ring->pos);
    }
}

void mk_ring_trim(mk_ring_t *ring)
{
    mk_ring_reclaim(ring);
    mk__chunks_trim(&ring->src, 0);
}

/* ------------------------------------------------------------------------ */
/* room: bumping, and a new chunk when the current one is full                */

static uintptr_t cur_bump(mk_ring_t *ring, size_t n, size_t align)
{
    uintptr_t p;

    if (!ring->cur)
        return 0;
    p = mk__align_up(ring->pos, align);
    if (p > ring->cur_end || n > ring->cur_end - p)
        return 0;
    ring->pos = p + n;
    MK_ASSERT(ring->pos <= ring->cur_end);
    return p;
}

/* n bytes aligned to align, in the current chunk or a new one; 0 on ENOMEM. */
static uintptr_t room(mk_ring_t *ring, size_t n, size_t align)
{
    uintptr_t p = cur_bump(ring, n, align);
    size_t need, size;
    chunk_t *c;

    if (p)
        return p;
    /* The current chunk is full: reuse what was released before mapping more. */
    mk_ring_reclaim(ring);
    if ((p = cur_bump(ring, n, align)))
        return p;
    need = CHUNK_HEAD + align + n;
    if (need < n)
        return 0;
    size = need <= ring->src.chunk_size ? ring->src.chunk_size
                                        : mk__align_up(need, ring->src.chunk_size);
    if (size < need || !(c = chunk_get(ring, size)))
        return 0;
    cur_set(ring, c);
    p = cur_bump(ring, n, align);
    MK_ASSERT(p != 0);
    return p;
}

void *mk__ring_alloc_slow(mk_ring_t *ring, size_t size, size_t align)
{
    size_t n = mk__align_up(size ? size : 1, MK_RING_GRAIN);
    uintptr_t p;

    if (!ring->open)
        mk__die(ring->sealed ? "mk_ring_alloc: the frame is sealed; open a new frame"
                             : "mk_ring_alloc: no open frame (call mk_ring_open first)");
    if (!mk__is_pow2(align) || align < MK_RING_GRAIN || align > ring->src.chunk_size / 4)
        mk__die("mk_ring_alloc_aligned: alignment %zu is not a power of two in [%d, "
                "chunk size / 4]",
                align, MK_RING_GRAIN);
    if (size > SIZE_MAX - MK_RING_GRAIN || !(p = room(ring, n, align))) {
        errno = ENOMEM;
        return NULL;
    }
    ring_unpoison(ring, p, size);
    return (void *)p;
}

/* ------------------------------------------------------------------------ */
/* frames                                                                    */

mk_ring_frame_t *mk_ring_open(mk_ring_t *ring)
{
    mk_ring_frame_t *f;
    uintptr_t p;

    if (ring->open)
        mk__die("mk_ring_open: a frame is already open (seal it first)");
    if (!(p = room(ring, FRAME_SIZE, 16))) {
        errno = ENOMEM;
        return NULL;
    }
    ring_unpoison(ring, p, FRAME_SIZE);
    f = (mk_ring_frame_t *)p;
    atomic_init(&f->state, FRAME_OPEN);
    f->magic = FRAME_MAGIC;
    f->ring = ring;
    f->next = NULL;
    f->chunk = ring->cur;
    f->end = 0;
    MK_ASSERT((ring->newest == NULL) == (ring->oldest == NULL));
    if (ring->newest)
        ring->newest->next = f;
    else
        ring->oldest = f;
    ring->newest = f;
    ring->open = f;
    ring->sealed = false;
    ring->end = ring->slow ? 0 : ring->cur_end;
    return f;
}

mk_ring_frame_t *mk_ring_seal(mk_ring_t *ring)
{
    mk_ring_frame_t *f = ring->open;

    if (!f)
        mk__die("mk_ring_seal: no open frame");
    MK_ASSERT(f == ring->newest && f->magic == FRAME_MAGIC);
    f->end = f->chunk == ring->cur ? ring->pos : 0;
    /* Relaxed: what publishes the frame to other threads is the caller's handoff. */
    atomic_store_explicit(&f->state, FRAME_SEALED, memory_order_relaxed);
    ring->open = NULL;
    ring->sealed = true;
    ring->end = 0;
    return f;
}

void mk_ring_release(mk_ring_frame_t *f)
{
    mk_ring_t *ring;

    if (!f || f->magic != FRAME_MAGIC)
        mk__die("mk_ring_release: %p is not a frame (foreign pointer, or released and "
                "reused)",
                (void *)f);
    ring = f->ring;
    /* Poison before the store: once it is visible the owner may reuse the memory.
     * A frame that spans chunks is poisoned in its first chunk only. */
    if (ring->slow) {
        uintptr_t from = (uintptr_t)f + FRAME_SIZE;
        uintptr_t to = f->end ? f->end : (uintptr_t)f->chunk + f->chunk->size;
        ring_poison(ring, from, to - from);
    }
    if (ring->flags & MK_RING_DEBUG) {
        uint32_t was =
            atomic_exchange_explicit(&f->state, FRAME_RELEASED, memory_order_acq_rel);
        if (was == FRAME_RELEASED)
            mk__die("mk_ring_release: frame %p released twice", (void *)f);
        if (was == FRAME_OPEN)
            mk__die("mk_ring_release: frame %p is still open (seal it first)", (void *)f);
        return;
    }
    atomic_store_explicit(&f->state, FRAME_RELEASED, memory_order_release);
}

/* ------------------------------------------------------------------------ */
/* stats, destroy                                                            */

void mk_ring_stats(mk_ring_t *ring, mk_ring_stats_t *out)
{
    size_t frames = 0;

    for (mk_ring_frame_t *f = ring->oldest; f; f = f->next)
        frames += f == ring->open || !frame_released(f);
    *out = (mk_ring_stats_t){
        .frames = frames,
        .chunks = ring->src.chunks,
        .spare_chunks = ring->src.spare,
        .peak_chunks = ring->src.peak_chunks,
        .mapped_bytes = ring->src.mapped,
    };
}

void mk_ring_destroy(mk_ring_t *ring)
{
    chunk_t *c, *next;

    if (!ring)
        return;
    for (c = ring->oldest_chunk; c; c = next) {
        next = c->next;
        mk__chunks_unmap(&ring->src, c, c->size);
    }
    mk__chunks_trim(&ring->src, 0);
    free(ring);
}
