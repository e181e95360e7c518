/*
 * memkit/stack.h - stack (frame) allocator.
 *
 * Memory comes from large chunks; an allocation bumps a pointer; frames are pushed
 * and popped, and popping a frame releases everything allocated since its push in
 * time independent of the number of allocations. Use it for the allocations a trace
 * shows as temporaries or LIFO: per-request scratch data, parse trees of one input,
 * strings built for one call.
 *
 *     mk_stack_t *st = mk_stack_create();
 *     mk_stack_push(st);
 *     struct node *n = mk_stack_new(st, struct node, 1);   // 8-byte node: 8 bytes
 *     char *buf = mk_stack_alloc(st, 4096);
 *     mk_stack_pop(st);                                     // n and buf are gone
 *     mk_stack_destroy(st);
 *
 * Scopes. MK_STACK_SCOPE(st) pushes a frame and pops it when the enclosing block is
 * left by any path (return, goto, break), using __attribute__((cleanup)). MK_SCOPE()
 * does the same on the calling thread's default stack (mk_tstack()):
 *
 *     void handle(const char *name) {
 *         MK_SCOPE();
 *         char *path = mk_t_fmt("/var/lib/app/%s", name);  // freed at block exit
 *         ...
 *     }
 *
 * The t_ convention. A function that allocates its result in its CALLER's frame of
 * the thread stack (so it must not open a scope of its own) is named with a t_
 * prefix: `char *t_render_row(const row_t *r)`. A reader then knows the result lives
 * until the caller's scope ends. The library's own such helpers are mk_t_alloc,
 * mk_t_new, mk_t_new0, mk_t_memdup, mk_t_strdup and mk_t_fmt; they abort with a
 * message on failure (like a stack overflow would), where mk_stack_* return NULL.
 *
 * Rules, checked always (each abort names the file and line of the frame involved):
 *   - allocating requires an open frame;
 *   - frames are popped in LIFO order; leaving a scope while an inner frame pushed
 *     inside it is still open is an error;
 *   - a sealed frame (mk_stack_seal) accepts no allocation until a new frame is
 *     pushed, so callees must open their own scope;
 *   - mk_stack_realloc only accepts a block of the innermost frame.
 *
 * Alignment. mk_stack_new(st, type, n) aligns to _Alignof(type) and no more, so
 * 8-byte nodes are packed 8 bytes apart; mk_stack_alloc aligns to 16 like malloc;
 * mk_stack_alloc_aligned takes any power of two.
 *
 * Errors. Size overflow (n * size), or mmap failing, returns NULL with errno ENOMEM
 * and leaves the stack as it was. An allocation of 0 bytes returns a valid, unique
 * pointer (it takes MK_STACK_GRAIN bytes).
 *
 * Debugging. In a build with AddressSanitizer, chunk memory is poisoned until it is
 * allocated and again when its frame is popped, so use-after-pop is reported; under
 * Valgrind each block is described to memcheck with mempool client requests. With
 * MEMKIT_BYPASS=1 in the environment (read once, at the first stack created) every
 * allocation is a real malloc recorded in its frame and freed at pop, so any tool
 * that understands malloc gives red zones and allocation/free stacks.
 *
 * Threads. A mk_stack_t belongs to one thread at a time; mk_tstack() gives each
 * thread its own, destroyed when the thread exits.
 */
#ifndef MEMKIT_STACK_H
#define MEMKIT_STACK_H

#include <memkit/common.h>
#include <errno.h>
#include <string.h>

MK__EXTERN_C_BEGIN

typedef struct mk_stack_frame mk_stack_frame_t;
typedef struct mk_stack mk_stack_t;

/*
 * The stack's state. Public only so that allocation can be inlined: treat every
 * field as private.
 */
