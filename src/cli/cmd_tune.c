/*
 * cmd_tune.c - `memkit tune [OPTIONS] -- CMD [ARGS...]`: run the user's own
 * program under each candidate allocator and glibc setting, and recommend one.
 *
 * A candidate is a set of environment variables (GLIBC_TUNABLES for glibc's
 * presets, LD_PRELOAD for the drop-in allocators, anything for --candidate).
 * Every candidate runs once to warm up (and to be disqualified early if it
 * fails), then --runs times, round-robin with a rotating start so drift of the
 * machine hits every candidate alike. A candidate beats glibc's default only
 * when the exact Mann-Whitney test says its runs are faster (or leaner) than
 * the default's beyond what chance gives (p <= 0.05); with 5 runs each that
 * takes at least 4 of the 5 runs clearly ahead.
 */
#define _GNU_SOURCE
#include "tune.h"
#include "opts.h"
#include "workload.h" /* mk_bench_now: the monotonic clock in seconds */

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

/* The built-in candidates (tune.h), memkit replay's allocators too. glibc
 * must stay first: it is the baseline. */

const mk_alloc_preset mk_alloc_presets[] = {
    {"glibc", NULL, NULL, NULL, "glibc's malloc as the program gets it"},
    {"glibc-realtime",
     "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold="
     "18446744073709551615",
     NULL, NULL,
     "blocks up to 32 MiB come from the heap, never from mmap, and the heap is never "
     "trimmed: no mmap/munmap/brk churn or page faults in a steady loop; costs memory "
     "that stays mapped after a peak"},
    {"glibc-lean", "glibc.malloc.arena_max=2:glibc.malloc.trim_threshold=131072", NULL,
     NULL,
     "at most 2 arenas (not 8 per core) and a fixed 128 KiB trim threshold: freed memory "
     "goes back to the system; least RSS for many-threaded servers, at the cost of lock "
     "contention and more brk/munmap calls"},
    {"glibc-throughput", "glibc.malloc.tcache_count=256", NULL, NULL,
     "each thread caches up to 256 freed blocks per size class (default 7) without "
     "taking a lock: faster bursts of malloc/free, at the cost of memory held in the "
     "caches (up to 256 blocks of each size up to 1032 bytes per thread)"},
    {"jemalloc", NULL, "libjemalloc.so.2", "libjemalloc2", "jemalloc through LD_PRELOAD"},
    {"tcmalloc", NULL, "libtcmalloc_minimal.so.4", "libtcmalloc-minimal4",
     "tcmalloc (gperftools, minimal) through LD_PRELOAD"},
    {"mimalloc", NULL, "libmimalloc.so.2", "libmimalloc2.0",
     "mimalloc through LD_PRELOAD"},
    {"mk_tlsf", NULL, "libmemkit-tlsf.so", NULL,
     "libmemkit's TLSF through LD_PRELOAD: every call a bounded number of steps, one "
     "heap for the process (locked once it has threads)"},
};
const size_t mk_n_alloc_presets = sizeof mk_alloc_presets / sizeof mk_alloc_presets[0];
#define N_PRESETS (sizeof mk_alloc_presets / sizeof mk_alloc_presets[0])

/* A preset's drop-in library: a system one, or memkit's own. */
static const char *preset_library(const mk_alloc_preset *p, char *lib, size_t len)
{
    return p->package ? mk_find_library(p->soname, lib, len)
                      : mk_find_own_library(p->soname, lib, len);
}

static void list_presets(FILE *out)
{
    char lib[512];

    for (size_t i = 0; i < N_PRESETS; i++) {
        const mk_alloc_preset *p = &mk_alloc_presets[i];

        fprintf(out, "%-17s %s\n", p->name, p->about);
        if (p->tunables)
            fprintf(out, "%-17s GLIBC_TUNABLES=%s\n", "", p->tunables);
        else if (p->soname && preset_library(p, lib, sizeof lib))
            fprintf(out, "%-17s LD_PRELOAD=%s\n", "", lib);
        else if (p->soname && p->package)
            fprintf(out, "%-17s not installed: apt-get install %s\n", "", p->package);
        else if (p->soname)
            fprintf(out, "%-17s not found beside memkit (make build)\n", "");
    }
}

