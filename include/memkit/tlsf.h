/*
 * memkit/tlsf.h - TLSF: a general-purpose allocator with a constant worst case.
 *
 * Two-level segregated fit (Masmano et al.): free blocks sit in lists indexed by
 * size class, a first level per power of two and 32 second-level lists inside it,
 * with a bitmap for each level. Finding a block is two bit scans; freeing merges
 * with both physical neighbours through boundary tags. No call loops over lists or
 * blocks, so malloc, free, realloc and aligned allocation take a bounded number of
 * steps whatever the heap holds: for code that cannot pause (audio, control loops,
 * trading), where malloc's occasional long call is the problem.
 *
 *     static char arena[1 << 20];
 *     mk_tlsf_t *t = mk_tlsf_create_in(arena, sizeof arena, 0);   // never maps
 *     void *p = mk_tlsf_malloc(t, 100);
 *     mk_tlsf_free(t, p);
 *
 * Memory. Over a region the caller gives (mk_tlsf_create_in, mk_tlsf_add_region),
 * or over regions it maps itself (mk_tlsf_create). With MK_TLSF_GROW a heap that
 * runs out maps another region (a system call: off for hard realtime); a grown
 * region that a free leaves wholly free is kept or unmapped as the retention
 * policy decides (memkit/common.h; that free also walks the region list, so a
 * growing heap's frees are not bounded: GROW is for heaps that may make system
 * calls). The region mk_tlsf_create maps first always stays. With
 * MK_TLSF_PRELOCK every page of every region is touched and mlock'ed when the
 * region is added, so no later call page-faults (the glibc-tuning article's point).
 *
 * Costs. Each block carries one 8-byte header (its size and two flags); a free block
 * also holds its list links and, in its last 8 bytes, a pointer back to its start.
 * Blocks are 16-byte aligned and usable sizes are 24, 40, 56 ... bytes (16k + 8);
 * a request is rounded up to its size class for the search, so at most 1/32 of a
 * large block is slack. The largest block is 2^40 bytes.
 *
 * Quick lists (MK_TLSF_GROW heaps, not debug mode). A freed block of under 2 KiB
 * is not merged: it stays whole on a list of its exact size, and the next request
 * of that size takes it back, so a program that builds and frees the same shapes
 * again and again never splits, merges or searches (malloc's and mimalloc's free
 * lists do the same). The cached blocks are merged back all at once before the
 * heap grows (a request nothing free serves), at mk_tlsf_trim, and when the caller
 * frees its last block unless the heap emptied within the retention period before
 * (a cycle that repeats keeps them; a burst followed by idle gives them back).
 * That merge is O(cached blocks), so a growing heap's calls are not bounded; a
 * heap without MK_TLSF_GROW keeps the bound below. mk_tlsf_stats counts the
 * cached blocks apart.
 *
 * Frees in flight. A free is merged two frees later: mk_tlsf_free prefetches the
 * block's header, the next free its neighbours', and the one after that merges it
 * with everything in cache. A free that merges at once waits for two or three
 * dependent cache misses on a large heap; this way they overlap the caller's work.
 * Nothing else can tell: a malloc that finds no block merges the two first, and
 * realloc, mk_tlsf_check and mk_tlsf_stats do too. Debug mode and poisoning
 * builds merge at once.
 *
 * The bound, in steps (what mk_tlsf_stats reports as max_call_steps): malloc does
 * one class computation, at most two bit scans, one list removal, at most one split
 * and one list insertion; free merges one block (at most two merges, i.e. two
 * removals, and one insertion: 5 steps); realloc in place at most one merge and one
 * split; memalign one malloc plus at most one split at each end. Merging the two
 * frees in flight adds at most 10 steps to the malloc that finds no block and to
 * realloc, so no call takes more than 24 (a realloc that moves on a full heap); 10
 * in debug mode. mk_tlsf_check is the one call that walks the heap. (A heap that
 * grows: see the quick lists above.)
 *
 * Threads. A heap is single-threaded: one heap per thread is the usual realtime
 * design. MK_TLSF_THREAD_SAFE serializes every call with a mutex (which makes the
 * worst case depend on the other threads).
 *
 * Debug mode (MK_TLSF_DEBUG). Double free, a pointer that is not a block of this heap
 * (foreign, or inside a block), and a write past a block's requested end (an 8-byte
 * canary checked at free and realloc) abort with a message. In a build with
 * AddressSanitizer, or under Valgrind, the inside of free blocks is poisoned.
 *
 * Errors. Exhaustion (and size overflow) returns NULL with errno ENOMEM and leaves
 * the heap as it was.
 */
#ifndef MEMKIT_TLSF_H
#define MEMKIT_TLSF_H