struct mk_stack {
    uintptr_t pos; /* next free byte of the current chunk; a multiple of MK_STACK_GRAIN */
    uintptr_t limit; /* end of the current chunk, or 0 to send every allocation to
                        the slow path (no frame open, sealed frame, bypass, ASan,
                        Valgrind) */
    struct mk__stack_chunk *chunk; /* current chunk (newest) */
    struct mk__stack_chunk *spare; /* released chunks kept for reuse, largest first */
    mk_stack_frame_t *frame;       /* innermost open frame */
    size_t used_below;             /* bytes used in the chunks below the current one */
    size_t peak;                   /* high-water mark of used bytes, updated lazily */
    size_t mapped;                 /* bytes mapped for chunks, spare included */
    size_t chunks;                 /* chunks in use (spares excluded) */
    size_t spare_bytes;            /* bytes mapped for spare chunks */
    size_t retain;                 /* mk_stack_set_retain's budget, if set */
    struct mk__retain policy;      /* which spares go back (memkit/common.h) */
    size_t next_chunk_size;        /* size of the next chunk to map */
    unsigned depth;                /* number of open frames */
    unsigned mode;                 /* MK__STACK_* mode bits */
};

/* Statistics of one stack. */
typedef struct mk_stack_stats {
    size_t used_bytes;   /* bytes handed out and not yet popped (padding included) */
    size_t peak_bytes;   /* high-water mark of used_bytes */
    size_t mapped_bytes; /* bytes mapped from the OS, spare chunks included */
    size_t spare_bytes;  /* of which held in spare chunks */
    size_t chunks;       /* chunks holding live data */
    size_t frames;       /* open frames */
} mk_stack_stats_t;

/* ---- lifetime ---- */

/* Creates a stack; NULL with errno ENOMEM on failure. No memory is mapped yet. */
MK_API mk_stack_t *mk_stack_create(void);
/* Releases every chunk and the stack itself. Open frames are discarded. */
MK_API void mk_stack_destroy(mk_stack_t *st);
/*
 * Memory kept after a pop. Chunks released by a pop are kept as spares while the
 * retention policy keeps them (memkit/common.h): a loop of frames keeps what it
 * reuses, and a stack that empties for the first time in a period keeps at most the
 * policy's floor (1 MiB). mk_stack_set_retain(st, bytes) instead keeps the largest
 * released chunk and further ones while their total stays within `bytes` (the
 * policy still applies); SIZE_MAX keeps everything, never decaying. mk_stack_trim
 * unmaps every spare chunk now.
 */
MK_API void mk_stack_set_retain(mk_stack_t *st, size_t bytes);
MK_API void mk_stack_trim(mk_stack_t *st);

/* Initializes caller-provided storage as an empty stack; mk_stack_fini releases it. */
MK_API void mk_stack_init(mk_stack_t *st);
MK_API void mk_stack_fini(mk_stack_t *st);

/* ---- frames ---- */

/* Pushes a frame; returns it (never NULL: aborts if no memory is left). */
#define mk_stack_push(st) mk_stack_push_at((st), __FILE__, __LINE__)
/* Pops the innermost frame, releasing everything allocated since its push. */
#define mk_stack_pop(st) mk_stack_pop_at((st), __FILE__, __LINE__)
/* Seals the innermost frame: allocating into it aborts until a new frame is pushed. */
MK_API void mk_stack_seal(mk_stack_t *st);

MK_API mk_stack_frame_t *mk_stack_push_at(mk_stack_t *st, const char *file, int line);
MK_API void mk_stack_pop_at(mk_stack_t *st, const char *file, int line);
/* Pops `frame`, which must be the innermost frame of its stack (else aborts). */
MK_API void mk_stack_pop_frame(mk_stack_frame_t *frame);

/* Pushes a frame on `st` and pops it when the enclosing block is left. */
#define MK_STACK_SCOPE(st)                                                               \
    mk_stack_frame_t *MK__UNIQ(mk__scope_)                                               \
        __attribute__((cleanup(mk__scope_end), unused)) =                                \
            mk_stack_push_at((st), __FILE__, __LINE__)
/* MK_STACK_SCOPE on the calling thread's default stack. */
#define MK_SCOPE() MK_STACK_SCOPE(mk_tstack())

static inline void mk__scope_end(mk_stack_frame_t **frame)
{
    mk_stack_pop_frame(*frame);
}

/* ---- allocation ---- */