/* ------------------------------------------------------------------------ */
/* candidates                                                                */

typedef struct tune_state {
    mk_tune_opts o;
    mk_tune_candidate *c;
    int n;
    bool want[N_PRESETS];
    bool any_chosen;
    const char *extra[MK_TUNE_MAX_CANDIDATES]; /* --candidate values */
    int nextra;
} tune_state_t;

static bool valid_name(const char *s, size_t len, size_t cap)
{
    if (len == 0 || len >= cap)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("-_.+", s[i]))
            return false;
    return true;
}

static bool valid_assignment(const char *s)
{
    const char *eq = strchr(s, '=');

    if (!eq || eq == s || isdigit((unsigned char)s[0]))
        return false;
    for (const char *p = s; p < eq; p++)
        if (!isalnum((unsigned char)*p) && *p != '_')
            return false;
    return true;
}

/* "NAME=VAR=VALUE VAR=VALUE": the name, then assignments split at blanks. */
int mk_alloc_spec_parse(const char *opt, const char *spec, char *name, size_t name_cap,
                        char **env, int max)
{
    const char *eq = strchr(spec, '=');
    char *rest, *tok, *save = NULL;
    int n = 0;

    if (!eq || !valid_name(spec, (size_t)(eq - spec), name_cap))
        return mk_usage_error("%s wants NAME=VAR=VALUE[ VAR=VALUE...] with a name of "
                              "letters, digits and -_.+, not '%s'",
                              opt, spec);
    memcpy(name, spec, (size_t)(eq - spec));
    name[eq - spec] = 0;
    rest = strdup(eq + 1);
    if (!rest)
        return mk_usage_error("%s: out of memory", opt);
    for (tok = strtok_r(rest, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
        if (!valid_assignment(tok) || n == max || !(env[n] = strdup(tok))) {
            int rc = n == max
                         ? mk_usage_error("%s %s: more than %d variables", opt, name, max)
                     : valid_assignment(tok)
                         ? mk_usage_error("%s: out of memory", opt)
                         : mk_usage_error("%s %s: '%s' is not VAR=VALUE", opt, name, tok);
            free(rest);
            return rc;
        }
        n++;
    }
    free(rest);
    if (n == 0)
        return mk_usage_error("%s %s: no VAR=VALUE given", opt, name);
    return -1;
}

static int parse_extra(const char *spec, mk_tune_candidate *c)
{
    int rc = mk_alloc_spec_parse("--candidate", spec, c->name, sizeof c->name, c->env,
                                 MK_TUNE_MAX_ENV);

    c->about = "given with --candidate";
    return rc;
}

/* A candidate's value for VAR joins the user's own where both make sense:
 * our library goes first in LD_PRELOAD, our tunables last in GLIBC_TUNABLES
 * (the later setting of a tunable wins). Anything else replaces. */
static char *merge_var(const char *ours, const char *theirs)
{
    size_t name_len = (size_t)(strchr(ours, '=') - ours);
    const char *ov = ours + name_len + 1, *tv = theirs + name_len + 1;
    char *out = NULL;
    int rc = -1;

    if (!*tv)
        return strdup(ours);
    if (strncmp(ours, "LD_PRELOAD=", 11) == 0)
        rc = asprintf(&out, "LD_PRELOAD=%s:%s", ov, tv);
    else if (strncmp(ours, "GLIBC_TUNABLES=", 15) == 0)
        rc = asprintf(&out, "GLIBC_TUNABLES=%s:%s", tv, ov);
    else
        return strdup(ours);
    return rc < 0 ? NULL : out;
}

/* The environment of c's runs: ours, with c's variables set. */
static bool build_envp(mk_tune_candidate *c)
{
    size_t n = 0, k = 0;

    while (environ[n])
        n++;
    c->envp = calloc(n + MK_TUNE_MAX_ENV + 1, sizeof *c->envp);
    if (!c->envp)
        return false;
    for (size_t i = 0; i < n; i++)
        c->envp[k++] = environ[i];
    for (int e = 0; c->env[e]; e++) {
        size_t name_len = (size_t)(strchr(c->env[e], '=') - c->env[e]);
        size_t j;

        for (j = 0; j < k; j++)
            if (strncmp(c->envp[j], c->env[e], name_len + 1) == 0)
                break;
        if (j < k) {
            c->merged[e] = merge_var(c->env[e], c->envp[j]);
            c->envp[j] = c->merged[e];
        } else {
            c->envp[j] = c->env[e];
        }
        if (!c->envp[j])
            return false;
        k += j == k;
    }
    return true;
}

/* The candidates in their order: the built-in ones chosen, then --candidate's.
 * Missing libraries and unusable ones are listed with the reason, not run. */
const char *mk_alloc_preset_env(const mk_alloc_preset *p, char **env, char *reason,
                                size_t len)
{
    char lib[512];

    *env = NULL;
    if (p->tunables && asprintf(env, "GLIBC_TUNABLES=%s", p->tunables) < 0)
        return NULL;
    if (!p->soname)
        return "ok";
    if (!preset_library(p, lib, sizeof lib)) {
        if (p->package)
            snprintf(reason, len, "not installed: apt-get install %s", p->package);
        else
            snprintf(reason, len, "not found beside memkit: build it (make build)");
        return "missing";
    }
    return asprintf(env, "LD_PRELOAD=%s", lib) < 0 ? NULL : "ok";
}

static int make_candidates(tune_state_t *st, mk_program_kind kind)
{
    st->c = calloc(N_PRESETS + (size_t)st->nextra, sizeof *st->c);
    if (!st->c)
        return mk_usage_error("tune: out of memory");
    for (size_t i = 0; i < N_PRESETS; i++) {
        const mk_alloc_preset *p = &mk_alloc_presets[i];
        mk_tune_candidate *c = &st->c[st->n];

        if (i > 0 && st->any_chosen && !st->want[i])
            continue;
        st->n++;
        snprintf(c->name, sizeof c->name, "%s", p->name);
        c->about = p->about;
        c->status = "ok";
        if (p->soname && kind == MK_PROGRAM_STATIC) {
            c->status = "n/a";
            snprintf(c->reason, sizeof c->reason,
                     "the program is statically linked: LD_PRELOAD cannot replace its "
                     "malloc");
        } else if (!(c->status = mk_alloc_preset_env(p, &c->env[0], c->reason,
                                                     sizeof c->reason))) {
            return mk_usage_error("tune: out of memory");
        }
    }
    for (int i = 0; i < st->nextra; i++) {
        mk_tune_candidate *c = &st->c[st->n];
        int rc = parse_extra(st->extra[i], c);

        if (rc >= 0)
            return rc;
        for (int j = 0; j < st->n; j++)
            if (strcmp(st->c[j].name, c->name) == 0)
                return mk_usage_error("--candidate %s: that name is taken", c->name);
        c->status = "ok";
        st->n++;
    }
    for (int i = 0; i < st->n; i++)
        if (strcmp(st->c[i].status, "ok") == 0 && !build_envp(&st->c[i]))
            return mk_usage_error("tune: out of memory");
    return -1;
}

static void free_candidates(tune_state_t *st)
{
    /* every slot: a --candidate that failed to parse may hold strings too */
    for (int i = 0; st->c && i < (int)N_PRESETS + st->nextra; i++) {
        mk_tune_candidate *c = &st->c[i];

        for (int e = 0; e < MK_TUNE_MAX_ENV; e++) {
            free(c->env[e]);
            free(c->merged[e]);
        }
        free(c->envp);
    }
    free(st->c);
}

/* ------------------------------------------------------------------------ */
/* options                                                                   */

int mk_alloc_presets_choose(const char *list, bool *want, const char *what)
{
    char *copy = strdup(list), *save = NULL;

    if (!copy)
        return mk_usage_error("out of memory");
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        size_t i;

        for (i = 0; i < N_PRESETS && strcmp(mk_alloc_presets[i].name, t) != 0; i++)
            ;
        if (i == N_PRESETS) {
            int rc = mk_usage_error("%s '%s' (memkit tune --list)", what, t);
            free(copy);
            return rc;
        }
        want[i] = true;
    }
    free(copy);
    return -1;
}

