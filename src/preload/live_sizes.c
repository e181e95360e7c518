/*
 * live_sizes.c - the slow paths of the live-size table (live_sizes.h):
 * reserving leaves, and the overflow map for what the shadow slots cannot
 * hold. The map is split into shards by address, each with its own spin
 * lock; it is used rarely enough (large blocks, odd addresses) that the lock
 * is always taken.
 */
#define _GNU_SOURCE
#include "live_sizes.h"
#include "base.h"

#include "../trace/kv_table.h"

#include <errno.h>
#include <sys/mman.h>

_Atomic(uint16_t *) mk_live_root[MK_LIVE_ROOT_SIZE];

/* Set after a leaf could not be reserved: from then on new regions go to the
 * map, instead of one failing mmap per allocation. */
static atomic_bool leaf_failed;

/* ---- the overflow map ---- */

#define SHARDS 64

typedef struct shard {
    atomic_int lock;
    mk_kv_table_t map; /* key address, a = size */
    char pad[64 - sizeof(atomic_int) - sizeof(mk_kv_table_t) % 64];
} shard_t;

static shard_t shards[SHARDS] = {
    [0 ... SHARDS - 1] = {.map = {.alloc = mk_pages_table, .release = mk_pages_release}}};

/* Blocks in the map: while 0, a take need not look (the block a thread frees
 * was put by a thread that happens-before it, so its count is visible). */
static atomic_long in_map;

static inline shard_t *shard_for(uintptr_t addr)
{
    return &shards[(addr >> 4) * 0x9e3779b97f4a7c15ull >> 58];
}

static void shard_lock(shard_t *s)
{
    while (atomic_exchange_explicit(&s->lock, 1, memory_order_acquire))
        __builtin_ia32_pause();
}

static void shard_unlock(shard_t *s)
{
    atomic_store_explicit(&s->lock, 0, memory_order_release);
}

/* Puts addr in the map; the size it replaced, or -1. */
static long long map_put(uintptr_t addr, size_t size)
{
    shard_t *sh = shard_for(addr);
    long long was = -1;
    bool fresh;
    int saved_errno = errno; /* growing the table maps memory */
    shard_lock(sh);
    mk_kv_t *l = mk_kv_put(&sh->map, addr, &fresh);
    if (l) {
        if (!fresh)
            was = (long long)l->a;
        else
            atomic_fetch_add_explicit(&in_map, 1, memory_order_relaxed);
        l->a = size;
    }
    shard_unlock(sh);
    errno = saved_errno;
    return was;
}

/* Takes addr out of the map; its size, or -1. */
static long long map_take(uintptr_t addr)
{
    if (!atomic_load_explicit(&in_map, memory_order_relaxed))
        return -1;
    shard_t *sh = shard_for(addr);
    long long size = -1;
    shard_lock(sh);
    mk_kv_t *l = mk_kv_find(&sh->map, addr);
    if (l) {
        size = (long long)l->a;
        mk_kv_remove(&sh->map, l);
        atomic_fetch_sub_explicit(&in_map, 1, memory_order_relaxed);
    }
    shard_unlock(sh);
    return size;
}

/* ---- leaves ---- */

/* The slot of addr, reserving its leaf if need be; NULL if addr cannot have
 * one (not aligned, too high) or the reservation failed. */
static uint16_t *slot_reserving(uintptr_t addr)
{
    uint16_t *s = mk_live_slot(addr);
    if (s || (addr & MK_LIVE_NO_SLOT) ||
        atomic_load_explicit(&leaf_failed, memory_order_relaxed))
        return s;
    size_t bytes = (size_t)MK_LIVE_LEAF_SLOTS * sizeof(uint16_t);
    int saved_errno = errno;
    void *leaf = mk_sys_mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    errno = saved_errno;
    if (leaf == MAP_FAILED) {
        atomic_store_explicit(&leaf_failed, true, memory_order_relaxed);
        return NULL;
    }
    uint16_t *expected = NULL;
    _Atomic(uint16_t *) *root = &mk_live_root[addr >> MK_LIVE_LEAF_SHIFT];
    if (!atomic_compare_exchange_strong_explicit(
            root, &expected, leaf, memory_order_release, memory_order_acquire))
        mk_sys_munmap(leaf, bytes); /* another thread reserved it first */
    return mk_live_slot(addr);
}

/* ---- the slow paths ---- */

long long mk_live_put_slow(uintptr_t addr, size_t size)
{
    uint16_t *s = slot_reserving(addr);
    if (!s)
        return map_put(addr, size);
    /* A slot in use means the block there was freed unseen; a stale map
     * entry is taken out so that the address is in one place only. */
    uint16_t v = __atomic_load_n(s, __ATOMIC_RELAXED);
    long long was = v == MK_LIVE_IN_MAP ? map_take(addr) : (long long)v - 1;
    if (size < MK_LIVE_IN_MAP - 1) {
        __atomic_store_n(s, (uint16_t)(size + 1), __ATOMIC_RELAXED);
        return was;
    }
    __atomic_store_n(s, MK_LIVE_IN_MAP, __ATOMIC_RELAXED);
    long long in = map_put(addr, size);
    return was >= 0 ? was : in;
}

long long mk_live_take_slow(uintptr_t addr)
{
    uint16_t *s = mk_live_slot(addr);
    if (s && __atomic_load_n(s, __ATOMIC_RELAXED) == MK_LIVE_IN_MAP)
        __atomic_store_n(s, 0, __ATOMIC_RELAXED);
    return map_take(addr);
}

void mk_live_after_fork_child(void)
{
    for (int i = 0; i < SHARDS; i++)
        atomic_store(&shards[i].lock, 0);
}
