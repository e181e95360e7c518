/*
 * memkit/common.h - definitions shared by every libmemkit header.
 *
 * libmemkit is the "fix" half of memkit: special-purpose allocators that replace
 * malloc where a trace shows a pattern malloc handles badly. Every public name is
 * prefixed mk_ (functions, types) or MK_ (macros). Names with a double underscore
 * (mk__, MK__) are internal even when they appear in a header.
 */
#ifndef MEMKIT_COMMON_H
#define MEMKIT_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MK_VERSION_MAJOR  0
#define MK_VERSION_MINOR  1
#define MK_VERSION_PATCH  0
#define MK_VERSION_STRING "0.1.0"

#ifdef __cplusplus
/* In C++ a struct tag and a function of the same name (mk_pool_stats) trip
 * -Wshadow in the user's build; the C API keeps C's names. */
#define MK__EXTERN_C_BEGIN                                                               \
    _Pragma("GCC diagnostic push")                                                       \
        _Pragma("GCC diagnostic ignored \"-Wshadow\"") extern "C"                        \
    {
#define MK__EXTERN_C_END                                                                 \
    }                                                                                    \
    _Pragma("GCC diagnostic pop")
#else
#define MK__EXTERN_C_BEGIN
#define MK__EXTERN_C_END
#endif

/* Symbols exported from the shared library (built with -fvisibility=hidden). */
#define MK_API __attribute__((visibility("default")))

#define MK_LIKELY(x)   __builtin_expect(!!(x), 1)
#define MK_UNLIKELY(x) __builtin_expect(!!(x), 0)

#define MK__CAT2(a, b) a##b
#define MK__CAT(a, b)  MK__CAT2(a, b)
/* A name unique within one source line, for variables declared by scope macros. */
#define MK__UNIQ(prefix) MK__CAT(prefix, __LINE__)

/* The alignment malloc guarantees; the default for untyped allocations. */
#define MK_MALLOC_ALIGN 16

/* A type's alignment and a compile-time check, in C11 and in C++ alike
 * (g++ knows neither _Alignof nor _Static_assert in C++). */
#ifdef __cplusplus
#define MK_ALIGNOF(type)            alignof(type)
#define MK_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define MK_ALIGNOF(type)            _Alignof(type)
#define MK_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

/* ---- private to the allocators' inline paths; never for programs ---- */

/*
 * The bump fast path of the stack, FIFO and ring: size bytes (0 takes one grain, so
 * every block has its own address) aligned to align, taken from [*pos, end); NULL when
 * they do not fit, and the caller's slow path decides. *pos and end are multiples of
 * grain (a power of two no larger than any align passed), and align a power of two
 * (callers check or fold it).
 *
 * One compare decides, against end - n, which does not change in a loop of one size
 * (the compiler hoists it), signed so that it fails when end is 0 (the slow path's
 * signal: -n is below every address) or the aligned position passed end. Addresses
 * are below 2^63, so they compare as positive. A size whose rounding would wrap (over
 * PTRDIFF_MAX) goes to the slow path; for a constant size the test folds away. A
 * block handed out is never NULL (a position of 0 comes only with an end of 0), which
 * lets the compiler drop the caller's NULL test on this path.
 */
static inline void *mk__bump(uintptr_t *pos, uintptr_t end, size_t size, size_t align,
                             size_t grain)
{
    uintptr_t p = align <= grain ? *pos : (*pos + align - 1) & ~(uintptr_t)(align - 1);
    size_t n = (size + grain - 1 + (size == 0)) & ~(size_t)(grain - 1);

    if (MK_LIKELY(size <= (size_t)PTRDIFF_MAX && (intptr_t)p <= (intptr_t)(end - n))) {
        if (p == 0)
            __builtin_unreachable();
        *pos = p + n;
        return (void *)p;
    }
    return NULL;
}

/*
 * Retention: how long the allocators that map memory keep what is freed.
 *
 * A slab or chunk that empties is kept as a spare, because a program that frees a
 * working set usually builds it again (unmapping and faulting it back in would cost
 * more than the work: a build-and-free loop ran 5-7x slower than malloc that way).
 * Spares go back to the OS when they stay unused, judged on the allocator's slow
 * paths only (no thread, no timer; the clock is read only above the floor):
 *   - up to `floor` spare bytes (1 MiB, or one slab or chunk when larger) are
 *     always kept, without reading the clock;
 *   - decay: spare memory that no call needed for a whole period (decay_ms, by
 *     default MK_DECAY_MS) goes back: the period's low-water mark of spare bytes;
 *   - bound: spares never exceed the most bytes the allocator had in use in this
 *     period and the last one, so a shrunk working set does not keep an old peak;
 *   - emptying: when everything but the current slab or chunk emptied, and the
 *     last time that happened was more than a period ago (or never), spares above
 *     the floor go back at once. A burst followed by idle returns its memory
 *     without waiting for a call that may never come; a loop that empties again
 *     within the period keeps it.
 * A count limit in a config (max_empty_slabs, max_spare_chunks) caps the spares
 * as well; SIZE_MAX there keeps everything (no decay). mk_*_trim returns every
 * spare now.
 */
/* The period by default; MEMKIT_DECAY_MS in the environment sets another for the
 * whole process (a config's decay_ms still wins). */
#define MK_DECAY_MS 1000

/* The policy's state (src/alloc/retain.c); in the allocators' states only because
 * those are public for inlining. Bytes throughout. */
struct mk__retain {
    uint64_t decay_ns; /* the period; UINT64_MAX: never decay */
    uint64_t epoch;    /* when the current period began (0: not yet) */
    uint64_t emptied;  /* when the allocator last emptied (0: never) */
    size_t floor;      /* spare bytes always kept */
    size_t cap;        /* spare bytes kept at most */
    size_t low;        /* fewest spare bytes seen this period */
    size_t peak;       /* most bytes in use this period */
    size_t peak_prev;  /* and in the last one */
};

/* Equal-sized chunks with a spare list: the FIFO's and the ring's (src/alloc/chunks.c).
 * In their states only because those are public for inlining. */
struct mk__chunks {
    size_t chunk_size;        /* the standard size, the only one kept as a spare */
    struct mk__retain retain; /* how long spares are kept */
    size_t chunks;            /* mapped, spares included */
    size_t spare;             /* of which spares */
    size_t peak_chunks;       /* high-water mark of chunks */
    size_t mapped;            /* bytes mapped */
    void *spares;             /* linked through each spare's first word */
    bool size_aligned;        /* fresh chunks aligned to chunk_size (else to a page) */
};

MK__EXTERN_C_BEGIN

/* Version of the library actually linked, e.g. "0.1.0". */
MK_API const char *mk_version(void);

MK__EXTERN_C_END

#endif /* MEMKIT_COMMON_H */
