/*
 * format.h - the memkit trace file format (.mkt), shared by the writer in the
 * preload library and the reader used by the analysis.
 *
 * A trace is the 8-byte magic followed by records. Every record is
 *
 *     u32 sync ("MKR1")  u32 type  u32 stored_len  u32 raw_len
 *     u32 thread  u32 0  u64 anchor_ns  u64 anchor_tick        stored bytes...
 *
 * (thread and anchors repeat an EVENTS record's own head, zero for others,
 * so readers can index a trace without decompressing it)
 * where the stored bytes are one zstd frame (with its content checksum) that
 * decompresses to raw_len bytes. Each record stands alone, so a reader that
 * meets a cut or damaged record keeps everything before it: a trace of a
 * program killed with SIGKILL is readable up to its last flushed record.
 * Integers in records are little-endian; most are LEB128 varints.
 *
 * The header's version is 5. Readers read versions 1 to 4 too, which differ
 * only in EVENTS records. Version 4: no allocator times (no COST stream,
 * nothing after the stream lengths in the head). Version 3: the live index
 * (FREEREF, below) holds up to MK_INDEX_MAX_V3 blocks and takes no more when full, where
 * version 4's holds MK_INDEX_CAP and evicts (addr_index.h); the streams are version 4's.
 * Version 2: 12 streams (no HIT, no CACHED), and every new address is a NEWADDR code,
 * packed two per byte, whose candidates are the reuse model's rings alone (reuse.h:
 * mk_reuse_find's positions, no cache). Version 1, besides: 10 streams (no RECENT, no
 * NEWADDR_HI), one TIME varint per event, a varint per NEWADDR code and no
 * code 2+MK_REUSE_MISS, and the size classes of mk_size_class_v1.
 *
 * Record payloads (raw):
 *   HEADER  fixed fields then strings, see mk_trace_header_t in reader.h
 *   MODULES varint count, then per module: u64 base, str path, bytes build_id,
 *           varint nseg, nseg x (varint vaddr, varint memsz) -- a full snapshot,
 *           written at start and after every dlopen/dlclose
 *   EVENTS  one thread's events: varint thread, varint tid, u64 anchor_ns (ns
 *           since the trace's start), u64 anchor_tick (the tick count at that
 *           moment), then the event streams (below). Event times are in
 *           ticks (4096 TSC cycles, or 4096 ns when the header's flag 8 is
 *           clear); readers convert with the anchors. Previous tick, previous
 *           address and recent frees start afresh in every record; only the
 *           thread's live index carries over.
 *   END     the process's end state, see mk_trace_end_t
 *   SUMMARY in-process aggregates of --summary-only runs, see reader.h
 *   SUMMARY_PART  one thread state's --summary-only totals so far, written
 *           now and then while the process runs (a checkpoint: a process
 *           killed before its SUMMARY leaves these): varint state id,
 *           varint ns since the start, varint nkinds, nkinds x varint count,
 *           nkinds x varint bytes (calls not in the site table), varint
 *           frees of unseen blocks, zigzag live bytes, zigzag live blocks
 *           (the state's share, which may be below 0), varint peak bytes,
 *           varint peak blocks (the process's so far), varint nsites, nsites x
 *           (u64 site | kind << 56, varint calls, varint bytes). A later part
 *           of the same state replaces the earlier; a SUMMARY replaces all.
 *
 * The events of an EVENTS record, after its head, are MK_S_COUNT streams:
 * varint count, count x varint length, then (version 5) the record's
 * allocator times (below), then the streams' bytes one after the other
 * (enum mk_stream). Reading item by item, the TAG stream drives: each
 * tag takes its fields from the other streams in this order:
 *   MK_ITEM_STACK  DEFS: varint id, varint depth, depth x zigzag(frame -
 *                  previous frame): a stack's first appearance in this file.
 *   an event kind  TIME: ticks since the previous event (below); then by
 *                  class (see mk_kind_class):
 *                    ALLOC   SIZE size [align if aligned], NEWADDR, STACK
 *                    FREE    FREEREF [, FREE_STACK: its caller's stack, if
 *                            it carries a time: version 6]
 *                    REALLOC SIZE size, FREEREF old, NEWADDR new, STACK
 *                    SYSMAP  SIZE size, ADDR addr [, ADDR old for mremap]
 * Allocator times (version 5, when the header's flag 32 is set): one in
 * about MK_COST_STRIDE of the ALLOC, FREE and REALLOC events carries the
 * TSC cycles its call to the real allocator took (COST, a varint each),
 * memkit's own recording excluded. Which ones, both halves know without a
 * bit per event: the head gives the record's start state, varint left (the
 * timed event is the left-th from here) and u64 rng; after a timed event,
 * left = mk_cost_stride(&rng). A timed event stands for MK_COST_STRIDE
 * calls, so readers weigh its time by that: every site's time and the
 * run's are estimates without bias. The reads around a timed call are
 * fenced (unfenced, the second read overlaps a call of a few ns and misses
 * it), and the head's third field, varint 16 x the cycles of an empty
 * fenced interval, is what readers take off each timed call. Timing one
 * call in 64 costs the trace about a tenth of a bit per event, and the
 * traced program a few cycles per event.
 * Slow calls (version 6): the tracer also reads some untimed calls around,
 * unfenced (preload/record.h says which), and one of at least the head's
 * fourth field (varint cycles, about a microsecond) is a slow call: SLOW
 * holds a pair per slow call, varint the events since the previous slow
 * one of the record (from its start: its index; stack definitions are not
 * events), then varint its cycles, which readers take as they are (it
 * stands for itself). A timed event that is slow carries COST 0. A few
 * calls carry most of a real heap's time (consolidating after frees,
 * mapping, first touches of new pages): one call in 64 misses them, and
 * weighed by 64 the one it catches is worse. A FREE event that carries a
 * time (timed or slow) names its caller's stack, in a stream of its own:
 * in STACK, between the allocations' ids, it took churn's trace 1% more.
 * SIZE and FREEREF are split numbers: the low byte in the _LO stream, the rest
 * as a varint in _HI (an align is a plain varint in SIZE_HI). Uniform low
 * bytes and small high parts each compress near their entropy; one varint
 * stream mixing both does not.
 * Times (version 2): TIME holds pairs of varints (z, d): z events whose ticks
 * since the previous event are 0, then one event d ticks after its previous
 * one. Every d but a record's last is non-zero. A busy thread makes dozens of
 * events per tick, and zstd's Huffman code spends at least a bit on each
 * byte it does not fold into a match: a zero per event cost 0.65 bits per
 * churn iteration. (Version 1: one varint d per event.)
 * Addresses:
 *   - ADDR deltas are against the previous address of the record, whichever
 *     field it came from (0 at the record's start).
 *   - A new address (version 3): when the reuse model's cache (reuse.h) has
 *     a guess for the new block's size class (mk_size_class), a bit in HIT
 *     says whether the block is it (1); if it is not, a code follows in
 *     CACHED. With no guess, and for a realloc's new block (whose NULL-ness
 *     readers must see before the old block's free changes the model), a
 *     code in NEWADDR. Both code streams code alike:
 *   - 0 is NULL; 1+j names candidate j of the reuse model for the class:
 *     the record's freed blocks that were in the live index (FREE class and
 *     realloc's freed old), in the order glibc's malloc would hand them
 *     back (mk_reuse_locate). 1+MK_REUSE_MISS: in ADDR.
 *     2+MK_REUSE_MISS (version 2): one of those frees, of any class, named
 *     in RECENT by varint d-1, d frees back (1 = the record's latest).
 *     Either way the block then leaves the model (mk_reuse_claim).
 *     CACHED's codes are packed two per byte, the first in the low nibble;
 *     a nibble of 15 means 15 plus a varint of NEWADDR_HI. NEWADDR's are a
 *     varint each. (Version 2: NEWADDR packed like CACHED now; version 1: a
 *     varint each.) A skewed stream is packed because zstd's fast match
 *     finder takes runs of its common value as matches that cost more than
 *     the literals: in version 2, where six in ten codes were 1, a code per
 *     byte took 3.0 bits against 2.5 of entropy. For the same reason a guess
 *     is a bit, not a code: nine in ten are right, and two codes per byte
 *     still cost a bit per code where the bits cost half. NEWADDR's codes
 *     come where there was no guess and spread wide (the likeliest, 13%):
 *     a byte each, they take 0.1 MB less of the tracer benchmark's trace
 *     than packed with their escapes.
 *   - FREEREF 2+i names index i of the thread's live index (addr_index.h):
 *     the blocks this thread allocated, up to MK_INDEX_CAP of them (a new
 *     block in a full index evicts one, which mk_index_add picks), kept
 *     identically by writer and reader across all the thread's records, so
 *     a thread's records must be decoded in order. 1: the address follows
 *     in ADDR (a block of another thread, an evicted one, or one freed
 *     twice). A realloc's old block leaves the index when it was freed (new
 *     address non-NULL, or size 0); then the new one joins.
 */