static int choose_presets(tune_state_t *st, const char *list)
{
    int rc = mk_alloc_presets_choose(list, st->want, "tune: unknown candidate");

    st->any_chosen = true;
    return rc;
}

static int set_list(void *dest, const mk_opt_t *opt, const char *v)
{
    (void)dest, (void)opt, (void)v;
    list_presets(stdout);
    return MK_EXIT_OK;
}

static int set_candidates(void *dest, const mk_opt_t *opt, const char *v)
{
    (void)opt;
    return choose_presets(dest, v);
}

static int add_candidate(void *dest, const mk_opt_t *opt, const char *v)
{
    tune_state_t *st = dest;
    (void)opt;
    if (st->nextra == MK_TUNE_MAX_CANDIDATES - (int)N_PRESETS)
        return mk_usage_error("tune: too many --candidate options");
    st->extra[st->nextra++] = v;
    return -1;
}

static int set_input(void *dest, const mk_opt_t *opt, const char *v)
{
    tune_state_t *st = dest;
    (void)opt;
    st->o.input = v;
    if (access(v, R_OK) != 0)
        return mk_usage_error("tune: cannot read --input %s: %s", v, strerror(errno));
    return -1;
}

#define TUNE(field) offsetof(tune_state_t, field)

static const mk_opt_t tune_options[] = {
    {.name = "--runs",
     .arg = "N",
     .kind = MK_OPT_INT,
     .at = TUNE(o.runs),
     .lo = 1,
     .hi = MK_TUNE_MAX_RUNS,
     .help = "measured runs per candidate (default 5)"},
    {.name = "--candidates",
     .arg = "LIST",
     .kind = MK_OPT_CALL,
     .call = set_candidates,
     .help = "built-in candidates to try, comma-separated (default all;\n"
             "glibc always runs: it is the baseline)"},
    {.name = "--candidate",
     .arg = "NAME=ENV",
     .kind = MK_OPT_CALL,
     .call = add_candidate,
     .help = "one more candidate: NAME=VAR=VALUE[ VAR=VALUE...] (repeatable)"},
    {.name = "--check-output",
     .kind = MK_OPT_FLAG,
     .at = TUNE(o.check_output),
     .help = "disqualify a candidate whose stdout differs from glibc's"},
    {.name = "--input",
     .arg = "FILE",
     .kind = MK_OPT_CALL,
     .call = set_input,
     .help = "every run reads FILE as its stdin"},
    {.name = "--timeout",
     .arg = "SECONDS",
     .kind = MK_OPT_SECONDS,
     .at = TUNE(o.timeout_s),
     .hi = 1000000,
     .help = "a run taking longer is killed; its candidate fails"},
    {.name = "--json",
     .kind = MK_OPT_FLAG,
     .at = TUNE(o.json),
     .help = "JSON on stdout (docs/tune-json.md) instead of the table"},
    {.name = "--list",
     .kind = MK_OPT_CALL,
     .call = set_list,
     .help = "the built-in candidates and what they change"},
};

