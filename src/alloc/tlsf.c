/*
 * tlsf.c - two-level segregated fit: size classes, boundary tags, regions.
 *
 * A block is addressed by its boundary tag; its usable memory (the payload)
 * starts 16 bytes later:
 *
 *     b + 0   prev_phys   the previous block, valid only when it is free (these 8
 *                         bytes are the previous block's last 8 payload bytes)
 *     b + 8   size        usable bytes | FREE | PREV_FREE
 *     b + 16  payload     (a free block keeps next_free, prev_free here)
 *
 * so the next block starts at b + 8 + size, and a block costs 8 bytes of header.
 * Payloads are 16-aligned, which makes every size 16k + 8; the smallest is 24 (the
 * two list links and the next block's prev_phys).
 *
 * Free blocks of usable size s are in list [fl][sl]: below 512 bytes fl = 0 and
 * sl = s / 16; above, fl is s's power of two (from 1) and sl the next 5 bits. A
 * request is rounded up to the next class boundary before the search, so any block
 * of the class found fits without looking further (good fit, not best fit).
 *
 * Invariants (mk_tlsf_check verifies each):
 *   - blocks tile each region from its first block to a zero-size sentinel;
 *   - no two free blocks are neighbours (a free merges; the two frees in flight,
 *     see defer_release, are used blocks until they are merged);
 *   - PREV_FREE in a block's size <=> its previous block is free, and then its
 *     prev_phys points at that block;
 *   - a free block is in exactly the list of its class; a list's bit in sl_bitmap
 *     is set <=> the list is not empty; fl_bitmap's bit <=> sl_bitmap[fl] != 0;
 *   - a block marked CACHED is a used block below quick_max, on exactly the quick
 *     list of its size (see quick_put).
 */
#include "internal.h"

#include <memkit/tlsf.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define ALIGN_LOG2 4
#define ALIGN      ((size_t)1 << ALIGN_LOG2)
#define SL_LOG2    5
#define SL_COUNT   (1u << SL_LOG2)
#define FL_SHIFT   (SL_LOG2 + ALIGN_LOG2) /* 9: classes below 512 are linear */
#define SMALL      ((size_t)1 << FL_SHIFT)
#define FL_LOG2MAX 40 /* the largest block: 2^40 bytes */
#define FL_COUNT   (FL_LOG2MAX - FL_SHIFT + 1)

#define HDR       ((size_t)8)  /* the size field: what a block costs */
#define BLOCK_MIN ((size_t)24) /* links + the next block's prev_phys */
#define SIZE_MAXB (((size_t)1 << FL_LOG2MAX) - ALIGN)

#define FREE      ((size_t)1)
#define PREV_FREE ((size_t)2)
#define CACHED    ((size_t)4) /* a used block on a quick list (see quick_put) */
#define FLAGS     (FREE | PREV_FREE | CACHED)

/* The quick lists: usable sizes below QUICK_MAX are one size a class of 16 bytes
 * (16k + 8), so list k holds blocks of exactly 16k + 8 bytes. */
#define QUICK_MAX   ((size_t)2048)
#define QUICK_LISTS (QUICK_MAX / ALIGN)

/* Debug mode: after the caller's bytes, an 8-byte canary; in the block's last 16
 * bytes the requested size and a tag that ties the block to its address. */
#define CANARY      0xa5c3e1f00f1e3c5aull
#define TAG_MAGIC   0x6d6b746c73667462ull /* "mktlsftb" */
#define DEBUG_EXTRA ((size_t)24)

/* The hot paths (malloc, free) are inlined whole into the public functions: one
 * call per operation, and the compiler sees the whole dependency chain. */
#define HOT static inline __attribute__((always_inline))

typedef struct block {
    struct block *prev_phys;
    size_t size;
    struct block *next_free, *prev_free;
} block_t;

typedef struct region {
    struct region *next;
    size_t bytes;
    bool mapped; /* ours to unmap */
    bool grown;  /* mapped by MK_TLSF_GROW: the retention policy may unmap it */
} region_t;

#define REGION_HEAD mk__align_up(sizeof(region_t), ALIGN)

struct mk_tlsf {
    uint64_t fl_bitmap;
    uint32_t sl_bitmap[FL_COUNT];
    block_t *lists[FL_COUNT][SL_COUNT];
    unsigned flags;
    bool poison;     /* ASan or Valgrind: free bodies are off limits */
    bool self_alloc; /* the struct was malloc'd (mk_tlsf_create) */
    size_t grow_size;
    region_t *regions;
    unsigned max_steps; /* the most steps any call took */
    /* The remainder of the last split: a hint, valid only while it heads its list
     * (see wild_fit). With it, what wild_fit needs without computing the class:
     * its list's head slot, its first level's sl_bitmap word, the bits of smaller
     * classes in fl_bitmap and in that word, and its class's smallest size. */
    block_t *wild;
    block_t **wild_head;
    uint32_t *wild_sl_map;
    uint64_t wild_fl_below;
    uint32_t wild_sl_below;
    size_t wild_floor;
    block_t *pending[2];         /* frees not merged yet, newest first (defer_release) */
    size_t quick_max;            /* QUICK_MAX when the quick lists are on, else 0 */
    size_t live;                 /* blocks the caller holds */
    uint64_t quick_emptied;      /* when live last fell to 0 (once it grew) */
    block_t *quick[QUICK_LISTS]; /* cached blocks by usable size / 16, newest first */
    size_t grown_bytes;          /* bytes of the regions MK_TLSF_GROW mapped */
    struct mk__retain retain;    /* how long wholly free grown regions are kept */
    bool defer; /* neither debug mode nor poisoning: frees go through pending */
    bool fast;  /* defer, and no lock: malloc's and free's inline paths apply */
    pthread_mutex_t lock;
};

_Static_assert(sizeof(block_t) == 32, "block header layout");

/* ------------------------------------------------------------------------ */
/* blocks                                                                    */

/* ---- the size word: usable bytes | FREE | PREV_FREE ----
 * Its flag bits are read and written only through these (the hot paths pass
 * words they loaded once, to keep loads off their dependency chains). */

static inline size_t word_size(size_t w)
{
    return w & ~FLAGS;
}

static inline bool word_free(size_t w)
{
    return w & FREE;
}

static inline bool word_prev_free(size_t w)
{
    return w & PREV_FREE;
}

/* The flags of w, or only its PREV_FREE, to carry into a new word. */
static inline size_t word_flags(size_t w)
{
    return w & FLAGS;
}

static inline size_t word_prev_flag(size_t w)
{
    return w & PREV_FREE;
}

/* A word of n usable bytes (8 mod 16, or 0 for the sentinel) with flags. */
static inline size_t make_word(size_t n, size_t flags)
{
    MK_ASSERT((n & FLAGS) == 0 && (flags & ~FLAGS) == 0);
    return n | flags;
}

static inline size_t word_with(size_t w, size_t flag)
{
    MK_ASSERT(flag == FREE || flag == PREV_FREE || flag == CACHED);
    return w | flag;
}

static inline size_t word_without(size_t w, size_t flag)
{
    MK_ASSERT(flag == FREE || flag == PREV_FREE || flag == CACHED);
    return w & ~flag;
}

static inline bool is_free(const block_t *b)
{
    return word_free(b->size);
}

static inline size_t bsize(const block_t *b)
{
    return word_size(b->size);
}

static inline void *payload(const block_t *b)
{
    return (char *)b + 16;
}