MK_API void *mk__stack_alloc_slow(mk_stack_t *st, size_t size, size_t align);

/*
 * Sizes are rounded up to this grain, so the bump pointer is always 8-aligned and
 * every alignment up to 8 (a node, a pointer, a string) costs no rounding at run time.
 */
#define MK_STACK_GRAIN 8

/*
 * Allocates `size` bytes aligned to `align` (a power of two) in the innermost frame.
 * Fast path: a bump below `limit` (mk__bump: the chunk's end is page-aligned and the
 * bump pointer 8-aligned, so two compares decide). `limit` is 0 whenever the slow
 * path must see the call. A bad alignment goes to the slow path to be reported (the
 * check folds away for constant alignments).
 */
static inline void *mk_stack_alloc_aligned(mk_stack_t *st, size_t size, size_t align)
{
    void *p;

    if (MK_LIKELY((align & (align - 1)) == 0 &&
                  (p = mk__bump(&st->pos, st->limit, size, align, MK_STACK_GRAIN))))
        return p;
    return mk__stack_alloc_slow(st, size, align);
}

/* Allocates `size` bytes aligned like malloc's (16). */
static inline void *mk_stack_alloc(mk_stack_t *st, size_t size)
{
    return mk_stack_alloc_aligned(st, size, MK_MALLOC_ALIGN);
}

/* Allocates n * size bytes; NULL with errno ENOMEM if the product overflows. */
static inline void *mk_stack_alloc_array(mk_stack_t *st, size_t n, size_t size,
                                         size_t align)
{
    size_t total;

    if (MK_UNLIKELY(__builtin_mul_overflow(n, size, &total))) {
        errno = ENOMEM;
        return NULL;
    }
    return mk_stack_alloc_aligned(st, total, align);
}

static inline void *mk__zero(void *p, size_t n)
{
    return p ? memset(p, 0, n) : p;
}

/* Typed allocation of n objects, aligned to the type's own alignment. */
#define mk_stack_new(st, type, n)                                                        \
    ((type *)mk_stack_alloc_array((st), (n), sizeof(type), MK_ALIGNOF(type)))
/* Same, zero-filled. */
#define mk_stack_new0(st, type, n)                                                       \
    ((type *)mk__zero(mk_stack_alloc_array((st), (n), sizeof(type), MK_ALIGNOF(type)),   \
                      (size_t)(n) * sizeof(type)))

/* ---- cursors: many allocations in one loop ----
 *
 * A loop that allocates block after block runs at the speed of a bare bump pointer
 * only if the compiler keeps the pointer in a register, and it cannot keep the stack's
 * own field there: the slow path's call sits in the loop, so every allocation reloads
 * and stores it (about 6 cycles each, against 1 for a pointer held in a register). A
 * cursor is a copy of the position in a local variable that the compiler can keep:
 *
 *     mk_stack_cursor_t c = mk_stack_cursor_open(st);
 *     for (...) node = mk_stack_cursor_new(&c, node_t, 1);
 *     mk_stack_cursor_close(&c);
 *
 * While a cursor is open, its stack is used through it alone: no allocation, push,
 * pop, realloc or stats on the stack itself (its position is stale until the cursor
 * writes it back, which it does on its slow path and when it closes). Blocks come
 * from the innermost frame, as mk_stack_alloc's do, with the same checks.
 */
typedef struct mk_stack_cursor {
    uintptr_t pos, limit; /* the stack's, held here while the cursor is open */
    mk_stack_t *st;
} mk_stack_cursor_t;

static inline mk_stack_cursor_t mk_stack_cursor_open(mk_stack_t *st)
{
    mk_stack_cursor_t c = {st->pos, st->limit, st};
    return c;
}

/* The slow path: the position goes back to the stack, the stack's own slow path
 * runs (a new chunk, a check, a debugging mode), and the cursor takes the new
 * position. */
static inline void *mk__stack_cursor_slow(mk_stack_cursor_t *c, size_t size, size_t align)
{
    c->st->pos = c->pos;
    void *p = mk__stack_alloc_slow(c->st, size, align);
    c->pos = c->st->pos;
    c->limit = c->st->limit;
    return p;
}

