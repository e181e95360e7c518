/*
 * stack.c - the stack (frame) allocator: chunks, frames, the slow allocation path,
 * and the debugging modes (ASan poisoning, Valgrind mempools, MEMKIT_BYPASS).
 *
 * Layout. A chunk is one mmap: a header, then usable bytes [start, end). Chunks form
 * a list from the newest (st->chunk) back to the oldest. A frame is a record
 * allocated in the stack itself; it remembers where the stack stood before the record
 * (chunk, pos, used bytes), so popping it is: release the chunks newer than that
 * chunk (spares kept as the retention policy decides, retain.c), then restore
 * pos. Cost: O(chunks released), and chunks
 * grow geometrically, so a frame holding 800 MB releases about a dozen of them.
 *
 * Invariants (MK_ASSERTs in stack_check, after every slow push, pop and allocation):
 *   - chunk == NULL  <=>  pos == 0; otherwise chunk->start <= pos <= chunk->end;
 *   - limit is either 0 or chunk->end, and it is chunk->end only when a frame is
 *     open, not sealed, and no debugging mode needs to see each allocation;
 *   - frames are stored in chunks of this stack, newest frame highest.
 */
#include "internal.h"

#include <memkit/stack.h>

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* First chunk size, and the cap on geometric growth. */
#define MK_STACK_CHUNK_MIN ((size_t)64 << 10)
#define MK_STACK_CHUNK_MAX ((size_t)64 << 20)
/* st->retain before mk_stack_set_retain: no budget, the retention policy decides. */
#define RETAIN_UNSET (SIZE_MAX - 1)

/* Mode bits: each one makes every allocation take the slow path. */
enum {
    MK__STACK_BYPASS = 1 << 0,   /* MEMKIT_BYPASS: blocks are real mallocs */
    MK__STACK_ASAN = 1 << 1,     /* poison/unpoison each block */
    MK__STACK_VALGRIND = 1 << 2, /* describe each block to memcheck */
};

struct mk__stack_chunk {
    struct mk__stack_chunk *prev; /* older chunk */
    size_t map_size;              /* bytes mapped, header included */
    uintptr_t start, end;         /* usable bytes */
};

/* Header of a block allocated in bypass mode, just below the user pointer. */
typedef struct bypass_block {
    struct bypass_block *prev, *next; /* the frame's list of blocks */
    mk_stack_frame_t *frame;          /* owner, for the realloc check */
    void *base;                       /* what malloc returned */
} bypass_block_t;

#define BYPASS_HDR 32 /* sizeof(bypass_block_t) rounded to keep 16-byte alignment */

struct mk_stack_frame {
    mk_stack_t *stack;
    mk_stack_frame_t *prev;              /* enclosing frame */
    struct mk__stack_chunk *saved_chunk; /* stack state before this record */
    uintptr_t saved_pos;
    size_t saved_used_below;
    struct mk__stack_chunk *chunk; /* chunk holding this record */
    bypass_block_t *bypass;        /* bypass mode: blocks to free at pop */
    const char *file;              /* where the frame was pushed */
    int line;
    bool sealed;
};

_Static_assert(sizeof(bypass_block_t) <= BYPASS_HDR, "bypass header too large");

/* ------------------------------------------------------------------------ */
/* state helpers                                                             */

static size_t chunk_header_size(void)
{
    return mk__align_up(sizeof(struct mk__stack_chunk), 64);
}

static size_t stack_used(const mk_stack_t *st)
{
    return st->chunk ? st->used_below + (st->pos - st->chunk->start) : 0;
}

/* With no frame open, a plain-mode stack keeps its largest spare chunk as the
 * current one ("idle"), so the next push takes the fast path instead of taking
 * the spare back. It is still a spare for the statistics and the retention
 * rules; nothing can be allocated in it until a frame is pushed (limit is 0). */
static bool stack_idle(const mk_stack_t *st)
{
    return !st->frame && st->chunk != NULL;
}

static void stack_note_peak(mk_stack_t *st)
{
    size_t used = stack_used(st);

    if (used > st->peak)
        st->peak = used;
}

/* Opens the fast path exactly when the slow path has nothing to check or record. */
static void stack_update_limit(mk_stack_t *st)
{
    bool fast = st->chunk && st->frame && !st->frame->sealed && !st->mode;

    st->limit = fast ? st->chunk->end : 0;
}