static inline block_t *of_payload(const void *p)
{
    return (block_t *)((char *)p - 16);
}

static inline block_t *next_phys(const block_t *b)
{
    return (block_t *)((char *)b + HDR + bsize(b));
}

/* The usable size a request needs: 16k + 8, at least BLOCK_MIN; 0 if too large. */
static inline size_t adjust(size_t size)
{
    if (size > SIZE_MAXB)
        return 0;
    return size <= BLOCK_MIN ? BLOCK_MIN : mk__align_up(size - HDR, ALIGN) + HDR;
}

static inline unsigned log2_floor(size_t x)
{
    return 63u - (unsigned)__builtin_clzll((unsigned long long)x);
}

/* The class of a free block of usable size s. */
static inline void mapping_insert(size_t s, unsigned *fl, unsigned *sl)
{
    if (s < SMALL) {
        *fl = 0;
        *sl = (unsigned)(s / ALIGN);
    } else {
        unsigned f = log2_floor(s);
        *sl = (unsigned)(s >> (f - SL_LOG2)) ^ SL_COUNT;
        *fl = f - (FL_SHIFT - 1);
    }
}

/* The first class whose every block holds s: s rounded up to a class boundary. */
static inline void mapping_search(size_t s, unsigned *fl, unsigned *sl)
{
    if (s >= SMALL)
        s += ((size_t)1 << (log2_floor(s) - SL_LOG2)) - 1;
    mapping_insert(s, fl, sl);
}

/* Whether usable sizes s <= u are of one class, without computing it: u has s's
 * leading bit and the SL_LOG2 bits after it (or, below SMALL, s's ALIGN step). */
static inline bool same_class(size_t s, size_t u)
{
    if (u < SMALL)
        return s / ALIGN == u / ALIGN;
    if (s < SMALL)
        return false;
    unsigned shift = log2_floor(s) - SL_LOG2;
    return s >> shift == u >> shift;
}

/* The smallest usable size of class [fl][sl] (mapping_insert's inverse). */
static inline size_t class_floor(unsigned fl, unsigned sl)
{
    if (fl == 0)
        return (size_t)sl * ALIGN;
    return (size_t)(SL_COUNT + sl) << (fl + FL_SHIFT - 1 - SL_LOG2);
}

/* ------------------------------------------------------------------------ */
/* poisoning (ASan, Valgrind): free bodies are off limits; metadata is opened  */
/* before it is written where a body was                                       */

/* These take the flag, not the heap: the inline paths pass a constant false
 * (frees in flight imply no poisoning), and the compiler need not re-read
 * t->poison after each call these may make. */
static inline void off_limits(bool poison, void *p, size_t n)
{
    if (MK_UNLIKELY(poison) && n)
        mk__set_access(p, n, false, true);
}

static inline void open_up(bool poison, void *p, size_t n)
{
    if (MK_UNLIKELY(poison) && n)
        mk__set_access(p, n, true, true);
}

/* Poisons [from, to): the part of a block that just became free body. Only that
 * part: the rest of a merged or split free block was poisoned already, and
 * poisoning it again would make every call O(block size) under ASan. */
static inline void poison_span(bool poison, void *from, void *to)
{
    if (MK_UNLIKELY(poison) && (char *)to > (char *)from)
        mk__set_access(from, (size_t)((char *)to - (char *)from), false, true);
}

/* A free block's body: its payload past the links, before the last 8 bytes. */
static inline void poison_body(bool poison, block_t *b)
{
    if (MK_LIKELY(!poison) || bsize(b) <= BLOCK_MIN)
        return;
    off_limits(poison, (char *)b + 32, bsize(b) - BLOCK_MIN);
}

/* ------------------------------------------------------------------------ */
/* free lists: every operation takes the class, so none computes it twice     */

static inline unsigned list_push(mk_tlsf_t *t, block_t *b, unsigned fl, unsigned sl)
{
    block_t *head = t->lists[fl][sl];

    MK_ASSERT(fl < FL_COUNT && sl < SL_COUNT && head != b);

    b->next_free = head;
    b->prev_free = NULL;
    if (head)
        head->prev_free = b;
    t->lists[fl][sl] = b;
    t->fl_bitmap |= (uint64_t)1 << fl;
    t->sl_bitmap[fl] |= 1u << sl;
    return 1;
}

static inline unsigned list_unlink(mk_tlsf_t *t, block_t *b, unsigned fl, unsigned sl)
{
    /* b is on list [fl][sl]: its neighbours point at it, or it is the head */
    MK_ASSERT(b->prev_free ? b->prev_free->next_free == b : t->lists[fl][sl] == b);
    MK_ASSERT(!b->next_free || b->next_free->prev_free == b);
    if (b->prev_free)
        b->prev_free->next_free = b->next_free;
    else
        t->lists[fl][sl] = b->next_free;
    if (b->next_free)
        b->next_free->prev_free = b->prev_free;
    if (!t->lists[fl][sl]) {
        t->sl_bitmap[fl] &= ~(1u << sl);
        if (!t->sl_bitmap[fl])
            t->fl_bitmap &= ~((uint64_t)1 << fl);
    }
    return 1;
}

/* nb takes ob's place in list [fl][sl]: the bitmaps do not change. This is what
 * keeps splitting and merging a large block cheap when its class stays the same. */
static inline unsigned list_replace(mk_tlsf_t *t, block_t *ob, block_t *nb, unsigned fl,
                                    unsigned sl)
{
    nb->next_free = ob->next_free;
    nb->prev_free = ob->prev_free;
    if (nb->prev_free)
        nb->prev_free->next_free = nb;
    else
        t->lists[fl][sl] = nb;
    if (nb->next_free)
        nb->next_free->prev_free = nb;
    return 1;
}

static inline unsigned list_insert_size(mk_tlsf_t *t, block_t *b, size_t s)
{
    unsigned fl, sl;

    mapping_insert(s, &fl, &sl);
    return list_push(t, b, fl, sl);
}

static inline unsigned list_insert(mk_tlsf_t *t, block_t *b)
{
    return list_insert_size(t, b, bsize(b));
}

static inline unsigned list_remove(mk_tlsf_t *t, block_t *b)
{
    unsigned fl, sl;

    mapping_insert(bsize(b), &fl, &sl);
    return list_unlink(t, b, fl, sl);
}

/* The head of a list whose blocks all hold s, and that list's class; NULL if
 * none. At most two bit scans (each a step). */
HOT block_t *find_fit(mk_tlsf_t *t, size_t s, unsigned *fl, unsigned *sl, unsigned *steps)
{
    uint32_t sl_map;

    mapping_search(s, fl, sl);
    (*steps)++;
    if (*fl >= FL_COUNT)
        return NULL;
    sl_map = t->sl_bitmap[*fl] & (~0u << *sl);
    if (!sl_map) {
        uint64_t fl_map = *fl + 1 < 64 ? t->fl_bitmap & (~(uint64_t)0 << (*fl + 1)) : 0;
        if (!fl_map)
            return NULL;
        *fl = (unsigned)__builtin_ctzll(fl_map);
        sl_map = t->sl_bitmap[*fl];
        (*steps)++;
    }
    *sl = (unsigned)__builtin_ctz(sl_map);
    return t->lists[*fl][*sl];
}

/* ------------------------------------------------------------------------ */
/* splitting and merging                                                     */

/* Remembers r, the head of list [fl][sl], as the next split's likely source;
 * classes too small to split again are not worth remembering. */
