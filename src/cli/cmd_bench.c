/*
 * cmd_bench.c - `memkit bench`: runs workloads under each allocator, each
 * (workload, allocator) pair in a fresh child process, and prints a table or JSON.
 *
 * The child is this same executable started as `memkit bench --child W A SCALE
 * ROUNDS`, with LD_PRELOAD naming the drop-in allocator (or unset), so one
 * allocator's heap never skews another's numbers. It reports one line per round on a
 * pipe; the parent takes peak RSS and minor faults from wait4's rusage and computes
 * medians with min and max.
 */
#include "cli.h"

#include "workload.h"

#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_ROUNDS 100

/* A sanitizer runtime must be the first library loaded: drop-in allocators cannot be
 * preloaded into a sanitizer build of memkit. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define BENCH_SANITIZED 1
#else
#define BENCH_SANITIZED 0
#endif

typedef struct allocator {
    const char *name;
    mk_bench_api api;
    const char *soname;  /* drop-in library for LD_PRELOAD, or NULL */
    const char *package; /* Debian package that ships it */
    const char *planned; /* non-NULL: not built yet, and why */
    bool tuned;          /* glibc with the realtime settings (see tune_glibc) */
} allocator_t;

static const allocator_t allocators[] = {
    {"glibc", MK_API_MALLOC, NULL, NULL, NULL, false},
    {"glibc-tuned", MK_API_MALLOC, NULL, NULL, NULL, true},
    {"jemalloc", MK_API_MALLOC, "libjemalloc.so.2", "libjemalloc2", NULL, false},
    {"tcmalloc", MK_API_MALLOC, "libtcmalloc_minimal.so.4", "libtcmalloc-minimal4", NULL,
     false},
    {"mimalloc", MK_API_MALLOC, "libmimalloc.so.2", "libmimalloc2.0", NULL, false},
    {"mk_stack", MK_API_MK_STACK, NULL, NULL, NULL, false},
    {"mk_pool", MK_API_MK_POOL, NULL, NULL, NULL, false},
    {"mk_fifo", MK_API_MALLOC, NULL, NULL, "planned: the FIFO and ring allocators issue",
     false},
    {"mk_ring", MK_API_MALLOC, NULL, NULL, "planned: the FIFO and ring allocators issue",
     false},
    {"mk_tlsf", MK_API_MALLOC, NULL, NULL, "planned: the TLSF issue", false},
};
#define N_ALLOCATORS (sizeof allocators / sizeof allocators[0])

typedef struct stat3 {
    double median, min, max;
} stat3_t;

typedef struct result {
    const allocator_t *alloc;
    const char *status; /* "ok", "n/a", "skipped", "failed" */
    char reason[160];
    stat3_t alloc_rate, free_rate, alloc_s, free_s;
    /* single-call latencies: medians over rounds (max: the largest); 0 when
     * the workload does not time single calls */
    uint64_t p50_ns, p99_ns, p999_ns, max_ns;
    double first_to_steady; /* round 1's time / median of the others; 0: n/a */
    uint64_t peak_rss_bytes, minor_faults;
    double wall_s;
} result_t;

typedef struct options {
    bool quick, json, list, default_policy;
    uint64_t scale;   /* 0: the workload's default */
    int rounds;       /* 0: each workload's default */
    uint64_t size;    /* malloc-free: block size; 0: sweep 32..256 */
    uint64_t threads; /* malloc-free: threads; 0: sweep 1..cores */
    bool want[N_ALLOCATORS];
} options_t;

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

