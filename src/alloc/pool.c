/*
 * pool.c - the fixed-size pool: slabs, the slow paths, and debug mode.
 *
 * The inline fast paths in pool.h touch only the current slab (alloc) or the item's
 * own slab (free). Everything else happens here:
 *   - switching the current slab when it is full (partial list first, then a fresh
 *     slab from the batch of mapped-but-unused slabs, then a new batch);
 *   - relinking a full slab that got a free item, and counting/returning empty ones;
 *   - every call when pool->slow is set (debug, zeroing, locking, ASan, Valgrind).
 *
 * Slabs are mapped in batches (1, 2, 4 ... 64 slabs, aligned to the slab size), so a
 * pool of 100M nodes makes a few hundred mmap calls, not thousands, and a batch of at
 * least 2 MiB is aligned for huge pages. A single empty slab is returned with munmap of
 * its own range, which the kernel allows anywhere inside a batch.
 *
 * Invariants:
 *   - cur is never NULL; before the first slab it is &pool->none (no room);
 *   - s->listed <=> s == cur or s is on the partial list;
 *   - s->empty <=> s->used == 0 and s was counted in empty_slabs (never for cur);
 *   - a slab with used == 0 that is not cur is listed (it has room).
 */
#include "internal.h"

#include <memkit/pool.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLAB_MAGIC      0x6d6b706cu /* "mkpl" */
#define SLAB_DEFAULT    ((size_t)64 << 10)
#define SLAB_MIN_ITEMS  8
#define BATCH_MAX_SLABS 64
#define POOL_SLOW_FLAGS (MK_POOL_ZERO | MK_POOL_DEBUG | MK_POOL_THREAD_SAFE)

typedef struct mk__pool_slab slab_t;

/* ------------------------------------------------------------------------ */
/* configuration                                                             */

static size_t natural_align(size_t item_size)
{
    size_t a = 16;

    while (a > 8 && item_size % a)
        a /= 2;
    return a; /* >= 8: every item must hold the free-list link */
}

/* Bytes before the first item: header, debug bitmap, alignment padding. */
static size_t items_offset(size_t slab_size, size_t stride, size_t align, bool debug)
{
    size_t bitmap = debug ? (slab_size / stride + 7) / 8 : 0;

    return mk__align_up(sizeof(slab_t) + bitmap, align);
}

/* True if a slab of `slab` bytes has room for `n` items after its header. */
static bool slab_holds(size_t slab, size_t stride, size_t align, bool debug, size_t n)
{
    return items_offset(slab, stride, align, debug) + n * stride <= slab;
}

static size_t items_per_slab(const mk_pool_t *pool)
{
    return (pool->slab_size - pool->items_offset) / pool->stride;
}

static bool pool_configure(mk_pool_t *pool, const mk_pool_config_t *cfg)
{
    size_t align = cfg->align ? cfg->align : natural_align(cfg->item_size);
    bool debug = cfg->flags & MK_POOL_DEBUG;
    size_t slab = cfg->slab_size;

    if (!cfg->item_size || !mk__is_pow2(align) || cfg->item_size > ((size_t)1 << 40))
        return false;
    if (align < 8)
        align = 8;
    pool->stride = mk__align_up(cfg->item_size < 8 ? 8 : cfg->item_size, align);
    if (slab) {
        if (!mk__is_pow2(slab) || slab < 4096)
            return false;
    } else {
        /* Default 64 KiB, doubled until at least SLAB_MIN_ITEMS items fit. */
        slab = SLAB_DEFAULT;
        while (slab < ((size_t)1 << 40) &&
               !slab_holds(slab, pool->stride, align, debug, SLAB_MIN_ITEMS))
            slab *= 2;
    }
    pool->slab_size = slab;
    pool->slab_mask = ~(uintptr_t)(slab - 1);
    pool->items_offset = items_offset(slab, pool->stride, align, debug);
    if (pool->items_offset >= slab || items_per_slab(pool) == 0)
        return false;
    pool->flags = cfg->flags;
    mk__retain_init(&pool->retain, cfg->max_empty_slabs, slab, cfg->decay_ms);
    return true;
}