static inline void remember_wild(mk_tlsf_t *t, block_t *r, unsigned fl, unsigned sl)
{
    size_t floor = class_floor(fl, sl);

    t->wild = floor >= BLOCK_MIN ? r : NULL;
    t->wild_head = &t->lists[fl][sl];
    t->wild_sl_map = &t->sl_bitmap[fl];
    t->wild_fl_below = ((uint64_t)1 << fl) - 1;
    t->wild_sl_below = (1u << sl) - 1;
    t->wild_floor = floor;
}

/* The wild block when find_fit would return it for n and carving n keeps it in
 * its class, so both searches can be skipped; NULL otherwise. That is: it still
 * heads its list (so it is free and of that class, whatever happened since),
 * no smaller class holds a block, n's own class is no larger (n <= the floor),
 * and what remains after n stays at or above the floor. A sequence of small
 * allocations from one large free block, the list workload, takes this path. */
HOT block_t *wild_fit(const mk_tlsf_t *t, size_t n)
{
    block_t *w = t->wild;

    if (!w || *t->wild_head != w || n > t->wild_floor ||
        bsize(w) - t->wild_floor < n + HDR)
        return NULL;
    if ((t->fl_bitmap & t->wild_fl_below) | (*t->wild_sl_map & t->wild_sl_below))
        return NULL;
    return w;
}

/* Free block b, the head of the list at *head, becomes a used block of exactly n
 * usable bytes; the rest is a block of the same class and takes b's place at the
 * head (the bitmaps do not change). The caller knows the class is the same. */
HOT block_t *split_head(block_t **head, block_t *b, size_t n, bool poison)
{
    size_t rest = bsize(b) - n;
    block_t *r = (block_t *)((char *)b + HDR + n), *after = b->next_free;

    open_up(poison, &r->size, 24);
    r->size = make_word(rest - HDR, FREE); /* PREV_FREE clear: b is used now */
    next_phys(r)->prev_phys = r; /* r's next already has PREV_FREE (b was free) */
    r->next_free = after;
    r->prev_free = NULL;
    if (after)
        after->prev_free = r;
    *head = r;
    /* Opened only now: for Valgrind, opening marks b's links undefined. */
    open_up(poison, payload(b), n);
    b->size = make_word(n, word_prev_flag(b->size));
    /* r's body lies inside b's old body, which was poisoned. */
    return r;
}

/* carve's same-class case: b heads list [fl][sl]; the rest becomes the wild block. */
HOT unsigned carve_in_class(mk_tlsf_t *t, block_t *b, size_t n, unsigned fl, unsigned sl,
                            bool poison)
{
    remember_wild(t, split_head(&t->lists[fl][sl], b, n, poison), fl, sl);
    return 2; /* a list operation and a split */
}

/* wild_fit's block w gives its first n bytes; the rest is still the wild block,
 * of the same class, so only the pointer changes. */
HOT unsigned carve_wild(mk_tlsf_t *t, block_t *w, size_t n, bool poison)
{
    t->wild = split_head(t->wild_head, w, n, poison);
    return 2;
}

/* Free block b (in list [fl][sl] when listed) becomes a used block of exactly n
 * usable bytes; the rest, if it can be a block, stays free and takes b's place
 * in its list when its class is b's (the common case for a large block). */
HOT unsigned carve(mk_tlsf_t *t, block_t *b, size_t n, bool listed, unsigned fl,
                   unsigned sl, bool poison)
{
    unsigned steps = 0;
    size_t rest = bsize(b) - n;

    if (rest < BLOCK_MIN + HDR) {
        if (listed)
            steps += list_unlink(t, b, fl, sl);
        open_up(poison, payload(b), bsize(b));
        b->size = word_without(b->size, FREE);
        next_phys(b)->size = word_without(next_phys(b)->size, PREV_FREE);
        return steps;
    }
    block_t *r = (block_t *)((char *)b + HDR + n);
    unsigned rfl, rsl;

    mapping_insert(rest - HDR, &rfl, &rsl);
    if (listed && rfl == fl && rsl == sl)
        return carve_in_class(t, b, n, fl, sl, poison);
    open_up(poison, &r->size, 24);
    r->size = make_word(rest - HDR, FREE);
    next_phys(r)->prev_phys = r;
    if (listed)
        steps += list_unlink(t, b, fl, sl);
    steps += list_push(t, r, rfl, rsl);
    remember_wild(t, r, rfl, rsl); /* r heads its list */
    open_up(poison, payload(b), n);
    b->size = make_word(n, word_prev_flag(b->size));
    return steps + 1;
}

/* Makes used block b exactly n usable bytes when the rest can be a block of its
 * own, which becomes free (merged with a free next block). For realloc. */
static unsigned split_used(mk_tlsf_t *t, block_t *b, size_t n)
{
    unsigned steps = 0;
    size_t rest = bsize(b) - n;
    block_t *r, *next;

    if (rest < BLOCK_MIN + HDR)
        return steps;
    r = (block_t *)((char *)b + HDR + n);
    open_up(t->poison, &r->size, 24);
    r->size = make_word(rest - HDR, FREE);
    b->size = make_word(n, word_flags(b->size));
    next = next_phys(r);
    /* r's body was b's payload: poison it, and a merged neighbour's header. */
    char *body_end = (char *)next;
    if (is_free(next)) {
        steps += list_remove(t, next);
        r->size += bsize(next) + HDR;
        body_end = (char *)next + 32;
        next = next_phys(r);
    }
    next->prev_phys = r;
    next->size = word_with(next->size, PREV_FREE);
    steps += list_insert(t, r);
    poison_span(t->poison, (char *)r + 32, body_end);
    steps++;
    return steps;
}

/* Freeing used block b has three cases, by its neighbours (the common ones first,
 * each with only the loads it needs; bs and ns are b's and its next's size words).
 *
 * Neither neighbour is free: b heads its class's list. */
HOT unsigned free_alone(mk_tlsf_t *t, block_t *b, size_t bs, block_t *next, size_t ns,
                        bool poison)
{
    b->size = word_with(bs, FREE);
    open_up(poison, &next->prev_phys, sizeof next->prev_phys);
    next->prev_phys = b;
    next->size = word_with(ns, PREV_FREE);
    poison_span(poison, (char *)b + 32, (char *)next);
    return list_insert_size(t, b, word_size(bs));
}

/* Only the next block is free: b absorbs it and takes its place in its list when
 * the class stays (a list freed newest first, from high addresses down, does this
 * every time). */
HOT unsigned merge_next(mk_tlsf_t *t, block_t *b, size_t bs, block_t *next, size_t ns,
                        bool poison)
{
    size_t total = word_size(bs) + HDR + word_size(ns);
    unsigned xfl, xsl, steps = 1;
    block_t *after;

    mapping_insert(word_size(ns), &xfl, &xsl);
    if (same_class(word_size(ns), total))
        steps += list_replace(t, next, b, xfl, xsl);
    else
        steps += list_unlink(t, next, xfl, xsl) + list_insert_size(t, b, total);
    b->size = make_word(total, FREE); /* PREV_FREE clear: the previous block is used */
    /* The block after next already has PREV_FREE; its back pointer is next's last
     * word, a store and no load, which keeps its line out of the chain of misses. */
    after = (block_t *)((char *)b + HDR + total);
    open_up(poison, &after->prev_phys, sizeof after->prev_phys);
    after->prev_phys = b;
    poison_span(poison, (char *)b + 32, (char *)next + 32);
    return steps;
}

