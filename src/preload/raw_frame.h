/*
 * raw_frame.h - zstd frames that store their content as is (raw_frame.c).
 *
 * A record of a few hundred bytes gains little from compression, and the
 * first compression of a process costs it a zstd context: mappings, tables
 * to clear and their page faults, about a fifth of a short process's whole
 * tracing cost. Small records are written as frames of raw blocks instead,
 * built here by hand: any zstd decoder reads them, their content checksum
 * (XXH64, as the format asks) included, so readers need no change.
 */
#ifndef MEMKIT_PRELOAD_RAW_FRAME_H
#define MEMKIT_PRELOAD_RAW_FRAME_H

#include <stddef.h>
#include <stdint.h>

/* The largest content of a raw frame: one block, the format's largest. */
#define MK_RAW_FRAME_MAX (128u << 10)

/* The bytes mk_raw_frame_write writes for len bytes of content. */
size_t mk_raw_frame_bound(size_t len);

/* Writes the concatenation of the nparts parts (len bytes in all, at most
 * MK_RAW_FRAME_MAX) as one zstd frame at dst, which holds
 * mk_raw_frame_bound(len) bytes; returns the frame's length. */
size_t mk_raw_frame_write(uint8_t *dst, const void *const *part, const size_t *plen,
                          int nparts, size_t len);

/* XXH64 of n bytes with seed 0: the hash of zstd's content checksum. */
uint64_t mk_xxh64(const void *data, size_t n);

#endif /* MEMKIT_PRELOAD_RAW_FRAME_H */
