/*
 * fds.h - the tracer's own descriptors, out of the program's way (fds.c says
 * how; it also holds the close/close_range/pipe/readdir interposers that
 * keep them so).
 */
#ifndef MEMKIT_PRELOAD_FDS_H
#define MEMKIT_PRELOAD_FDS_H

#include "base.h"

MK_HIDDEN int mk_fd_make_private(int fd, bool cloexec); /* returns its new number */
MK_HIDDEN void mk_fd_forget(int fd);        /* no longer ours: never close it */
MK_HIDDEN void mk_fd_close_private(int fd); /* closes it if it still is ours */
/* Closes a descriptor the tracer opened, private or not (errno kept). */
MK_HIDDEN void mk_fd_close(int fd);

#endif /* MEMKIT_PRELOAD_FDS_H */
