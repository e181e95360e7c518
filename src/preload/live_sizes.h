/*
 * live_sizes.h - the requested size of every live block, by address, for
 * --summary-only's exact peak: put when a block is allocated, take when it
 * is freed.
 *
 * The fast path is a shadow table with no lock: one 16-bit slot per 16 bytes
 * of address space, holding size + 1 (0: nothing live starts here). Slots
 * live in 128 MiB leaves, one per GiB of address space, reserved on first use
 * (MAP_NORESERVE: only the pages holding slots in use are ever backed, at
 * most an eighth of the heap's span). Everything else goes to an overflow
 * map (a sharded hash table with locks, live_sizes.c): sizes of 65,534 bytes
 * or more (their slot says MK_LIVE_IN_MAP), addresses not 16-byte aligned
 * (glibc's blocks always are; other allocators' 8-byte classes are not), and
 * addresses whose leaf could not be reserved.
 *
 * Why no lock is needed: only 16-byte aligned blocks have slots, so no two
 * live blocks share one, and a slot is only written by the thread that holds
 * its block: the allocating thread after the real malloc returned it, the
 * freeing thread before the real free gives it back. The allocator's own
 * synchronization orders a free before any reuse of the address.
 */
#ifndef MEMKIT_PRELOAD_LIVE_SIZES_H
#define MEMKIT_PRELOAD_LIVE_SIZES_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define MK_LIVE_ADDR_BITS   48 /* user addresses above this go to the map */
#define MK_LIVE_LEAF_SHIFT  30 /* one leaf per GiB */
#define MK_LIVE_GRAIN_SHIFT 4  /* one slot per 16 bytes */
#define MK_LIVE_ROOT_SIZE   (1u << (MK_LIVE_ADDR_BITS - MK_LIVE_LEAF_SHIFT))
#define MK_LIVE_LEAF_SLOTS  (1u << (MK_LIVE_LEAF_SHIFT - MK_LIVE_GRAIN_SHIFT))
#define MK_LIVE_IN_MAP      0xffffu /* slot value: the block is in the overflow map */
/* Address bits that rule a slot out: below 16-byte alignment, above the top. */
#define MK_LIVE_NO_SLOT (~((1ull << MK_LIVE_ADDR_BITS) - 1) | 15u)

extern _Atomic(uint16_t *) mk_live_root[MK_LIVE_ROOT_SIZE]
    __attribute__((visibility("hidden")));

/* The slow paths (live_sizes.c): the overflow map, leaves not reserved yet. */
__attribute__((visibility("hidden"))) long long mk_live_put_slow(uintptr_t addr,
                                                                 size_t size);
__attribute__((visibility("hidden"))) long long mk_live_take_slow(uintptr_t addr);
/* In a forked child: the overflow map's locks may have been held by threads
 * the child does not have. */
__attribute__((visibility("hidden"))) void mk_live_after_fork_child(void);

/* The slot of addr, or NULL (not aligned, too high, or no leaf yet). */
static inline uint16_t *mk_live_slot(uintptr_t addr)
{
    if (__builtin_expect(addr & MK_LIVE_NO_SLOT, 0))
        return NULL;
    uint16_t *leaf = atomic_load_explicit(&mk_live_root[addr >> MK_LIVE_LEAF_SHIFT],
                                          memory_order_acquire);
    if (__builtin_expect(leaf == NULL, 0))
        return NULL;
    return &leaf[(addr >> MK_LIVE_GRAIN_SHIFT) & (MK_LIVE_LEAF_SLOTS - 1)];
}

/* Records that a block of size bytes is live at addr. Returns the size of a
 * block that was still recorded there (it was freed where no hook saw it:
 * the caller takes it off the live totals), or -1. */
static inline long long mk_live_put(uintptr_t addr, size_t size)
{
    uint16_t *s = mk_live_slot(addr);
    if (__builtin_expect(s != NULL && size < MK_LIVE_IN_MAP - 1, 1)) {
        uint16_t was = __atomic_load_n(s, __ATOMIC_RELAXED);
        if (__builtin_expect(was == 0, 1)) {
            __atomic_store_n(s, (uint16_t)(size + 1), __ATOMIC_RELAXED);
            return -1;
        }
    }
    return mk_live_put_slow(addr, size);
}

/* Removes the block at addr; returns its size, or -1 if none is recorded
 * (allocated before tracing started, or not by malloc at all). */
static inline long long mk_live_take(uintptr_t addr)
{
    uint16_t *s = mk_live_slot(addr);
    if (__builtin_expect(s != NULL, 1)) {
        uint16_t v = __atomic_load_n(s, __ATOMIC_RELAXED);
        if (__builtin_expect(v != 0 && v != MK_LIVE_IN_MAP, 1)) {
            __atomic_store_n(s, 0, __ATOMIC_RELAXED);
            return (long long)v - 1;
        }
    }
    return mk_live_take_slow(addr);
}

#endif /* MEMKIT_PRELOAD_LIVE_SIZES_H */