/* The previous block f is free (and the next may be): f grows over b (and next),
 * keeping its list place when its class stays. Kept out of line: inlined, its
 * registers would make every free save and restore six of them (the list
 * workload's frees take merge_next). */
static __attribute__((noinline)) unsigned
merge_prev(mk_tlsf_t *t, block_t *b, size_t bs, block_t *next, size_t ns, bool poison)
{
    block_t *f = b->prev_phys;
    size_t total = bsize(f) + HDR + word_size(bs);
    unsigned ofl, osl, fl, sl, steps = 1;

    mapping_insert(bsize(f), &ofl, &osl);
    if (word_free(ns)) {
        unsigned xfl, xsl;

        mapping_insert(word_size(ns), &xfl, &xsl);
        steps += 1 + list_unlink(t, next, xfl, xsl);
        total += HDR + word_size(ns);
    }
    mapping_insert(total, &fl, &sl);
    if (fl != ofl || sl != osl)
        steps += list_unlink(t, f, ofl, osl) + list_push(t, f, fl, sl);
    f->size = make_word(total, FREE); /* PREV_FREE clear: f's previous block is used */
    if (word_free(ns)) {
        block_t *after = next_phys(f);
        open_up(poison, &after->prev_phys, sizeof after->prev_phys);
        after->prev_phys = f;
        poison_span(poison, (char *)b, (char *)next + 32);
    } else {
        open_up(poison, &next->prev_phys, sizeof next->prev_phys);
        next->prev_phys = f;
        next->size = word_with(ns, PREV_FREE);
        poison_span(poison, (char *)b, (char *)next);
    }
    return steps;
}

static void region_freed(mk_tlsf_t *t, block_t *fb);

/* Used block b becomes free, merged with free neighbours. When the free block
 * that results fills a region the heap grew by, the retention policy decides
 * whether the region goes back (region_freed: cold). The filter is one mask: a
 * region's first block sits REGION_HEAD bytes into a page. */
HOT unsigned release(mk_tlsf_t *t, block_t *b, bool poison)
{
    size_t bs = b->size;
    block_t *next = (block_t *)((char *)b + HDR + word_size(bs));
    size_t ns = next->size;
    block_t *fb = b;
    unsigned steps;

    if (word_prev_free(bs)) {
        fb = b->prev_phys;
        steps = merge_prev(t, b, bs, next, ns, poison);
    } else if (word_free(ns)) {
        steps = merge_next(t, b, bs, next, ns, poison);
    } else {
        steps = free_alone(t, b, bs, next, ns, poison);
    }
    if (MK_UNLIKELY(((uintptr_t)fb & 4095) == REGION_HEAD) && t->grown_bytes &&
        bsize(next_phys(fb)) == 0)
        region_freed(t, fb);
    return steps;
}

/* ------------------------------------------------------------------------ */
/* frees in flight                                                            */

/* Frees are merged two calls late, which turns their cache misses into
 * prefetches that overlap the caller's work: b's header is prefetched now; one
 * free later, when it is in cache, its neighbours' headers are; one more free
 * later the merge finds them all in cache. Without this a free waits for two or
 * three dependent misses (its header, then its neighbours'). The bound stays: a
 * free merges one block, and a malloc that finds nothing merges both first. */
HOT unsigned defer_release(mk_tlsf_t *t, block_t *b)
{
    block_t *old = t->pending[1], *mid = t->pending[0];

    t->pending[1] = mid;
    t->pending[0] = b;
    __builtin_prefetch(b, 1);
    if (mid) {
        size_t s = mid->size;
        __builtin_prefetch((char *)mid + HDR + word_size(s), 1);
        if (word_prev_free(s))
            __builtin_prefetch(mid->prev_phys, 1);
    }
    return old ? release(t, old, false) : 0;
}

/* Merges the frees in flight, oldest first: before a search gives up, and
 * before a walk. A slot is cleared before its merge, which may drain again
 * (region_freed). */
static unsigned drain(mk_tlsf_t *t)
{
    unsigned steps = 0;

    for (int i = 1; i >= 0; i--) {
        block_t *b = t->pending[i];

        if (b) {
            t->pending[i] = NULL;
            steps += release(t, b, false);
        }
    }
    return steps;
}

/* ------------------------------------------------------------------------ */
/* quick lists                                                                */

/* The record of a call's steps (counted in a local and returned by the
 * helpers, so no store per step). */
static inline void note_steps(mk_tlsf_t *t, unsigned steps)
{
    if (steps > t->max_steps)
        t->max_steps = steps;
}

/* In a heap that grows (MK_TLSF_GROW, not debug mode) a freed block below
 * QUICK_MAX is not merged: it stays a used block, marked CACHED, on the list of
 * its exact size, and the next request of that size takes it back, newest
 * first (the block freed last is the one in cache: oldest first made the
 * request loop 1.3x slower). Each is a load and three stores, so a program
 * that builds and frees the same shapes again and again (lists, requests,
 * queues) never splits, merges or searches.
 * The price is TLSF's bound: the cached blocks are merged back all at once
 * (quick_flush) when a search finds nothing, before the heap grows; when the
 * caller frees its last block, unless the heap emptied within the retention
 * period before (a cycle that repeats keeps them); and at trim. A heap that
 * grows makes system calls already; a fixed heap keeps its bound. */

/* Used block b, its size word bs, goes on its quick list. Its body is poisoned
 * as a free block's is: the link stays open, and the last 8 bytes (the next
 * block's prev_phys, which a merge of that block writes). */
HOT void quick_put(mk_tlsf_t *t, block_t *b, size_t bs, bool poison)
{
    size_t k = word_size(bs) >> ALIGN_LOG2;

    MK_ASSERT(word_size(bs) < t->quick_max && !word_free(bs) && !(bs & CACHED));
    b->next_free = t->quick[k];
    t->quick[k] = b;
    b->size = word_with(bs, CACHED);
    poison_body(poison, b);
}

/* A cached block of exactly n usable bytes (n below quick_max), or NULL. */
HOT block_t *quick_take(mk_tlsf_t *t, size_t n, bool poison)
{
    block_t *b = t->quick[n >> ALIGN_LOG2];

    if (b) {
        MK_ASSERT(bsize(b) == n && (b->size & CACHED));
        t->quick[n >> ALIGN_LOG2] = b->next_free;
        b->size = word_without(b->size, CACHED);
        open_up(poison, payload(b), n);
    }
    return b;
}

/* Merges every cached block back into the heap (each a free); O(cached blocks).
 * A merge may unmap a wholly free region (region_freed): never one with a
 * cached block in it, which is a used block. */
static __attribute__((noinline, cold)) unsigned quick_flush(mk_tlsf_t *t)
{
    unsigned steps = 0;

    for (size_t k = 0; k < QUICK_LISTS; k++)
        for (block_t *b; (b = t->quick[k]);) {
            t->quick[k] = b->next_free;
            b->size = word_without(b->size, CACHED);
            steps += release(t, b, t->poison);
        }
    return steps;
}

/* The caller holds no block now. A heap emptied for the first time, or not
 * within the retention period, merges its cached blocks back so that its grown
 * regions can go back to the OS (region_freed decides); one that empties again
 * within the period keeps them for the next cycle. A heap that never grew has
 * nothing to give back, and reads no clock. */
