/*
 * transfer.h - the curl story in miniature, shared by the before and after versions.
 *
 * A "transfer" reads N chunks; for each it keeps a header list (a list node plus a
 * separately allocated name, as curl's linked lists did) and formats the chunk into a
 * scratch buffer allocated per iteration. The "before" version mallocs all of that;
 * the "after" version applies the fixes memkit recommends. Both compute the same
 * checksum, so the demo can show they do the same work.
 */
#ifndef MEMKIT_EXAMPLES_TRANSFER_H
#define MEMKIT_EXAMPLES_TRANSFER_H

#include <stddef.h>
#include <stdint.h>

typedef struct transfer_result {
    uint64_t checksum;
    uint64_t allocation_calls; /* counted by the example itself */
} transfer_result_t;

transfer_result_t transfer_before(int chunks, int headers_per_chunk);
transfer_result_t transfer_after(int chunks, int headers_per_chunk);

#endif
