/*
 * memkit/pool.h - fixed-size pool allocator.
 *
 * For the most common pattern of all: many objects of one size (list nodes, hash
 * entries, request contexts) allocated and freed in any order. Allocation and free
 * are O(1): items live in slabs (slab_size bytes, aligned to slab_size, so an item's
 * slab is found by masking its address); each slab keeps an intrusive free list and
 * a count of live items. A slab whose last item is freed is kept for reuse while the
 * retention policy keeps it (memkit/common.h: empty slabs that stay unused go back to
 * the OS); mk_pool_trim returns them all now.
 *
 *     mk_pool_t *pool = mk_pool_create(&(mk_pool_config_t){.item_size = sizeof(node_t)});
 *     node_t *n = mk_pool_alloc(pool);
 *     mk_pool_free(pool, n);
 *     mk_pool_destroy(pool);
 *
 * Threads. A pool is single-threaded: one thread at a time may call it, and nothing
 * synchronizes calls. Set MK_POOL_THREAD_SAFE to serialize every call with a mutex
 * (simple and correct, not fast: prefer one pool per thread).
 *
 * Debug mode (MK_POOL_DEBUG). Every free is checked: a pointer that is not an item of
 * this pool (foreign, misaligned within its slab, or never allocated) and a double free
 * abort with a message naming the pointer. Costs a bitmap per slab and a walk of the
 * slab list per free. In a build with AddressSanitizer, or under Valgrind, free items
 * are poisoned (or described with mempool requests) whatever the flags.
 */
#ifndef MEMKIT_POOL_H
#define MEMKIT_POOL_H

#include <memkit/common.h>
#include <stdbool.h>

MK__EXTERN_C_BEGIN

/* Flags for mk_pool_config_t.flags. */
enum {
    MK_POOL_ZERO = 1 << 0,        /* mk_pool_alloc returns zero-filled items */
    MK_POOL_DEBUG = 1 << 1,       /* check every free: double free, foreign pointer */
    MK_POOL_THREAD_SAFE = 1 << 2, /* serialize calls with a mutex */
};

typedef struct mk_pool_config {
    size_t item_size;       /* bytes per item (required, > 0; rounded up to align) */
    size_t align;           /* item alignment, a power of two; 0: natural for the size,
                               at most 16 (like malloc) */
    size_t slab_size;       /* bytes per slab, a power of two >= 4096; 0: 64 KiB, or
                               larger when an item would not leave room for 8 */
    size_t max_empty_slabs; /* empty slabs kept at most; 0: as the retention
                               policy decides (common.h); SIZE_MAX keeps all */
    unsigned flags;         /* MK_POOL_* */
    unsigned decay_ms;      /* empty slabs unused this long go back; 0: MK_DECAY_MS */
} mk_pool_config_t;

typedef struct mk_pool_stats {
    size_t item_size;   /* stride between items (item_size rounded up to alignment) */
    size_t live_items;  /* allocated and not freed (summed over slabs by this call) */
    size_t slabs;       /* slabs mapped */
    size_t peak_slabs;  /* high-water mark of slabs */
    size_t empty_slabs; /* of which hold no live item */
    size_t mapped_bytes;
} mk_pool_stats_t;

typedef struct mk_pool mk_pool_t;

/* A slab header, at the start of every slab. Public only for the inline fast path. */
struct mk__pool_slab {
    void *free;                        /* intrusive list of freed items */
    uintptr_t bump, end;               /* items never handed out: [bump, end) */
    size_t used;                       /* live items */
    mk_pool_t *pool;                   /* owner */
    struct mk__pool_slab *prev, *next; /* partial list (slabs with room, not current) */
    struct mk__pool_slab *all_prev, *all_next; /* every slab of the pool */
    uint8_t *bits;                             /* debug mode: allocated-item bitmap */
    uint32_t magic;
    bool listed; /* current slab, or on the partial list */
    bool empty;  /* counted in empty_slabs */
};

