/*
 * reader.h - reading .mkt traces: records in file order, events decoded one
 * record at a time, and a time-ordered merge of all threads' events.
 *
 * Damage is never fatal to what came before it: a cut or corrupt record ends
 * the readable part of the file, mk_trace_t.damage says where and why, and
 * everything before it is delivered.
 */
#ifndef MEMKIT_TRACE_READER_H
#define MEMKIT_TRACE_READER_H

#include "addr_index.h"
#include "format.h"
#include "kv_table.h"
#include "reuse.h"

#include <stdbool.h>
#include <stdio.h>

typedef struct mk_trace_header {
    uint32_t version, flags, depth, pid, ppid;
    uint64_t start_realtime_ns, start_mono_ns, start_tick;
    char run_id[64];
    char exe[4096];
    char cmdline[4096]; /* arguments joined with spaces */
} mk_trace_header_t;

#define MK_TF_STACKS       1u
#define MK_TF_SUMMARY_ONLY 2u
#define MK_TF_SYSCALLS     4u
#define MK_TF_TSC          8u
/* Events and a SUMMARY beside them whose sites are stack ids (memkit trace
 * prints that summary without replaying the events). */
#define MK_TF_SITE_STACKS 16u
/* The events carry the allocator's time per call (format.h, version 5). */
#define MK_TF_COSTS 32u

typedef struct mk_module {
    uint64_t base, lo, hi; /* load bias; lowest and highest mapped address */
    char *path;
    const char *name; /* path's base name (within path) */
    uint8_t build_id[64];
    size_t build_id_len;
} mk_module_t;

typedef struct mk_trace_end {
    bool present;
    uint64_t reason, events_written, events_lost, threads;
    uint64_t maxrss_kb, minflt, majflt, utime_us, stime_us;
    /* rchar..write_bytes and trace_bytes: /proc's I/O counters, which
     * traces written from 2026-12-02 on hold as 0 and readers ignore: read
     * at the end they missed stdio flushed after it, and a process that
     * dropped its privileges could not read them. */
    uint64_t rchar, wchar, read_bytes, write_bytes, duration_ns;
    uint64_t end_tick, trace_bytes;
    /* glibc's view of its heap at the end (absent after _exit and in older
     * traces): mallinfo2's arena, in use, free and mmapped bytes, and the
     * RSS of the [heap] mapping */
    bool has_heap_view;
    uint64_t glibc_arena, glibc_in_use, glibc_free, glibc_mmapped, heap_rss;
    /* Did the tracer see its threads' switches (preload/base.h: absent in
     * older traces and untimed runs)? The read calls whose time it dropped
     * for one (the thread was off the CPU during them), and the clocked ones
     * whose time on the CPU it took (preload/record.h). */
    bool switches_seen;
    uint64_t switched_calls, switched_clocked;
    /* The threads' CPU samples (preload/oncpu.h; absent in older traces):
     * oncpu 0 when the run did not sample (oncpu_errno: why the kernel
     * refused, if it did), 1 user time, 2 user and kernel time; the period
     * in ns, the threads sampled, and the samples inside allocator calls,
     * in memkit's own work, elsewhere, and lost. */
    uint64_t oncpu, oncpu_errno, oncpu_period_ns, oncpu_threads;
    uint64_t oncpu_alloc, oncpu_tracer, oncpu_program, oncpu_lost;
} mk_trace_end_t;

typedef struct mk_summary_site {
    uint64_t pc, calls, bytes;
} mk_summary_site_t;

typedef struct mk_trace_summary {
    bool present;
    uint64_t counts[MK_K_COUNT], bytes[MK_K_COUNT];
    uint64_t peak_bytes, peak_blocks, live_blocks, live_bytes;
    uint64_t frees_live; /* frees of blocks seen allocated (memanalyze's Frees) */
    mk_summary_site_t *sites;
    size_t nsites;
    /* Added up from the threads' last checkpoints (SUMMARY_PART records) by
     * mk_trace_summary_from_parts: the process never wrote its SUMMARY. */
    bool from_parts;
    uint64_t parts_at_ns; /* the latest checkpoint, ns since the start */
    /* The allocator's time as the events' readers will add it up (format 6
     * traces with times): TSC cycles in all and in slow calls, the slow
     * calls, and the calls timed (slow ones included). */
    bool has_times;
    uint64_t alloc_cycles, slow_cycles, slow_calls, timed_calls;
} mk_trace_summary_t;

