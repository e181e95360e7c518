/*
 * raw_frame.c - zstd frames of raw blocks, written without libzstd.
 *
 * The layout follows RFC 8878 (Zstandard): the magic number; a frame header
 * descriptor saying single segment (no window descriptor), a 4-byte content
 * size and a content checksum; one block (the format's blocks hold at most
 * 128 KiB) with its 3-byte header (last-block bit, type 0 = raw, size) and
 * the bytes as they are; then the low 32 bits of the content's XXH64. XXH64 follows its
 * published specification; it runs once over each small record, so it is
 * written for clarity, one 8-byte lane at a time.
 */
#include "raw_frame.h"

#include <assert.h>
#include <string.h>

#define ZSTD_MAGIC      0xFD2FB528u
#define FHD_FCS4_SINGLE ((2u << 6) | (1u << 5)) /* 4-byte content size, one segment */
#define FHD_CHECKSUM    (1u << 2)
#define BLOCK_HEAD_LEN  3

static const uint64_t P1 = 0x9E3779B185EBCA87u;
static const uint64_t P2 = 0xC2B2AE3D27D4EB4Fu;
static const uint64_t P3 = 0x165667B19E3779F9u;
static const uint64_t P4 = 0x85EBCA77C2B2AE63u;
static const uint64_t P5 = 0x27D4EB2F165667C5u;

static uint64_t rotl64(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

static uint64_t read64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v); /* little-endian host: x86-64 */
    return v;
}

static uint32_t read32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static uint64_t xxh_round(uint64_t acc, uint64_t lane)
{
    return rotl64(acc + lane * P2, 31) * P1;
}

static uint64_t xxh_merge(uint64_t acc, uint64_t v)
{
    return (acc ^ xxh_round(0, v)) * P1 + P4;
}

uint64_t mk_xxh64(const void *data, size_t n)
{
    const uint8_t *p = data, *end = p + n;
    uint64_t acc;

    if (n >= 32) {
        /* four accumulators over 32-byte stripes, merged at the end */
        uint64_t v1 = P1 + P2, v2 = P2, v3 = 0, v4 = 0 - P1;
        for (; end - p >= 32; p += 32) {
            v1 = xxh_round(v1, read64(p));
            v2 = xxh_round(v2, read64(p + 8));
            v3 = xxh_round(v3, read64(p + 16));
            v4 = xxh_round(v4, read64(p + 24));
        }
        acc = rotl64(v1, 1) + rotl64(v2, 7) + rotl64(v3, 12) + rotl64(v4, 18);
        acc = xxh_merge(acc, v1);
        acc = xxh_merge(acc, v2);
        acc = xxh_merge(acc, v3);
        acc = xxh_merge(acc, v4);
    } else {
        acc = P5;
    }
    acc += n;
    for (; end - p >= 8; p += 8)
        acc = rotl64(acc ^ xxh_round(0, read64(p)), 27) * P1 + P4;
    if (end - p >= 4) {
        acc = rotl64(acc ^ (uint64_t)read32(p) * P1, 23) * P2 + P3;
        p += 4;
    }
    for (; p < end; p++)
        acc = rotl64(acc ^ *p * P5, 11) * P1;
    /* the avalanche */
    acc ^= acc >> 33;
    acc *= P2;
    acc ^= acc >> 29;
    acc *= P3;
    return acc ^ (acc >> 32);
}

size_t mk_raw_frame_bound(size_t len)
{
    return 4 + 1 + 4 + BLOCK_HEAD_LEN + len + 4;
}

static uint8_t *put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        *p++ = (uint8_t)(v >> (8 * i));
    return p;
}

size_t mk_raw_frame_write(uint8_t *dst, const void *const *part, const size_t *plen,
                          int nparts, size_t len)
{
    uint8_t *p = dst;

    assert(len <= MK_RAW_FRAME_MAX);
    p = put_le(p, ZSTD_MAGIC, 4);
    *p++ = (uint8_t)(FHD_FCS4_SINGLE | FHD_CHECKSUM);
    p = put_le(p, len, 4);
    p = put_le(p, 1u | (uint64_t)len << 3, BLOCK_HEAD_LEN); /* last block, raw */
    uint8_t *content = p;
    for (int i = 0; i < nparts; i++) {
        memcpy(p, part[i], plen[i]);
        p += plen[i];
    }
    assert((size_t)(p - content) == len);
    p = put_le(p, mk_xxh64(content, len) & 0xFFFFFFFFu, 4);
    return (size_t)(p - dst);
}
