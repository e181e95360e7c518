/*
 * runtime.h - start-up, the end of the trace, exec and fork (runtime.c): the
 * core that ties the services together. Hooks call it; nothing below does.
 */
#ifndef MEMKIT_PRELOAD_RUNTIME_H
#define MEMKIT_PRELOAD_RUNTIME_H

#include "thread.h"

MK_HIDDEN void mk_init(void);
/* Ends the trace: flushes every thread, writes the END (and SUMMARY) record. */
MK_HIDDEN void mk_finish(int reason);
/* Before an exec replaces the process: the trace so far is written. */
MK_HIDDEN void mk_before_exec(void);

#endif /* MEMKIT_PRELOAD_RUNTIME_H */