static int bench_child(int argc, char **argv)
{
    const mk_workload *w;
    const allocator_t *a = NULL;
    mk_bench_round rounds[MAX_ROUNDS];
    uint64_t scale;
    int n;

    if (argc != 4)
        return mk_usage_error("bench --child: expected WORKLOAD ALLOCATOR SCALE ROUNDS");
    w = mk_workload_find(argv[0]);
    for (size_t i = 0; i < N_ALLOCATORS; i++)
        if (strcmp(allocators[i].name, argv[1]) == 0)
            a = &allocators[i];
    n = atoi(argv[3]);
    if (!w || !a || !mk_parse_count(argv[2], &scale) || n < 1 || n > MAX_ROUNDS)
        return mk_usage_error("bench --child: bad arguments");
    if (a->tuned)
        tune_glibc();
    memset(rounds, 0, sizeof rounds);
    if (w->run(a->api, scale, n, rounds) != 0)
        return MK_EXIT_FAIL;
    for (int i = 0; i < n; i++)
        printf("round %llu %llu %.9f %.9f %llu %llu %llu %llu\n",
               (unsigned long long)rounds[i].allocs, (unsigned long long)rounds[i].frees,
               rounds[i].alloc_s, rounds[i].free_s, (unsigned long long)rounds[i].p50_ns,
               (unsigned long long)rounds[i].p99_ns,
               (unsigned long long)rounds[i].p999_ns,
               (unsigned long long)rounds[i].max_ns);
    return fflush(stdout) == 0 ? MK_EXIT_OK : MK_EXIT_FAIL;
}

/* ------------------------------------------------------------------------ */
/* the parent side                                                           */

/* Finds a drop-in allocator's library; NULL if it is not installed. */
static const char *find_library(const char *soname, char *buf, size_t len)
{
    static const char *const dirs[] = {
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/usr/local/lib",
        "/lib/x86_64-linux-gnu",
    };

    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        snprintf(buf, len, "%s/%s", dirs[i], soname);
        if (access(buf, R_OK) == 0)
            return buf;
    }
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static stat3_t stat3(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return (stat3_t){
        .median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2,
        .min = v[0],
        .max = v[n - 1],
    };
}

static uint64_t median_u64(uint64_t *v, int n)
{
    double d[MAX_ROUNDS];
    for (int i = 0; i < n; i++)
        d[i] = (double)v[i];
    return (uint64_t)stat3(d, n).median;
}

/* Parses the child's "round ..." lines into per-round rates. */
static bool parse_rounds(FILE *in, result_t *r, int want)
{
    double ar[MAX_ROUNDS], fr[MAX_ROUNDS], as[MAX_ROUNDS], fs[MAX_ROUNDS],
        total[MAX_ROUNDS];
    uint64_t p50[MAX_ROUNDS], p99[MAX_ROUNDS], p999[MAX_ROUNDS];
    unsigned long long na, nf, l50, l99, l999, lmax;
    double ta, tf;
    int n = 0;

    while (n < want && fscanf(in, "round %llu %llu %lf %lf %llu %llu %llu %llu\n", &na,
                              &nf, &ta, &tf, &l50, &l99, &l999, &lmax) == 8) {
        /* A phase too fast for the clock counts as one nanosecond, not infinity. */
        as[n] = ta;
        fs[n] = tf;
        total[n] = ta + tf;
        ar[n] = (double)na / (ta > 1e-9 ? ta : 1e-9);
        fr[n] = (double)nf / (tf > 1e-9 ? tf : 1e-9);
        p50[n] = l50;
        p99[n] = l99;
        p999[n] = l999;
        if (lmax > r->max_ns)
            r->max_ns = lmax;
        n++;
    }
    if (n != want)
        return false;
    if (r->max_ns) {
        r->p50_ns = median_u64(p50, n);
        r->p99_ns = median_u64(p99, n);
        r->p999_ns = median_u64(p999, n);
    }
    /* first_to_steady: the first round against the median of the rest */
    if (n >= 2) {
        double first = total[0];
        stat3_t rest = stat3(total + 1, n - 1);
        r->first_to_steady = rest.median > 0 ? first / rest.median : 0;
    }
    r->alloc_rate = stat3(ar, n);
    r->free_rate = stat3(fr, n);
    r->alloc_s = stat3(as, n);
    r->free_s = stat3(fs, n);
    return true;
}