static const mk_command_spec_t tune_spec = {
    .name = "tune",
    .synopsis = "memkit tune [OPTIONS] -- CMD [ARGS...]",
    .about =
        "Runs CMD under each candidate allocator and glibc setting, interleaved, and\n"
        "recommends the fastest and the leanest that beat glibc's default beyond noise.\n"
        "CMD's stdout and stderr are not shown; its stdin is /dev/null (or --input).\n",
    .command_follows = true,
};

static int parse_opts(int argc, char **argv, tune_state_t *st)
{
    mk_opt_table_t table = MK_OPT_TABLE(tune_options, st);
    int first;
    int rc = mk_opts_parse(&tune_spec, &table, 1, argc, argv, NULL, &first);
    if (rc >= 0)
        return rc;
    st->o.cmd = argv + first;
    return -1;
}

/* ------------------------------------------------------------------------ */
/* statistics                                                                */

static void conclude_one(mk_tune_candidate *c, const mk_tune_candidate *base)
{
    double wall[MK_TUNE_MAX_RUNS], user[MK_TUNE_MAX_RUNS], sys[MK_TUNE_MAX_RUNS],
        rss[MK_TUNE_MAX_RUNS], minf[MK_TUNE_MAX_RUNS], majf[MK_TUNE_MAX_RUNS];
    double bwall[MK_TUNE_MAX_RUNS], brss[MK_TUNE_MAX_RUNS];

    for (int i = 0; i < c->nruns; i++) {
        wall[i] = c->s[i].wall_s;
        user[i] = c->s[i].user_s;
        sys[i] = c->s[i].sys_s;
        rss[i] = (double)c->s[i].peak_rss_bytes;
        minf[i] = (double)c->s[i].minor_faults;
        majf[i] = (double)c->s[i].major_faults;
    }
    c->wall_s = mk_stat_of(wall, c->nruns);
    c->user_s = mk_stat_of(user, c->nruns);
    c->sys_s = mk_stat_of(sys, c->nruns);
    c->peak_rss = mk_stat_of(rss, c->nruns);
    c->minor_faults = mk_stat_of(minf, c->nruns);
    c->major_faults = mk_stat_of(majf, c->nruns);
    if (strcmp(c->status, "ok") != 0 || c == base || c->nruns == 0)
        return;
    for (int i = 0; i < base->nruns; i++) {
        bwall[i] = base->s[i].wall_s;
        brss[i] = (double)base->s[i].peak_rss_bytes;
    }
    c->speedup = c->wall_s.median > 0 ? base->wall_s.median / c->wall_s.median : 0;
    c->rss_ratio =
        base->peak_rss.median > 0 ? c->peak_rss.median / base->peak_rss.median : 0;
    c->p_faster = mk_p_smaller(wall, c->nruns, bwall, base->nruns);
    c->p_leaner = mk_p_smaller(rss, c->nruns, brss, base->nruns);
}

