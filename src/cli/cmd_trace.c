/*
 * cmd_trace.c - `memkit trace [OPTIONS] -- CMD [ARGS...]`: run CMD with the
 * tracer preloaded, then print the summary of its trace.
 *
 * Every process of the tree writes its own trace, PREFIX.<pid>[.<n>].mkt,
 * tagged with this run's id; afterwards the run's traces are found by that
 * id, the main one is summarized and the others listed. The exit status is
 * CMD's (128+N if a signal killed it).
 */
#define _GNU_SOURCE
#include "cli.h"
#include "opts.h"

#include "../trace/mallopt.h"
#include "../trace/reader.h"
#include "../analyze/report.h"
#include "../analyze/symbolize.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct trace_opts {
    const char *prefix;
    const char *mallopt; /* MEMKIT_MALLOPT for the program, or NULL */
    int depth;
    bool no_stacks, summary_only, syscalls, quiet, no_times, cpu_samples, pprof;
    int top;
    uint64_t sample;      /* --sample: mean bytes between samples; 0: every event */
    uint64_t snapshot_ns; /* --snapshot-every */
    int snapshot_signal;  /* --snapshot-signal; -1: the default (SIGUSR2) */
} trace_opts_t;

/* Where libmemkit-preload.so is: MEMKIT_PRELOAD, or memkit's own library
 * directory (program.c). */
static bool find_preload(char *out, size_t cap)
{
    const char *env = getenv("MEMKIT_PRELOAD");

    if (env && *env) {
        snprintf(out, cap, "%s", env);
        return access(out, R_OK) == 0;
    }
    return mk_find_own_library("libmemkit-preload.so", out, cap) != NULL;
}

static void set_env(const char *name, const char *value)
{
    if (setenv(name, value, 1) != 0) {
        fprintf(stderr, "memkit: cannot set %s: %s\n", name, strerror(errno));
        _exit(127);
    }
}

/* Signals that end a run from outside: ^C and ^\ from the terminal, SIGTERM
 * from timeout or a service manager, SIGHUP when the terminal goes. They
 * usually reach the whole process group, the program too, so memkit ignores
 * them while it waits (like system()) and prints the summary of what the
 * program did; the program gets them as memkit was given them (a program
 * under nohup keeps SIGHUP ignored). Signalling memkit alone stops nothing:
 * signal the program, or the group. */
static const int waited_signals[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP};
#define N_WAITED (sizeof waited_signals / sizeof waited_signals[0])
static struct sigaction given[N_WAITED];

static void restore_given(void)
{
    for (size_t i = 0; i < N_WAITED; i++)
        sigaction(waited_signals[i], &given[i], NULL);
}