#ifndef MEMKIT_TRACE_FORMAT_H
#define MEMKIT_TRACE_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define MK_TRACE_MAGIC     "MKTRACE\0"
#define MK_TRACE_MAGIC_LEN 8
#define MK_TRACE_VERSION   6 /* readers read 1 to 5 too: see the differences above */
#define MK_RECORD_SYNC     0x31524b4du /* "MKR1" little-endian */
#define MK_RECORD_HEAD_LEN 40
#define MK_RECORD_MAX_RAW  (64u << 20) /* a reader refuses larger records */

enum mk_record_type {
    MK_REC_HEADER = 1,
    MK_REC_MODULES = 2,
    MK_REC_EVENTS = 3,
    MK_REC_END = 4,
    MK_REC_SUMMARY = 5,
    MK_REC_SUMMARY_PART = 6,
    MK_REC_NOTES = 7,   /* varint flags, bytes path: allocation functions the program
                         * defines ahead of memkit's (preload/shadowed.c); readers
                         * older than it skip it */
    MK_REC_SAMPLES = 8, /* --sample: see below; older readers skip it */
};

/* A SAMPLES record (a trace made with --sample BYTES): varint mean BYTES,
 * varint seed, varint reason (enum mk_samples_reason), varint ns since the
 * start, varint nkinds, nkinds x varint calls, nkinds x varint bytes (the
 * process's exact counts so far, every call counted; calls of kind NONE
 * count the free(NULL)s among the FREEs), varint sampled blocks
 * live. One is written at the start, one per snapshot, one at the end: the
 * latest holds the counts. Only sampled allocations are events: an
 * allocation of s bytes is sampled with probability 1 - exp(-s / mean), and
 * only sampled blocks' frees are recorded. A realloc whose new block is not
 * sampled ends its sampled old block with a FREE event. */
