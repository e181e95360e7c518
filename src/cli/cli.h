/* cli.h - what the `memkit` subcommands share: entry points and small helpers. */
#ifndef MEMKIT_CLI_H
#define MEMKIT_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../analyze/json.h"

/* A sanitizer's runtime must be the first library loaded: no allocator can
 * be preloaded into a sanitizer build of memkit (bench's and replay's
 * children are memkit). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define MK_SANITIZED 1
#else
#define MK_SANITIZED 0
#endif

/* Exit statuses of the memkit command. */
enum {
    MK_EXIT_OK = 0,
    MK_EXIT_FAIL = 1,  /* the job ran and found a failure (e.g. a check limit) */
    MK_EXIT_USAGE = 2, /* bad arguments or bad input */
};

int mk_cmd_bench(int argc, char **argv);
int mk_cmd_trace(int argc, char **argv);
int mk_cmd_report(int argc, char **argv);
int mk_cmd_diff(int argc, char **argv);
int mk_cmd_check(int argc, char **argv);
int mk_cmd_tune(int argc, char **argv);
int mk_cmd_replay(int argc, char **argv);

/* Reads a trace and prints its summary (top call sites: top). wait_status:
 * the process's waitpid status where the caller is its parent (a missing end
 * record is then said for what it was), else NULL. Returns MK_EXIT_OK, or
 * MK_EXIT_USAGE when the file is not a trace or is damaged (what came before
 * the damage is still printed). */
int mk_summarize_trace(const char *path, FILE *out, int top, const int *wait_status);

/* Reads a trace's totals (no symbols, no findings) into its process row (p
 * keeps path by pointer). Returns as mk_summarize_trace, printing nothing
 * but a problem's one line. */
struct mk_report_process;
int mk_read_process(const char *path, struct mk_report_process *p);

/* The trace files of a run's prefix, PREFIX.<pid>.mkt and PREFIX.<pid>.<n>.mkt
 * (<n>: after an exec), regular files only, each opened without blocking or
 * following links and passed to fn with its descriptor (closed after) and
 * stat; fn returns false to stop. Returns how many were passed, -1 when the
 * directory cannot be read. */
struct stat;
typedef bool (*mk_trace_file_fn)(void *ctx, const char *path, int fd,
                                 const struct stat *st, unsigned pid, int seq);
int mk_each_trace_file(const char *prefix, mk_trace_file_fn fn, void *ctx);

/* The inputs of report, diff and check: each a trace, a curl log, "-", or a
 * run's prefix (every PREFIX.<pid>[.<n>].mkt), in that order; pid >= 0
 * keeps that process's traces only. Returns MK_EXIT_OK with *out a list to
 * free with mk_free_inputs, or MK_EXIT_USAGE after one line. */
int mk_expand_inputs(char *const *inputs, size_t n, int64_t pid, char ***out,
                     size_t *nout);
void mk_free_inputs(char **list, size_t n);

/* mk_load_input for several inputs merged into one report (one input: as
 * mk_load_input). */
struct mk_report;
struct mk_report_opts;
int mk_load_inputs(struct mk_report *r, char *const *paths, size_t n,
                   const struct mk_report_opts *o);

/* memkit trace --pprof (trace_pprof.c): path's trace also as pprof
 * profiles beside it, the whole run's and each snapshot's; one line on said
 * names them. Returns 1 when the run's profile was written. */
int mk_trace_write_pprof(const char *path, FILE *said);

/* Loads an input for analysis, printing its problems on stderr. Returns
 * MK_EXIT_OK, or MK_EXIT_USAGE when it could not be read (r->tr NULL and
 * nothing to show) or was damaged (r holds what came before). */
struct mk_report;
struct mk_report_opts;
int mk_load_input(struct mk_report *r, const char *path, const struct mk_report_opts *o);

/* memkit trace --snapshot PID[,PID...] (snapshot.c): a snapshot request to
 * each; MK_EXIT_OK, or MK_EXIT_USAGE after a line for each it could not ask. */
int mk_trace_snapshot(const char *pids);

/* Prints "memkit: <message>" on stderr and returns MK_EXIT_USAGE. */
int mk_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The program file exec would run for CMD: CMD itself if it has a slash,
 * else the first executable of that name in PATH. */
bool mk_resolve_command(const char *cmd, char *out, size_t cap);

/* Whether the dynamic loader will honour LD_PRELOAD for a program file. */
typedef enum mk_program_kind {
    MK_PROGRAM_PRELOADABLE, /* dynamically linked (or a script, or unknown) */
    MK_PROGRAM_STATIC,      /* statically linked: no loader runs */
    MK_PROGRAM_SETID,       /* runs with raised privileges (a set-id bit for
                             * someone else, file capabilities): the loader
                             * ignores LD_PRELOAD */
} mk_program_kind;
mk_program_kind mk_program_kind_of(const char *file);

/* A drop-in allocator's library file (e.g. "libjemalloc.so.2") in the
 * system's library directories, written to buf; NULL if not installed. */
const char *mk_find_library(const char *soname, char *buf, size_t len);
/* One of memkit's own libraries (the tracer, libmemkit-tlsf.so): beside the
 * memkit binary (a build tree) or in the install's library directory; buf
 * holds PATH_MAX bytes. NULL when neither has it. */
const char *mk_find_own_library(const char *name, char *buf, size_t len);
/* The last line of what the file fd holds (a child's standard error, kept
 * in a memfd) into out; "" when it holds nothing. */
void mk_last_line(int fd, char *out, size_t len);

/* ---- stats.c: the statistics bench and tune report ---- */

/* Medians with their range: run times are skewed, so no means. */
typedef struct mk_stat {
    double median, min, max;
} mk_stat;
#define MK_STAT_MAX 100 /* the most values mk_stat_of takes */

/* Median, min and max of v[0..n-1] (n <= MK_STAT_MAX; v is not changed);
 * zeros when n is 0. */
mk_stat mk_stat_of(const double *v, int n);

/* The probability, under the hypothesis that both samples come from one
 * distribution, that a's values beat b's (are smaller) at least as often as
 * they did: the exact one-sided Mann-Whitney U test, ties counted half. */
double mk_p_smaller(const double *a, int na, const double *b, int nb);

/* Parses a non-negative integer with an optional k/M/G suffix (powers of 1000). */
bool mk_parse_count(const char *s, uint64_t *out);

/* Parses a byte size: an integer with an optional K/M/G/T suffix (powers of
 * 1024; "KB", "KiB", a bare "B" and lower case too), as --sample 512K and
 * check's --max-peak 10M. */
bool mk_parse_bytes(const char *s, uint64_t *out);

/* Parses a duration into ns: a number (fractions allowed) with a unit of
 * ms, s, m or h (seconds without one), as --snapshot-every 60s. */
bool mk_parse_duration(const char *s, uint64_t *ns);

#endif /* MEMKIT_CLI_H */