/* One thread state's latest SUMMARY_PART (format.h); its sites' pc fields
 * hold the calling instruction | kind << 56. */
typedef struct mk_summary_part {
    uint64_t id, at_ns;
    uint64_t counts[MK_K_COUNT], bytes[MK_K_COUNT], frees_unseen;
    int64_t live_bytes, live_blocks;
    uint64_t peak_bytes, peak_blocks;
    mk_summary_site_t *sites;
    size_t nsites;
} mk_summary_part_t;

/* A trace made with --sample (SAMPLES records, format.h): the exact counts
 * from the latest record, and when the snapshots were taken. */
typedef struct mk_trace_sampling {
    bool present;
    uint64_t mean, seed; /* mean bytes between samples; the generator's seed */
    uint64_t at_ns;      /* the latest record's time, ns since the start */
    bool ended;          /* the latest is the process's last (reason END) */
    uint64_t counts[MK_K_COUNT], bytes[MK_K_COUNT]; /* every call, exact */
    uint64_t live_samples;                          /* sampled blocks live then */
    uint64_t *snapshots; /* ns since the start, in file order */
    size_t nsnapshots, snapshots_cap;
} mk_trace_sampling_t;

/* One event, decoded. */
typedef struct mk_event {
    uint64_t time; /* ns since the trace's start */
    uint64_t size, align;
    uint64_t addr, old_addr;
    uint32_t thread, stack;
    uint8_t kind;
    uint8_t timed; /* this call was timed, or was slow (format.h) */
    uint8_t slow;  /* this call was slow: cost is its own cycles (format.h) */
    /* The allocator's cycles this call stands for (version 5: a timed call's,
     * weighed by the calls it stands for; 0 for the others). A float, so
     * that the event stays 56 bytes: the decoder queues a record's worth. */
    float cost;
} mk_event_t;
_Static_assert(sizeof(mk_event_t) == 56, "a decoded event stays 56 bytes (see cost)");

/* A stack, as defined in the trace. */
typedef struct mk_stack_def {
    uint32_t depth;
    uint64_t *frames; /* return addresses, innermost first */
} mk_stack_def_t;

#define MK_SHADOWED_MALLOC 0x01u
#define MK_SHADOWED_FREE   0x02u
#define MK_SHADOWED_NEW    0x10u

typedef struct mk_trace {
    FILE *f;
    char path[4096];
    uint64_t offset; /* of the next record */
    uint64_t file_size;
    mk_trace_header_t header;
    mk_trace_end_t end;
    mk_trace_summary_t summary;
    mk_trace_sampling_t sampling;
    /* From a NOTES record: the allocation functions the program defines ahead
     * of memkit's (bits: malloc, free, calloc, realloc, new, delete), and the
     * object defining them; 0 and "" when every one reached memkit. */
    unsigned shadowed;
    char shadowed_by[512];
    mk_summary_part_t *parts; /* one per thread state, its latest */
    size_t nparts, parts_cap;
    mk_module_t *modules; /* every snapshot's modules, newest last */
    size_t nmodules, modules_cap;
    /* The tracer's own module (libmemkit-preload*): its frames (a hook that
     * wraps the call, such as dlopen's) are no part of the program's stacks. */
    uint64_t own_lo, own_hi;
    mk_stack_def_t *stacks; /* indexed by id */
    size_t stacks_cap;
    uint64_t events_read;
    uint64_t slow_cycles; /* a call this long was slow (format.h; 0: none seen) */
    double ns_per_tick;   /* from the clock anchors; see mk_trace_walk */
    char damage[256];     /* "" when the whole file read cleanly */
    bool bounded; /* the walk stopped at the merge's bound (merge.c), not at damage */
    void *dctx;
    uint8_t *raw, *stored;
    size_t raw_cap, stored_cap;
} mk_trace_t;