/* The fastest and the leanest of the candidates that beat glibc beyond noise. */
static void conclude(mk_tune_candidate *c, int n, mk_tune_verdict *v)
{
    v->fastest = v->leanest = 0;
    conclude_one(&c[0], &c[0]);
    for (int i = 1; i < n; i++) {
        conclude_one(&c[i], &c[0]);
        if (strcmp(c[i].status, "ok") != 0)
            continue;
        if (c[i].p_faster <= MK_P_BEYOND_NOISE && c[i].speedup > 1 &&
            c[i].wall_s.median < c[v->fastest].wall_s.median)
            v->fastest = i;
        if (c[i].p_leaner <= MK_P_BEYOND_NOISE && c[i].rss_ratio < 1 &&
            c[i].peak_rss.median < c[v->leanest].peak_rss.median)
            v->leanest = i;
    }
}

/* ------------------------------------------------------------------------ */
/* running                                                                   */

static void progress(const tune_state_t *st, const mk_tune_candidate *c, int done,
                     int total, double per_run)
{
    if (!st->o.progress)
        return;
    fprintf(stderr, "\r\033[Kmemkit tune: %s (run %d of %d", c->name, done + 1, total);
    if (per_run > 0)
        fprintf(stderr, ", about %.0f s left", per_run * (total - done));
    fprintf(stderr, ")");
    fflush(stderr);
}

typedef struct schedule {
    mk_tune_runner runner;
    mk_tune_outcome ref; /* glibc's warm-up run: the output others must match */
    int done, total;
    double runs_wall;
} schedule_t;

/* One run of candidate c; a failed run disqualifies it. Returns false when
 * the command cannot be started at all. */
static bool run_once(tune_state_t *st, schedule_t *sc, mk_tune_candidate *c, bool warmup,
                     char *err, size_t len)
{
    mk_tune_sample s;
    mk_tune_outcome out;

    progress(st, c, sc->done, sc->total, sc->done ? sc->runs_wall / sc->done : 0);
    if (!mk_tune_run(&sc->runner, c, &st->o, &s, &out, err, len))
        return false;
    sc->done++;
    sc->runs_wall += s.wall_s;
    if (!out.ok) {
        c->status = "failed";
        snprintf(c->reason, sizeof c->reason, "%s run: %s",
                 warmup ? "warm-up" : "measured", out.why);
        return true;
    }
    if (st->o.check_output && c == &st->c[0] && warmup) {
        sc->ref = out;
    } else if (st->o.check_output &&
               (out.out_hash != sc->ref.out_hash || out.out_len != sc->ref.out_len)) {
        c->status = "output differs";
        snprintf(c->reason, sizeof c->reason,
                 "its stdout (%llu bytes) differs from glibc's (%llu bytes)",
                 (unsigned long long)out.out_len, (unsigned long long)sc->ref.out_len);
        return true;
    }
    if (!warmup)
        c->s[c->nruns++] = s;
    return true;
}