static void run_one(const mk_workload *w, const allocator_t *a, uint64_t scale,
                    int rounds, result_t *r)
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
    if (!w->supports(a->api)) {
        r->status = "n/a";
        snprintf(r->reason, sizeof r->reason, "the %s pattern does not fit %s", w->name,
                 a->name);
        return;
    }
    if (a->tuned && BENCH_SANITIZED) {
        r->status = "skipped";
        snprintf(r->reason, sizeof r->reason,
                 "glibc's settings do not reach a sanitizer's own allocator");
        return;
    }
    if (a->soname && BENCH_SANITIZED) {
        r->status = "skipped";
        snprintf(r->reason, sizeof r->reason,
                 "cannot preload a drop-in allocator into a sanitizer build");
        return;
    }
    if (a->soname && !(preload = find_library(a->soname, lib, sizeof lib))) {
        r->status = "skipped";
        snprintf(r->reason, sizeof r->reason, "not installed: apt-get install %s",
                 a->package);
        return;
    }
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

/* ------------------------------------------------------------------------ */
/* output                                                                    */

static const result_t *find_result(const result_t *res, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(res[i].alloc->name, name) == 0 && strcmp(res[i].status, "ok") == 0)
            return &res[i];
    return NULL;
}

/* size and threads: the malloc-free configuration, 0 for other workloads. */
static void print_table(const mk_workload *w, uint64_t scale, int rounds, uint64_t size,
                        uint64_t threads, const result_t *res, int n)
{
    const result_t *base = find_result(res, n, "glibc");
    bool latency = false;

    for (int i = 0; i < n; i++)
        latency |= res[i].max_ns != 0;
    printf("memkit bench %s: %llu %s", w->name, (unsigned long long)scale, w->scale_unit);
    if (size)
        printf(" of %llu bytes on %llu thread%s", (unsigned long long)size,
               (unsigned long long)threads, threads == 1 ? "" : "s");
    printf(", %d round%s per process, median [min-max]\n", rounds,
           rounds == 1 ? "" : "s");
    printf("%-11s %24s %24s %10s %10s %12s %8s %8s", "allocator", "alloc M/s", "free M/s",
           "free ms", "peak RSS", "minor flt", "wall s", "vs glibc");
    if (latency)
        printf(" %8s %8s %8s %10s %8s", "p50 ns", "p99 ns", "p99.9 ns", "max ns",
               "1st/rest");
    printf("\n");
    for (int i = 0; i < n; i++) {
        const result_t *r = &res[i];
        char a[64], f[64], ratio[32] = "-";

        if (strcmp(r->status, "ok") != 0) {
            printf("%-11s %s: %s\n", r->alloc->name, r->status, r->reason);
            continue;
        }
        snprintf(a, sizeof a, "%.1f [%.1f-%.1f]", r->alloc_rate.median / 1e6,
                 r->alloc_rate.min / 1e6, r->alloc_rate.max / 1e6);
        snprintf(f, sizeof f, "%.1f [%.1f-%.1f]", r->free_rate.median / 1e6,
                 r->free_rate.min / 1e6, r->free_rate.max / 1e6);
        if (base)
            snprintf(ratio, sizeof ratio, "%.2fx",
                     r->alloc_rate.median / base->alloc_rate.median);
        printf("%-11s %24s %24s %10.2f %7.0f MiB %12llu %8.2f %8s", r->alloc->name, a, f,
               r->free_s.median * 1e3, (double)r->peak_rss_bytes / (1 << 20),
               (unsigned long long)r->minor_faults, r->wall_s, ratio);
        if (latency)
            printf(" %8llu %8llu %8llu %10llu %7.2fx", (unsigned long long)r->p50_ns,
                   (unsigned long long)r->p99_ns, (unsigned long long)r->p999_ns,
                   (unsigned long long)r->max_ns, r->first_to_steady);
        printf("\n");
    }
    if (base)
        printf("(vs glibc: median allocation rate relative to glibc's in this run)\n");
    if (latency)
        printf(
            "(latencies: single malloc calls, clock included, medians over rounds, max "
            "over all; 1st/rest: round 1's time over the median of the others)\n");
}

