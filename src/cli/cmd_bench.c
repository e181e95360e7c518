/*
 * cmd_bench.c - `memkit bench`: runs workloads under each allocator, each
 * (workload, allocator) pair in a fresh child process (bench_run.c), and prints
 * a table, JSON or an HTML page (bench_output.c).
 *
 * The whole run is planned first: one configuration per workload (malloc-free:
 * one per block size and thread count), so the progress line can count the runs
 * and estimate the time left from the ones already done.
 */
#include "bench.h"
#include "opts.h"
#include "outfile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct options {
    bool quick, json, list, default_policy;
    uint64_t scale;   /* 0: the workload's default */
    uint64_t idle_ms; /* burst-idle's idle period; 0: 2 s (--quick: 100 ms) */
    int rounds;       /* 0: each workload's default */
    uint64_t size;    /* malloc-free: block size; 0: sweep 32..256 */
    uint64_t threads; /* malloc-free: threads; 0: sweep 1..cores */
    const char *html; /* --html FILE, or NULL */
    bool want[16];
    bool any_allocator;     /* --allocators given */
    const char **workloads; /* the WORKLOAD arguments */
    int nworkloads;
} options_t;

/* ------------------------------------------------------------------------ */
/* the plan                                                                  */

/* Appends one configuration of w; false when out of memory. */
static bool plan_add(mk_bench_config **c, int *n, int *cap, const mk_workload *w,
                     const options_t *o, uint64_t size, uint64_t threads)
{
    if (*n == *cap) {
        int ncap = *cap ? 2 * *cap : 16;
        mk_bench_config *nc = realloc(*c, (size_t)ncap * sizeof **c);

        if (!nc)
            return false;
        *c = nc;
        *cap = ncap;
    }
    mk_bench_config *k = &(*c)[(*n)++];
    memset(k, 0, sizeof *k);
    k->w = w;
    k->scale = o->scale ? o->scale : o->quick ? w->quick_scale : w->default_scale;
    k->rounds = o->rounds ? o->rounds : w->default_rounds ? w->default_rounds : 3;
    k->size = size;
    k->threads = threads;
    return true;
}

/* One configuration per workload; malloc-free one per (size, threads): the
 * book's sizes 32..256 by threads 1..cores unless --size/--threads fix them. */
static bool plan_workload(mk_bench_config **c, int *n, int *cap, const mk_workload *w,
                          const options_t *o)
{
    static const uint64_t sizes[] = {32, 64, 128, 256};
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    uint64_t tmax = o->threads ? o->threads : (uint64_t)(cores > 0 ? cores : 1);

    if (strcmp(w->name, "malloc-free") != 0)
        return plan_add(c, n, cap, w, o, 0, 0);
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        uint64_t size = o->size ? o->size : sizes[k];

        for (uint64_t t = o->threads ? o->threads : 1; t <= tmax; t++)
            if (!plan_add(c, n, cap, w, o, size, t))
                return false;
        if (o->size)
            break;
    }
    return true;
}

/* ------------------------------------------------------------------------ */
/* the progress line (stderr, only on a terminal)                            */

typedef struct progress {
    bool on;
    int done, total; /* runs that start a child process */
} progress_t;

/* The expected wall time of the runs left, from the finished runs of the same
 * workload, or of any workload before the first of this one finishes; a
 * negative value when nothing has finished yet. */
static double time_left(const mk_bench_config *c, int nconf, int cur, int next_alloc)
{
    double any_sum = 0, left = 0;
    int any_n = 0;

    for (int k = 0; k < nconf; k++)
        for (int i = 0; i < c[k].n; i++)
            if (strcmp(c[k].res[i].status, "n/a") != 0 &&
                strcmp(c[k].res[i].status, "skipped") != 0)
                any_sum += c[k].res[i].wall_s, any_n++;
    if (any_n == 0)
        return -1;
    for (int k = cur; k < nconf; k++) {
        double sum = 0;
        int cnt = 0;

        for (int m = 0; m < nconf; m++)
            if (c[m].w == c[k].w)
                for (int i = 0; i < c[m].n; i++)
                    if (strcmp(c[m].res[i].status, "ok") == 0)
                        sum += c[m].res[i].wall_s, cnt++;
        double each = cnt ? sum / cnt : any_sum / any_n;
        for (size_t i = k == cur ? (size_t)next_alloc : 0; i < mk_bench_n_allocators; i++)
            if (c[k].runs[i])
                left += each;
    }
    return left;
}