static void stack_check(const mk_stack_t *st)
{
    (void)st;
    MK_ASSERT((st->chunk == NULL) == (st->pos == 0));
    MK_ASSERT(!st->chunk || (st->chunk->start <= st->pos && st->pos <= st->chunk->end));
    MK_ASSERT(st->limit == 0 || (st->chunk && st->limit == st->chunk->end));
    MK_ASSERT(st->pos % MK_STACK_GRAIN == 0);
    /* the newest frame is stored in this stack, at or below pos */
    MK_ASSERT(!st->frame || st->mode || st->chunk);
}

/* ------------------------------------------------------------------------ */
/* chunks                                                                    */

static void chunk_release(mk_stack_t *st, struct mk__stack_chunk *c)
{
    size_t size = c->map_size;

    /* Unpoison first: ASan's shadow outlives munmap and would taint a later mapping. */
    MK_UNPOISON(c, size);
    st->mapped -= size;
    mk__pages_unmap(c, size);
}

/* Releases the smallest spares while more than one is kept and they exceed the
 * retain budget. The list is sorted largest first, so the tail goes first. */
/* Unmaps the smallest spare (the list's tail: it is sorted largest first) and
 * returns its size. */
static size_t spare_release_smallest(mk_stack_t *st)
{
    struct mk__stack_chunk **tail, *c;
    size_t size;

    MK_ASSERT(st->spare);
    for (tail = &st->spare; (*tail)->prev; tail = &(*tail)->prev)
        ;
    c = *tail;
    *tail = NULL;
    size = c->map_size;
    st->spare_bytes -= size;
    chunk_release(st, c);
    return size;
}

static void spares_enforce_budget(mk_stack_t *st)
{
    if (st->retain == RETAIN_UNSET) /* the retention policy alone decides */
        return;
    /* One spare is always kept (the idle chunk, when there is one, is it). */
    while (st->spare && (st->spare->prev || stack_idle(st)) &&
           st->spare_bytes > st->retain)
        spare_release_smallest(st);
}

/* Puts a chunk no longer in use on the spare list (sorted largest first). */
static void chunk_retire(mk_stack_t *st, struct mk__stack_chunk *c)
{
    struct mk__stack_chunk **at = &st->spare;

    while (*at && (*at)->map_size > c->map_size)
        at = &(*at)->prev;
    c->prev = *at;
    *at = c;
    st->spare_bytes += c->map_size;
    MK_POISON((void *)c->start, c->end - c->start);
    if (st->mode & MK__STACK_VALGRIND)
        VALGRIND_MAKE_MEM_NOACCESS((void *)c->start, c->end - c->start);
    spares_enforce_budget(st);
}

/* Takes the smallest spare with at least `usable` bytes off the list, or NULL. */
static struct mk__stack_chunk *spare_take(mk_stack_t *st, size_t usable)
{
    struct mk__stack_chunk **at, **best = NULL, *c;

    for (at = &st->spare; *at; at = &(*at)->prev)
        if ((*at)->end - (*at)->start >= usable)
            best = at;
    if (!best)
        return NULL;
    c = *best;
    *best = c->prev;
    st->spare_bytes -= c->map_size;
    return c;
}

void mk_stack_set_retain(mk_stack_t *st, size_t bytes)
{
    st->retain = bytes;
    spares_enforce_budget(st);
}

void mk_stack_trim(mk_stack_t *st)
{
    struct mk__stack_chunk *c;

    if (stack_idle(st)) {
        c = st->chunk;
        MK_ASSERT(!c->prev && st->pos == c->start && st->used_below == 0);
        st->chunk = NULL;
        st->pos = 0;
        st->chunks--;
        chunk_release(st, c);
    }
    while ((c = st->spare)) {
        st->spare = c->prev;
        st->spare_bytes -= c->map_size;
        chunk_release(st, c);
    }
}