static bool runnable(const mk_tune_candidate *c)
{
    return strcmp(c->status, "ok") == 0;
}

/* The warm-up round, then --runs rounds, each starting one candidate later. */
static int run_all(tune_state_t *st, mk_tune_verdict *v)
{
    schedule_t sc = {0};
    char err[512];

    if (!mk_tune_runner_open(&sc.runner, &st->o, err, sizeof err))
        return mk_usage_error("tune: %s", err);
    for (int i = 0; i < st->n; i++)
        sc.total += runnable(&st->c[i]) * (1 + st->o.runs);
    for (int i = 0; i < st->n; i++)
        if (runnable(&st->c[i]) && !run_once(st, &sc, &st->c[i], true, err, sizeof err))
            goto cannot_run;
    /* Candidates that failed their warm-up are not run again. */
    sc.total = sc.done;
    for (int i = 0; i < st->n; i++)
        sc.total += runnable(&st->c[i]) * st->o.runs;
    for (int r = 0; r < st->o.runs && runnable(&st->c[0]); r++)
        for (int j = 0; j < st->n; j++) {
            mk_tune_candidate *c = &st->c[(j + r) % st->n];
            if (runnable(c) && !run_once(st, &sc, c, false, err, sizeof err))
                goto cannot_run;
        }
    mk_tune_runner_close(&sc.runner);
    if (st->o.progress)
        fprintf(stderr, "\r\033[K");
    v->runs_wall_s = sc.runs_wall;
    v->total_runs = sc.done;
    return -1;
cannot_run:
    mk_tune_runner_close(&sc.runner);
    if (st->o.progress)
        fprintf(stderr, "\r\033[K");
    return mk_usage_error("tune: %s", err);
}

/* glibc's default must work: it is what every other candidate is compared
 * with (and whose output they must match). */
static int baseline_failed(const tune_state_t *st)
{
    const mk_tune_candidate *base = &st->c[0];
    int ran = 0, ok = 0;

    for (int i = 0; i < st->n; i++) {
        const char *s = st->c[i].status;
        ran += strcmp(s, "missing") != 0 && strcmp(s, "n/a") != 0;
        ok += strcmp(s, "ok") == 0;
    }
    if (ok == 0)
        fprintf(stderr,
                "memkit: tune: '%s' fails under every candidate (%d tried); under "
                "glibc: %s\n",
                st->o.cmd[0], ran, base->reason);
    else
        fprintf(stderr,
                "memkit: tune: '%s' fails under glibc's default allocator (%s), "
                "which the others are measured against\n",
                st->o.cmd[0], base->reason);
    return MK_EXIT_FAIL;
}

int mk_cmd_tune(int argc, char **argv)
{
    tune_state_t st = {.o = {.runs = 5}};
    mk_tune_verdict v = {0};
    char file[4096];
    double t0 = mk_bench_now();
    int rc;

    if ((rc = parse_opts(argc, argv, &st)) >= 0)
        return rc;
    if (!mk_resolve_command(st.o.cmd[0], file, sizeof file))
        return mk_usage_error("tune: cannot find '%s' (not in PATH, or not executable)",
                              st.o.cmd[0]);
    mk_program_kind kind = mk_program_kind_of(file);
    if (kind == MK_PROGRAM_SETID)
        return mk_usage_error("tune: %s runs with raised privileges (setuid, setgid or "
                              "file capabilities): the loader ignores the candidates' "
                              "LD_PRELOAD and GLIBC_TUNABLES for it",
                              file);
    st.o.progress = isatty(STDERR_FILENO);
    if ((rc = make_candidates(&st, kind)) < 0 && (rc = run_all(&st, &v)) < 0) {
        if (!runnable(&st.c[0])) {
            rc = baseline_failed(&st);
        } else {
            conclude(st.c, st.n, &v);
            v.tool_wall_s = mk_bench_now() - t0;
            if (st.o.json)
                mk_tune_print_json(st.c, st.n, &v, &st.o, stdout);
            else
                mk_tune_print_table(st.c, st.n, &v, &st.o, stdout);
            rc = fflush(stdout) == 0 ? MK_EXIT_OK : MK_EXIT_FAIL;
        }
    }
    free_candidates(&st);
    return rc;
}