static void progress_show(progress_t *p, const mk_bench_config *c, int nconf, int cur,
                          size_t alloc)
{
    char eta[48] = "";
    double left;

    if (!p->on)
        return;
    if ((left = time_left(c, nconf, cur, (int)alloc)) >= 0) {
        unsigned s = (unsigned)(left + 0.5);
        if (s >= 60)
            snprintf(eta, sizeof eta, ", about %um%02us left", s / 60, s % 60);
        else if (s == 0)
            snprintf(eta, sizeof eta, ", under 1s left");
        else
            snprintf(eta, sizeof eta, ", about %us left", s);
    }
    fprintf(stderr, "\r\033[Kmemkit bench %s: %s (run %d of %d%s)", c[cur].w->name,
            mk_bench_allocators[alloc].name, p->done + 1, p->total, eta);
    fflush(stderr);
}

static void progress_clear(const progress_t *p)
{
    if (p->on)
        fprintf(stderr, "\r\033[K");
}

/* ------------------------------------------------------------------------ */
/* running the plan                                                          */

/* The malloc-free configuration reaches the children through the environment. */
static void export_config(const mk_bench_config *c)
{
    char v[32];

    if (!c->size) {
        unsetenv("MEMKIT_BENCH_SIZE");
        unsetenv("MEMKIT_BENCH_THREADS");
        return;
    }
    snprintf(v, sizeof v, "%llu", (unsigned long long)c->size);
    setenv("MEMKIT_BENCH_SIZE", v, 1);
    snprintf(v, sizeof v, "%llu", (unsigned long long)c->threads);
    setenv("MEMKIT_BENCH_THREADS", v, 1);
}

/* Runs every configuration, printing each as it finishes; MK_EXIT_FAIL if a
 * run failed. */
static int run_plan(mk_bench_config *c, int nconf, const options_t *o)
{
    progress_t p = {.on = isatty(STDERR_FILENO)};
    int failed = 0;

    /* Which runs start a child, decided once per configuration with its own
     * environment (whether mk_pool fits malloc-free depends on its threads). */
    for (int k = 0; k < nconf; k++) {
        mk_bench_result scratch;

        export_config(&c[k]);
        for (size_t i = 0; i < mk_bench_n_allocators; i++) {
            c[k].runs[i] = o->want[i] && !mk_bench_unavailable(
                                             c[k].w, &mk_bench_allocators[i], &scratch);
            p.total += c[k].runs[i];
        }
    }
    for (int k = 0; k < nconf; k++) {
        export_config(&c[k]);
        for (size_t i = 0; i < mk_bench_n_allocators; i++) {
            const mk_bench_allocator *a = &mk_bench_allocators[i];
            mk_bench_result *r = &c[k].res[c[k].n];

            if (!o->want[i])
                continue;
            if (c[k].runs[i])
                progress_show(&p, c, nconf, k, i);
            mk_bench_run_one(c[k].w, a, c[k].scale, c[k].rounds, r);
            c[k].n++;
            p.done += c[k].runs[i];
            failed += strcmp(r->status, "failed") == 0;
        }
        progress_clear(&p);
        if (o->json) {
            mk_bench_print_json(&c[k], stdout);
        } else {
            if (k > 0)
                printf("\n");
            mk_bench_print_table(&c[k], stdout);
        }
        fflush(stdout);
    }
    export_config(&(mk_bench_config){0});
    return failed ? MK_EXIT_FAIL : MK_EXIT_OK;
}

/* ------------------------------------------------------------------------ */
/* options and driver                                                        */

/* True when name is a group of workloads (mk_workload.group). */
static bool is_group(const char *name)
{
    for (int i = 0; mk_workloads[i]; i++)
        if (mk_workloads[i]->group && strcmp(mk_workloads[i]->group, name) == 0)
            return true;
    return false;
}

static void print_workloads(const char *group)
{
    for (int i = 0; mk_workloads[i]; i++)
        if ((mk_workloads[i]->group == NULL) == (group == NULL))
            printf("  %-16s %s\n                   default %llu %s, --quick %llu\n",
                   mk_workloads[i]->name, mk_workloads[i]->summary,
                   (unsigned long long)mk_workloads[i]->default_scale,
                   mk_workloads[i]->scale_unit,
                   (unsigned long long)mk_workloads[i]->quick_scale);
}