/* Makes a chunk with room for `size` bytes at `align` the current chunk. */
static bool stack_grow(mk_stack_t *st, size_t size, size_t align)
{
    size_t hdr = chunk_header_size();
    size_t need, map_size;
    struct mk__stack_chunk *c;

    if (size > SIZE_MAX / 2 || align > SIZE_MAX / 4)
        return false;
    need = hdr + size + (align > 64 ? align : 0);
    c = spare_take(st, need - hdr);
    if (!c) {
        map_size = st->next_chunk_size;
        if (map_size < need)
            map_size = mk__align_up(need, mk__page_size());
        c = mk__pages_map(map_size, 0);
        if (!c)
            return false;
        c->map_size = map_size;
        c->start = (uintptr_t)c + hdr;
        c->end = (uintptr_t)c + map_size;
        st->mapped += map_size;
        if (st->next_chunk_size < MK_STACK_CHUNK_MAX)
            st->next_chunk_size *= 2;
        MK_POISON((void *)c->start, c->end - c->start);
        if (st->mode & MK__STACK_VALGRIND)
            VALGRIND_MAKE_MEM_NOACCESS((void *)c->start, c->end - c->start);
    }
    if (st->chunk)
        st->used_below += st->pos - st->chunk->start;
    c->prev = st->chunk;
    st->chunk = c;
    st->pos = c->start;
    st->chunks++;
    mk__retain_note(&st->policy, st->mapped - st->spare_bytes, st->spare_bytes);
    return true;
}

/* Bytes a block of n bytes takes; the same rounding as the inline fast path. */
static size_t grain_round(size_t n)
{
    return (n + MK_STACK_GRAIN - 1 + (n == 0)) & ~(size_t)(MK_STACK_GRAIN - 1);
}

/* Bump allocation with no frame checks; grows when needed. NULL if out of memory.
 * Keeps pos a multiple of the grain. */
static void *stack_bump(mk_stack_t *st, size_t size, size_t align)
{
    uintptr_t p;

    if (size > SIZE_MAX / 2)
        return NULL;
    size = grain_round(size);
    if (align < MK_STACK_GRAIN)
        align = MK_STACK_GRAIN;

    if (st->chunk) {
        p = mk__align_up(st->pos, align);
        if (p <= st->chunk->end && size <= st->chunk->end - p)
            goto fits;
    }
    if (!stack_grow(st, size, align))
        return NULL;
    p = mk__align_up(st->pos, align);
fits:
    st->pos = p + size;
    return (void *)p;
}

/* ------------------------------------------------------------------------ */
/* lifetime                                                                  */

void mk_stack_init(mk_stack_t *st)
{
    memset(st, 0, sizeof *st);
    st->next_chunk_size = MK_STACK_CHUNK_MIN;
    mk__retain_init(&st->policy, 0, MK_STACK_CHUNK_MIN, 0);
    st->retain = RETAIN_UNSET;
    if (mk__bypass_enabled())
        st->mode |= MK__STACK_BYPASS;
#ifdef MK_ASAN
    st->mode |= MK__STACK_ASAN;
#endif
    if (MK_ON_VALGRIND())
        st->mode |= MK__STACK_VALGRIND;
}

static void bypass_free_all(mk_stack_frame_t *f);

void mk_stack_fini(mk_stack_t *st)
{
    struct mk__stack_chunk *c, *prev;
    mk_stack_frame_t *f;

    for (f = st->frame; f; f = f->prev) {
        bypass_free_all(f);
        if (st->mode & MK__STACK_VALGRIND)
            VALGRIND_DESTROY_MEMPOOL(f);
    }
    for (c = st->chunk; c; c = prev) {
        prev = c->prev;
        chunk_release(st, c);
    }
    st->chunk = NULL; /* released above: not an idle chunk for trim */
    st->pos = 0;
    mk_stack_trim(st);
    memset(st, 0, sizeof *st);
}

mk_stack_t *mk_stack_create(void)
{
    mk_stack_t *st = malloc(sizeof *st);

    if (st)
        mk_stack_init(st);
    return st;
}

void mk_stack_destroy(mk_stack_t *st)
{
    if (!st)
        return;
    mk_stack_fini(st);
    free(st);
}

/* ------------------------------------------------------------------------ */
/* frames                                                                    */

/* The frame record's footprint in the chunk: pos stays a multiple of the grain. */
#define FRAME_BYTES                                                                      \
    ((sizeof(mk_stack_frame_t) + MK_STACK_GRAIN - 1) & ~(size_t)(MK_STACK_GRAIN - 1))
_Static_assert(_Alignof(mk_stack_frame_t) <= MK_STACK_GRAIN,
               "a frame record fits at any pos");

/* Fills frame record f, which remembers the stack's state before the record
 * was placed, and makes it the innermost frame. */
