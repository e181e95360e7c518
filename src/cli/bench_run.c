/*
 * bench_run.c - running one (workload, allocator) pair of `memkit bench` in a
 * fresh child process, and the child's side of it.
 *
 * The child is this same executable started as `memkit bench --child W A SCALE
 * ROUNDS`, with LD_PRELOAD naming the drop-in allocator (or unset), so one
 * allocator's heap never skews another's numbers. It reports one line per round on a
 * pipe; the parent takes peak RSS and minor faults from wait4's rusage and computes
 * medians with min and max.
 */
#include "bench.h"

#include <errno.h>
#include <stddef.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

const mk_bench_allocator mk_bench_allocators[] = {
    {"glibc", MK_API_MALLOC, NULL, NULL, NULL, false},
    {"glibc-tuned", MK_API_MALLOC, NULL, NULL, NULL, true},
    {"jemalloc", MK_API_MALLOC, "libjemalloc.so.2", "libjemalloc2", NULL, false},
    {"tcmalloc", MK_API_MALLOC, "libtcmalloc_minimal.so.4", "libtcmalloc-minimal4", NULL,
     false},
    {"mimalloc", MK_API_MALLOC, "libmimalloc.so.2", "libmimalloc2.0", NULL, false},
    {"mk_stack", MK_API_MK_STACK, NULL, NULL, NULL, false},
    {"mk_pool", MK_API_MK_POOL, NULL, NULL, NULL, false},
    {"mk_fifo", MK_API_MK_FIFO, NULL, NULL, NULL, false},
    {"mk_ring", MK_API_MK_RING, NULL, NULL, NULL, false},
    {"mk_tlsf", MK_API_MK_TLSF, NULL, NULL, NULL, false},
    {"mk_localbuf", MK_API_MK_LOCALBUF, NULL, NULL, NULL, false},
    {"bump-ceiling", MK_API_BUMP_CEILING, NULL, NULL, NULL, false},
};
const size_t mk_bench_n_allocators =
    sizeof mk_bench_allocators / sizeof mk_bench_allocators[0];
/* A configuration holds one result per allocator. */
_Static_assert(sizeof mk_bench_allocators / sizeof mk_bench_allocators[0] <=
                   sizeof((mk_bench_config *)0)->res / sizeof(mk_bench_result),
               "mk_bench_config.res holds every allocator");

/* ------------------------------------------------------------------------ */
/* the child side                                                            */

/* glibc-tuned: the glibc-tuning article's settings for realtime loops. A
 * fixed mmap threshold of 32 MiB keeps every ordinary block in the heap (and
 * stops the threshold from moving), and no trimming keeps freed memory
 * mapped, so a loop that frees and allocates again never faults. */
static void tune_glibc(void)
{
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, -1);
}

int mk_bench_child(int argc, char **argv)
{
    const mk_workload *w;
    const mk_bench_allocator *a = NULL;
    mk_bench_round rounds[MK_BENCH_MAX_ROUNDS];
    uint64_t scale;
    int n;

    if (argc != 4)
        return mk_usage_error("bench --child: expected WORKLOAD ALLOCATOR SCALE ROUNDS");
    w = mk_workload_find(argv[0]);
    for (size_t i = 0; i < mk_bench_n_allocators; i++)
        if (strcmp(mk_bench_allocators[i].name, argv[1]) == 0)
            a = &mk_bench_allocators[i];
    n = atoi(argv[3]);
    if (!w || !a || !mk_parse_count(argv[2], &scale) || n < 1 || n > MK_BENCH_MAX_ROUNDS)
        return mk_usage_error("bench --child: bad arguments");
    if (a->tuned)
        tune_glibc();
    memset(rounds, 0, sizeof rounds);
    if (w->run(a->api, scale, n, rounds) != 0)
        return MK_EXIT_FAIL;
    for (int i = 0; i < n; i++) {
        const mk_bench_round *r = &rounds[i];

        printf("round %llu %llu %.9f %.9f %llu %llu %llu %llu %llu %llu %llu %llu %llu "
               "%llu\n",
               (unsigned long long)r->allocs, (unsigned long long)r->frees, r->alloc_s,
               r->free_s, (unsigned long long)r->p50_ns, (unsigned long long)r->p99_ns,
               (unsigned long long)r->p999_ns, (unsigned long long)r->max_ns,
               (unsigned long long)r->free_p50_ns, (unsigned long long)r->free_p99_ns,
               (unsigned long long)r->free_p999_ns, (unsigned long long)r->free_max_ns,
               (unsigned long long)r->max_steps, (unsigned long long)r->final_rss);
    }
    return fflush(stdout) == 0 ? MK_EXIT_OK : MK_EXIT_FAIL;
}

