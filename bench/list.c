/*
 * list.c - the `list` workload: Intersec's allocator test. Build a singly linked list
 * of N 8-byte nodes, then free it; allocation and free phases are timed separately.
 *
 * With mk_stack the nodes come through a cursor (stack.h: the loop keeps the bump
 * pointer in a register) and the free phase is one pop of the frame holding every
 * node; with
 * mk_pool, mk_fifo and mk_tlsf it frees node by node in list order, exactly like
 * malloc/free (newest first: the list is built at its head).
 *
 * Memory kept between rounds: glibc (and every drop-in allocator here) keeps the
 * freed heap in the process, so its rounds 2 and 3 reuse pages already faulted in.
 * libmemkit's allocators are configured to do the same (mk_stack_set_retain(SIZE_MAX),
 * max_empty_slabs = SIZE_MAX): this workload measures their steady state. With their
 * defaults (the retention policy, memkit/common.h) the first emptying gives the
 * memory back, as after a burst, so round 2 faults it in again and round 3 reuses
 * it. Round 1 (the min of the rates) shows the cost with fresh memory for every
 * allocator. `memkit bench --default-policy` (MEMKIT_BENCH_DEFAULT_POLICY=1 in the
 * child) measures the defaults; `memkit bench patterns` always does.
 */
#include "heap.h"

#include <memkit/fifo.h>
#include <memkit/pool.h>
#include <memkit/stack.h>
#include <memkit/tlsf.h>

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

typedef struct node {
    struct node *next;
} node_t;

_Static_assert(sizeof(node_t) == 8, "the list workload uses 8-byte nodes");

/* One round of the allocators that free node by node (bench/heap.h). Always
 * inlined, with a constant api at each call in list_run. */
static inline __attribute__((always_inline)) int list_round(const mk_bench_heap *h,
                                                            uint64_t n, mk_bench_round *r)
{
    node_t *head = NULL, *node;
    double t0, t1, t2;

    t0 = mk_bench_now();
    for (uint64_t i = 0; i < n; i++) {
        node = mk_bench_heap_alloc(h, sizeof(node_t), _Alignof(node_t));
        if (!node) {
            fprintf(stderr, "list: out of memory after %llu nodes\n",
                    (unsigned long long)i);
            return -1;
        }
        node->next = head;
        head = node;
    }
    t1 = mk_bench_now();
    while (head) {
        node = head->next;
        mk_bench_heap_free(h, head);
        head = node;
    }
    t2 = mk_bench_now();
    *r = (mk_bench_round){.allocs = n, .frees = n, .alloc_s = t1 - t0, .free_s = t2 - t1};
    return 0;
}

static int list_mk_stack(mk_stack_t *st, uint64_t n, mk_bench_round *r)
{
    node_t *head = NULL, *node;
    double t0, t1, t2;

    mk_stack_push(st);
    t0 = mk_bench_now();
    /* A cursor: the loop keeps the bump pointer in a register (stack.h). */
    mk_stack_cursor_t c = mk_stack_cursor_open(st);
    for (uint64_t i = 0; i < n; i++) {
        node = mk_stack_cursor_new(&c, node_t, 1);
        if (!node) {
            fprintf(stderr, "list: mk_stack out of memory after %llu nodes\n",
                    (unsigned long long)i);
            return -1;
        }
        node->next = head;
        head = node;
    }
    mk_stack_cursor_close(&c);
    t1 = mk_bench_now();
    mk_stack_pop(st);
    t2 = mk_bench_now();
    *r = (mk_bench_round){.allocs = n, .frees = n, .alloc_s = t1 - t0, .free_s = t2 - t1};
    return 0;
}

/* The ceiling: the same loop with no allocator at all, a pointer bumped
 * through memory faulted in before the clock starts (what is left is the
 * stores and the bandwidth). Its "free" is forgetting the list: no free
 * rate. */