enum mk_samples_reason {
    MK_SAMPLES_START = 0,
    MK_SAMPLES_SNAPSHOT = 1,
    MK_SAMPLES_END = 2
};

/* A snapshot request (memkit trace --snapshot PID): the process's snapshot
 * signal, sent with sigqueue and this value, which kill cannot send. The
 * same signal from kill keeps the meaning the program gave it. */
#define MK_SNAPSHOT_SIGVAL 0x6d6b736e /* "mksn" */

/* SUMMARY_PART sites: the calling instruction | kind << MK_SITE_KIND_SHIFT
 * (kinds sit above any user-space address). */
#define MK_SITE_KIND_SHIFT 56

/* Event kinds. The numbering is part of the file format: append only. */
enum mk_kind {
    MK_K_NONE = 0,
    MK_K_MALLOC,
    MK_K_CALLOC,
    MK_K_REALLOC,
    MK_K_REALLOCARRAY,
    MK_K_FREE,
    MK_K_POSIX_MEMALIGN,
    MK_K_ALIGNED_ALLOC,
    MK_K_MEMALIGN,
    MK_K_VALLOC,
    MK_K_PVALLOC,
    MK_K_STRDUP,
    MK_K_STRNDUP,
    MK_K_WCSDUP,
    MK_K_NEW,         /* operator new, any variant but array */
    MK_K_NEW_ARRAY,   /* operator new[] */
    MK_K_NEW_ALIGNED, /* operator new(size, align_val_t), nothrow or not */
    MK_K_NEW_ARRAY_ALIGNED,
    MK_K_DELETE, /* operator delete, any variant but array */
    MK_K_DELETE_ARRAY,
    MK_K_MMAP, /* the memory system calls: only with --syscalls */
    MK_K_MUNMAP,
    MK_K_MREMAP,
    MK_K_BRK, /* brk/sbrk: size is the increment, addr the new break */
    MK_K_COUNT
};

#define MK_ITEM_STACK  0xf0
#define MK_COST_STRIDE 64 /* events per timed event, on average (above) */