static inline void frame_open(mk_stack_t *st, mk_stack_frame_t *f,
                              struct mk__stack_chunk *saved_chunk, uintptr_t saved_pos,
                              size_t saved_used_below, const char *file, int line)
{
    *f = (mk_stack_frame_t){
        .stack = st,
        .prev = st->frame,
        .saved_chunk = saved_chunk,
        .saved_pos = saved_pos,
        .saved_used_below = saved_used_below,
        .chunk = st->chunk,
        .file = file,
        .line = line,
    };
    st->frame = f;
    st->depth++;
}

/* Puts the stack back where it was before f was pushed (the chunks taken
 * since are already released), and makes f's enclosing frame the innermost. */
static inline void frame_close(mk_stack_t *st, const mk_stack_frame_t *f)
{
    st->pos = f->saved_pos;
    st->used_below = f->saved_used_below;
    st->frame = f->prev;
    st->depth--;
}

/* The common push: no debugging mode, and room for the record in the current
 * chunk. Everything the general path does, minus what cannot apply. */
static inline bool push_fast(mk_stack_t *st, const char *file, int line,
                             mk_stack_frame_t **out)
{
    struct mk__stack_chunk *c = st->chunk;
    uintptr_t p = st->pos;
    mk_stack_frame_t *f;

    if (MK_UNLIKELY(st->mode || !c || FRAME_BYTES > c->end - p))
        return false;
    f = (mk_stack_frame_t *)p;
    st->pos = p + FRAME_BYTES;
    frame_open(st, f, c, p, st->used_below, file, line);
    st->limit = c->end; /* the new frame is open and not sealed */
    *out = f;
    return true;
}

mk_stack_frame_t *mk_stack_push_at(mk_stack_t *st, const char *file, int line)
{
    mk_stack_frame_t *fast;

    if (MK_LIKELY(push_fast(st, file, line, &fast)))
        return fast;

    struct mk__stack_chunk *saved_chunk = st->chunk;
    uintptr_t saved_pos = st->pos;
    size_t saved_used_below = st->used_below;
    mk_stack_frame_t *f;

    f = stack_bump(st, sizeof *f, _Alignof(mk_stack_frame_t));
    if (!f)
        mk__die("out of memory pushing a frame at %s:%d", file, line);
    MK_UNPOISON(f, sizeof *f);
    if (st->mode & MK__STACK_VALGRIND) {
        VALGRIND_MAKE_MEM_UNDEFINED(f, sizeof *f);
        VALGRIND_CREATE_MEMPOOL(f, 0, 0);
    }
    frame_open(st, f, saved_chunk, saved_pos, saved_used_below, file, line);
    stack_update_limit(st);
    stack_check(st);
    return f;
}

/* The stack just became empty: its largest spare becomes the idle current
 * chunk (debugging modes keep the plain rule: every chunk a spare). */
static void adopt_idle(mk_stack_t *st)
{
    struct mk__stack_chunk *c = st->spare; /* the largest: the list is sorted */

    st->spare = c->prev;
    st->spare_bytes -= c->map_size;
    c->prev = NULL;
    st->chunk = c;
    st->pos = c->start;
    st->used_below = 0;
    st->chunks++;
}

/* After a pop that retired chunks or emptied the stack: the retention policy
 * may take back spares, smallest first, and, when the stack is empty and what is
 * left still holds more than the policy keeps, the idle chunk and the rest
 * (chunks grow to 64 MiB: rounding down to whole chunks would keep them all). */
static void stack_retain(mk_stack_t *st, size_t used)
{
    size_t total = st->spare_bytes + (stack_idle(st) ? st->chunk->map_size : 0), keep;

    if (st->retain == SIZE_MAX)
        return;
    mk__retain_used(&st->policy, used);
    keep = total - mk__retain_excess(&st->policy, st->mapped - total, total, !st->frame);
    while (st->spare && total > keep)
        total -= spare_release_smallest(st);
    if (total > keep && stack_idle(st))
        mk_stack_trim(st);
}

/* The stack just became empty through the general pop: the idle chunk must be
 * the largest kept, as the one spare the default policy keeps would be. */
static void settle_idle(mk_stack_t *st)
{
    struct mk__stack_chunk *idle = st->chunk;

    if (idle && st->spare && st->spare->map_size > idle->map_size) {
        st->chunk = NULL; /* not idle while it is retired */
        st->pos = 0;
        st->chunks--;
        chunk_retire(st, idle);
        idle = NULL;
    }
    if (!idle && st->spare)
        adopt_idle(st);
    spares_enforce_budget(st); /* the idle chunk now counts as the one kept */
}