static pid_t spawn(const trace_opts_t *o, const char *preload, const char *run_id,
                   char **argv)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    /* The child: our library first, then whatever the user preloads. */
    const char *old = getenv("LD_PRELOAD");
    char *val;
    if (asprintf(&val, "%s%s%s", preload, old && *old ? ":" : "", old ? old : "") < 0)
        _exit(127);
    char depth[16];
    snprintf(depth, sizeof depth, "%d", o->no_stacks ? 1 : o->depth);
    set_env("LD_PRELOAD", val);
    /* Absolute: a process of the tree that changed directory before it
     * forked or exec'd would put its trace elsewhere, unlisted. */
    char abs_prefix[PATH_MAX];
    if (o->prefix[0] != '/') {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd) ||
            snprintf(abs_prefix, sizeof abs_prefix, "%s/%s", cwd, o->prefix) >=
                (int)sizeof abs_prefix) {
            fprintf(stderr, "memkit: cannot make the trace path absolute: %s\n",
                    strerror(errno ? errno : ENAMETOOLONG));
            _exit(127);
        }
    } else {
        snprintf(abs_prefix, sizeof abs_prefix, "%s", o->prefix);
    }
    set_env("MEMKIT_TRACE_PREFIX", abs_prefix);
    set_env("MEMKIT_TRACE_RUN", run_id);
    set_env("MEMKIT_TRACE_DEPTH", depth);
    set_env("MEMKIT_TRACE_SUMMARY_ONLY", o->summary_only ? "1" : "0");
    set_env("MEMKIT_TRACE_SYSCALLS", o->syscalls ? "1" : "0");
    /* 0: nothing timed; 1: the mode's default (full tracing samples the
     * CPU and times calls); 2: --summary-only samples the CPU too */
    set_env("MEMKIT_TRACE_TIMES", o->no_times ? "0" : o->cpu_samples ? "2" : "1");
    /* The summary printed at the end is counted while the program runs, beside
     * its events, so that printing it replays nothing; -q prints none. */
    set_env("MEMKIT_TRACE_SUMMARY", o->quiet ? "0" : "1");
    char num[32];
    snprintf(num, sizeof num, "%" PRIu64, o->sample);
    set_env("MEMKIT_TRACE_SAMPLE", num);
    snprintf(num, sizeof num, "%" PRIu64, o->snapshot_ns);
    set_env("MEMKIT_TRACE_SNAPSHOT_NS", num);
    snprintf(num, sizeof num, "%d",
             o->snapshot_signal < 0 ? SIGUSR2 : o->snapshot_signal);
    set_env("MEMKIT_TRACE_SNAPSHOT_SIGNAL", num);
    if (o->mallopt)
        set_env("MEMKIT_MALLOPT", o->mallopt);
    restore_given(); /* what we were given, not the default (waited_signals) */
    execvp(argv[0], argv);
    fprintf(stderr, "memkit: cannot run '%s': %s\n", argv[0], strerror(errno));
    _exit(errno == ENOENT ? 127 : 126);
}

typedef struct found {
    char path[PATH_MAX];
    uint32_t pid;
    int seq;        /* <n> of PREFIX.<pid>.<n>.mkt, 1 without it */
    uint64_t calls; /* read for a process tree's table */
} found_t;

static int by_pid_seq(const void *a, const void *b)
{
    const found_t *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return x->seq - y->seq;
}

/* Files whose contents changed before this second (the wall clock) are
 * traces of earlier runs: a directory where memkit ran a thousand times is
 * not opened a thousand times to find one run's traces. The margin covers
 * file times taken from a clock that runs a tick behind; a file system whose
 * clock is further off (a remote server's) fails the filter for every trace
 * of the run, the main one too, and then find_traces looks at every file. */
#define MK_TRACE_MTIME_MARGIN 2

/* What find_traces gathers, trace by trace. */
typedef struct found_list {
    const char *run_id;
    time_t since;
    found_t *list;
    size_t n, cap;
} found_list_t;

static bool add_if_ours(void *ctx, const char *path, int fd, const struct stat *st,
                        unsigned pid, int seq)
{
    found_list_t *f = ctx;
    if (f->since && st->st_mtim.tv_sec < f->since)
        return true; /* an earlier run's: it cannot carry our run id */
    char src[64], err[512];
    snprintf(src, sizeof src, "/proc/self/fd/%d", fd);
    mk_trace_t *tr = mk_trace_open_named(src, path, err, sizeof err);
    bool ours = tr && strcmp(tr->header.run_id, f->run_id) == 0;
    mk_trace_close(tr);
    if (!ours)
        return true;
    if (!mk_grow((void **)&f->list, &f->cap, f->n + 1, sizeof *f->list))
        return false;
    found_t *t = &f->list[f->n++];
    snprintf(t->path, sizeof t->path, "%s", path);
    t->pid = pid;
    t->seq = seq;
    return true;
}

/* The traces this run wrote: PREFIX.<digits>[.<digits>].mkt with our run id,
 * among those changed at or after since (0: all). */