static void json_stat3(mk_json *j, const char *key, const char *kmin, const char *kmax,
                       stat3_t s)
{
    mk_json_key(j, key);
    mk_json_double(j, s.median);
    mk_json_key(j, kmin);
    mk_json_double(j, s.min);
    mk_json_key(j, kmax);
    mk_json_double(j, s.max);
}

static void print_json(mk_json *j, const mk_workload *w, uint64_t scale, int rounds,
                       uint64_t size, uint64_t threads, const result_t *res, int n)
{
    mk_json_begin_object(j);
    mk_json_key(j, "workload");
    mk_json_string(j, w->name);
    mk_json_key(j, "scale");
    mk_json_uint(j, scale);
    if (size) {
        mk_json_key(j, "size");
        mk_json_uint(j, size);
        mk_json_key(j, "threads");
        mk_json_uint(j, threads);
    }
    mk_json_key(j, "rounds");
    mk_json_uint(j, (uint64_t)rounds);
    mk_json_key(j, "results");
    mk_json_begin_array(j);
    for (int i = 0; i < n; i++) {
        const result_t *r = &res[i];

        mk_json_begin_object(j);
        mk_json_key(j, "allocator");
        mk_json_string(j, r->alloc->name);
        mk_json_key(j, "status");
        mk_json_string(j, r->status);
        if (strcmp(r->status, "ok") == 0) {
            json_stat3(j, "alloc_rate", "alloc_rate_min", "alloc_rate_max",
                       r->alloc_rate);
            json_stat3(j, "free_rate", "free_rate_min", "free_rate_max", r->free_rate);
            json_stat3(j, "alloc_s", "alloc_s_min", "alloc_s_max", r->alloc_s);
            json_stat3(j, "free_s", "free_s_min", "free_s_max", r->free_s);
            mk_json_key(j, "peak_rss_bytes");
            mk_json_uint(j, r->peak_rss_bytes);
            mk_json_key(j, "minor_faults");
            mk_json_uint(j, r->minor_faults);
            mk_json_key(j, "wall_s");
            mk_json_double(j, r->wall_s);
            if (r->max_ns) {
                mk_json_key(j, "p50_ns");
                mk_json_uint(j, r->p50_ns);
                mk_json_key(j, "p99_ns");
                mk_json_uint(j, r->p99_ns);
                mk_json_key(j, "p999_ns");
                mk_json_uint(j, r->p999_ns);
                mk_json_key(j, "max_ns");
                mk_json_uint(j, r->max_ns);
            }
            if (r->first_to_steady > 0) {
                mk_json_key(j, "first_to_steady");
                mk_json_double(j, r->first_to_steady);
            }
        } else {
            mk_json_key(j, "reason");
            mk_json_string(j, r->reason);
        }
        mk_json_end_object(j);
    }
    mk_json_end_array(j);
    mk_json_end_object(j);
}

/* ------------------------------------------------------------------------ */
/* options and driver                                                        */

static void print_list(void)
{
    printf("Workloads (memkit bench NAME):\n");
    for (int i = 0; mk_workloads[i]; i++)
        printf("  %-16s %s\n                   default %llu %s, --quick %llu\n",
               mk_workloads[i]->name, mk_workloads[i]->summary,
               (unsigned long long)mk_workloads[i]->default_scale,
               mk_workloads[i]->scale_unit,
               (unsigned long long)mk_workloads[i]->quick_scale);
    printf("Allocators (--allocators a,b,...):");
    for (size_t i = 0; i < N_ALLOCATORS; i++)
        if (!allocators[i].planned)
            printf(" %s", allocators[i].name);
    printf("\n");
}