/* Releases `f` (the innermost frame) and everything allocated after it. */
static void frame_release(mk_stack_t *st, mk_stack_frame_t *f)
{
    mk_stack_frame_t saved = *f; /* the record itself is about to be released */
    size_t used = stack_used(st);
    struct mk__stack_chunk *c;

    stack_note_peak(st);
    bypass_free_all(f);
    if (st->mode & MK__STACK_VALGRIND)
        VALGRIND_DESTROY_MEMPOOL(f);

    /* Chunks taken after the push go back to the spares. */
    while (st->chunk != saved.saved_chunk) {
        c = st->chunk;
        st->chunk = c->prev;
        st->chunks--;
        /* The frame's bytes in the chunk it started in now run to that chunk's end. */
        st->pos = st->chunk ? st->chunk->end : 0;
        chunk_retire(st, c);
    }
    if (st->chunk) {
        /* Poison what the frame used in the chunk it started in. */
        MK_POISON((void *)saved.saved_pos, st->pos - saved.saved_pos);
        if (st->mode & MK__STACK_VALGRIND)
            VALGRIND_MAKE_MEM_NOACCESS((void *)saved.saved_pos,
                                       st->pos - saved.saved_pos);
    }
    frame_close(st, &saved);
    if (!st->frame && !st->mode)
        settle_idle(st);
    stack_retain(st, used);
    stack_update_limit(st);
    stack_check(st);
}

/* The common pop: no debugging mode and no chunk taken since the push, so
 * releasing is restoring three words (the peak is noted first, as always). */
static inline bool pop_fast(mk_stack_t *st, mk_stack_frame_t *f)
{
    if (MK_UNLIKELY(st->mode || st->chunk != f->saved_chunk))
        return false;
    /* The stack empties holding more than the retention floor: the policy
     * decides (one clock read per such pop, for a frame of over 1 MiB). */
    if (MK_UNLIKELY(!f->prev && st->chunk && st->chunk->map_size > st->policy.floor))
        return false;
    stack_note_peak(st);
    frame_close(st, f);
    stack_update_limit(st); /* pos is back where a valid state left it: no check */
    return true;
}

void mk_stack_pop_at(mk_stack_t *st, const char *file, int line)
{
    if (!st->frame)
        mk__die("mk_stack_pop at %s:%d: no frame is open", file, line);
    if (!pop_fast(st, st->frame))
        frame_release(st, st->frame);
}

void mk_stack_pop_frame(mk_stack_frame_t *frame)
{
    mk_stack_t *st = frame->stack;

    if (st->frame != frame) {
        /* The frame being closed is not the innermost: some inner frame was pushed
         * inside its scope and never popped. Name both ends of the mismatch. */
        mk__die("unbalanced pop: frame pushed at %s:%d is closed while the frame "
                "pushed at %s:%d is still open",
                frame->file, frame->line, st->frame ? st->frame->file : "?",
                st->frame ? st->frame->line : 0);
    }
    if (!pop_fast(st, frame))
        frame_release(st, frame);
}

void mk_stack_seal(mk_stack_t *st)
{
    if (!st->frame)
        mk__die("mk_stack_seal: no frame is open");
    st->frame->sealed = true;
    stack_update_limit(st);
}

/* ------------------------------------------------------------------------ */
/* bypass mode: every block a real malloc, listed in its frame                */

static void *bypass_alloc(mk_stack_frame_t *f, size_t size, size_t align)
{
    size_t off = align > BYPASS_HDR ? align : BYPASS_HDR;
    bypass_block_t *b;
    char *base;

    if (size > SIZE_MAX - off) {
        errno = ENOMEM;
        return NULL;
    }
    if (align <= MK_MALLOC_ALIGN)
        base = malloc(off + size);
    else if (posix_memalign((void **)&base, align, off + size) != 0)
        base = NULL;
    if (!base) {
        errno = ENOMEM;
        return NULL;
    }
    b = (bypass_block_t *)(base + off - BYPASS_HDR);
    *b = (bypass_block_t){.prev = NULL, .next = f->bypass, .frame = f, .base = base};
    if (f->bypass)
        f->bypass->prev = b;
    f->bypass = b;
    return base + off;
}

static bypass_block_t *bypass_header(void *p)
{
    return (bypass_block_t *)((char *)p - BYPASS_HDR);
}