#include <memkit/common.h>
#include <stdbool.h>

MK__EXTERN_C_BEGIN

/* Flags for mk_tlsf_config_t.flags and mk_tlsf_create_in. */
enum {
    MK_TLSF_DEBUG = 1 << 0,       /* double free, foreign pointer, overrun canary */
    MK_TLSF_THREAD_SAFE = 1 << 1, /* serialize calls with a mutex */
    MK_TLSF_GROW = 1 << 2,        /* map another region when the heap is exhausted */
    MK_TLSF_PRELOCK = 1 << 3,     /* touch and mlock every region when it is added */
};

typedef struct mk_tlsf_config {
    size_t initial_size; /* bytes mapped at creation; 0: 1 MiB */
    size_t grow_size;    /* MK_TLSF_GROW: least bytes per new region; 0: initial_size */
    unsigned flags;      /* MK_TLSF_* */
    unsigned decay_ms;   /* MK_TLSF_GROW: grown regions left wholly free this long go
                            back to the OS (memkit/common.h); 0: MK_DECAY_MS */
} mk_tlsf_config_t;

typedef struct mk_tlsf_stats {
    size_t used_bytes;   /* usable bytes of allocated blocks */
    size_t free_bytes;   /* usable bytes of free blocks */
    size_t largest_free; /* the largest free block's usable size */
    size_t used_blocks, free_blocks;
    size_t regions, region_bytes;
    double fragmentation;  /* 1 - largest_free / free_bytes: 0 when all free memory is
                              one block; near 1 when it is many small ones */
    size_t max_call_steps; /* most steps (list operations, bit scans, splits, merges)
                              any single call took since creation */
    size_t cached_blocks, cached_bytes; /* freed blocks on the quick lists (MK_TLSF_GROW):
                                           in neither used nor free */
} mk_tlsf_stats_t;

typedef struct mk_tlsf mk_tlsf_t;

/* Creates a heap over memory it maps itself (config may be NULL). NULL with errno
 * EINVAL (bad config), ENOMEM, or mlock's error with MK_TLSF_PRELOCK. */
MK_API mk_tlsf_t *mk_tlsf_create(const mk_tlsf_config_t *config);
/* Creates a heap inside [mem, mem + bytes): the heap's own state (its lists: about
 * 8.5 KiB) takes the front. It never maps memory unless flags has MK_TLSF_GROW.
 * NULL with errno EINVAL when fewer than 8 KiB would be left for blocks. */
MK_API mk_tlsf_t *mk_tlsf_create_in(void *mem, size_t bytes, unsigned flags);
/* Adds [mem, mem + bytes) to the heap (at least 256 bytes). 0, or -1 with errno. */
MK_API int mk_tlsf_add_region(mk_tlsf_t *t, void *mem, size_t bytes);
/* Unmaps the regions the heap mapped; caller-given regions are the caller's. */
MK_API void mk_tlsf_destroy(mk_tlsf_t *t);

MK_API void *mk_tlsf_malloc(mk_tlsf_t *t, size_t size);
MK_API void *mk_tlsf_calloc(mk_tlsf_t *t, size_t n, size_t size);
/* align: a power of two; up to 4096 is bounded like malloc (more works, still O(1)). */
MK_API void *mk_tlsf_memalign(mk_tlsf_t *t, size_t align, size_t size);
/* In place when the block can grow into a free neighbour or shrink; else moves.
 * p NULL: as mk_tlsf_malloc. size 0 (p not NULL): frees p and returns NULL. */
MK_API void *mk_tlsf_realloc(mk_tlsf_t *t, void *p, size_t size);
MK_API void mk_tlsf_free(mk_tlsf_t *t, void *p);
/* Bytes usable at p (the requested size in debug mode). */
MK_API size_t mk_tlsf_usable_size(mk_tlsf_t *t, const void *p);

/* Walks every region and list and verifies every invariant: sizes, boundary tags,
 * no two free neighbours, each free block in the list of its class, bitmaps that
 * match the lists, debug canaries. true if all hold; else false with the first
 * broken one described in why (if why is not NULL). */
MK_API bool mk_tlsf_check(mk_tlsf_t *t, char *why, size_t why_len);
/* Unmaps every region MK_TLSF_GROW mapped that holds no block now. */
MK_API void mk_tlsf_trim(mk_tlsf_t *t);
/* Counts blocks by walking the heap: O(blocks), for reporting, not for hot paths. */
MK_API void mk_tlsf_stats(mk_tlsf_t *t, mk_tlsf_stats_t *out);

MK__EXTERN_C_END

#endif /* MEMKIT_TLSF_H */