/* As mk_stack_alloc_aligned, through the cursor. */
static inline void *mk_stack_cursor_alloc(mk_stack_cursor_t *c, size_t size, size_t align)
{
    void *p;

    if (MK_LIKELY((align & (align - 1)) == 0 &&
                  (p = mk__bump(&c->pos, c->limit, size, align, MK_STACK_GRAIN))))
        return p;
    return mk__stack_cursor_slow(c, size, align);
}

/* n * size bytes through the cursor; NULL with errno ENOMEM if the product overflows. */
static inline void *mk_stack_cursor_alloc_array(mk_stack_cursor_t *c, size_t n,
                                                size_t size, size_t align)
{
    size_t total;

    if (MK_UNLIKELY(__builtin_mul_overflow(n, size, &total))) {
        errno = ENOMEM;
        return NULL;
    }
    return mk_stack_cursor_alloc(c, total, align);
}

/* Typed allocation of n objects through the cursor. */
#define mk_stack_cursor_new(c, type, n)                                                  \
    ((type *)mk_stack_cursor_alloc_array((c), (n), sizeof(type), MK_ALIGNOF(type)))

/* Writes the position back: the stack may be used directly again. */
static inline void mk_stack_cursor_close(mk_stack_cursor_t *c)
{
    c->st->pos = c->pos;
}

/*
 * Resizes a block of the innermost frame. The most recent allocation (the block that
 * ends where the next allocation would start) grows or shrinks in place when its chunk
 * has room; any other block is copied (old_size is
 * the size it was allocated with). ptr NULL acts as mk_stack_alloc. Returns NULL with
 * errno ENOMEM on failure, leaving the block untouched.
 */
MK_API void *mk_stack_realloc(mk_stack_t *st, void *ptr, size_t old_size,
                              size_t new_size);

/* Copies into the innermost frame. */
MK_API void *mk_stack_memdup(mk_stack_t *st, const void *src, size_t size);
MK_API char *mk_stack_strdup(mk_stack_t *st, const char *s);
/* printf into the innermost frame. */
MK_API char *mk_stack_fmt(mk_stack_t *st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Fills *out; cheap (no walk over allocations). */
MK_API void mk_stack_stats(mk_stack_t *st, mk_stack_stats_t *out);

/* ---- the thread's default stack and the t_ helpers ---- */

/* The calling thread's stack, created on first use and destroyed at thread exit.
 * Aborts if it cannot be created. */
MK_API mk_stack_t *mk_tstack(void);

MK_API void *mk__t_alloc(size_t n, size_t size, size_t align, int zero, const char *file,
                         int line);

#define mk_t_alloc(size) mk__t_alloc(1, (size), MK_MALLOC_ALIGN, 0, __FILE__, __LINE__)
#define mk_t_new(type, n)                                                                \
    ((type *)mk__t_alloc((n), sizeof(type), MK_ALIGNOF(type), 0, __FILE__, __LINE__))
#define mk_t_new0(type, n)                                                               \
    ((type *)mk__t_alloc((n), sizeof(type), MK_ALIGNOF(type), 1, __FILE__, __LINE__))
/* Copies into the thread's current frame. Like mk_t_new they abort naming
 * the caller's file and line; the parenthesized functions (callable through
 * a pointer) name their own. */
MK_API void *mk__t_memdup(const void *src, size_t size, const char *file, int line);
MK_API char *mk__t_strdup(const char *s, const char *file, int line);
MK_API char *mk__t_fmt(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
MK_API void *(mk_t_memdup)(const void *src, size_t size);
MK_API char *(mk_t_strdup)(const char *s);
MK_API char *(mk_t_fmt)(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define mk_t_memdup(src, size) mk__t_memdup((src), (size), __FILE__, __LINE__)
#define mk_t_strdup(s)         mk__t_strdup((s), __FILE__, __LINE__)
#define mk_t_fmt(...)          mk__t_fmt(__FILE__, __LINE__, __VA_ARGS__)

MK__EXTERN_C_END

#endif /* MEMKIT_STACK_H */