/* Makes room for `need` elements of `elem` bytes in the array *buf of *cap
 * elements, doubling (from 16) and zeroing what it adds. False when memory
 * ran out; the array is then unchanged. The analysis side's one growth rule. */
bool mk_grow(void **buf, size_t *cap, size_t need, size_t elem);

/* A growing array of the analysis side that may reach hundreds of MB (a
 * replay's block records): resized from old_bytes to new_bytes (p NULL and
 * old_bytes 0 for a new one), the contents up to the smaller size kept, the
 * rest unspecified. From MK_TABLE_MAP_MIN it is a mapping of its own, with
 * huge pages asked for, that grows by mremap: no copy, and so no fault of a
 * copy's 4 KiB pages (realloc copies a heap block once malloc's mmap
 * threshold has risen past it). NULL when memory ran out; p is then
 * unchanged. Free with mk_table_free and the size it has. */
void *mk_table_resize(void *p, size_t old_bytes, size_t new_bytes);
void mk_table_free(void *p, size_t bytes);
/* A new table of n zeroed bytes, by the same rule (a mapping comes zeroed:
 * no memset faults it in before its first use). Free with mk_table_free. */
void *mk_table_zalloc(size_t n);

/* An empty hash table (kv_table.h) on the C heap, for the analysis side
 * (the tracer supplies mmap'd memory instead). Free with free(t.slots). */
mk_kv_table_t mk_kv_heap_table(void);

/* Opens a trace and reads its header. On failure returns NULL and writes a
 * one-line reason into err. */
mk_trace_t *mk_trace_open(const char *path, char *err, size_t errlen);
/* The same, naming the trace `name` in every message (path may be a copy of
 * a piped input, /proc/self/fd/N). */
mk_trace_t *mk_trace_open_named(const char *path, const char *name, char *err,
                                size_t errlen);
void mk_trace_close(mk_trace_t *tr);

/* The next record, decompressed: returns 1 with type, raw and len set, or 0
 * at the end of the readable part (tr->damage says whether that is the end
 * of the file). */
int mk_trace_next(mk_trace_t *tr, unsigned *type, const uint8_t **raw, size_t *len);

/* Frees the buffers records are read into (they come back on the next read):
 * a report drops them once its replay is done. */
void mk_trace_drop_buffers(mk_trace_t *tr);

/* Reads the record at a file offset again (for the merge). */
int mk_trace_record_at(mk_trace_t *tr, uint64_t offset, unsigned *type,
                       const uint8_t **raw, size_t *len);

/* A record's head only, without decompressing it: 1 and the fields set, 0 at
 * the end of the readable part (a record cut short is damage). Advances
 * tr->offset past the record. */
typedef struct mk_record_head {
    uint64_t offset;
    uint32_t type, stored, raw, thread;
    uint64_t anchor_ns, anchor_tick;
} mk_record_head_t;
int mk_trace_next_head(mk_trace_t *tr, mk_record_head_t *h);

/* Records the contents of a MODULES, END, SUMMARY or SUMMARY_PART record in
 * tr. Returns false if the payload is malformed (then tr->damage says so). */
bool mk_trace_absorb(mk_trace_t *tr, unsigned type, const uint8_t *raw, size_t len);

/* A trace read to its end with no SUMMARY but with SUMMARY_PART records (a
 * --summary-only process killed before its end): tr->summary becomes their
 * sum, from_parts set. False only when out of memory. */
bool mk_trace_summary_from_parts(mk_trace_t *tr);

/* What decoding one thread's records carries from record to record: the
 * thread's live index (addr_index.h). One per thread, records in order. */
