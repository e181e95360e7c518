/*
 * transfer_before.c - the allocation-heavy version: one malloc per list node, one
 * strdup per header name, one malloc per iteration for the scratch buffer.
 */
#include "transfer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t calls;

struct header {
    struct header *next;
    char *name; /* a second allocation per node */
    int value;
};

static void *counted_malloc(size_t n)
{
    calls++;
    return malloc(n);
}

static char *counted_strdup(const char *s)
{
    calls++;
    return strdup(s);
}

transfer_result_t transfer_before(int chunks, int headers_per_chunk)
{
    uint64_t sum = 0;

    calls = 0;
    for (int c = 0; c < chunks; c++) {
        struct header *list = NULL;
        char *buf = counted_malloc(256); /* per-iteration scratch buffer */
        char name[32];

        for (int h = 0; h < headers_per_chunk; h++) {
            struct header *node = counted_malloc(sizeof *node);

            snprintf(name, sizeof name, "x-header-%d", h);
            node->name = counted_strdup(name);
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

            free(list->name);
            free(list);
            list = next;
        }
        free(buf);
    }
    return (transfer_result_t){.checksum = sum, .allocation_calls = calls};
}