static size_t find_traces(const char *prefix, const char *run_id, time_t since,
                          found_t **out)
{
    found_list_t f = {.run_id = run_id, .since = since};
    mk_each_trace_file(prefix, add_if_ours, &f);
    if (f.n)
        qsort(f.list, f.n, sizeof *f.list, by_pid_seq);
    *out = f.list;
    return f.n;
}

/* The warm-up thread: while the program runs, on the other core, it reads
 * the symbols and debug information the summary will look up. First libc's,
 * by the path the traced program's module map will name it by (the same
 * libc as ours); then those of each code file the program maps, as
 * /proc/PID/maps lists them (the symbolizer knows a file by any of its
 * paths), read again at growing intervals for what it loads later. A C++
 * program's libraries are most of the summary's wait otherwise: libLLVM's
 * 44k symbols take ~30 ms to load and sort. */
typedef struct warm_ctl {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool done; /* the program has ended: the summary wants the symbolizer */
    pid_t pid;
    uint64_t seen[512]; /* hashes of the paths warmed (or given up) */
    size_t nseen;
} warm_ctl_t;

/* First look at the program's maps after this, then at twice the wait
 * before, up to the last: a short program is not read at all, a long one
 * a dozen times. */
#define MK_WARM_FIRST_MS 20
#define MK_WARM_LAST_MS  2000

/* Sleeps up to ms, or until the program ends; true if it has. */
static bool warm_wait(warm_ctl_t *w, long ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&w->lock);
    while (!w->done && pthread_cond_timedwait(&w->cond, &w->lock, &until) == 0)
        ;
    bool done = w->done;
    pthread_mutex_unlock(&w->lock);
    return done;
}

static bool warm_done(warm_ctl_t *w)
{
    pthread_mutex_lock(&w->lock);
    bool done = w->done;
    pthread_mutex_unlock(&w->lock);
    return done;
}

/* Warms each code file of the program's maps not warmed before; false
 * once the program has ended (or its maps cannot be read). */
static bool warm_mapped(warm_ctl_t *w)
{
    char maps[64];
    snprintf(maps, sizeof maps, "/proc/%d/maps", (int)w->pid);
    FILE *f = fopen(maps, "re");
    char *line = NULL;
    size_t cap = 0;
    bool going = f != NULL;
    while (going && getline(&line, &cap, f) > 0) {
        char perms[8];
        int at = 0;
        /* address-range perms offset dev inode path */
        if (sscanf(line, "%*s %7s %*s %*s %*s %n", perms, &at) != 1 ||
            !strchr(perms, 'x'))
            continue;
        char *path = line + at;
        path[strcspn(path, "\n")] = 0;
        if (path[0] != '/' || strstr(path, " (deleted)"))
            continue;
        uint64_t h = mk_hash_bytes(path, strlen(path));
        bool seen = false;
        for (size_t i = 0; i < w->nseen && !seen; i++)
            seen = w->seen[i] == h;
        if (seen || w->nseen == sizeof w->seen / sizeof *w->seen)
            continue;
        w->seen[w->nseen++] = h;
        if (warm_done(w))
            going = false;
        else
            mk_symbolize_warm(path);
    }
    free(line);
    if (f)
        fclose(f);
    return going;
}

static void *warm_symbols(void *arg)
{
    warm_ctl_t *w = arg;
    Dl_info libc;
    if (dladdr((void *)printf, &libc) && libc.dli_fname && libc.dli_fname[0] == '/')
        mk_symbolize_warm(libc.dli_fname);
    for (long ms = MK_WARM_FIRST_MS; !warm_wait(w, ms) && warm_mapped(w);
         ms = ms < MK_WARM_LAST_MS / 2 ? ms * 2 : MK_WARM_LAST_MS)
        ;
    return NULL;
}

/* Process trees whose table is longer print its busiest rows only, and
 * name their traces by pattern rather than one line each. */
#define MK_TREE_ROWS 20

