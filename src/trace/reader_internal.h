/*
 * reader_internal.h - what the reader's parts (reader.c, meta.c, decode.c)
 * share and its users need not see.
 */
#ifndef MEMKIT_TRACE_READER_INTERNAL_H
#define MEMKIT_TRACE_READER_INTERNAL_H

#include "reader.h"

/* Notes the first fault of a trace in tr->damage (later ones are its
 * consequences); the reading stops there. */
void mk_trace_damage(mk_trace_t *tr, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Copies a length-prefixed string into a fixed buffer, NUL-terminated. */
void mk_trace_get_str(mk_cursor_t *c, char *out, size_t cap);

/* An EVENTS record's head begins with its thread and clock anchor (format.h),
 * which the record's own head repeats (the merge checks the two agree). */
typedef struct mk_events_anchor {
    uint64_t thread, tid, anchor_ns, anchor_tick;
} mk_events_anchor_t;

static inline mk_events_anchor_t mk_get_events_anchor(mk_cursor_t *c)
{
    mk_events_anchor_t a;
    a.thread = mk_get_varint(c);
    a.tid = mk_get_varint(c);
    a.anchor_ns = mk_get_u64(c);
    a.anchor_tick = mk_get_u64(c);
    return a;
}

#endif /* MEMKIT_TRACE_READER_INTERNAL_H */