static int list_bump_ceiling(node_t *mem, uint64_t n, mk_bench_round *r)
{
    node_t *head = NULL, *node;
    node_t *volatile keep; /* the list is used: its stores stay */
    double t0, t1;

    t0 = mk_bench_now();
    for (uint64_t i = 0; i < n; i++) {
        node = &mem[i];
        node->next = head;
        head = node;
    }
    t1 = mk_bench_now();
    keep = head;
    (void)keep;
    *r = (mk_bench_round){.allocs = n, .frees = 0, .alloc_s = t1 - t0, .free_s = 0};
    return 0;
}

static bool list_supports(mk_bench_api api)
{
    return api == MK_API_MALLOC || api == MK_API_MK_STACK || api == MK_API_MK_POOL ||
           api == MK_API_MK_FIFO || api == MK_API_MK_TLSF || api == MK_API_BUMP_CEILING;
}

static int list_run(mk_bench_api api, uint64_t scale, int rounds, mk_bench_round *out)
{
    mk_stack_t *st = NULL;
    mk_pool_t *pool = NULL;
    mk_fifo_t *fifo = NULL;
    mk_tlsf_t *tlsf = NULL;
    node_t *ceiling = NULL;
    bool retain = !getenv("MEMKIT_BENCH_DEFAULT_POLICY");
    int rc = 0;

    if (api == MK_API_BUMP_CEILING) {
        ceiling = mmap(NULL, scale * sizeof(node_t), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
        if (ceiling == MAP_FAILED)
            return -1;
    }

    if (api == MK_API_MK_STACK) {
        if (!(st = mk_stack_create()))
            return -1;
        if (retain)
            mk_stack_set_retain(st, SIZE_MAX);
    }
    if (api == MK_API_MK_POOL &&
        !(pool = mk_pool_create(&(mk_pool_config_t){
              .item_size = sizeof(node_t), .max_empty_slabs = retain ? SIZE_MAX : 0})))
        return -1;
    if (api == MK_API_MK_FIFO && !(fifo = mk_fifo_create(&(mk_fifo_config_t){
                                       .max_spare_chunks = retain ? SIZE_MAX : 0})))
        return -1;
    /* 32 bytes a node (24 usable + the header), in regions of 256 MiB: a TLSF heap
     * keeps its regions, as malloc keeps its heap. */
    if (api == MK_API_MK_TLSF &&
        !(tlsf = mk_tlsf_create(&(mk_tlsf_config_t){.initial_size = (size_t)256 << 20,
                                                    .flags = MK_TLSF_GROW})))
        return -1;
    for (int i = 0; i < rounds && rc == 0; i++) {
        switch (api) {
        case MK_API_MALLOC:
            rc = list_round(&(mk_bench_heap){.api = MK_API_MALLOC}, scale, &out[i]);
            break;
        case MK_API_MK_STACK:
            rc = list_mk_stack(st, scale, &out[i]);
            break;
        case MK_API_MK_POOL:
            rc = list_round(&(mk_bench_heap){.api = MK_API_MK_POOL, .pool = pool}, scale,
                            &out[i]);
            break;
        case MK_API_MK_FIFO:
            rc = list_round(&(mk_bench_heap){.api = MK_API_MK_FIFO, .fifo = fifo}, scale,
                            &out[i]);
            break;
        case MK_API_MK_TLSF:
            rc = list_round(&(mk_bench_heap){.api = MK_API_MK_TLSF, .tlsf = tlsf}, scale,
                            &out[i]);
            break;
        case MK_API_BUMP_CEILING:
            rc = list_bump_ceiling(ceiling, scale, &out[i]);
            break;
        default:
            rc = -1;
            break;
        }
    }
    mk_stack_destroy(st);
    mk_pool_destroy(pool);
    mk_fifo_destroy(fifo);
    mk_tlsf_destroy(tlsf);
    if (ceiling)
        munmap(ceiling, scale * sizeof(node_t));
    return rc;
}

const mk_workload mk_workload_list = {
    .name = "list",
    .summary = "Intersec's test: build a list of N 8-byte nodes, then free it "
               "(alloc and free timed apart)",
    .default_scale = 100000000,
    .quick_scale = 200000,
    .scale_unit = "nodes",
    .supports = list_supports,
    .run = list_run,
};