static void summarize_one(FILE *out, const found_t *t, const char *cmd, pid_t pid,
                          int status, int top)
{
    fprintf(out, "memkit: summary of %s (pid %d)\n", cmd, (int)pid);
    mk_summarize_trace(t->path, out, top, &status);
    fprintf(out, "Trace: %s\n", t->path);
    fprintf(out, "Next: memkit report %s\n", t->path);
}

static void list_traces(FILE *out, const found_t *traces, size_t n, bool with_calls)
{
    if (n > MK_TREE_ROWS) {
        char pattern[PATH_MAX];
        snprintf(pattern, sizeof pattern, "%s", traces[0].path);
        char *dot = strrchr(pattern, '/');
        dot = strchr(dot ? dot : pattern, '.'); /* PREFIX.<pid>...: the pid on */
        if (dot)
            snprintf(dot, sizeof pattern - (size_t)(dot - pattern), ".*.mkt");
        fprintf(out, "Traces: %zu files, %s\n", n, pattern);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (with_calls)
            fprintf(out, "Trace: %s (pid %u, %" PRIu64 " allocation calls)\n",
                    traces[i].path, traces[i].pid, traces[i].calls);
        else
            fprintf(out, "Trace: %s\n", traces[i].path);
    }
}

/* A process tree: the busiest process's summary, then every process's
 * totals, busiest first; "Next:" names the busiest trace. */
static void summarize_tree(FILE *out, found_t *traces, size_t n, pid_t pid, int status,
                           int top)
{
    mk_report_process_t *procs = calloc(n, sizeof *procs);
    uint64_t calls = 0, bytes = 0;
    for (size_t i = 0; procs && i < n; i++) {
        mk_read_process(traces[i].path, &procs[i]);
        traces[i].calls = procs[i].calls;
        calls += procs[i].calls;
        bytes += procs[i].total_bytes;
    }
    if (!procs) {
        list_traces(out, traces, n, false);
        return;
    }
    mk_report_sort_processes(procs, n);
    fprintf(out, "memkit: summary of %s (pid %u), the busiest of %zu processes\n",
            procs[0].command, procs[0].pid, n);
    /* the end of memkit's own child is known; the others' are not */
    mk_summarize_trace(procs[0].path, out, top,
                       procs[0].pid == (uint32_t)pid ? &status : NULL);
    fprintf(out,
            "Processes: %zu, %" PRIu64 " allocation calls and %" PRIu64
            " bytes allocated in all, busiest first:\n",
            n, calls, bytes);
    mk_render_processes(out, procs, n, MK_TREE_ROWS);
    list_traces(out, traces, n, true);
    fprintf(out, "Next: memkit report %s\n", procs[0].path);
    free(procs);
}

/* The summary, in one write: built in memory and then written whole, so
 * that output of processes the program left running cannot cut into it
 * (and a terminal takes one write, not one a line). */
static void print_summary(found_t *traces, size_t n, const found_t *main_trace,
                          const char *cmd, pid_t pid, int status, int top)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (n == 1)
        summarize_one(out ? out : stderr, main_trace, cmd, pid, status, top);
    else
        summarize_tree(out ? out : stderr, traces, n, pid, status, top);
    if (out && fclose(out) == 0)
        fwrite(text, 1, len, stderr);
    free(text);
}

/* The trace of the process memkit started: the last image it exec'd. */
static const found_t *find_main(const found_t *traces, size_t n, pid_t pid)
{
    const found_t *main_trace = NULL;
    for (size_t i = 0; i < n; i++)
        if (traces[i].pid == (uint32_t)pid)
            main_trace = &traces[i];
    return main_trace;
}