mk_pool_t *mk_pool_create(const mk_pool_config_t *config)
{
    mk_pool_t *pool = calloc(1, sizeof *pool);

    if (!pool) {
        errno = ENOMEM;
        return NULL;
    }
    if (!config || !pool_configure(pool, config)) {
        free(pool);
        errno = EINVAL;
        return NULL;
    }
    pool->cur = &pool->none;
    pool->batch = 1;
    pool->slow = pool->flags & POOL_SLOW_FLAGS;
#ifdef MK_ASAN
    pool->slow |= 1u << 8;
#endif
    if (MK_ON_VALGRIND()) {
        pool->slow |= 1u << 9;
        VALGRIND_CREATE_MEMPOOL(pool, 0, 0);
    }
    if (pool->flags & MK_POOL_THREAD_SAFE) {
        pthread_mutex_t *m = malloc(sizeof *m);

        if (!m || pthread_mutex_init(m, NULL) != 0) {
            free(m);
            free(pool);
            errno = ENOMEM;
            return NULL;
        }
        pool->lock = m;
    }
    return pool;
}

/* ------------------------------------------------------------------------ */
/* slabs                                                                     */

static void partial_push(mk_pool_t *pool, slab_t *s)
{
    s->prev = NULL;
    s->next = pool->partial;
    if (pool->partial)
        pool->partial->prev = s;
    pool->partial = s;
}

static void partial_unlink(mk_pool_t *pool, slab_t *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        pool->partial = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->prev = s->next = NULL;
}

static slab_t *slab_new(mk_pool_t *pool)
{
    slab_t *s;

    if (pool->fresh == pool->fresh_end) {
        size_t bytes = pool->batch * pool->slab_size;
        void *p = mk__pages_map(bytes, pool->slab_size);

        if (!p)
            return NULL;
        pool->fresh = (uintptr_t)p;
        pool->fresh_end = pool->fresh + bytes;
        pool->mapped += bytes;
        if (pool->batch < BATCH_MAX_SLABS)
            pool->batch *= 2;
    }
    MK_ASSERT(pool->fresh + pool->slab_size <= pool->fresh_end);
    s = (slab_t *)pool->fresh;
    pool->fresh += pool->slab_size;

    /* Fresh pages are zero: only the non-zero fields need writing. */
    s->bump = (uintptr_t)s + pool->items_offset;
    s->end = s->bump + items_per_slab(pool) * pool->stride;
    s->pool = pool;
    s->magic = SLAB_MAGIC;
    if (pool->flags & MK_POOL_DEBUG)
        s->bits = (uint8_t *)(s + 1);
    s->all_next = pool->all;
    if (pool->all)
        pool->all->all_prev = s;
    pool->all = s;
    if (++pool->slabs > pool->peak_slabs)
        pool->peak_slabs = pool->slabs;
    MK_POISON((void *)s->bump, s->end - s->bump);
    if (MK_ON_VALGRIND())
        VALGRIND_MAKE_MEM_NOACCESS((void *)s->bump, s->end - s->bump);
    return s;
}

static void slab_release(mk_pool_t *pool, slab_t *s)
{
    MK_ASSERT(s->magic == SLAB_MAGIC && s->pool == pool);
    MK_ASSERT(pool->slabs > 0 && pool->mapped >= pool->slab_size);
    if (s->all_prev)
        s->all_prev->all_next = s->all_next;
    else
        pool->all = s->all_next;
    if (s->all_next)
        s->all_next->all_prev = s->all_prev;
    pool->slabs--;
    pool->mapped -= pool->slab_size;
    /* Unpoison first: ASan's shadow outlives munmap and would taint a later mapping. */
    MK_UNPOISON(s, pool->slab_size);
    mk__pages_unmap(s, pool->slab_size);
}

/* Bytes of the slabs in use (cur counts, empty or not), and of the empty ones. */
static size_t in_use_bytes(const mk_pool_t *pool)
{
    return (pool->slabs - pool->empty_slabs) * pool->slab_size;
}

static size_t spare_bytes(const mk_pool_t *pool)
{
    return pool->empty_slabs * pool->slab_size;
}

/* Returns the empty slab s to the OS. */
static void empty_release(mk_pool_t *pool, slab_t *s)
{
    MK_ASSERT(s->empty && s->used == 0 && s->listed && s != pool->cur);
    partial_unlink(pool, s);
    pool->empty_slabs--;
    slab_release(pool, s);
}