static __attribute__((noinline, cold)) void quick_emptied(mk_tlsf_t *t)
{
    uint64_t now;
    bool again;

    if (!t->grown_bytes)
        return;
    now = mk__retain_clock();
    again = t->quick_emptied && now - t->quick_emptied < t->retain.decay_ns;
    t->quick_emptied = now;
    if (!again)
        note_steps(t, quick_flush(t));
}

/* A free of the caller's: one block fewer held; at none, the quick lists may
 * go back (quick_emptied). */
static inline void count_free(mk_tlsf_t *t)
{
    MK_ASSERT(t->live > 0);
    if (MK_UNLIKELY(--t->live == 0) && t->quick_max)
        quick_emptied(t);
}

/* ------------------------------------------------------------------------ */
/* regions                                                                   */

/* True when region r holds no block in use: one free block up to the sentinel. */
static bool region_empty(const region_t *r)
{
    const block_t *b = (const block_t *)((uintptr_t)r + REGION_HEAD);

    return is_free(b) && bsize(next_phys(b)) == 0;
}

/* Unmaps grown region *link (wholly free) and unlinks it. */
static void region_unmap(mk_tlsf_t *t, region_t **link)
{
    region_t *r = *link;
    block_t *b = (block_t *)((uintptr_t)r + REGION_HEAD);

    MK_ASSERT(r->grown && r->mapped && region_empty(r));
    list_remove(t, b);
    if (t->wild == b)
        t->wild = NULL;
    *link = r->next;
    t->grown_bytes -= r->bytes;
    if (t->flags & MK_TLSF_PRELOCK)
        munlock(r, r->bytes);
    MK_UNPOISON(r, r->bytes); /* ASan's shadow outlives the mapping */
    mk__pages_unmap(r, r->bytes);
}

/* Unmaps wholly free grown regions while their bytes fit in budget (SIZE_MAX:
 * all of them). */
static void unmap_empty_regions(mk_tlsf_t *t, size_t budget)
{
    for (region_t **link = &t->regions; *link && budget;) {
        region_t *x = *link;

        if (x->grown && x->bytes <= budget && region_empty(x)) {
            budget -= x->bytes;
            region_unmap(t, link);
        } else {
            link = &x->next;
        }
    }
}

/* Free block fb starts a region and ends at its sentinel. If the region is a
 * grown one, counts the wholly free grown regions (spares, O(regions): growing
 * is a system call already) and unmaps what the retention policy gives back,
 * fb's region first. */
static __attribute__((noinline, cold)) void region_freed(mk_tlsf_t *t, block_t *fb)
{
    region_t *r = (region_t *)((uintptr_t)fb - REGION_HEAD), **rlink = NULL;
    size_t spare = 0, excess;

    /* The frees in flight merge first, or the burst that ends with them would
     * never look empty (a nested call for their regions finishes before this). */
    drain(t);
    for (region_t **link = &t->regions; *link; link = &(*link)->next) {
        if (*link == r)
            rlink = link;
        if ((*link)->grown && region_empty(*link))
            spare += (*link)->bytes;
    }
    /* r is read only once found in the list: a nested call may have unmapped it. */
    if (!rlink || !r->grown || !region_empty(r))
        return;
    /* Emptied: at most one grown region still holds blocks (the one the last
     * frees, still in flight, may be in: nothing may call again to merge them). */
    excess = mk__retain_excess(&t->retain, t->grown_bytes - spare, spare,
                               t->grown_bytes - spare <= t->grow_size);
    if (excess >= r->bytes) {
        excess -= r->bytes;
        region_unmap(t, rlink);
    }
    unmap_empty_regions(t, excess);
}

/* Lays out [mem, mem + bytes) as one free block and a sentinel. */
static int region_add(mk_tlsf_t *t, void *mem, size_t bytes, bool mapped)
{
    uintptr_t start = mk__align_up((uintptr_t)mem, ALIGN);
    uintptr_t end = (uintptr_t)mem + bytes;
    region_t *r = (region_t *)start;
    block_t *b, *sentinel;

    if (!mem || end < (uintptr_t)mem || end < start + REGION_HEAD + 64) {
        errno = EINVAL;
        return -1;
    }
    if (t->flags & MK_TLSF_PRELOCK) {
        /* Fault every page in now and keep it: later calls never page-fault. */
        memset(mem, 0, bytes);
        if (mlock(mem, bytes) != 0)
            return -1;
    }
    b = (block_t *)(start + REGION_HEAD);
    sentinel = (block_t *)((end - 16) & ~(uintptr_t)(ALIGN - 1));
    open_up(t->poison, r, (size_t)((uintptr_t)sentinel + 16 - start));
    r->next = t->regions;
    r->bytes = end - start;
    r->mapped = mapped;
    r->grown = false; /* map_region sets it */
    t->regions = r;
    b->size = make_word((uintptr_t)sentinel - (uintptr_t)b - HDR, FREE);
    sentinel->size = make_word(0, PREV_FREE);
    sentinel->prev_phys = b;
    list_insert(t, b);
    poison_body(t->poison, b);
    return 0;
}

/* Maps a region of at least bytes; grown: by MK_TLSF_GROW (else the first). */
static bool map_region(mk_tlsf_t *t, size_t bytes, bool grown)
{
    size_t page = mk__page_size();
    void *mem;

    bytes = mk__align_up(bytes, page);
    if (!(mem = mk__pages_map(bytes, 0)))
        return false;
    if (region_add(t, mem, bytes, true) != 0) {
        int err = errno;
        mk__pages_unmap(mem, bytes);
        errno = err;
        return false;
    }
    MK_ASSERT(((uintptr_t)t->regions & 4095) == 0 && (void *)t->regions == mem);
    if (grown) {
        t->regions->grown = true;
        t->grown_bytes += t->regions->bytes;
        mk__retain_note(&t->retain, t->grown_bytes, 0);
    }
    return true;
}

/* ------------------------------------------------------------------------ */
/* creation                                                                  */

static bool init(mk_tlsf_t *t, unsigned flags)
{
    if (flags &
        ~(unsigned)(MK_TLSF_DEBUG | MK_TLSF_THREAD_SAFE | MK_TLSF_GROW | MK_TLSF_PRELOCK))
        return false;
    t->flags = flags;
#ifdef MK_ASAN
    t->poison = true;
#endif
    if (MK_ON_VALGRIND())
        t->poison = true;
    t->defer = !t->poison && !(flags & MK_TLSF_DEBUG);
    t->fast = t->defer && !(flags & MK_TLSF_THREAD_SAFE);
    t->quick_max = (flags & MK_TLSF_GROW) && !(flags & MK_TLSF_DEBUG) ? QUICK_MAX : 0;
    if (flags & MK_TLSF_THREAD_SAFE)
        pthread_mutex_init(&t->lock, NULL);
    return true;
}

mk_tlsf_t *mk_tlsf_create(const mk_tlsf_config_t *config)
{
    mk_tlsf_config_t cfg = config ? *config : (mk_tlsf_config_t){0};
    mk_tlsf_t *t;

    if (!cfg.initial_size)
        cfg.initial_size = (size_t)1 << 20;
    if (!(t = calloc(1, sizeof *t))) {
        errno = ENOMEM;
        return NULL;
    }
    t->self_alloc = true;
    t->grow_size = cfg.grow_size ? cfg.grow_size : cfg.initial_size;
    if (!init(t, cfg.flags) || cfg.initial_size > SIZE_MAXB) {
        free(t);
        errno = EINVAL;
        return NULL;
    }
    mk__retain_init(&t->retain, 0, t->grow_size, cfg.decay_ms);
    if (!map_region(t, cfg.initial_size, false)) {
        int err = errno;
        mk_tlsf_destroy(t);
        errno = err;
        return NULL;
    }
    return t;
}