/* Events from one timed event to the next: uniform in [1, 2 x MK_COST_STRIDE
 * - 1], from an xorshift generator both halves of the format step alike. A
 * random stride, not a fixed one, so that no loop of the program's lines up
 * with it. */
static inline uint32_t mk_cost_stride(uint64_t *rng)
{
    uint64_t x = *rng ? *rng : 0x9e3779b97f4a7c15ull;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *rng = x;
    return 1 + (uint32_t)((x >> 33) % (2 * MK_COST_STRIDE - 1));
}
#define MK_TICK_SHIFT 12 /* a tick is 4096 TSC cycles, or 4096 ns */

/* The size class that predicts address reuse: glibc's chunk classes (16
 * bytes, header included: class c holds chunks of 16c bytes), 255 for
 * everything large. Part of the format. glibc's smallest chunk, 32 bytes,
 * holds every request up to 24 bytes; version 1 gave sizes 0-8 a class of
 * their own, and so missed most of their reuse. */
static inline unsigned mk_size_class(uint64_t size)
{
    return size <= 24 ? 2 : size > 255 * 16 - 23 ? 255 : (unsigned)((size + 23) >> 4);
}

static inline unsigned mk_size_class_v1(uint64_t size)
{
    return size > 255 * 16 - 23 ? 255 : (unsigned)((size + 23) >> 4);
}

/* The streams of an EVENTS record, in payload order. Like fields go to the
 * same stream (column layout), so zstd's entropy coder sees one kind of
 * number at a time: a trace compresses to about half of an interleaved one. */
enum mk_stream {
    MK_S_TAG,        /* u8 per item: an event kind or MK_ITEM_STACK */
    MK_S_TIME,       /* varint ticks since the previous event */
    MK_S_SIZE_LO,    /* size: low byte ...                         (split) */
    MK_S_SIZE_HI,    /* ... and varint size >> 8 [, varint align] */
    MK_S_FREEREF_LO, /* freed block: low byte ...                  (split) */
    MK_S_FREEREF_HI, /* ... varint >> 8; 0 NULL, 1 in ADDR, 2+i live index i */
    MK_S_NEWADDR,    /* codes (below): 0 NULL, 1+j reuse candidate j,
                      * 1+MK_REUSE_MISS in ADDR, 2+MK_REUSE_MISS in RECENT */
    MK_S_ADDR,       /* varint zigzag(addr - previous addr) */
    MK_S_STACK,      /* varint stack id */
    MK_S_DEFS,       /* stack definitions: varint id, varint depth, zigzag frame deltas */
    MK_S_RECENT,     /* varint: a new block freed this many frees back, minus 1 */
    MK_S_NEWADDR_HI, /* varint: a packed code of 15 or more, minus 15 */
    MK_S_HIT,        /* bits, eight per byte, the first in bit 0: 1 = the guess */
    MK_S_CACHED,     /* codes after a HIT bit of 0, two per byte (below) */
    MK_S_COST,       /* varint cycles of a timed call (above) */
    MK_S_SLOW,       /* varint events since the previous slow call, varint cycles */
    MK_S_FREE_STACK, /* varint stack id of a timed free's caller */
    MK_S_COUNT
};
#define MK_S_COUNT_V5 MK_S_SLOW   /* version 5 had no slow calls */
#define MK_S_COUNT_V4 MK_S_COST   /* versions 3 and 4 had no allocator times */
#define MK_S_COUNT_V2 MK_S_HIT    /* version 2 had neither HIT nor CACHED */
#define MK_S_COUNT_V1 MK_S_RECENT /* version 1 had neither RECENT nor NEWADDR_HI */

/* The most events the tracer puts in one EVENTS record (each may come with
 * one stack definition); readers size their buffers by it. Older traces,
 * whose bound was on the TAG stream's bytes, may hold up to twice as many. */
#define MK_RECORD_ITEMS (256u << 10)

/* Why an END record was written: exit (destructors ran), _exit, exec, or a
 * signal whose default action ended the process (signals.c in the tracer). */
enum mk_end_reason {
    MK_END_EXIT = 1,
    MK_END_EXIT_NOW = 2,
    MK_END_EXEC = 3,
    MK_END_SIGNAL = 4
};

enum mk_kind_class {
    MK_CLASS_NONE,
    MK_CLASS_ALLOC,
    MK_CLASS_FREE,
    MK_CLASS_REALLOC,
    MK_CLASS_SYSMAP
};

