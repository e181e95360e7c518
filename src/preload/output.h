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
MK_HIDDEN void mk_output_lock(void);
MK_HIDDEN void mk_output_unlock(void);
MK_HIDDEN void mk_output_after_fork_child(void);

#endif /* MEMKIT_PRELOAD_OUTPUT_H */