/* --snapshot-signal: USR1, USR2 (SIG optional) or none. */
static int set_snapshot_signal(void *dest, const mk_opt_t *opt, const char *v)
{
    trace_opts_t *o = dest;
    const char *sig = strncmp(v, "SIG", 3) == 0 ? v + 3 : v;
    (void)opt;
    if (strcmp(sig, "USR1") == 0)
        o->snapshot_signal = SIGUSR1;
    else if (strcmp(sig, "USR2") == 0)
        o->snapshot_signal = SIGUSR2;
    else if (strcmp(sig, "none") == 0)
        o->snapshot_signal = 0;
    else
        return mk_usage_error(
            "trace: --snapshot-signal wants USR1, USR2 or none, not '%s'", v);
    return -1;
}

/* --snapshot PID[,PID...]: the request is the whole command. */
static int ask_snapshot(void *dest, const mk_opt_t *opt, const char *v)
{
    (void)dest;
    (void)opt;
    return mk_trace_snapshot(v);
}

static int set_mallopt(void *dest, const mk_opt_t *opt, const char *v)
{
    trace_opts_t *o = dest;
    mk_mallopt set[MK_MALLOPT_MAX];
    char err[256];
    (void)opt;
    o->mallopt = v;
    if (mk_mallopt_parse(v, set, err, sizeof err) < 0)
        return mk_usage_error("trace: --mallopt: %s", err);
    return -1;
}

#define TRACE(field) offsetof(trace_opts_t, field)

static const mk_opt_t trace_options[] = {
    {.name = "--output",
     .alias = "-o",
     .arg = "PREFIX",
     .kind = MK_OPT_STRING,
     .at = TRACE(prefix),
     .help = "trace files are PREFIX.<pid>.mkt (default: memkit.<cmd>)"},
    {.name = "--depth",
     .arg = "N",
     .kind = MK_OPT_INT,
     .at = TRACE(depth),
     .lo = 1,
     .hi = 128,
     .help = "frames kept per stack, 1-128 (default 32)"},
    {.name = "--no-stacks",
     .kind = MK_OPT_FLAG,
     .at = TRACE(no_stacks),
     .help = "record only the calling instruction: faster, no unwinding"},
    {.name = "--summary-only",
     .kind = MK_OPT_FLAG,
     .at = TRACE(summary_only),
     .help = "aggregate inside the process; no per-event trace"},
    {.name = "--syscalls",
     .kind = MK_OPT_FLAG,
     .at = TRACE(syscalls),
     .help = "also record mmap, munmap, mremap, brk and sbrk"},
    {.name = "--no-times",
     .kind = MK_OPT_FLAG,
     .at = TRACE(no_times),
     .help = "do not time the allocator's calls (they cost the program a\n"
             "few percent; reports then price calls instead)"},
    {.name = "--cpu-samples",
     .kind = MK_OPT_FLAG,
     .at = TRACE(cpu_samples),
     .help = "with --summary-only: measure the allocator's time by sampling\n"
             "each thread's CPU clock (full tracing always does; it costs\n"
             "the counted summary about 1.3x on an allocation-bound loop)"},
    {.name = "--sample",
     .arg = "BYTES",
     .kind = MK_OPT_BYTES,
     .at = TRACE(sample),
     .lo = 1,
     .hi = 1 << 30,
     .help = "record a sample of the allocations, one per BYTES allocated\n"
             "on average (e.g. 512K; 1 to 1G): for long-running programs.\n"
             "Counts by kind stay exact; sites, sizes and leaks become\n"
             "estimates (MEMKIT_SAMPLE_SEED=N repeats a run's choices).\n"
             "With --summary-only: sites are calling instructions (no\n"
             "unwinding), the cheapest sampled run"},
    {.name = "--snapshot-every",
     .arg = "T",
     .kind = MK_OPT_DURATION,
     .at = TRACE(snapshot_ns),
     .lo = 1000000,
     .help = "with --sample: mark the live heap every T (e.g. 60s, 5m);\n"
             "memkit report --growth ranks the sites that grow"},
    {.name = "--snapshot-signal",
     .arg = "S",
     .kind = MK_OPT_CALL,
     .call = set_snapshot_signal,
     .help = "with --sample: the signal (USR1, USR2 or none; default USR2)\n"
             "that carries --snapshot's requests, where the program leaves\n"
             "it at its default (sent by kill, it is still the program's)"},
    {.name = "--snapshot",
     .arg = "PID",
     .kind = MK_OPT_CALL,
     .call = ask_snapshot,
     .help = "no command: ask the processes PID[,PID...], traced with\n"
             "--sample, to mark their live heap now"},
    {.name = "--top",
     .arg = "N",
     .kind = MK_OPT_INT,
     .at = TRACE(top),
     .hi = 1000,
     .help = "call sites in the summary (default 3)"},
    {.name = "--mallopt",
     .arg = "LIST",
     .kind = MK_OPT_CALL,
     .call = set_mallopt,
     .help = "apply glibc mallopt settings in the program first, e.g.\n"
             "mmap_threshold=33554432,trim_threshold=-1 (names as in\n"
             "GLIBC_TUNABLES: mmap_threshold, trim_threshold, top_pad,\n"
             "mmap_max, arena_max, arena_test, perturb, mxfast)"},
    {.name = "--pprof",
     .kind = MK_OPT_FLAG,
     .at = TRACE(pprof),
     .help = "also write each trace as pprof profiles beside it (PREFIX.<pid>.pb.gz;\n"
             "with --snapshot-every, one per snapshot too: .snap<K>.pb.gz)"},
    {.name = "--quiet",
     .alias = "-q",
     .kind = MK_OPT_FLAG,
     .at = TRACE(quiet),
     .help = "no summary; just trace"},
};