mk_tlsf_t *mk_tlsf_create_in(void *mem, size_t bytes, unsigned flags)
{
    size_t head = mk__align_up(sizeof(mk_tlsf_t), 64);
    uintptr_t at = mk__align_up((uintptr_t)mem, 64);
    mk_tlsf_t *t = (mk_tlsf_t *)at;

    if (!mem || bytes < head + 8192 || at - (uintptr_t)mem > bytes - head - 8192) {
        errno = EINVAL;
        return NULL;
    }
    /* Flags are checked (init) before the memory is locked, and a failure
     * after the lock undoes it: the caller's memory comes back as it was. */
    memset(t, 0, sizeof *t);
    if (!init(t, flags)) {
        errno = EINVAL;
        return NULL;
    }
    if ((flags & MK_TLSF_PRELOCK) && mlock(mem, bytes) != 0)
        return NULL;
    t->grow_size = (size_t)1 << 20;
    mk__retain_init(&t->retain, 0, t->grow_size, 0);
    if (region_add(t, (char *)t + head, bytes - (at - (uintptr_t)mem) - head, false) !=
        0) {
        int e = errno;
        if (flags & MK_TLSF_PRELOCK)
            munlock(mem, bytes);
        errno = e;
        return NULL;
    }
    return t;
}

int mk_tlsf_add_region(mk_tlsf_t *t, void *mem, size_t bytes)
{
    int rc;

    if (bytes < 256) {
        errno = EINVAL;
        return -1;
    }
    if (t->flags & MK_TLSF_THREAD_SAFE)
        pthread_mutex_lock(&t->lock);
    rc = region_add(t, mem, bytes, false);
    if (t->flags & MK_TLSF_THREAD_SAFE)
        pthread_mutex_unlock(&t->lock);
    return rc;
}

void mk_tlsf_destroy(mk_tlsf_t *t)
{
    region_t *r, *next;

    if (!t)
        return;
    for (r = t->regions; r; r = next) {
        next = r->next;
        if (t->flags & MK_TLSF_PRELOCK)
            munlock(r, r->bytes);
        if (r->mapped) {
            MK_UNPOISON(r, r->bytes);
            mk__pages_unmap(r, r->bytes);
        } else {
            /* The caller's memory goes back clean. */
            open_up(t->poison, r, r->bytes);
        }
    }
    if (t->flags & MK_TLSF_THREAD_SAFE)
        pthread_mutex_destroy(&t->lock);
    if (t->self_alloc)
        free(t);
}

/* ------------------------------------------------------------------------ */
/* debug mode                                                                */

static region_t *region_of(mk_tlsf_t *t, uintptr_t p)
{
    for (region_t *r = t->regions; r; r = r->next)
        if (p >= (uintptr_t)r + REGION_HEAD + 16 && p < (uintptr_t)r + r->bytes)
            return r;
    return NULL;
}

static void debug_tag(block_t *b, size_t req)
{
    char *end = (char *)payload(b) + bsize(b);
    uint64_t canary = CANARY, tag = TAG_MAGIC ^ (uintptr_t)b;

    memcpy((char *)payload(b) + req, &canary, 8);
    memcpy(end - 16, &req, 8);
    memcpy(end - 8, &tag, 8);
}

/* The requested size of used block b, after checking it is one (debug mode). */
static size_t debug_verify(mk_tlsf_t *t, const void *p, const char *who)
{
    region_t *r = region_of(t, (uintptr_t)p);
    block_t *b = of_payload(p);
    uint64_t canary, tag;
    size_t req;
    char *end;

    if (!r || (uintptr_t)p % ALIGN)
        mk__die("%s: %p is not a block of this heap (foreign pointer)", who, p);
    if (is_free(b))
        mk__die("%s: %p is already free (double free)", who, p);
    end = (char *)payload(b) + bsize(b);
    if (bsize(b) < BLOCK_MIN || (uintptr_t)end > (uintptr_t)r + r->bytes ||
        (memcpy(&tag, end - 8, 8), tag != (TAG_MAGIC ^ (uintptr_t)b)))
        mk__die("%s: %p is not a live block (inside a block, or freed and reused)", who,
                p);
    memcpy(&req, end - 16, 8);
    if (req > bsize(b) - DEBUG_EXTRA)
        mk__die("%s: the block at %p has a damaged size record (overrun?)", who, p);
    memcpy(&canary, (const char *)p + req, 8);
    if (canary != CANARY)
        mk__die("%s: the block at %p (%zu bytes) was written past its end", who, p, req);
    return req;
}

/* ------------------------------------------------------------------------ */
/* allocation                                                                */

/* Every public call runs between these: the lock, and the record of its steps
 * (counted in a local and returned by the helpers, so no store per step). */
static inline void call_begin(mk_tlsf_t *t)
{
    if (t->flags & MK_TLSF_THREAD_SAFE)
        pthread_mutex_lock(&t->lock);
}

static inline void call_end(mk_tlsf_t *t, unsigned steps)
{
    note_steps(t, steps);
    if (t->flags & MK_TLSF_THREAD_SAFE)
        pthread_mutex_unlock(&t->lock);
}

/* A free block of at least n usable bytes (the head of list [fl][sl]); NULL if
 * there is none, after mapping a region with MK_TLSF_GROW. */
HOT block_t *take(mk_tlsf_t *t, size_t n, unsigned *fl, unsigned *sl, unsigned *steps)
{
    block_t *b = find_fit(t, n, fl, sl, steps);

    if (MK_UNLIKELY(!b) && t->defer) {
        *steps += drain(t);
        b = find_fit(t, n, fl, sl, steps);
    }
    if (MK_UNLIKELY(!b) && t->quick_max) {
        *steps += quick_flush(t);
        b = find_fit(t, n, fl, sl, steps);
    }
    if (MK_UNLIKELY(!b) && (t->flags & MK_TLSF_GROW)) {
        size_t want = n + n / 8 + 4096; /* the class rounding, the region's own bytes */
        if (map_region(t, want > t->grow_size ? want : t->grow_size, true))
            b = find_fit(t, n, fl, sl, steps);
    }
    return b;
}

HOT void *alloc_locked(mk_tlsf_t *t, size_t size, unsigned *steps)
{
    size_t req = size, n;
    unsigned fl, sl;
    block_t *b;

    if (t->flags & MK_TLSF_DEBUG)
        size = size > SIZE_MAXB ? size : size + DEBUG_EXTRA;
    if (!(n = adjust(size))) {
        errno = ENOMEM;
        return NULL;
    }
    if (n < t->quick_max && (b = quick_take(t, n, t->poison))) {
        *steps += 1;
    } else if ((b = wild_fit(t, n))) {
        /* the block find_fit would take, and carve's same-class case; the
         * check stands for find_fit's scan in the step count */
        *steps += 1 + carve_wild(t, b, n, t->poison);
    } else if ((b = take(t, n, &fl, &sl, steps))) {
        *steps += carve(t, b, n, true, fl, sl, t->poison);
    } else {
        errno = ENOMEM;
        return NULL;
    }
    MK_ASSERT(!is_free(b) && bsize(b) >= n);
    if (t->flags & MK_TLSF_DEBUG)
        debug_tag(b, req);
    t->live++;
    return payload(b);
}