static void bench_help(void)
{
    printf("usage: memkit bench [WORKLOAD...] [options]\n"
           "Runs allocator workloads, each allocator in its own process.\n\n"
           "  --list              describe the workloads and allocators\n"
           "  --allocators LIST   comma-separated allocators (default: all available)\n"
           "  --quick             tiny sizes (a fraction of a second), for tests\n"
           "  --scale N           workload size (k/M/G suffixes allowed)\n"
           "  --rounds N          rounds per process (default 3; realtime 10)\n"
           "  --json              one JSON object per workload on stdout\n"
           "  --size N, --threads N  malloc-free: one block size and thread count\n"
           "                      (default: sizes 32-256 x threads 1..cores)\n"
           "  --default-policy    libmemkit allocators keep their default memory policy\n"
           "                      (by default the workloads let them keep freed memory\n"
           "                      between rounds, as malloc does)\n");
}

static int select_allocators(options_t *o, char *list)
{
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        size_t i;

        for (i = 0; i < N_ALLOCATORS; i++)
            if (strcmp(allocators[i].name, tok) == 0)
                break;
        if (i == N_ALLOCATORS)
            return mk_usage_error("bench: unknown allocator '%s' (memkit bench --list "
                                  "shows them)",
                                  tok);
        if (allocators[i].planned)
            return mk_usage_error("bench: allocator '%s' is not built yet (%s)", tok,
                                  allocators[i].planned);
        o->want[i] = true;
    }
    return MK_EXIT_OK;
}

static int parse_options(int argc, char **argv, options_t *o)
{
    static const struct option longopts[] = {
        {"list", no_argument, NULL, 'l'},
        {"quick", no_argument, NULL, 'q'},
        {"json", no_argument, NULL, 'j'},
        {"scale", required_argument, NULL, 's'},
        {"rounds", required_argument, NULL, 'r'},
        {"allocators", required_argument, NULL, 'a'},
        {"default-policy", no_argument, NULL, 'd'},
        {"size", required_argument, NULL, 'S'},
        {"threads", required_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool any = false;
    int c, rc;

    o->rounds = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'l':
            o->list = true;
            break;
        case 'q':
            o->quick = true;
            break;
        case 'j':
            o->json = true;
            break;
        case 'd':
            o->default_policy = true;
            break;
        case 's':
            if (!mk_parse_count(optarg, &o->scale) || o->scale == 0)
                return mk_usage_error("bench: --scale needs a positive number, not '%s'",
                                      optarg);
            break;
        case 'r':
            o->rounds = atoi(optarg);
            if (o->rounds < 1 || o->rounds > MAX_ROUNDS)
                return mk_usage_error("bench: --rounds must be 1..%d", MAX_ROUNDS);
            break;
        case 'S':
        case 'T': {
            uint64_t *v = c == 'S' ? &o->size : &o->threads;
            if (!mk_parse_count(optarg, v) || *v == 0 || *v > (c == 'S' ? 1u << 30 : 64))
                return mk_usage_error("bench: --%s needs a number (%s), not '%s'",
                                      c == 'S' ? "size" : "threads",
                                      c == 'S' ? "bytes" : "1-64", optarg);
            break;
        }
        case 'a':
            if ((rc = select_allocators(o, optarg)) != MK_EXIT_OK)
                return rc;
            any = true;
            break;
        case 'h':
            bench_help();
            exit(MK_EXIT_OK);
        default:
            return MK_EXIT_USAGE;
        }
    }
    if (!any)
        for (size_t i = 0; i < N_ALLOCATORS; i++)
            o->want[i] = !allocators[i].planned;
    return MK_EXIT_OK;
}