static void print_list(void)
{
    printf("Workloads (memkit bench NAME; no name runs them all):\n");
    print_workloads(NULL);
    printf("Patterns (memkit bench patterns, or one by name): the shapes of real\n"
           "programs, every allocator in its default configuration, timed whole:\n");
    print_workloads("patterns");
    printf("Allocators (--allocators a,b,...):");
    for (size_t i = 0; i < mk_bench_n_allocators; i++)
        if (!mk_bench_allocators[i].planned)
            printf(" %s", mk_bench_allocators[i].name);
    printf("\n");
}

static int select_allocators(options_t *o, char *list)
{
    if (strspn(list, ", ") == strlen(list)) /* "," would otherwise select all */
        return mk_usage_error("bench: --allocators names no allocator in '%s' (memkit "
                              "bench --list shows them)",
                              list);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        size_t i;

        for (i = 0; i < mk_bench_n_allocators; i++)
            if (strcmp(mk_bench_allocators[i].name, tok) == 0)
                break;
        if (i == mk_bench_n_allocators)
            return mk_usage_error("bench: unknown allocator '%s' (memkit bench --list "
                                  "shows them)",
                                  tok);
        if (mk_bench_allocators[i].planned)
            return mk_usage_error("bench: allocator '%s' is not built yet (%s)", tok,
                                  mk_bench_allocators[i].planned);
        o->want[i] = true;
    }
    return MK_EXIT_OK;
}

static int set_allocators(void *dest, const mk_opt_t *opt, const char *v)
{
    options_t *o = dest;
    char *list = strdup(v);
    (void)opt;
    if (!list)
        return mk_usage_error("bench: out of memory");
    int rc = select_allocators(o, list);
    free(list);
    o->any_allocator = true;
    return rc == MK_EXIT_OK ? -1 : rc;
}

#define BENCH(field) offsetof(options_t, field)

static const mk_opt_t bench_options[] = {
    {.name = "--list",
     .kind = MK_OPT_FLAG,
     .at = BENCH(list),
     .help = "describe the workloads and allocators"},
    {.name = "--allocators",
     .arg = "LIST",
     .kind = MK_OPT_CALL,
     .call = set_allocators,
     .help = "comma-separated allocators (default: all available)"},
    {.name = "--quick",
     .kind = MK_OPT_FLAG,
     .at = BENCH(quick),
     .help = "tiny sizes (a fraction of a second), for tests"},
    {.name = "--scale",
     .arg = "N",
     .kind = MK_OPT_COUNT,
     .at = BENCH(scale),
     .lo = 1,
     .help = "workload size (k/M/G suffixes allowed)"},
    {.name = "--rounds",
     .arg = "N",
     .kind = MK_OPT_INT,
     .at = BENCH(rounds),
     .lo = 1,
     .hi = MK_BENCH_MAX_ROUNDS,
     .help = "rounds per process (default 3; realtime 10)"},
    {.name = "--json",
     .kind = MK_OPT_FLAG,
     .at = BENCH(json),
     .help = "one JSON object per configuration on stdout\n"
             "(schema: docs/bench-json.md)"},
    {.name = "--html",
     .arg = "FILE",
     .kind = MK_OPT_STRING,
     .at = BENCH(html),
     .help = "also write one self-contained page with bar charts"},
    {.name = "--size",
     .arg = "N",
     .kind = MK_OPT_COUNT,
     .at = BENCH(size),
     .lo = 1,
     .hi = 1 << 30,
     .help = "malloc-free: one block size (default: sizes 32-256)"},
    {.name = "--threads",
     .arg = "N",
     .kind = MK_OPT_COUNT,
     .at = BENCH(threads),
     .lo = 1,
     .hi = 64,
     .help = "malloc-free: one thread count (default: 1..cores)"},
    {.name = "--idle",
     .arg = "MS",
     .kind = MK_OPT_COUNT,
     .at = BENCH(idle_ms),
     .lo = 1,
     .hi = 600000,
     .help = "burst-idle: idle period before the RSS is read\n"
             "(default 2000; with --quick 100)"},
    {.name = "--default-policy",
     .kind = MK_OPT_FLAG,
     .at = BENCH(default_policy),
     .help = "list, cxx-vector: libmemkit allocators keep their default\n"
             "retention (by default these workloads keep all freed\n"
             "memory between rounds, as malloc does; patterns always\n"
             "run the defaults)"},
};

