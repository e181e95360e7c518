/*
 * heap.h - the allocators a workload calls like malloc and free: malloc itself
 * (or whichever drop-in allocator is preloaded), mk_pool, mk_fifo and mk_tlsf,
 * behind one switch. Always inlined: a workload that calls them with a constant
 * api, or in a loop where the api never changes, gets a loop of its own per
 * allocator with no branch on the api left inside.
 */
#ifndef MEMKIT_BENCH_HEAP_H
#define MEMKIT_BENCH_HEAP_H

#include "workload.h"

#include <memkit/fifo.h>
#include <memkit/pool.h>
#include <memkit/tlsf.h>

#include <stdlib.h>

typedef struct mk_bench_heap {
    mk_bench_api api; /* MK_API_MALLOC, _MK_POOL, _MK_FIFO or _MK_TLSF */
    mk_pool_t *pool;  /* its item size is the only size it serves */
    mk_fifo_t *fifo;
    mk_tlsf_t *tlsf;
} mk_bench_heap;

/* size bytes aligned to align (a power of two, 8 or 16: what the caller's type
 * needs; mk_fifo packs 8-byte nodes 8 bytes apart, the others align to 16). */
static inline __attribute__((always_inline)) void *
mk_bench_heap_alloc(const mk_bench_heap *h, size_t size, size_t align)
{
    switch (h->api) {
    case MK_API_MK_POOL:
        return mk_pool_alloc(h->pool);
    case MK_API_MK_FIFO:
        return mk_fifo_alloc_aligned(h->fifo, size, align);
    case MK_API_MK_TLSF:
        return mk_tlsf_malloc(h->tlsf, size);
    default:
        return malloc(size);
    }
}

static inline __attribute__((always_inline)) void
mk_bench_heap_free(const mk_bench_heap *h, void *p)
{
    switch (h->api) {
    case MK_API_MK_POOL:
        mk_pool_free(h->pool, p);
        break;
    case MK_API_MK_FIFO:
        mk_fifo_free(h->fifo, p);
        break;
    case MK_API_MK_TLSF:
        mk_tlsf_free(h->tlsf, p);
        break;
    default:
        free(p);
        break;
    }
}

#endif /* MEMKIT_BENCH_HEAP_H */
