/*
 * fuzz_events.c - libFuzzer target for the EVENTS decoder (src/trace/decode.c)
 * and the report built on it. In a trace file each record is a zstd frame
 * with a checksum, so nearly every mutation of a file is a damaged record and
 * never reaches the streams; here the input is the records' raw payloads,
 * which the target compresses into a trace of its own.
 *
 * Input: byte 0 picks the format version (1 + byte 0 % MK_TRACE_VERSION); bytes 1-4 are
 * the length of the first payload (little-endian, cut to what is there); the rest is the
 * second payload, if any. Two records of one thread test what carries from record to
 * record (the live index). Seeds: events_seeds.c.
 */
#define _GNU_SOURCE
#include "analyze/report.h"
#include "fuzz_input.h"
#include "trace/format.h"

#include <stdlib.h>
#include <zstd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The first varint of a payload, the thread, and the anchors after the tid:
 * the record head repeats them (format.h), so they are copied, best effort. */
static void payload_head(const uint8_t *raw, size_t len, uint32_t *thread,
                         uint64_t *anchor_ns, uint64_t *anchor_tick)
{
    mk_cursor_t c = {raw, raw + len, 0};
    *thread = (uint32_t)mk_get_varint(&c);
    (void)mk_get_varint(&c);
    *anchor_ns = mk_get_u64(&c);
    *anchor_tick = mk_get_u64(&c);
    if (c.err)
        *anchor_ns = *anchor_tick = 0;
}

/* Appends one record at p; returns the new end, or NULL if zstd failed. */
static uint8_t *put_record(uint8_t *p, ZSTD_CCtx *z, unsigned type, const uint8_t *raw,
                           size_t len)
{
    uint32_t thread = 0;
    uint64_t anchor_ns = 0, anchor_tick = 0;
    if (type == MK_REC_EVENTS)
        payload_head(raw, len, &thread, &anchor_ns, &anchor_tick);
    size_t zn =
        ZSTD_compress2(z, p + MK_RECORD_HEAD_LEN, ZSTD_compressBound(len), raw, len);
    if (ZSTD_isError(zn))
        return NULL;
    p = mk_put_u32(p, MK_RECORD_SYNC);
    p = mk_put_u32(p, type);
    p = mk_put_u32(p, (uint32_t)zn);
    p = mk_put_u32(p, (uint32_t)len);
    p = mk_put_u32(p, thread);
    p = mk_put_u32(p, 0);
    p = mk_put_u64(p, anchor_ns);
    p = mk_put_u64(p, anchor_tick);
    return p + zn;
}

/* A header as the tracer writes it: version, flags (stacks, TSC ticks, and
 * from version 5 allocator times),
 * depth, pid, ppid, three clocks, then empty run id, exe and command line. */
static size_t header_payload(uint8_t *raw, uint32_t version)
{
    uint8_t *p = raw;
    p = mk_put_u32(p, version);
    p = mk_put_u32(p, 1u | 8u | (version >= 5 ? 32u : 0u)); /* 32: allocator times */
    p = mk_put_u32(p, 32);
    p = mk_put_u32(p, 1);
    p = mk_put_u32(p, 0);
    for (int i = 0; i < 3; i++)
        p = mk_put_u64(p, 0);
    for (int i = 0; i < 3; i++)
        *p++ = 0; /* varint length 0 */
    return (size_t)(p - raw);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static ZSTD_CCtx *z;
    char path[64], err[512];
    uint8_t header[64];
    FILE *sink;

    if (size < 5)
        return 0;
    if (!z) {
        z = ZSTD_createCCtx();
        if (!z)
            return 0;
        ZSTD_CCtx_setParameter(z, ZSTD_c_compressionLevel, 1);
        ZSTD_CCtx_setParameter(z, ZSTD_c_checksumFlag, 1);
    }
    uint32_t version = 1 + data[0] % MK_TRACE_VERSION, first;
    memcpy(&first, data + 1, 4);
    const uint8_t *a = data + 5;
    size_t rest = size - 5, na = first < rest ? first : rest, nb = rest - na;
    size_t nh = header_payload(header, version);
    size_t cap = MK_TRACE_MAGIC_LEN + 3 * MK_RECORD_HEAD_LEN + ZSTD_compressBound(nh) +
                 ZSTD_compressBound(na) + ZSTD_compressBound(nb);
    uint8_t *file = malloc(cap), *p = file;
    if (!file)
        return 0;
    memcpy(p, MK_TRACE_MAGIC, MK_TRACE_MAGIC_LEN);
    p += MK_TRACE_MAGIC_LEN;
    p = put_record(p, z, MK_REC_HEADER, header, nh);
    if (p)
        p = put_record(p, z, MK_REC_EVENTS, a, na);
    if (p && nb)
        p = put_record(p, z, MK_REC_EVENTS, a + na, nb);
    bool ok = p && fuzz_input(file, (size_t)(p - file), path, sizeof path, &sink);
    free(file);
    if (!ok)
        return 0;

    mk_report_opts_t o;
    mk_report_opts_default(&o);
    o.cost_ns = 1; /* no measuring per input */
    o.min_count = 2;
    o.no_symbols = true;
    mk_report_t r;
    if (mk_report_load(&r, path, &o, err, sizeof err) != 0)
        return 0;
    mk_render_text(&r, sink, 5, false, false);
    mk_render_json(&r, sink, 5);
    mk_report_free(&r);
    return 0;
}