/* Returns n empty slabs to the OS, s (empty) first, then others off the partial
 * list; n == SIZE_MAX: every empty slab. */
static void empties_release(mk_pool_t *pool, slab_t *s, size_t n)
{
    slab_t *next;

    if (s && n) {
        empty_release(pool, s);
        n--;
    }
    for (s = pool->partial; s && n; s = next) {
        next = s->next;
        if (s->empty) {
            empty_release(pool, s);
            n--;
        }
    }
}

/* Called when a free made slab `s` empty, or gave a full slab its first free item. */
void mk__pool_slab_changed(mk_pool_t *pool, slab_t *s)
{
    size_t excess;

    MK_ASSERT(s->magic == SLAB_MAGIC && s->pool == pool);
    MK_ASSERT(s->used < items_per_slab(pool)); /* a free just made room */
    if (s->used == 0) { /* emptied: it serves by bumping again, no free list */
        s->free = NULL;
        s->bump = (uintptr_t)s + pool->items_offset;
    }
    if (!s->listed) {
        s->listed = true;
        partial_push(pool, s);
    }
    if (s->used == 0 && s != pool->cur && !s->empty) {
        s->empty = true;
        pool->empty_slabs++;
        excess = mk__retain_excess(&pool->retain, in_use_bytes(pool), spare_bytes(pool),
                                   pool->slabs - pool->empty_slabs <= 1);
        empties_release(pool, s, excess / pool->slab_size);
    }
    MK_ASSERT(spare_bytes(pool) <= pool->retain.cap);
}

/* ------------------------------------------------------------------------ */
/* allocation                                                                */

/* One item from slab s, or NULL if it has no room. */
static void *slab_take(mk_pool_t *pool, slab_t *s)
{
    void *p = s->free;

    MK_ASSERT(s == &pool->none || (s->magic == SLAB_MAGIC && s->pool == pool));
    if (p) {
        MK_ASSERT(((uintptr_t)p & pool->slab_mask) == (uintptr_t)s);
        /* The link lives in a free (poisoned) item: make it readable first. */
        MK_UNPOISON(p, sizeof(void *));
        VALGRIND_MAKE_MEM_DEFINED(p, sizeof(void *));
        s->free = *(void **)p;
    } else if (s->bump < s->end) {
        p = (void *)s->bump;
        s->bump += pool->stride;
    } else {
        return NULL;
    }
    s->used++;
    MK_ASSERT(s->used <= items_per_slab(pool));
    return p;
}

static void *pool_take(mk_pool_t *pool)
{
    slab_t *old = pool->cur, *s;
    void *p = slab_take(pool, old);

    if (p)
        return p;
    s = pool->partial;
    if (s) {
        partial_unlink(pool, s);
        if (s->empty) {
            s->empty = false;
            pool->empty_slabs--;
        }
    } else {
        s = slab_new(pool);
        if (!s)
            return NULL;
    }
    mk__retain_note(&pool->retain, in_use_bytes(pool), spare_bytes(pool));
    MK_ASSERT(!s->empty && s != old && s->used < items_per_slab(pool));
    /* The old current slab is full: it leaves the lists until an item comes back. */
    old->listed = false;
    s->listed = true;
    pool->cur = s;
    return slab_take(pool, s);
}

static void pool_lock(mk_pool_t *pool)
{
    if (pool->lock)
        pthread_mutex_lock(pool->lock);
}

static void pool_unlock(mk_pool_t *pool)
{
    if (pool->lock)
        pthread_mutex_unlock(pool->lock);
}

static size_t item_index(const mk_pool_t *pool, const slab_t *s, const void *p)
{
    return ((uintptr_t)p - ((uintptr_t)s + pool->items_offset)) / pool->stride;
}