/* ------------------------------------------------------------------------ */
/* the parent side                                                           */

static uint64_t median_u64(uint64_t *v, int n)
{
    double d[MK_BENCH_MAX_ROUNDS];
    /* Callers pass 1..MK_BENCH_MAX_ROUNDS rounds; saying so also tells gcc -O3
     * that mk_stat_of reads only what this loop wrote. */
    if (n < 1 || n > MK_BENCH_MAX_ROUNDS)
        return 0;
    for (int i = 0; i < n; i++)
        d[i] = (double)v[i];
    return (uint64_t)mk_stat_of(d, n).median;
}

/* Reads one "round ..." line of the child; false at the end or on a bad line. */
static bool read_round(FILE *in, mk_bench_round *r)
{
    unsigned long long v[12];

    if (fscanf(in,
               "round %llu %llu %lf %lf %llu %llu %llu %llu %llu %llu %llu %llu %llu "
               "%llu\n",
               &v[0], &v[1], &r->alloc_s, &r->free_s, &v[2], &v[3], &v[4], &v[5], &v[6],
               &v[7], &v[8], &v[9], &v[10], &v[11]) != 14)
        return false;
    r->allocs = v[0];
    r->frees = v[1];
    r->p50_ns = v[2];
    r->p99_ns = v[3];
    r->p999_ns = v[4];
    r->max_ns = v[5];
    r->free_p50_ns = v[6];
    r->free_p99_ns = v[7];
    r->free_p999_ns = v[8];
    r->free_max_ns = v[9];
    r->max_steps = v[10];
    r->final_rss = v[11];
    return true;
}

/* Medians over rounds of one latency field (offset into mk_bench_round). */
static uint64_t median_field(const mk_bench_round *rr, int n, size_t offset)
{
    uint64_t v[MK_BENCH_MAX_ROUNDS];

    for (int i = 0; i < n; i++)
        memcpy(&v[i], (const char *)&rr[i] + offset, sizeof v[i]);
    return median_u64(v, n);
}

/* Parses the child's "round ..." lines into rates, latencies and steps. */
static bool parse_rounds(FILE *in, mk_bench_result *r, int want)
{
    double ar[MK_BENCH_MAX_ROUNDS], fr[MK_BENCH_MAX_ROUNDS], as[MK_BENCH_MAX_ROUNDS],
        fs[MK_BENCH_MAX_ROUNDS], total[MK_BENCH_MAX_ROUNDS];
    mk_bench_round rr[MK_BENCH_MAX_ROUNDS] = {{0}}; /* -O3 cannot see n >= 1 below */
    int n = 0;

    while (n < want && read_round(in, &rr[n])) {
        double ta = rr[n].alloc_s, tf = rr[n].free_s;

        /* A phase too fast for the clock counts as one nanosecond, not infinity. */
        as[n] = ta;
        fs[n] = tf;
        total[n] = ta + tf;
        ar[n] = (double)rr[n].allocs / (ta > 1e-9 ? ta : 1e-9);
        fr[n] = (double)rr[n].frees / (tf > 1e-9 ? tf : 1e-9);
        if (rr[n].max_ns > r->max_ns)
            r->max_ns = rr[n].max_ns;
        if (rr[n].free_max_ns > r->free_max_ns)
            r->free_max_ns = rr[n].free_max_ns;
        if (rr[n].max_steps > r->max_steps)
            r->max_steps = rr[n].max_steps;
        n++;
    }
    if (n != want)
        return false;
    if (r->max_ns) {
        r->p50_ns = median_field(rr, n, offsetof(mk_bench_round, p50_ns));
        r->p99_ns = median_field(rr, n, offsetof(mk_bench_round, p99_ns));
        r->p999_ns = median_field(rr, n, offsetof(mk_bench_round, p999_ns));
    }
    if (r->free_max_ns) {
        r->free_p50_ns = median_field(rr, n, offsetof(mk_bench_round, free_p50_ns));
        r->free_p99_ns = median_field(rr, n, offsetof(mk_bench_round, free_p99_ns));
        r->free_p999_ns = median_field(rr, n, offsetof(mk_bench_round, free_p999_ns));
    }
    /* first_to_steady: the first round against the median of the rest */
    if (n >= 2) {
        double first = total[0];
        mk_stat rest = mk_stat_of(total + 1, n - 1);
        r->first_to_steady = rest.median > 0 ? first / rest.median : 0;
    }
    if (rr[0].final_rss)
        r->final_rss_bytes = median_field(rr, n, offsetof(mk_bench_round, final_rss));
    r->time_s = mk_stat_of(total, n);
    r->alloc_rate = mk_stat_of(ar, n);
    r->free_rate = mk_stat_of(fr, n);
    r->alloc_s = mk_stat_of(as, n);
    r->free_s = mk_stat_of(fs, n);
    return true;
}