typedef struct mk_addr_state {
    uint64_t prev;    /* the previous address of the record */
    mk_reuse_t reuse; /* recent frees by size class (reuse.h) */
} mk_addr_state_t;

typedef struct mk_decoder {
    mk_addr_index_t live;
    /* Reset at every record (64 KB): shared by decoders that decode one
     * record at a time, off the stack. */
    mk_addr_state_t *addr;
} mk_decoder_t;

void mk_decoder_init(mk_decoder_t *d, mk_addr_state_t *scratch);

/* An event tick as ns since the trace's start (what mk_event_t.time holds). */
uint64_t mk_trace_tick_ns(const mk_trace_t *tr, uint64_t tick);
void mk_decoder_free(mk_decoder_t *d);

/* Decodes an EVENTS record: stack definitions go into tr, events to fn
 * (return false to stop). Returns false if the record is malformed: the
 * events before the fault have been delivered. */
typedef bool (*mk_event_fn)(void *ctx, const mk_event_t *ev);
bool mk_trace_decode_events(mk_trace_t *tr, mk_decoder_t *d, const uint8_t *raw,
                            size_t len, mk_event_fn fn, void *ctx);

/* The same a few events at a time, for a reader that holds many records
 * open at once (the merge): a cursor into one record, whose bytes and
 * decoder (with an addr state of its own) must stay as they are until it
 * is done. mk_events_read gives up to max events, 0 at the record's end
 * (tr->damage says where a malformed record ended). */
typedef struct mk_event_cursor mk_event_cursor_t;
mk_event_cursor_t *mk_events_new(void);
void mk_events_free(mk_event_cursor_t *ec);
void mk_events_open(mk_trace_t *tr, mk_decoder_t *d, mk_event_cursor_t *ec,
                    const uint8_t *raw, size_t len);
size_t mk_events_read(mk_trace_t *tr, mk_decoder_t *d, mk_event_cursor_t *ec,
                      mk_event_t *out, size_t max);
/* A record read a window at a time (the merge's spilled records): each
 * stream's unread bytes are [p[i], end[i]); the cursor reads only forward,
 * never before p[i], and an event takes at most MK_EVENT_STREAM_MAX bytes
 * of any stream but DEFS. mk_events_move_stream points stream i at a copy
 * of its next bytes (p, the first unread one). */
#define MK_EVENT_STREAM_MAX (2 * MK_VARINT_MAX)
void mk_events_streams(const mk_event_cursor_t *ec, const uint8_t *p[MK_S_COUNT],
                       const uint8_t *end[MK_S_COUNT]);
void mk_events_move_stream(mk_event_cursor_t *ec, int i, const uint8_t *p,
                           const uint8_t *end);

/* The stack definitions of an EVENTS record into tr, its events skipped
 * (for a trace whose SUMMARY names its sites by stack: MK_TF_SITE_STACKS).
 * False if the record is malformed (tr->damage says so). */
bool mk_trace_decode_stacks(mk_trace_t *tr, const uint8_t *raw, size_t len);

/* Reads the whole trace: every thread's events merged in time order, with
 * the module map, stacks, end and summary absorbed.
 * Returns false only when fn stopped the walk. */
bool mk_trace_walk(mk_trace_t *tr, mk_event_fn fn, void *ctx);

/* mk_trace_walk with the decoding on a second thread: fn still runs on the
 * calling thread, in the same order. fn must not read the trace's stack
 * table while the walk runs (the decoder adds to it). Returns false only
 * when fn stopped the walk. */
bool mk_trace_walk_pipelined(mk_trace_t *tr, mk_event_fn fn, void *ctx);

/* The stack with this id, or NULL if it was never defined (id 0: no stack). */
const mk_stack_def_t *mk_trace_stack(const mk_trace_t *tr, uint32_t id);

/* The module of the trace's map holding addr (the newest snapshot wins), or
 * NULL. */
const mk_module_t *mk_trace_module_at(const mk_trace_t *tr, uint64_t addr);

#endif /* MEMKIT_TRACE_READER_H */