static __attribute__((noinline)) void *malloc_slow(mk_tlsf_t *t, size_t size)
{
    unsigned steps = 0;
    void *p;

    call_begin(t);
    p = alloc_locked(t, size, &steps);
    call_end(t, steps);
    return p;
}

void *mk_tlsf_malloc(mk_tlsf_t *t, size_t size)
{
    size_t n;
    block_t *b;

    /* The fast path: no lock, no debug mode, no poisoning, and the request is
     * a cached block or carved from the wild block (what alloc_locked would do,
     * minus its checks). A quick list's one step is below any earlier call's
     * (a cached block was carved once), so it notes none. */
    if (MK_LIKELY(t->fast) && (n = adjust(size))) {
        if (n < t->quick_max && (b = quick_take(t, n, false))) {
            t->live++;
            return payload(b);
        }
        if ((b = wild_fit(t, n))) {
            note_steps(t, 1 + carve_wild(t, b, n, false));
            t->live++;
            return payload(b);
        }
    }
    return malloc_slow(t, size);
}

void *mk_tlsf_calloc(mk_tlsf_t *t, size_t n, size_t size)
{
    size_t bytes;
    void *p;

    if (__builtin_mul_overflow(n, size, &bytes)) {
        errno = ENOMEM;
        return NULL;
    }
    if ((p = mk_tlsf_malloc(t, bytes)))
        memset(p, 0, bytes);
    return p;
}

void *mk_tlsf_memalign(mk_tlsf_t *t, size_t align, size_t size)
{
    size_t req = size, n, gap;
    unsigned fl, sl, steps = 0;
    uintptr_t at;
    block_t *b;
    void *p = NULL;

    if (!mk__is_pow2(align)) {
        errno = EINVAL;
        return NULL;
    }
    if (align <= ALIGN)
        return mk_tlsf_malloc(t, size);
    call_begin(t);
    if (t->flags & MK_TLSF_DEBUG)
        size = size > SIZE_MAXB ? size : size + DEBUG_EXTRA;
    /* Room for the block, the alignment and a free block in front of it. */
    if (!(n = adjust(size)) || n > SIZE_MAXB - align - 32 ||
        !(b = take(t, n + align + 32, &fl, &sl, &steps))) {
        errno = ENOMEM;
        goto out;
    }
    steps += list_unlink(t, b, fl, sl);
    at = mk__align_up((uintptr_t)payload(b), align);
    gap = at - (uintptr_t)payload(b);
    if (gap && gap < BLOCK_MIN + HDR)
        gap += align, at += align; /* the front piece must be a block of its own */
    if (gap) {
        /* Split the front off as a free block; b2 starts gap bytes later. */
        block_t *b2 = (block_t *)((char *)b + gap);
        open_up(t->poison, b2, 32);
        b2->size = make_word(bsize(b) - gap, FREE | PREV_FREE);
        b2->prev_phys = b;
        b->size = make_word(gap - HDR, FREE | word_prev_flag(b->size));
        steps += list_insert(t, b) + 1;
        /* The front's body lies inside b's old body, which was poisoned. */
        b = b2;
    }
    steps += carve(t, b, n, false, 0, 0, t->poison);
    if (t->flags & MK_TLSF_DEBUG)
        debug_tag(b, req);
    t->live++;
    p = payload(b);
out:
    call_end(t, steps);
    return p;
}

/* ------------------------------------------------------------------------ */
/* free and realloc                                                          */

static __attribute__((noinline)) void free_slow(mk_tlsf_t *t, void *p)
{
    block_t *b;
    unsigned steps;

    if (!p)
        return;
    b = of_payload(p);
    call_begin(t);
    if (t->flags & MK_TLSF_DEBUG)
        debug_verify(t, p, "mk_tlsf_free");
    if (bsize(b) < t->quick_max) {
        quick_put(t, b, b->size, t->poison);
        steps = 1;
    } else {
        steps = t->defer ? defer_release(t, b) : release(t, b, t->poison);
    }
    count_free(t);
    call_end(t, steps);
}

/* The fast path's merge, out of line: the quick path then needs no frame. */
static __attribute__((noinline)) void free_deferred(mk_tlsf_t *t, block_t *b)
{
    note_steps(t, defer_release(t, b));
    count_free(t);
}

void mk_tlsf_free(mk_tlsf_t *t, void *p)
{
    if (MK_LIKELY(t->fast) && p) {
        block_t *b = of_payload(p);
        size_t bs;

        /* A fixed heap reads no header here: its free is deferred whole. */
        if (!t->quick_max || word_size(bs = b->size) >= t->quick_max) {
            free_deferred(t, b);
            return;
        }
        quick_put(t, b, bs, false);
        count_free(t);
        return;
    }
    free_slow(t, p);
}

/* Grows or shrinks used block b to n usable bytes where it is; false if it cannot. */
static bool resize_in_place(mk_tlsf_t *t, block_t *b, size_t n, unsigned *steps)
{
    block_t *next = next_phys(b);
    size_t have = bsize(b), total, rest;

    if (n <= have) {
        *steps += split_used(t, b, n);
        return true;
    }
    if (!is_free(next) || have + HDR + bsize(next) < n)
        return false;
    /* Grow into the free next block: b takes n bytes of it, and what is left
     * (when it can be a block) stays free where next was. */
    *steps += list_remove(t, next) + 1;
    total = have + HDR + bsize(next);
    rest = total - n;
    open_up(t->poison, (char *)payload(b) + have, n - have);
    if (rest < BLOCK_MIN + HDR) {
        open_up(t->poison, (char *)payload(b) + n, rest);
        b->size = make_word(total, word_flags(b->size));
        next_phys(b)->size = word_without(next_phys(b)->size, PREV_FREE);
        return true;
    }
    block_t *r = (block_t *)((char *)b + HDR + n);
    open_up(t->poison, &r->size, 24);
    r->size = make_word(rest - HDR, FREE);
    b->size = make_word(n, word_flags(b->size));
    next_phys(r)->prev_phys = r; /* its PREV_FREE is set: next was free */
    *steps += list_insert(t, r) + 1;
    /* Only next's old header can lie in r's body unpoisoned; the rest was body. */
    char *from = (char *)r + 32 > (char *)next ? (char *)r + 32 : (char *)next;
    poison_span(t->poison, from, (char *)next + 32);
    return true;
}

void *mk_tlsf_realloc(mk_tlsf_t *t, void *p, size_t size)
{
    unsigned steps = 0;
    size_t n, old;
    void *q;

    if (!p)
        return mk_tlsf_malloc(t, size);
    if (!size) {
        mk_tlsf_free(t, p);
        return NULL;
    }
    call_begin(t);
    if (t->flags & MK_TLSF_DEBUG) {
        /* Debug mode always moves: the canary and tag are laid out anew. */
        old = debug_verify(t, p, "mk_tlsf_realloc");
    } else {
        old = bsize(of_payload(p));
        /* A neighbour freed just now is free for resize_in_place too. */
        if (t->defer)
            steps += drain(t);
        if ((n = adjust(size)) && resize_in_place(t, of_payload(p), n, &steps)) {
            call_end(t, steps);
            return p;
        }
    }
    if ((q = alloc_locked(t, size, &steps))) {
        memcpy(q, p, old < size ? old : size);
        steps += release(t, of_payload(p), t->poison);
        t->live--; /* alloc_locked counted q */
    }
    call_end(t, steps);
    return q;
}

