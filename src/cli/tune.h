/*
 * tune.h - what the parts of `memkit tune` share: the candidates (an
 * allocator or glibc setting, expressed as environment variables), their
 * measured runs, and the recommendation drawn from them.
 *
 *   cmd_tune.c     options, the candidates, the interleaved schedule, the verdict
 *   tune_run.c     one run of the user's command under one candidate, measured
 *   stats.c        medians and the Mann-Whitney test (shared, cli.h)
 *   tune_output.c  the table and the JSON (docs/tune-json.md)
 */
#ifndef MEMKIT_CLI_TUNE_H
#define MEMKIT_CLI_TUNE_H

#include "cli.h"

#include <stdint.h>

#define MK_TUNE_MAX_RUNS 100
_Static_assert(MK_TUNE_MAX_RUNS <= MK_STAT_MAX, "mk_stat_of takes every run");
#define MK_TUNE_MAX_ENV        8
#define MK_TUNE_MAX_CANDIDATES 32

/* A built-in candidate: an allocator or a glibc setting (cmd_tune.c's
 * table, which memkit replay's allocators are too). */
typedef struct mk_alloc_preset {
    const char *name;
    const char *tunables; /* GLIBC_TUNABLES value, or NULL */
    const char *soname;   /* drop-in library for LD_PRELOAD, or NULL */
    const char *package;  /* the Debian package that ships it; NULL: memkit's own
                           * (mk_find_own_library) */
    const char *about;
} mk_alloc_preset;
extern const mk_alloc_preset mk_alloc_presets[];
extern const size_t mk_n_alloc_presets;

/* A candidate beats glibc's default when the one-sided Mann-Whitney p of
 * its runs (or rounds) being faster, or leaner, is at most this. */
#define MK_P_BEYOND_NOISE 0.05

/* The presets a comma-separated list names, set in want (one per preset).
 * -1, or MK_EXIT_USAGE after one line: "<what> 'NAME' (memkit tune --list)". */
int mk_alloc_presets_choose(const char *list, bool *want, const char *what);

/* The environment entry that selects p into *env: GLIBC_TUNABLES for a
 * glibc setting, LD_PRELOAD for an installed drop-in, NULL for glibc.
 * Returns "ok", or "missing" with the install line in reason; NULL when
 * memory ran out. */
const char *mk_alloc_preset_env(const mk_alloc_preset *p, char **env, char *reason,
                                size_t len);

/* NAME=VAR=VALUE[ VAR=VALUE...], the option opt's value: the name into name
 * (name_cap bytes), the assignments copied into env (at most max). -1, or
 * MK_EXIT_USAGE after one line. */
int mk_alloc_spec_parse(const char *opt, const char *spec, char *name, size_t name_cap,
                        char **env, int max);

/* One measured run of the command. */
typedef struct mk_tune_sample {
    double wall_s, user_s, sys_s;
    uint64_t peak_rss_bytes, minor_faults, major_faults;
} mk_tune_sample;

typedef struct mk_tune_candidate {
    char name[40];
    const char *about;              /* what it changes, one line */
    char *env[MK_TUNE_MAX_ENV + 1]; /* "VAR=value", NULL-terminated */
    char **envp;                    /* the whole environment of its runs */
    char *merged[MK_TUNE_MAX_ENV];  /* envp entries built from the user's and ours */
    const char *status; /* "ok", "missing", "n/a", "failed", "output differs" */
    char reason[240];
    int nruns;
    mk_tune_sample s[MK_TUNE_MAX_RUNS];
    /* computed from s by mk_tune_conclude */
    mk_stat wall_s, user_s, sys_s, peak_rss, minor_faults, major_faults;
    double speedup;   /* glibc's median wall / ours; 0 when not measured */
    double p_faster;  /* one-sided Mann-Whitney p that our walls are smaller */
    double rss_ratio; /* our median peak RSS / glibc's */
    double p_leaner;  /* the same test on peak RSS */
} mk_tune_candidate;

typedef struct mk_tune_opts {
    char **cmd;        /* the command and its arguments */
    int runs;          /* measured runs per candidate */
    bool check_output; /* disqualify on stdout different from glibc's */
    bool json;         /* JSON instead of the table */
    const char *input; /* each run's stdin; NULL: /dev/null */
    double timeout_s;  /* 0: none */
    bool progress;     /* a progress line on stderr */
} mk_tune_opts;

/* The verdict: the best candidate beyond noise on time and on memory
 * (index into the candidates; 0, glibc, when nothing beats it). */
typedef struct mk_tune_verdict {
    int fastest, leanest;
    double tool_wall_s, runs_wall_s; /* all of memkit tune / the command's runs */
    int total_runs;
} mk_tune_verdict;

/* The outcome of one run. */
typedef struct mk_tune_outcome {
    bool ok;           /* exited with status 0 within the time limit */
    uint64_t out_hash; /* FNV-1a of its stdout (with check_output) */
    uint64_t out_len;
    char why[200]; /* when not ok: exit status or signal, and its last stderr line */
} mk_tune_outcome;

/* The run-time state of tune_run.c: where the command's output goes. */
typedef struct mk_tune_runner {
    int out_fd, err_fd; /* memfds (out: /dev/null without check_output) */
} mk_tune_runner;

bool mk_tune_runner_open(mk_tune_runner *r, const mk_tune_opts *o, char *err, size_t len);
void mk_tune_runner_close(mk_tune_runner *r);

/* Runs o->cmd once with c's environment; fills *s (measures) and *res. False
 * when the command could not be started at all (err says why). */
bool mk_tune_run(mk_tune_runner *r, const mk_tune_candidate *c, const mk_tune_opts *o,
                 mk_tune_sample *s, mk_tune_outcome *res, char *err, size_t len);

/* The command line a user types to run cmd under c (environment first). */
void mk_tune_command_line(const mk_tune_candidate *c, char **cmd, FILE *out);

/* "key": {"median": ..., "min": ..., "max": ...}: a stat in tune's JSON, and
 * in replay's. */
void mk_json_stat(mk_json *j, const char *key, mk_stat s);

void mk_tune_print_table(const mk_tune_candidate *c, int n, const mk_tune_verdict *v,
                         const mk_tune_opts *o, FILE *out);
void mk_tune_print_json(const mk_tune_candidate *c, int n, const mk_tune_verdict *v,
                        const mk_tune_opts *o, FILE *out);

#endif /* MEMKIT_CLI_TUNE_H */