static const mk_command_spec_t trace_spec = {
    .name = "trace",
    .synopsis = "memkit trace [OPTIONS] -- CMD [ARGS...]\n"
                "       memkit trace --snapshot PID[,PID...]",
    .about =
        "Runs CMD with every allocation call recorded (malloc family, C++ new/delete),\n"
        "with call stacks, and prints a summary when it exits. Child processes are\n"
        "traced too, each into its own file.\n",
    .after = "environment: MEMKIT_PRELOAD overrides the tracer library's path; "
             "MEMKIT_MALLOPT\nis what --mallopt sets (the tracer reads it, also in "
             "programs started by hand).\n",
    .command_follows = true,
};

static int parse_opts(int argc, char **argv, trace_opts_t *o, int *first)
{
    mk_opt_table_t table = MK_OPT_TABLE(trace_options, o);
    int rc = mk_opts_parse(&trace_spec, &table, 1, argc, argv, NULL, first);
    if (rc >= 0)
        return rc;
    if (o->cpu_samples && (o->no_times || o->sample || !o->summary_only))
        return mk_usage_error(
            "trace: --cpu-samples is --summary-only's (full tracing and "
            "--sample sample the CPU already; --no-times does not)");
    if ((o->snapshot_ns || o->snapshot_signal >= 0) && !o->sample)
        return mk_usage_error("trace: snapshots are of a sampled heap: give --sample "
                              "BYTES too");
    /* --summary-only with --sample: the least a sampled run can cost. Its
     * events are few already; what it drops is the unwinding, as
     * --summary-only's sites are the calling instruction alone. Every call
     * is still counted exactly (the SAMPLES records). */
    if (o->sample && o->summary_only) {
        o->summary_only = false;
        o->no_stacks = true;
    }
    return -1;
}