size_t mk_tlsf_usable_size(mk_tlsf_t *t, const void *p)
{
    size_t n;

    if (!p)
        return 0;
    call_begin(t);
    n = t->flags & MK_TLSF_DEBUG ? debug_verify(t, p, "mk_tlsf_usable_size")
                                 : bsize(of_payload(p));
    call_end(t, 0);
    return n;
}

/* ------------------------------------------------------------------------ */
/* check and stats: the only walks                                           */

#define FAIL(...)                                                                        \
    do {                                                                                 \
        if (why)                                                                         \
            snprintf(why, why_len, __VA_ARGS__);                                         \
        return false;                                                                    \
    } while (0)

static bool check_regions(mk_tlsf_t *t, size_t counts[FL_COUNT][SL_COUNT], size_t *cached,
                          char *why, size_t why_len)
{
    for (region_t *r = t->regions; r; r = r->next) {
        block_t *b = (block_t *)((uintptr_t)r + REGION_HEAD), *prev = NULL;
        uintptr_t end = (uintptr_t)r + r->bytes;

        for (;;) {
            size_t s = bsize(b);
            bool pf = word_prev_free(b->size);

            if ((uintptr_t)b % ALIGN || (uintptr_t)b + 16 > end)
                FAIL("block %p: misaligned or outside its region", (void *)b);
            if (pf != (prev && is_free(prev)))
                FAIL("block %p: PREV_FREE does not match its previous block", (void *)b);
            if (pf && b->prev_phys != prev)
                FAIL("block %p: prev_phys points to %p, not %p", (void *)b,
                     (void *)b->prev_phys, (void *)prev);
            if (s == 0) {
                if (is_free(b))
                    FAIL("sentinel %p is marked free", (void *)b);
                break;
            }
            if (s < BLOCK_MIN || s % ALIGN != HDR)
                FAIL("block %p: bad size %zu", (void *)b, s);
            if (is_free(b) && (prev && is_free(prev)))
                FAIL("blocks %p and %p are free neighbours", (void *)prev, (void *)b);
            if (b->size & CACHED) {
                if (is_free(b) || s >= t->quick_max)
                    FAIL("block %p: cached but free, or too large to be", (void *)b);
                ++*cached;
            } else if (is_free(b)) {
                unsigned fl, sl;
                mapping_insert(s, &fl, &sl);
                counts[fl][sl]++;
            } else if (t->flags & MK_TLSF_DEBUG) {
                uint64_t canary, tag;
                size_t req;
                char *e = (char *)payload(b) + s;
                memcpy(&tag, e - 8, 8);
                memcpy(&req, e - 16, 8);
                if (tag != (TAG_MAGIC ^ (uintptr_t)b) || req > s - DEBUG_EXTRA)
                    FAIL("block %p: debug tag damaged", (void *)b);
                memcpy(&canary, (char *)payload(b) + req, 8);
                if (canary != CANARY)
                    FAIL("block %p: written past its end (%zu bytes)", (void *)b, req);
            }
            prev = b;
            b = next_phys(b);
        }
    }
    return true;
}

static bool check_lists(mk_tlsf_t *t, size_t counts[FL_COUNT][SL_COUNT], char *why,
                        size_t why_len)
{
    for (unsigned fl = 0; fl < FL_COUNT; fl++) {
        if (((t->fl_bitmap >> fl) & 1) != (t->sl_bitmap[fl] != 0))
            FAIL("fl_bitmap bit %u does not match sl_bitmap", fl);
        for (unsigned sl = 0; sl < SL_COUNT; sl++) {
            size_t n = 0;
            block_t *prev = NULL;

            if (((t->sl_bitmap[fl] >> sl) & 1) != (t->lists[fl][sl] != NULL))
                FAIL("sl_bitmap[%u] bit %u does not match its list", fl, sl);
            for (block_t *b = t->lists[fl][sl]; b; prev = b, b = b->next_free) {
                unsigned f, s;
                if (!region_of(t, (uintptr_t)payload(b)) || !is_free(b))
                    FAIL("list [%u][%u] holds %p, not a free block", fl, sl, (void *)b);
                mapping_insert(bsize(b), &f, &s);
                if (f != fl || s != sl || b->prev_free != prev)
                    FAIL("list [%u][%u]: block %p is misfiled or mislinked", fl, sl,
                         (void *)b);
                if (++n > counts[fl][sl])
                    break;
            }
            if (n != counts[fl][sl])
                FAIL("list [%u][%u] has %zu blocks, the heap %zu free ones of its class",
                     fl, sl, n, counts[fl][sl]);
        }
    }
    return true;
}

/* Each quick list holds only cached blocks of its size, and the lists together
 * hold every cached block of the heap (cached, counted by check_regions): then
 * none is on two lists (one next pointer, one size) or twice on one. */
static bool check_quick(mk_tlsf_t *t, size_t cached, char *why, size_t why_len)
{
    size_t n = 0;

    for (size_t k = 0; k < QUICK_LISTS; k++)
        for (block_t *b = t->quick[k]; b && n <= cached; b = b->next_free, n++)
            if (!region_of(t, (uintptr_t)payload(b)) || !(b->size & CACHED) ||
                bsize(b) != k * ALIGN + HDR)
                FAIL("quick list %zu holds %p, not a cached block of its size", k,
                     (void *)b);
    if (n != cached)
        FAIL("the quick lists hold %s blocks, the heap %zu cached ones",
             n > cached ? "more" : "fewer", cached);
    return true;
}

bool mk_tlsf_check(mk_tlsf_t *t, char *why, size_t why_len)
{
    size_t counts[FL_COUNT][SL_COUNT], cached = 0;
    bool ok;

    call_begin(t);
    drain(t);
    memset(counts, 0, sizeof counts);
    /* Reading free bodies' headers is the point here: open nothing, read only
     * headers and links, which are never poisoned. */
    ok = check_regions(t, counts, &cached, why, why_len) &&
         check_lists(t, counts, why, why_len) && check_quick(t, cached, why, why_len);
    call_end(t, 0);
    return ok;
}

void mk_tlsf_trim(mk_tlsf_t *t)
{
    call_begin(t);
    drain(t);
    quick_flush(t);
    unmap_empty_regions(t, SIZE_MAX);
    call_end(t, 0);
}

void mk_tlsf_stats(mk_tlsf_t *t, mk_tlsf_stats_t *out)
{
    mk_tlsf_stats_t s = {0};

    call_begin(t);
    drain(t);
    for (region_t *r = t->regions; r; r = r->next) {
        s.regions++;
        s.region_bytes += r->bytes;
        for (block_t *b = (block_t *)((uintptr_t)r + REGION_HEAD); bsize(b);
             b = next_phys(b))
            if (b->size & CACHED) {
                s.cached_blocks++;
                s.cached_bytes += bsize(b);
            } else if (is_free(b)) {
                s.free_blocks++;
                s.free_bytes += bsize(b);
                if (bsize(b) > s.largest_free)
                    s.largest_free = bsize(b);
            } else {
                s.used_blocks++;
                s.used_bytes += bsize(b);
            }
    }
    s.fragmentation =
        s.free_bytes ? 1.0 - (double)s.largest_free / (double)s.free_bytes : 0;
    s.max_call_steps = t->max_steps;
    call_end(t, 0);
    *out = s;
}
