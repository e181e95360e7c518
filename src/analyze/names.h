/*
 * names.h - what a stack id means to a reader: its frames, symbolized.
 *
 * For a memkit trace a stack's frames are return addresses, symbolized with
 * libdw on first use and cached per address. For a curl memdebug log a
 * "stack" is one source location (file:line), the only thing the log knows.
 * Renderers, filters and diff see both through the same mk_frame_t.
 */
#ifndef MEMKIT_ANALYZE_NAMES_H
#define MEMKIT_ANALYZE_NAMES_H

#include "../trace/reader.h"

typedef struct mk_frame {
    const char *function; /* NULL: unknown */
    const char *file;     /* NULL: no line information */
    int line;
    const char *module; /* base name of the object; NULL for a log's sites */
    uint64_t offset;    /* within the module */
} mk_frame_t;

typedef struct mk_names mk_names_t;

/* Names for a trace's stacks (the trace must outlive them). For a
 * --summary-only trace, stack i + 1 is its summary's site i. Without
 * symbols, frames are module+offset from the trace's module map alone
 * (no debug information is read: fast, and enough to tell sites apart). */
mk_names_t *mk_names_for_trace(const mk_trace_t *tr, bool symbols);

/* Names for a log: stacks are added with mk_names_add_location. */
mk_names_t *mk_names_new(void);

/* The stack id of a source location, made on first sight (ids from 1).
 * Returns 0 when memory ran out. */
uint32_t mk_names_add_location(mk_names_t *n, const char *file, size_t file_len,
                               int line);

/* The stack id of a list of frames already symbolized by another names
 * object, from (the merged report of several processes: a process's), made
 * on first sight and shared by every list naming the same frames: function,
 * file, line and module, the offset only where the function is unknown.
 * The frames' strings must be from's own and live until the next call with
 * another object. Returns 0 when memory ran out. */
uint32_t mk_names_add_stack(mk_names_t *n, const mk_names_t *from,
                            const mk_frame_t *frames, uint32_t depth);

/* Frees the frames of a stack resolved before (mk_names_stack): a process
 * merged into a run's report needs each only once. Asked again, it is
 * resolved again. */
void mk_names_drop_stack(mk_names_t *n, uint32_t stack);

/* Lets n (a trace's names) share symbolized frames with the other traces
 * of a run through shared (a names object that outlives n: the merged
 * report's), by module file and offset. */
void mk_names_share(mk_names_t *n, mk_names_t *shared);

void mk_names_free(mk_names_t *n);

/* The frames of a stack, innermost first; *depth 0 (and a static empty
 * frame list) for an unknown stack. Valid until mk_names_free. */
const mk_frame_t *mk_names_stack(mk_names_t *n, uint32_t stack, uint32_t *depth);

/* The innermost frame of a stack into *out, without keeping the stack's
 * other frames (the roll-ups by function and line need only this one, for
 * every site). False for an unknown or empty stack. */
bool mk_names_innermost(mk_names_t *n, uint32_t stack, mk_frame_t *out);

/* Frame index of a stack (0 the innermost, inlined frames counted) into
 * *out, symbolizing the stack's return addresses up to it and no further
 * (a site's caller, for each of a shown site's many stacks). False when the
 * stack is shorter. */
bool mk_names_frame(mk_names_t *n, uint32_t stack, uint32_t index, mk_frame_t *out);

/* True when the stack's frames came from symbols or a log (not offsets only). */
bool mk_frame_known(const mk_frame_t *f);

/* "function (file:line)", "function (module)", "file:line" or
 * "module+0xoffset": a frame in one line, into buf. */
const char *mk_frame_label(const mk_frame_t *f, char *buf, size_t cap);

/* "function at file:line (module)" or the best part of it. */
const char *mk_frame_long(const mk_frame_t *f, char *buf, size_t cap);

#endif /* MEMKIT_ANALYZE_NAMES_H */
