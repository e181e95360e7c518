/*
 * output.h - records into the trace file: framed, compressed with zstd,
 * appended under one lock (output.c). A failed write disables tracing with
 * one message.
 */
#ifndef MEMKIT_PRELOAD_OUTPUT_H
#define MEMKIT_PRELOAD_OUTPUT_H

#include "base.h"

MK_HIDDEN bool mk_output_open(void);
/* One record; t is the writing thread's state for EVENTS (its zstd context
 * and clock anchor), NULL for the others. */
MK_HIDDEN bool mk_output_record(mk_thread_t *t, unsigned type, const void *raw,
                                size_t len);
/* The same, the payload given in parts. */
MK_HIDDEN bool mk_output_parts(mk_thread_t *t, unsigned type, const void *const *part,
                               const size_t *len, int nparts);
/* A forked child's trace is created before its first record, not at the
 * fork: a child that execs without an allocation call then leaves no trace
 * (runtime.c). head() creates the file and writes what a trace starts with;
 * it runs once, on the thread about to write the first record. */
MK_HIDDEN void mk_output_defer(bool (*head)(void));
/* Is a deferred head still to be written? */
MK_HIDDEN bool mk_output_pending(void);
/* Writes a deferred head now, if there is one; false if the trace cannot be
 * written. Records call it themselves; a writer that holds a lock head()
 * takes too (modules.c) calls it before taking that lock. */
MK_HIDDEN bool mk_output_ready(void);
MK_HIDDEN void mk_output_lock(void);
MK_HIDDEN void mk_output_unlock(void);
MK_HIDDEN void mk_output_after_fork_child(void);

#endif /* MEMKIT_PRELOAD_OUTPUT_H */