/* The pool's state; public for inlining: treat every field as private. */
struct mk_pool {
    struct mk__pool_slab *cur; /* slab allocations come from; never NULL */
    size_t stride;             /* item size rounded up to the alignment */
    uintptr_t slab_mask;       /* ~(slab_size - 1) */
    unsigned slow;             /* nonzero: every call takes the slow path */
    unsigned flags;
    size_t slab_size, items_offset;
    size_t slabs, peak_slabs, empty_slabs, mapped;
    struct mk__retain retain;      /* how long empty slabs are kept */
    struct mk__pool_slab *partial; /* slabs with room other than cur */
    struct mk__pool_slab *all;     /* every slab */
    uintptr_t fresh, fresh_end;    /* mapped but never used slabs, [fresh, fresh_end) */
    size_t batch;                  /* slabs to map next time */
    struct mk__pool_slab none;     /* an empty slab: cur before the first allocation */
    void *lock;                    /* MK_POOL_THREAD_SAFE: a pthread mutex */
};

/* Creates a pool; NULL with errno EINVAL (bad config) or ENOMEM. */
MK_API mk_pool_t *mk_pool_create(const mk_pool_config_t *config);
/* Returns every slab to the OS, live items included. */
MK_API void mk_pool_destroy(mk_pool_t *pool);

MK_API void *mk__pool_alloc_slow(mk_pool_t *pool);
MK_API void mk__pool_free_slow(mk_pool_t *pool, void *p);
MK_API void mk__pool_slab_changed(mk_pool_t *pool, struct mk__pool_slab *s);

/*
 * Returns one item, or NULL with errno ENOMEM. Fast path: pop the current slab's free
 * list, else bump into its never-used items.
 */
static inline void *mk_pool_alloc(mk_pool_t *pool)
{
    struct mk__pool_slab *s;
    void *p;

    if (MK_LIKELY(!pool->slow)) {
        s = pool->cur; /* only here: in thread-safe mode cur is read under the lock */
        p = s->free;
        if (MK_LIKELY(p != NULL)) {
            s->free = *(void **)p;
            s->used++;
            return p;
        }
        if (MK_LIKELY(s->bump < s->end)) {
            p = (void *)s->bump;
            s->bump += pool->stride;
            s->used++;
            return p;
        }
    }
    return mk__pool_alloc_slow(pool);
}

/*
 * Returns an item to the pool; NULL is ignored. Fast path: push on its slab's free
 * list; the slow path runs only when the slab becomes empty or was full.
 */
static inline void mk_pool_free(mk_pool_t *pool, void *p)
{
    struct mk__pool_slab *s;

    if (MK_UNLIKELY(pool->slow || p == NULL)) {
        mk__pool_free_slow(pool, p);
        return;
    }
    s = (struct mk__pool_slab *)((uintptr_t)p & pool->slab_mask);
    *(void **)p = s->free;
    s->free = p;
    if (MK_LIKELY(--s->used != 0 && s->listed))
        return;
    /* The current slab emptied goes back to bump allocation, inline (an
     * alloc/free ping-pong stays here): bumping has no dependent load, where
     * popping a free list loads each item's link. Another slab emptied, or
     * one that was full (unlisted), goes to the slow path. pool->cur is
     * stable here: in thread-safe mode pool->slow sends every free there. */
    if (s->used == 0 && s == pool->cur) {
        s->free = NULL;
        s->bump = (uintptr_t)s + pool->items_offset;
        return;
    }
    mk__pool_slab_changed(pool, s);
}

MK_API void mk_pool_stats(mk_pool_t *pool, mk_pool_stats_t *out);
/* Returns every empty slab to the OS now (the slabs with live items stay). */
MK_API void mk_pool_trim(mk_pool_t *pool);

MK__EXTERN_C_END

#endif /* MEMKIT_POOL_H */
