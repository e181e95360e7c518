/*
 * outfile.h - what memkit writes (reports, pages, JSON) goes through here:
 * every write is checked, and a file named on the command line appears
 * whole or not at all. A regular file (or a new one) is written under a
 * temporary name in its directory and renamed over the target at the end;
 * a device, FIFO or standard output is written in place.
 */
#ifndef MEMKIT_CLI_OUTFILE_H
#define MEMKIT_CLI_OUTFILE_H

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>

typedef struct mk_outfile {
    FILE *f;
    const char *path;   /* as given; NULL for standard output */
    char tmp[PATH_MAX]; /* the temporary name, "" when written in place */
} mk_outfile_t;

/* Opens path (NULL or "-": standard output). On failure prints one line,
 * "memkit: cannot write PATH: reason", and returns false. */
bool mk_outfile_open(mk_outfile_t *o, const char *path);

/* Finishes the output: flushes, checks that every write succeeded, closes
 * and renames into place. keep false (the job failed before its output was
 * complete) discards a temporary file. Returns true when the output is
 * whole; false after one line on stderr, with no partial file left. */
bool mk_outfile_close(mk_outfile_t *o, bool keep);

/* Standard output's end, for commands that print there: flushed and
 * checked. Returns false after one line on stderr. main() calls it after
 * every command. */
bool mk_stdout_close(void);

#endif