const char *mk_bench_unavailable(const mk_workload *w, const mk_bench_allocator *a,
                                 mk_bench_result *r)
{
    char lib[512];

    if (!w->supports(a->api)) {
        snprintf(r->reason, sizeof r->reason, "the %s pattern does not fit %s", w->name,
                 a->name);
        return "n/a";
    }
    if (a->tuned && MK_SANITIZED) {
        snprintf(r->reason, sizeof r->reason,
                 "glibc's settings do not reach a sanitizer's own allocator");
        return "skipped";
    }
    if (a->soname && MK_SANITIZED) {
        snprintf(r->reason, sizeof r->reason,
                 "cannot preload a drop-in allocator into a sanitizer build");
        return "skipped";
    }
    if (a->soname && !mk_find_library(a->soname, lib, sizeof lib)) {
        snprintf(r->reason, sizeof r->reason, "not installed: apt-get install %s",
                 a->package);
        return "skipped";
    }
    return NULL;
}

void mk_bench_run_one(const mk_workload *w, const mk_bench_allocator *a, uint64_t scale,
                      int rounds, mk_bench_result *r)
{
    char lib[512], scale_s[32], rounds_s[16];
    const char *preload = NULL;
    struct rusage ru;
    int fds[2], status;
    double t0;
    pid_t pid;
    FILE *in;

    memset(r, 0, sizeof *r);
    r->alloc = a;
    if ((r->status = mk_bench_unavailable(w, a, r)) != NULL)
        return;
    if (a->soname)
        preload = mk_find_library(a->soname, lib, sizeof lib);
    snprintf(scale_s, sizeof scale_s, "%llu", (unsigned long long)scale);
    snprintf(rounds_s, sizeof rounds_s, "%d", rounds);
    fflush(NULL);
    if (pipe(fds) != 0)
        goto fail_errno;
    t0 = mk_bench_now();
    pid = fork();
    if (pid < 0) {
        int err = errno;

        close(fds[0]);
        close(fds[1]);
        errno = err;
        goto fail_errno;
    }
    if (pid == 0) {
        char *args[] = {"memkit",        "bench", "--child", (char *)w->name,
                        (char *)a->name, scale_s, rounds_s,  NULL};

        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        if (preload)
            setenv("LD_PRELOAD", preload, 1);
        else
            unsetenv("LD_PRELOAD");
        execv("/proc/self/exe", args);
        _exit(127);
    }
    close(fds[1]);
    in = fdopen(fds[0], "r");
    bool parsed = in && parse_rounds(in, r, rounds);
    if (in)
        fclose(in);
    while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR)
        ;
    r->wall_s = mk_bench_now() - t0;
    r->peak_rss_bytes = (uint64_t)ru.ru_maxrss * 1024;
    r->minor_faults = (uint64_t)ru.ru_minflt;
    if (!parsed || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        r->status = "failed";
        if (WIFSIGNALED(status))
            snprintf(r->reason, sizeof r->reason, "child killed by signal %d",
                     WTERMSIG(status));
        else
            snprintf(r->reason, sizeof r->reason, "child exited with status %d",
                     WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        return;
    }
    r->status = "ok";
    return;
fail_errno:
    r->status = "failed";
    snprintf(r->reason, sizeof r->reason, "cannot start the child: %s", strerror(errno));
}
