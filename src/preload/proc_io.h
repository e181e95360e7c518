/*
 * proc_io.h - the program's own I/O bytes while traced, without its
 * children's and the tracer's own (proc_io.c says how).
 */
#ifndef MEMKIT_PRELOAD_PROC_IO_H
#define MEMKIT_PRELOAD_PROC_IO_H

#include "base.h"

enum { MK_IO_RCHAR, MK_IO_WCHAR, MK_IO_READ_BYTES, MK_IO_WRITE_BYTES, MK_IO_FIELDS };
typedef struct mk_io {
    uint64_t v[MK_IO_FIELDS];
} mk_io_t;
#define MK_IO_NO_MARK UINT64_MAX

/* Counting starts: at start-up once the trace's head is written, and in a
 * forked child. thread_ended(tid) tells a thread whose counts are already
 * in (mk_io_thread_ended) from a live one. */
MK_HIDDEN void mk_io_start(bool (*thread_ended)(pid_t tid));
/* From a thread's key destructor: its counts outlive it only here. */
MK_HIDDEN void mk_io_thread_ended(void);
/* Around a read the tracer makes where the program would not have (glibc's
 * /proc/self/maps read for the main thread's stack): mark = mk_io_mark(),
 * the read, mk_io_own_since(mark). */
MK_HIDDEN uint64_t mk_io_mark(void);
MK_HIDDEN void mk_io_own_since(uint64_t mark);
/* The counts since the start into *out (false: /proc not readable, all 0),
 * and the trace bytes written since into *trace_bytes. */
MK_HIDDEN bool mk_io_end(mk_io_t *out, uint64_t *trace_bytes);

#endif /* MEMKIT_PRELOAD_PROC_IO_H */