static void bypass_unlink(mk_stack_frame_t *f, bypass_block_t *b)
{
    if (b->prev)
        b->prev->next = b->next;
    else
        f->bypass = b->next;
    if (b->next)
        b->next->prev = b->prev;
}

static void bypass_free_all(mk_stack_frame_t *f)
{
    bypass_block_t *b, *next;

    for (b = f->bypass; b; b = next) {
        next = b->next;
        free(b->base);
    }
    f->bypass = NULL;
}

/* ------------------------------------------------------------------------ */
/* allocation                                                                */

/* Aborts unless the innermost frame accepts allocations. */
static mk_stack_frame_t *frame_for_alloc(mk_stack_t *st, const char *what)
{
    mk_stack_frame_t *f = st->frame;

    if (!f)
        mk__die("%s: no frame is open on this stack (push one, or use MK_SCOPE)", what);
    if (f->sealed)
        mk__die("%s: the frame pushed at %s:%d is sealed; open a scope of your own", what,
                f->file, f->line);
    return f;
}

void *mk__stack_alloc_slow(mk_stack_t *st, size_t size, size_t align)
{
    mk_stack_frame_t *f = frame_for_alloc(st, "allocation");
    void *p;

    if (!mk__is_pow2(align))
        mk__die("allocation in the frame pushed at %s:%d: alignment %zu is not a "
                "power of two",
                f->file, f->line, align);
    if (st->mode & MK__STACK_BYPASS)
        return bypass_alloc(f, size, align);
    p = stack_bump(st, size, align);
    if (!p) {
        errno = ENOMEM;
        return NULL;
    }
    MK_UNPOISON(p, size);
    if (st->mode & MK__STACK_VALGRIND)
        VALGRIND_MEMPOOL_ALLOC(f, p, size);
    stack_update_limit(st);
    stack_check(st);
    return p;
}

/* True if p lies in memory the innermost frame allocated. */
static bool frame_owns(const mk_stack_t *st, const mk_stack_frame_t *f, uintptr_t p)
{
    const struct mk__stack_chunk *c;
    uintptr_t lo, hi;

    for (c = st->chunk; c; c = c->prev) {
        lo = c == f->chunk ? (uintptr_t)(f + 1) : c->start;
        hi = c == st->chunk ? st->pos : c->end;
        if (p >= lo && p < hi)
            return true;
        if (c == f->chunk)
            break;
    }
    return false;
}

static void *bypass_realloc(mk_stack_frame_t *f, void *ptr, size_t old_size,
                            size_t new_size)
{
    bypass_block_t *b = bypass_header(ptr);
    void *q;

    if (b->frame != f)
        mk__die("mk_stack_realloc: block %p is not from the frame pushed at %s:%d", ptr,
                f->file, f->line);
    q = bypass_alloc(f, new_size, MK_MALLOC_ALIGN);
    if (!q)
        return NULL;
    memcpy(q, ptr, old_size < new_size ? old_size : new_size);
    bypass_unlink(f, b);
    free(b->base);
    return q;
}

void *mk_stack_realloc(mk_stack_t *st, void *ptr, size_t old_size, size_t new_size)
{
    mk_stack_frame_t *f;
    uintptr_t p = (uintptr_t)ptr;
    void *q;

    if (!ptr)
        return mk_stack_alloc(st, new_size);
    f = frame_for_alloc(st, "mk_stack_realloc");
    if (st->mode & MK__STACK_BYPASS)
        return bypass_realloc(f, ptr, old_size, new_size);
    if (!frame_owns(st, f, p))
        mk__die("mk_stack_realloc: block %p is not from the innermost frame (pushed at "
                "%s:%d)",
                ptr, f->file, f->line);

    /* The newest block grows or shrinks in place while its chunk has room. */
    if (new_size < SIZE_MAX / 2 && p >= st->chunk->start &&
        p + grain_round(old_size) == st->pos &&
        grain_round(new_size) <= st->chunk->end - p) {
        if (new_size < old_size) {
            stack_note_peak(st);
            MK_POISON((void *)(p + new_size), old_size - new_size);
        } else {
            MK_UNPOISON((void *)p, new_size);
        }
        if (st->mode & MK__STACK_VALGRIND) {
            /* CHANGE resizes memcheck's record but leaves addressability as it was. */
            VALGRIND_MEMPOOL_CHANGE(f, ptr, ptr, new_size);
            if (new_size > old_size)
                VALGRIND_MAKE_MEM_UNDEFINED((char *)ptr + old_size, new_size - old_size);
            else
                VALGRIND_MAKE_MEM_NOACCESS((char *)ptr + new_size, old_size - new_size);
        }
        st->pos = p + grain_round(new_size);
        return ptr;
    }
    q = mk_stack_alloc(st, new_size);
    if (q)
        memcpy(q, ptr, old_size < new_size ? old_size : new_size);
    return q;
}