static inline enum mk_kind_class mk_kind_class(unsigned kind)
{
    switch (kind) {
    case MK_K_MALLOC:
    case MK_K_CALLOC:
    case MK_K_POSIX_MEMALIGN:
    case MK_K_ALIGNED_ALLOC:
    case MK_K_MEMALIGN:
    case MK_K_VALLOC:
    case MK_K_PVALLOC:
    case MK_K_STRDUP:
    case MK_K_STRNDUP:
    case MK_K_WCSDUP:
    case MK_K_NEW:
    case MK_K_NEW_ARRAY:
    case MK_K_NEW_ALIGNED:
    case MK_K_NEW_ARRAY_ALIGNED:
        return MK_CLASS_ALLOC;
    case MK_K_FREE:
    case MK_K_DELETE:
    case MK_K_DELETE_ARRAY:
        return MK_CLASS_FREE;
    case MK_K_REALLOC:
    case MK_K_REALLOCARRAY:
        return MK_CLASS_REALLOC;
    case MK_K_MMAP:
    case MK_K_MUNMAP:
    case MK_K_MREMAP:
    case MK_K_BRK:
        return MK_CLASS_SYSMAP;
    default:
        return MK_CLASS_NONE;
    }
}

/* The bytes the allocating calls (malloc-like and realloc-like kinds) asked
 * for, of per-kind byte totals. */
static inline uint64_t mk_allocated_bytes(const uint64_t bytes[MK_K_COUNT])
{
    uint64_t sum = 0;
    for (unsigned k = 0; k < MK_K_COUNT; k++)
        if (mk_kind_class(k) == MK_CLASS_ALLOC || mk_kind_class(k) == MK_CLASS_REALLOC)
            sum += bytes[k];
    return sum;
}

/* Aligned kinds carry their alignment. */
static inline int mk_kind_has_align(unsigned kind)
{
    return kind == MK_K_POSIX_MEMALIGN || kind == MK_K_ALIGNED_ALLOC ||
           kind == MK_K_MEMALIGN || kind == MK_K_NEW_ALIGNED ||
           kind == MK_K_NEW_ARRAY_ALIGNED;
}

const char *mk_kind_name(unsigned kind);

/* ---- varints: LEB128, at most 10 bytes for a u64 ---- */
#define MK_VARINT_MAX 10

static inline uint8_t *mk_put_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static inline uint64_t mk_zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t mk_unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static inline uint8_t *mk_put_u64(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, 8); /* the formats are little-endian; so is every target */
    return p + 8;
}

static inline uint8_t *mk_put_u32(uint8_t *p, uint32_t v)
{
    memcpy(p, &v, 4);
    return p + 4;
}

/* A bounded cursor for decoding: every read checks the end, and a failed read
 * sets err and returns 0 so decoders can check once per item. */
typedef struct mk_cursor {
    const uint8_t *p, *end;
    int err;
} mk_cursor_t;

static inline uint64_t mk_get_varint(mk_cursor_t *c)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (c->p >= c->end) {
            c->err = 1;
            return 0;
        }
        uint8_t b = *c->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    c->err = 1; /* more than 10 bytes: not a varint we wrote */
    return 0;
}

static inline uint64_t mk_get_u64(mk_cursor_t *c)
{
    uint64_t v = 0;
    if (c->end - c->p < 8) {
        c->err = 1;
        c->p = c->end;
        return 0;
    }
    memcpy(&v, c->p, 8);
    c->p += 8;
    return v;
}

static inline uint32_t mk_get_u32(mk_cursor_t *c)
{
    uint32_t v = 0;
    if (c->end - c->p < 4) {
        c->err = 1;
        c->p = c->end;
        return 0;
    }
    memcpy(&v, c->p, 4);
    c->p += 4;
    return v;
}

/* A length-prefixed byte string; returns a pointer into the buffer (not NUL
 * terminated) or NULL on error. */
static inline const uint8_t *mk_get_bytes(mk_cursor_t *c, uint64_t *len)
{
    uint64_t n = mk_get_varint(c);
    if (c->err || n > (uint64_t)(c->end - c->p)) {
        c->err = 1;
        *len = 0;
        return NULL;
    }
    const uint8_t *s = c->p;
    c->p += n;
    *len = n;
    return s;
}

#endif /* MEMKIT_TRACE_FORMAT_H */
