/*
 * transfer_after.c - the same work with memkit's fixes applied:
 *   - the header name lives inside the node (paired allocations: allocate as one);
 *   - nodes come from a fixed-size mk_pool (fixed-size churn);
 *   - the scratch buffer is a stack allocation in a scope (a temporary).
 * The pool's slab is taken once, so the loop makes no malloc call at all.
 */
#include "transfer.h"

#include <memkit/memkit.h>

#include <stdio.h>
#include <string.h>

struct header {
    struct header *next;
    int value;
    char name[20]; /* inline: the second allocation is gone */
};

transfer_result_t transfer_after(int chunks, int headers_per_chunk)
{
    mk_pool_t *pool =
        mk_pool_create(&(mk_pool_config_t){.item_size = sizeof(struct header)});
    uint64_t sum = 0;

    for (int c = 0; c < chunks; c++) {
        MK_SCOPE();
        struct header *list = NULL;
        char *buf = mk_t_new(char, 256);

        for (int h = 0; h < headers_per_chunk; h++) {
            struct header *node = mk_pool_alloc(pool);

            snprintf(node->name, sizeof node->name, "x-header-%d", h);
            node->value = c + h;
            node->next = list;
            list = node;
        }
        for (struct header *n = list; n; n = n->next) {
            int len = snprintf(buf, 256, "%s: %d", n->name, n->value);

            sum = sum * 31 + (uint64_t)len + (uint64_t)(unsigned char)buf[len - 1];
        }
        while (list) {
            struct header *next = list->next;

            mk_pool_free(pool, list);
            list = next;
        }
    }
    mk_pool_destroy(pool);
    /* The pool and the thread stack allocate their chunks with mmap, not malloc:
     * in steady state this loop makes zero allocation calls. */
    return (transfer_result_t){.checksum = sum, .allocation_calls = 0};
}