void *mk__pool_alloc_slow(mk_pool_t *pool)
{
    slab_t *s;
    void *p;

    pool_lock(pool);
    p = pool_take(pool);
    if (!p) {
        pool_unlock(pool);
        errno = ENOMEM;
        return NULL;
    }
    s = pool->cur;
    MK_UNPOISON(p, pool->stride);
    if (MK_ON_VALGRIND())
        VALGRIND_MEMPOOL_ALLOC(pool, p, pool->stride);
    if (s->bits) {
        size_t i = item_index(pool, s, p);

        s->bits[i / 8] |= (uint8_t)(1u << (i % 8));
    }
    if (pool->flags & MK_POOL_ZERO)
        memset(p, 0, pool->stride);
    pool_unlock(pool);
    return p;
}

/* ------------------------------------------------------------------------ */
/* free                                                                      */

/* Debug mode: aborts unless p is a live item of this pool. */
static void check_live_item(mk_pool_t *pool, slab_t *s, void *p)
{
    uintptr_t first = (uintptr_t)s + pool->items_offset;
    slab_t *t;
    size_t i;

    for (t = pool->all; t && t != s; t = t->all_next)
        ;
    if (!t)
        mk__die("mk_pool_free: %p does not belong to this pool", p);
    if ((uintptr_t)p < first || ((uintptr_t)p - first) % pool->stride ||
        (uintptr_t)p >= s->bump)
        mk__die("mk_pool_free: %p is not an item of this pool (misaligned or never "
                "allocated)",
                p);
    i = item_index(pool, s, p);
    if (!(s->bits[i / 8] & (1u << (i % 8))))
        mk__die("mk_pool_free: double free of %p", p);
    s->bits[i / 8] &= (uint8_t) ~(1u << (i % 8));
}

void mk__pool_free_slow(mk_pool_t *pool, void *p)
{
    slab_t *s;

    if (!p)
        return;
    pool_lock(pool);
    s = (slab_t *)((uintptr_t)p & pool->slab_mask);
    if (pool->flags & MK_POOL_DEBUG)
        check_live_item(pool, s, p);
    MK_ASSERT(s->magic == SLAB_MAGIC && s->pool == pool && s->used > 0);
    *(void **)p = s->free;
    s->free = p;
    MK_POISON(p, pool->stride);
    if (MK_ON_VALGRIND())
        VALGRIND_MEMPOOL_FREE(pool, p);
    if (--s->used == 0 || !s->listed)
        mk__pool_slab_changed(pool, s);
    pool_unlock(pool);
}

/* ------------------------------------------------------------------------ */
/* teardown and statistics                                                   */

void mk_pool_destroy(mk_pool_t *pool)
{
    slab_t *s, *next;

    if (!pool)
        return;
    for (s = pool->all; s; s = next) {
        next = s->all_next;
        slab_release(pool, s);
    }
    if (pool->fresh < pool->fresh_end)
        mk__pages_unmap((void *)pool->fresh, pool->fresh_end - pool->fresh);
    if (MK_ON_VALGRIND())
        VALGRIND_DESTROY_MEMPOOL(pool);
    if (pool->lock) {
        pthread_mutex_destroy(pool->lock);
        free(pool->lock);
    }
    free(pool);
}

void mk_pool_stats(mk_pool_t *pool, mk_pool_stats_t *out)
{
    size_t live = 0;
    slab_t *s;

    pool_lock(pool);
    for (s = pool->all; s; s = s->all_next)
        live += s->used;
    *out = (mk_pool_stats_t){
        .item_size = pool->stride,
        .live_items = live,
        .slabs = pool->slabs,
        .peak_slabs = pool->peak_slabs,
        .empty_slabs = pool->empty_slabs,
        .mapped_bytes = pool->mapped,
    };
    pool_unlock(pool);
}

void mk_pool_trim(mk_pool_t *pool)
{
    slab_t *s = pool->cur;

    pool_lock(pool);
    empties_release(pool, NULL, SIZE_MAX);
    if (s != &pool->none && s->used == 0) { /* the current slab, empty, goes too */
        pool->cur = &pool->none;
        s->listed = false;
        slab_release(pool, s);
    }
    if (pool->fresh < pool->fresh_end) { /* mapped, never touched */
        pool->mapped -= pool->fresh_end - pool->fresh;
        mk__pages_unmap((void *)pool->fresh, pool->fresh_end - pool->fresh);
        pool->fresh = pool->fresh_end = 0;
    }
    MK_ASSERT(pool->empty_slabs == 0);
    pool_unlock(pool);
}