int mk_cmd_trace(int argc, char **argv)
{
    trace_opts_t o = {.depth = 32, .top = 3, .snapshot_signal = -1};
    char preload[PATH_MAX], file[PATH_MAX], prefix[PATH_MAX], run_id[64];
    int first = 0, rc, status;

    if ((rc = parse_opts(argc, argv, &o, &first)) >= 0)
        return rc;
    char **cmd = argv + first;
    if (!mk_resolve_command(cmd[0], file, sizeof file))
        return mk_usage_error("trace: cannot find '%s' (not in PATH, or not executable)",
                              cmd[0]);
    switch (mk_program_kind_of(file)) {
    case MK_PROGRAM_SETID:
        return mk_usage_error("trace: %s runs with raised privileges (setuid, setgid or "
                              "file capabilities): the loader ignores LD_PRELOAD for it",
                              file);
    case MK_PROGRAM_STATIC:
        return mk_usage_error(
            "trace: %s is statically linked: memkit trace needs a "
            "dynamically linked program (it preloads a library into it)",
            file);
    case MK_PROGRAM_PRELOADABLE:
        break;
    }
    if (!find_preload(preload, sizeof preload))
        return mk_usage_error(
            "trace: cannot find libmemkit-preload.so (set MEMKIT_PRELOAD)");
    if (!o.prefix) {
        char tmp[PATH_MAX];
        snprintf(tmp, sizeof tmp, "%s", cmd[0]);
        snprintf(prefix, sizeof prefix, "memkit.%s", basename(tmp));
        o.prefix = prefix;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(run_id, sizeof run_id, "%d-%lld-%09ld", (int)getpid(), (long long)ts.tv_sec,
             ts.tv_nsec);

    struct sigaction ign = {.sa_handler = SIG_IGN};
    for (size_t i = 0; i < N_WAITED; i++) /* the program's to act on (waited_signals) */
        sigaction(waited_signals[i], &ign, &given[i]);
    fflush(NULL);
    pid_t pid = spawn(&o, preload, run_id, cmd);
    if (pid < 0)
        return mk_usage_error("trace: cannot fork: %s", strerror(errno));
    /* The summary will symbolize frames in libc and the program's other
     * modules: read their symbols now, on the other core, while the program
     * runs (and the first time, inflate libc's compressed debug file,
     * libc6-dbg, into the cache: tens of ms). */
    pthread_t warm;
    static warm_ctl_t warm_ctl = {.lock = PTHREAD_MUTEX_INITIALIZER,
                                  .cond = PTHREAD_COND_INITIALIZER};
    warm_ctl.pid = pid;
    bool warming = !o.quiet && pthread_create(&warm, NULL, warm_symbols, &warm_ctl) == 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (warming) {
        pthread_mutex_lock(&warm_ctl.lock);
        warm_ctl.done = true;
        pthread_cond_signal(&warm_ctl.cond);
        pthread_mutex_unlock(&warm_ctl.lock);
        pthread_join(warm, NULL);
    }
    restore_given();
    /* The processes' "first to report a failure" marker (preload/output.c). */
    char said[128];
    snprintf(said, sizeof said, "/dev/shm/memkit-%s.said", run_id);
    unlink(said);
    rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (WIFSIGNALED(status))
        fprintf(stderr, "memkit: '%s' was killed by signal %d (%s)\n", cmd[0],
                WTERMSIG(status), strsignal(WTERMSIG(status)));

    found_t *traces;
    size_t n = find_traces(o.prefix, run_id, ts.tv_sec - MK_TRACE_MTIME_MARGIN, &traces);
    const found_t *main_trace = find_main(traces, n, pid);
    if (!main_trace) { /* a file system whose clock is off (find_traces) */
        free(traces);
        n = find_traces(o.prefix, run_id, 0, &traces);
        main_trace = find_main(traces, n, pid);
    }
    if (!main_trace)
        fprintf(stderr, "memkit: no trace was written for '%s'%s\n", cmd[0],
                n ? "" : " (see any message above)");
    else if (o.quiet)
        list_traces(stderr, traces, n, false);
    else
        print_summary(traces, n, main_trace, cmd[0], pid, status, o.top);
    for (size_t i = 0; o.pprof && i < n; i++)
        if (!mk_trace_write_pprof(traces[i].path, stderr))
            fprintf(stderr, "memkit: trace: no pprof profile of %s\n", traces[i].path);
    free(traces);
    return rc;
}
