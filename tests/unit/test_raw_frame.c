/*
 * test_raw_frame.c - the tracer's hand-built zstd frames (raw_frame.c)
 * against libzstd's decoder, which checks their content checksum: every
 * length from 0 to 300 bytes and random lengths up to the largest, the
 * content split into random parts; and XXH64 against published values.
 */
#include "../../src/preload/raw_frame.h"
#include "check.h"

#include <zstd.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng; /* test_seed(): MEMKIT_TEST_SEED replays a failure */

static uint64_t next(void)
{
    return xorshift64(&rng);
}

/* One frame of len random bytes in up to 5 parts, decoded by libzstd. */
static void check_len(size_t len, uint8_t *src, uint8_t *frame, uint8_t *back)
{
    for (size_t i = 0; i < len; i++)
        src[i] = (next() & 3) ? (uint8_t)next() : 'a'; /* some runs, some noise */
    const void *part[5];
    size_t plen[5];
    int nparts = 1 + (int)(next() % 5);
    size_t at = 0;
    for (int i = 0; i < nparts; i++) {
        size_t n = i == nparts - 1 ? len - at : (len - at) ? next() % (len - at + 1) : 0;
        part[i] = src + at;
        plen[i] = n;
        at += n;
    }
    size_t n = mk_raw_frame_write(frame, part, plen, nparts, len);
    CHECK_MSG(n == mk_raw_frame_bound(len), "len %zu: frame %zu bytes, bound %zu", len, n,
              mk_raw_frame_bound(len));
    CHECK_MSG(ZSTD_getFrameContentSize(frame, n) == len, "len %zu: content size", len);
    size_t got = ZSTD_decompress(back, len + 1, frame, n);
    CHECK_MSG(!ZSTD_isError(got) && got == len, "len %zu: %s", len,
              ZSTD_isError(got) ? ZSTD_getErrorName(got) : "wrong length");
    CHECK_MSG(memcmp(back, src, len) == 0, "len %zu: content differs", len);
    /* a flipped content bit must fail the checksum */
    if (len) {
        frame[9 + 3 + next() % len] ^= (uint8_t)(1u << (next() % 8));
        got = ZSTD_decompress(back, len + 1, frame, n);
        CHECK_MSG(ZSTD_isError(got), "len %zu: a damaged frame decoded", len);
    }
}

int main(void)
{
    rng = test_seed();
    /* XXH64 with seed 0, from the reference implementation's documentation */
    CHECK_MSG(mk_xxh64("", 0) == 0xEF46DB3751D8E999u, "xxh64 of the empty string");
    CHECK_MSG(mk_xxh64("abc", 3) == 0x44BC2CF5AD770999u, "xxh64 of abc");

    size_t cap = MK_RAW_FRAME_MAX;
    uint8_t *src = malloc(cap), *frame = malloc(mk_raw_frame_bound(cap)),
            *back = malloc(cap + 1);
    if (!src || !frame || !back)
        return 1;
    for (size_t len = 0; len <= 300; len++)
        check_len(len, src, frame, back);
    for (int i = 0; i < 300; i++)
        check_len(next() % (cap + 1), src, frame, back);
    check_len(cap, src, frame, back);
    free(src);
    free(frame);
    free(back);
    return check_report("raw zstd frames decode with their checksums");
}
