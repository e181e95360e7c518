/*
 * internal.h - helpers shared by libmemkit's allocators: page mapping, fatal errors,
 * and the hooks that describe our memory to AddressSanitizer and Valgrind.
 * Not installed; nothing here is public API.
 */
#ifndef MEMKIT_ALLOC_INTERNAL_H
#define MEMKIT_ALLOC_INTERNAL_H

#include "../mk_assert.h"

#include <memkit/common.h>
#include <stdbool.h>
#include <stddef.h>

/* ---- sanitizer detection: gcc defines __SANITIZE_ADDRESS__, clang has __has_feature */
#if defined(__SANITIZE_ADDRESS__)
#define MK_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MK_ASAN 1
#endif
#endif

#ifdef MK_ASAN
#include <sanitizer/asan_interface.h>
#define MK_POISON(p, n)   ASAN_POISON_MEMORY_REGION((p), (n))
#define MK_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define MK_POISON(p, n)   ((void)(p), (void)(n))
#define MK_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#ifdef MEMKIT_HAVE_VALGRIND_H
#include <valgrind/memcheck.h>
#include <valgrind/valgrind.h>
#define MK_ON_VALGRIND() (RUNNING_ON_VALGRIND != 0)
#else
#define MK_ON_VALGRIND()                          0
#define VALGRIND_CREATE_MEMPOOL(pool, rz, zeroed) ((void)0)
#define VALGRIND_DESTROY_MEMPOOL(pool)            ((void)0)
#define VALGRIND_MEMPOOL_ALLOC(pool, p, n)        ((void)0)
#define VALGRIND_MEMPOOL_FREE(pool, p)            ((void)0)
#define VALGRIND_MEMPOOL_CHANGE(pool, a, b, n)    ((void)0)
#define VALGRIND_MAKE_MEM_NOACCESS(p, n)          ((void)0)
#define VALGRIND_MAKE_MEM_DEFINED(p, n)           ((void)0)
#define VALGRIND_MAKE_MEM_UNDEFINED(p, n)         ((void)0)
#endif

/* Prints "memkit: <message>" on stderr and aborts. For broken API contracts only. */
__attribute__((noreturn, format(printf, 1, 2), cold)) void mk__die(const char *fmt, ...);

/* Size of a huge page, and the size from which chunks are huge-page aligned. */
#define MK_HUGE_PAGE ((size_t)2 << 20)

/*
 * Maps `size` bytes (a multiple of the page size) of zeroed, private memory. Mappings
 * of at least MK_HUGE_PAGE are aligned to it, so a kernel that backs memory with
 * huge pages on its own (transparent_hugepage=always) can. They are not advised
 * MADV_HUGEPAGE: where the kernel compacts memory for advised regions (its default
 * defrag setting, madvise), a fault may stall on compaction: a 64 MiB burst of
 * 2 MiB FIFO chunks took 114 ms advised against 30 ms not (burst-idle, medians of
 * 3), though a stack's took 10 against 33 ms while huge pages happened to be free;
 * the list and build-free workloads ran within 0.8-1.2x either way. Predictable
 * wins over sometimes faster.
 * `align` (a power of two, at most
 * 1 GiB) is the alignment required of the start; 0 means page alignment.
 * Returns NULL on failure, with errno set.
 */
void *mk__pages_map(size_t size, size_t align);
void mk__pages_unmap(void *p, size_t size);
size_t mk__page_size(void);

static inline size_t mk__align_up(size_t n, size_t align)
{
    return (n + align - 1) & ~(align - 1);
}

static inline bool mk__is_pow2(size_t n)
{
    return n && !(n & (n - 1));
}

/* Marks [p, p + n) usable (contents undefined) or off limits, for ASan and, when
 * valgrind is true, for memcheck. Out of line: the client requests' inline
 * assembly would otherwise bloat every hot function that may call it. */
__attribute__((cold)) void mk__set_access(void *p, size_t n, bool usable, bool valgrind);

/* True when MEMKIT_BYPASS is set to a value other than "0" (read once). */
bool mk__bypass_enabled(void);

/* ---- retain.c: the retention policy (memkit/common.h, struct mk__retain) ---- */

/* Sets up the policy for memory handed out in units of `unit` bytes: limit is the
 * config's count limit (0: none; SIZE_MAX: keep everything), decay_ms the period
 * (0: MK_DECAY_MS). */
void mk__retain_init(struct mk__retain *r, size_t limit, size_t unit, unsigned decay_ms);

/* Records bytes in use and spare after a slow path took or mapped memory. */
static inline void mk__retain_note(struct mk__retain *r, size_t in_use, size_t spare)
{
    if (spare < r->low)
        r->low = spare;
    if (in_use > r->peak)
        r->peak = in_use;
}

/* Records bytes in use only (the stack, whose spares did not change). */
static inline void mk__retain_used(struct mk__retain *r, size_t in_use)
{
    if (in_use > r->peak)
        r->peak = in_use;
}

/* After memory became spare: how many of the spare bytes to give back now.
 * emptied: nothing but the current slab or chunk holds live data. The caller
 * gives back that much rounded down to whole units, never memory in use. */
size_t mk__retain_excess(struct mk__retain *r, size_t in_use, size_t spare, bool emptied);

/* The policy's clock (ns, monotonic, never 0); tests replace it. */
extern uint64_t (*mk__retain_clock)(void);

/* ---- chunks.c: equal-sized chunks with a spare list (struct mk__chunks) ---- */

/* Sets up a source of chunk_size chunks; limit and decay_ms as mk__retain_init's. */
void mk__chunks_init(struct mk__chunks *src, size_t chunk_size, size_t limit,
                     unsigned decay_ms, bool size_aligned);
/* A chunk of size bytes (a multiple of the page size): a spare when size is the
 * standard size and one is kept (*fresh false: the chunk holds what it held when
 * put back, its first word aside), else fresh zeroed pages (*fresh true). NULL with
 * errno set. */
void *mk__chunks_get(struct mk__chunks *src, size_t size, bool *fresh);
/* An empty chunk of size bytes comes back: kept as a spare when it has the standard
 * size, else unmapped; then the retention policy may give spares back. */
void mk__chunks_put(struct mk__chunks *src, void *c, size_t size);
/* Unmaps a chunk, in use or not a spare. */
void mk__chunks_unmap(struct mk__chunks *src, void *c, size_t size);
/* Unmaps spares beyond keep. */
void mk__chunks_trim(struct mk__chunks *src, size_t keep);

#endif /* MEMKIT_ALLOC_INTERNAL_H */
