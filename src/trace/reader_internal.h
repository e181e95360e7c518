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

#endif /* MEMKIT_TRACE_READER_INTERNAL_H */