static int bench_config(const mk_workload *w, const options_t *o, uint64_t size,
                        uint64_t threads)
{
    uint64_t scale = o->scale ? o->scale : o->quick ? w->quick_scale : w->default_scale;
    int rounds = o->rounds ? o->rounds : w->default_rounds ? w->default_rounds : 3;
    bool tty = isatty(STDERR_FILENO);
    result_t res[N_ALLOCATORS];
    int n = 0, total = 0, failed = 0;

    for (size_t i = 0; i < N_ALLOCATORS; i++)
        total += o->want[i];
    for (size_t i = 0; i < N_ALLOCATORS; i++) {
        if (!o->want[i])
            continue;
        if (tty)
            fprintf(stderr, "\rmemkit bench %s: %s (%d/%d)...        ", w->name,
                    allocators[i].name, n + 1, total);
        run_one(w, &allocators[i], scale, rounds, &res[n]);
        failed += strcmp(res[n].status, "failed") == 0;
        n++;
    }
    if (tty)
        fprintf(stderr, "\r%60s\r", "");
    if (o->json) {
        mk_json j = {.out = stdout};

        print_json(&j, w, scale, rounds, size, threads, res, n);
    } else {
        print_table(w, scale, rounds, size, threads, res, n);
    }
    return failed ? MK_EXIT_FAIL : MK_EXIT_OK;
}

/* Runs a workload; malloc-free once per (size, threads), the others once.
 * The configuration reaches the children through the environment. */
static int bench_workload(const mk_workload *w, const options_t *o)
{
    if (strcmp(w->name, "malloc-free") != 0)
        return bench_config(w, o, 0, 0);
    static const uint64_t sizes[] = {32, 64, 128, 256};
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    uint64_t tmax = o->threads ? o->threads : (uint64_t)(cores > 0 ? cores : 1);
    int worst = MK_EXIT_OK, first = 1;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        uint64_t size = o->size ? o->size : sizes[k];
        for (uint64_t t = o->threads ? o->threads : 1; t <= tmax; t++) {
            char sb[32], tb[32];
            snprintf(sb, sizeof sb, "%llu", (unsigned long long)size);
            snprintf(tb, sizeof tb, "%llu", (unsigned long long)t);
            setenv("MEMKIT_BENCH_SIZE", sb, 1);
            setenv("MEMKIT_BENCH_THREADS", tb, 1);
            if (!first && !o->json)
                printf("\n");
            first = 0;
            int rc = bench_config(w, o, size, t);
            if (rc > worst)
                worst = rc;
        }
        if (o->size)
            break;
    }
    unsetenv("MEMKIT_BENCH_SIZE");
    unsetenv("MEMKIT_BENCH_THREADS");
    return worst;
}

int mk_cmd_bench(int argc, char **argv)
{
    options_t o = {0};
    const mk_workload *chosen[16];
    int nchosen = 0, rc, worst = MK_EXIT_OK;

    if (argc >= 2 && strcmp(argv[1], "--child") == 0)
        return bench_child(argc - 2, argv + 2);
    if ((rc = parse_options(argc, argv, &o)) != MK_EXIT_OK)
        return rc;
    /* Read by the workloads in the child processes. */
    if (o.default_policy)
        setenv("MEMKIT_BENCH_DEFAULT_POLICY", "1", 1);
    else
        unsetenv("MEMKIT_BENCH_DEFAULT_POLICY");
    if (o.list) {
        print_list();
        return MK_EXIT_OK;
    }
    for (int i = optind; i < argc; i++) {
        const mk_workload *w = mk_workload_find(argv[i]);

        if (!w)
            return mk_usage_error("bench: unknown workload '%s' (memkit bench --list "
                                  "shows them)",
                                  argv[i]);
        if (nchosen < 16)
            chosen[nchosen++] = w;
    }
    if (nchosen == 0)
        for (int i = 0; mk_workloads[i] && nchosen < 16; i++)
            chosen[nchosen++] = mk_workloads[i];
    for (int i = 0; i < nchosen; i++) {
        rc = bench_workload(chosen[i], &o);
        if (rc > worst)
            worst = rc;
    }
    return worst;
}
