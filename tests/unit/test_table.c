/*
 * test_table.c - the analysis side's big tables (mk_table_resize,
 * mk_table_zalloc, mk_table_free in src/trace/reader.c), whose memory is the
 * C heap below MK_TABLE_MAP_MIN (1 MiB) and a mapping of their own from it:
 *   - a table grown by doubling from 64 bytes to 64 MiB, through the switch
 *     from heap to mapping and mapping to mapping, keeps every byte it held
 *     (each step fills its new part with a pattern of its offsets, and every
 *     earlier byte is checked at the next);
 *   - shrunk back below the switch (mapping to heap) it keeps what fits;
 *   - new tables come zeroed on both sides of the switch, and a mapping's
 *     bytes are writable to its very end;
 *   - a size that cannot be had fails with NULL and leaves the table whole.
 */
#define _GNU_SOURCE
#include "../../src/trace/reader.h"
#include "check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint8_t pattern(size_t i)
{
    return (uint8_t)(i * 2654435761u >> 13);
}

static bool holds_pattern(const uint8_t *t, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        if (t[i] != pattern(i))
            return false;
    return true;
}

static void fill_pattern(uint8_t *t, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        t[i] = pattern(i);
}

static void grow_and_shrink(void)
{
    uint8_t *t = NULL;
    size_t size = 0;
    for (size_t next = 64; next <= ((size_t)64 << 20); next *= 2) {
        uint8_t *g = mk_table_resize(t, size, next);
        CHECK(g != NULL);
        if (!g)
            break;
        CHECK(holds_pattern(g, 0, size));
        fill_pattern(g, size, next);
        t = g;
        size = next;
    }
    CHECK(holds_pattern(t, 0, size));
    /* back below the switch: what fits is kept */
    size_t small = 4096;
    uint8_t *s = mk_table_resize(t, size, small);
    CHECK(s != NULL);
    if (s) {
        CHECK(holds_pattern(s, 0, small));
        t = s;
        size = small;
    }
    /* and up again, in one step past the switch */
    uint8_t *g = mk_table_resize(t, size, (size_t)3 << 20);
    CHECK(g != NULL);
    if (g) {
        CHECK(holds_pattern(g, 0, size));
        t = g;
        size = (size_t)3 << 20;
    }
    mk_table_free(t, size);
}

static void zeroed_both_sides(void)
{
    const size_t sizes[] = {1,
                            100,
                            4096,
                            ((size_t)1 << 20) - 1,
                            (size_t)1 << 20,
                            ((size_t)1 << 20) + 1,
                            ((size_t)5 << 20) + 12345};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        uint8_t *t = mk_table_zalloc(n);
        CHECK(t != NULL);
        if (!t)
            continue;
        bool zero = true;
        for (size_t i = 0; i < n; i++)
            zero &= t[i] == 0;
        CHECK(zero);
        memset(t, 0xa5, n); /* writable to the last byte */
        CHECK(t[n - 1] == 0xa5);
        mk_table_free(t, n);
    }
    mk_table_free(NULL, 0);
    mk_table_free(NULL, (size_t)8 << 20);
}

static void impossible_size(void)
{
    size_t size = (size_t)2 << 20;
    uint8_t *t = mk_table_resize(NULL, 0, size);
    CHECK(t != NULL);
    if (!t)
        return;
    fill_pattern(t, 0, size);
    /* more address space than a 64-bit process has */
    CHECK(mk_table_resize(t, size, (size_t)1 << 62) == NULL);
    CHECK(holds_pattern(t, 0, size));
    mk_table_free(t, size);
}

int main(void)
{
    grow_and_shrink();
    zeroed_both_sides();
    impossible_size();
    return check_report("test_table");
}