void *mk_stack_memdup(mk_stack_t *st, const void *src, size_t size)
{
    void *p = mk_stack_alloc_aligned(st, size, 1);

    return p ? memcpy(p, src, size) : NULL;
}

char *mk_stack_strdup(mk_stack_t *st, const char *s)
{
    return mk_stack_memdup(st, s, strlen(s) + 1);
}

__attribute__((format(printf, 2, 0))) static char *stack_vfmt(mk_stack_t *st,
                                                              const char *fmt, va_list ap)
{
    va_list ap2;
    int n;
    char *p;

    va_copy(ap2, ap);
    n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return NULL;
    p = mk_stack_alloc_aligned(st, (size_t)n + 1, 1);
    if (p)
        vsnprintf(p, (size_t)n + 1, fmt, ap);
    return p;
}

char *mk_stack_fmt(mk_stack_t *st, const char *fmt, ...)
{
    va_list ap;
    char *p;

    va_start(ap, fmt);
    p = stack_vfmt(st, fmt, ap);
    va_end(ap);
    return p;
}

void mk_stack_stats(mk_stack_t *st, mk_stack_stats_t *out)
{
    bool idle = stack_idle(st);

    stack_note_peak(st);
    *out = (mk_stack_stats_t){
        .used_bytes = stack_used(st),
        .peak_bytes = st->peak,
        .mapped_bytes = st->mapped,
        .spare_bytes = st->spare_bytes + (idle ? st->chunk->map_size : 0),
        .chunks = st->chunks - idle,
        .frames = st->depth,
    };
}

/* ------------------------------------------------------------------------ */
/* the thread's default stack                                                */

static __thread mk_stack_t *tls_stack;
static pthread_key_t tls_key;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;

static void tstack_destroy(void *st)
{
    mk_stack_destroy(st);
}

static void tstack_key_init(void)
{
    if (pthread_key_create(&tls_key, tstack_destroy) != 0)
        mk__die("cannot create the thread-stack key");
}

static mk_stack_t *tstack_create(void)
{
    pthread_once(&tls_once, tstack_key_init);
    tls_stack = mk_stack_create();
    if (!tls_stack)
        mk__die("out of memory creating the thread's stack");
    pthread_setspecific(tls_key, tls_stack);
    return tls_stack;
}

mk_stack_t *mk_tstack(void)
{
    return MK_LIKELY(tls_stack != NULL) ? tls_stack : tstack_create();
}

void *mk__t_alloc(size_t n, size_t size, size_t align, int zero, const char *file,
                  int line)
{
    void *p = mk_stack_alloc_array(mk_tstack(), n, size, align);

    if (!p)
        mk__die("out of memory allocating %zu x %zu bytes on the thread stack at %s:%d",
                n, size, file, line);
    return zero ? memset(p, 0, n * size) : p;
}

void *mk__t_memdup(const void *src, size_t size, const char *file, int line)
{
    void *p = mk__t_alloc(1, size, 1, 0, file, line);

    return memcpy(p, src, size);
}

char *mk__t_strdup(const char *s, const char *file, int line)
{
    return mk__t_memdup(s, strlen(s) + 1, file, line);
}

__attribute__((format(printf, 3, 0))) static char *t_vfmt(const char *file, int line,
                                                          const char *fmt, va_list ap)
{
    char *p = stack_vfmt(mk_tstack(), fmt, ap);
    if (!p)
        mk__die("mk_t_fmt at %s:%d: out of memory formatting \"%s\"", file, line, fmt);
    return p;
}

char *mk__t_fmt(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *p = t_vfmt(file, line, fmt, ap);
    va_end(ap);
    return p;
}

void *(mk_t_memdup)(const void *src, size_t size)
{
    return mk__t_memdup(src, size, __FILE__, __LINE__);
}

char *(mk_t_strdup)(const char *s)
{
    return mk__t_strdup(s, __FILE__, __LINE__);
}

char *(mk_t_fmt)(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *p = t_vfmt(__FILE__, __LINE__, fmt, ap);
    va_end(ap);
    return p;
}