static const mk_command_spec_t bench_spec = {
    .name = "bench",
    .synopsis = "memkit bench [WORKLOAD...|patterns] [options]",
    .about = "Runs allocator workloads, each allocator in its own process.\n",
    .max_args = 64,
};

static int parse_options(int argc, char **argv, options_t *o)
{
    mk_opt_table_t table = MK_OPT_TABLE(bench_options, o);
    int rc = mk_opts_parse(&bench_spec, &table, 1, argc, argv, (char **)o->workloads,
                           &o->nworkloads);
    if (rc >= 0)
        return rc == MK_EXIT_OK ? -2 : rc; /* --help printed: done */
    if (!o->any_allocator)
        for (size_t i = 0; i < mk_bench_n_allocators; i++)
            o->want[i] = !mk_bench_allocators[i].planned;
    return MK_EXIT_OK;
}

/* Writes the page after the run; its file was opened before, so a bad path
 * fails before minutes of benchmarking, not after. */
static int write_html(mk_outfile_t *page, const mk_bench_config *c, int n)
{
    bool ok = mk_bench_write_html(c, n, page->f);

    if (!mk_outfile_close(page, ok))
        return MK_EXIT_FAIL;
    fprintf(stderr, "memkit: bench: wrote %s\n", page->path);
    return MK_EXIT_OK;
}

int mk_cmd_bench(int argc, char **argv)
{
    options_t o = {0};
    mk_bench_config *plan = NULL;
    int nplan = 0, cap = 0, rc, rc_html;

    if (argc >= 2 && strcmp(argv[1], "--child") == 0)
        return mk_bench_child(argc - 2, argv + 2);
    const char *workloads[64];
    o.workloads = workloads;
    if ((rc = parse_options(argc, argv, &o)) != MK_EXIT_OK)
        return rc == -2 ? MK_EXIT_OK : rc;
    /* Read by the workloads in the child processes. */
    if (o.default_policy)
        setenv("MEMKIT_BENCH_DEFAULT_POLICY", "1", 1);
    else
        unsetenv("MEMKIT_BENCH_DEFAULT_POLICY");
    char idle[24];
    snprintf(idle, sizeof idle, "%llu",
             (unsigned long long)(o.idle_ms ? o.idle_ms
                                  : o.quick ? 100
                                            : 2000));
    setenv("MEMKIT_BENCH_IDLE_MS", idle, 1);
    if (o.list) {
        print_list();
        return MK_EXIT_OK;
    }
    for (int i = 0; i < o.nworkloads; i++)
        if (!mk_workload_find(o.workloads[i]) && !is_group(o.workloads[i]))
            return mk_usage_error("bench: unknown workload '%s' (memkit bench --list "
                                  "shows them)",
                                  o.workloads[i]);
    bool planned = true;
    if (o.nworkloads == 0) /* no names: every workload outside a group */
        for (int i = 0; mk_workloads[i]; i++)
            if (!mk_workloads[i]->group)
                planned &= plan_workload(&plan, &nplan, &cap, mk_workloads[i], &o);
    for (int i = 0; i < o.nworkloads; i++) {
        const mk_workload *w = mk_workload_find(o.workloads[i]);

        if (w) {
            planned &= plan_workload(&plan, &nplan, &cap, w, &o);
            continue;
        }
        for (int k = 0; mk_workloads[k]; k++) /* a group: each of its workloads */
            if (mk_workloads[k]->group &&
                strcmp(mk_workloads[k]->group, o.workloads[i]) == 0)
                planned &= plan_workload(&plan, &nplan, &cap, mk_workloads[k], &o);
    }
    if (!planned) {
        free(plan);
        return mk_usage_error("bench: out of memory planning the runs");
    }
    mk_outfile_t page = {0};
    if (o.html && !mk_outfile_open(&page, o.html)) {
        free(plan);
        return MK_EXIT_USAGE;
    }
    rc = run_plan(plan, nplan, &o);
    if (o.html && (rc_html = write_html(&page, plan, nplan)) > rc)
        rc = rc_html;
    free(plan);
    return rc;
}
