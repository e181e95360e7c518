/*
 * tune_output.c - what `memkit tune` prints: a table of the candidates
 * (medians with min-max, ratios against glibc's default) and the
 * recommendation with the command line that applies it, or the same as one
 * JSON object (docs/tune-json.md).
 */
#define _GNU_SOURCE
#include "tune.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* command lines                                                             */

/* Shell-quotes s when it needs it, so the line can be pasted. */
static void put_word(const char *s, FILE *out)
{
    if (*s && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                        "-_./:=,+@%") == strlen(s)) {
        fputs(s, out);
        return;
    }
    fputc('\'', out);
    for (; *s; s++) {
        if (*s == '\'')
            fputs("'\\''", out);
        else
            fputc(*s, out);
    }
    fputc('\'', out);
}

void mk_tune_command_line(const mk_tune_candidate *c, char **cmd, FILE *out)
{
    bool first = true;

    for (int e = 0; c->env[e]; e++, first = false) {
        const char *eq = strchr(c->env[e], '=');
        fprintf(out, "%s%.*s=", first ? "" : " ", (int)(eq - c->env[e]), c->env[e]);
        put_word(eq + 1, out);
    }
    for (int i = 0; cmd[i]; i++, first = false) {
        if (!first)
            fputc(' ', out);
        put_word(cmd[i], out);
    }
}

static char *command_string(const mk_tune_candidate *c, char **cmd)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    if (!f)
        return NULL;
    mk_tune_command_line(c, cmd, f);
    fclose(f);
    return buf;
}

/* ------------------------------------------------------------------------ */
/* the table                                                                 */

static const char *fmt_mb(double bytes, char *buf, size_t len)
{
    snprintf(buf, len, "%.1f MB", bytes / 1e6);
    return buf;
}

static void print_row(const mk_tune_candidate *c, bool base, FILE *out)
{
    char wall[48], ratio[24], rss[24];

    if (strcmp(c->status, "ok") != 0) {
        fprintf(out, "%-17s %s: %s\n", c->name, c->status, c->reason);
        return;
    }
    /* three significant digits for the median, the range alike */
    int prec = c->wall_s.median < 0.01 ? 5 : c->wall_s.median < 0.1 ? 4 : 3;
    snprintf(wall, sizeof wall, "%.*f [%.*f-%.*f]", prec, c->wall_s.median, prec,
             c->wall_s.min, prec, c->wall_s.max);
    if (base)
        snprintf(ratio, sizeof ratio, "1.00x");
    else
        snprintf(ratio, sizeof ratio, "%.2fx%s", c->speedup,
                 c->p_faster <= 0.05 && c->speedup > 1       ? " *"
                 : 1 - c->p_faster <= 0.05 && c->speedup < 1 ? " -"
                                                             : "");
    fprintf(out, "%-17s %25s %9s %8.3f %7.3f %10s %12.0f %6.0f\n", c->name, wall, ratio,
            c->user_s.median, c->sys_s.median,
            fmt_mb(c->peak_rss.median, rss, sizeof rss), c->minor_faults.median,
            c->major_faults.median);
}

static void print_choice(const char *what, const mk_tune_candidate *c, int best,
                         const mk_tune_opts *o, bool fast, FILE *out)
{
    const mk_tune_candidate *b = &c[best];

    if (best == 0) {
        fprintf(out, "%s: glibc (nothing beats the default beyond noise)\n", what);
        return;
    }
    if (fast)
        fprintf(out,
                "%s: %s, %.2fx faster than glibc's default (median wall %.4g s vs "
                "%.4g s, p = %.3f)\n",
                what, b->name, b->speedup, b->wall_s.median, c[0].wall_s.median,
                b->p_faster);
    else
        fprintf(out,
                "%s: %s, peak RSS %.2fx glibc's default (%.1f MB vs %.1f MB, p = "
                "%.3f)\n",
                what, b->name, b->rss_ratio, b->peak_rss.median / 1e6,
                c[0].peak_rss.median / 1e6, b->p_leaner);
    fputs("  ", out);
    mk_tune_command_line(b, o->cmd, out);
    fputc('\n', out);
    if (fast && b->rss_ratio > 1.1)
        fprintf(out, "  (its peak RSS is %.2fx glibc's)\n", b->rss_ratio);
    if (!fast && b->speedup < 1 && 1 - b->p_faster <= 0.05)
        fprintf(out, "  (it is %.2fx slower than glibc's default)\n", 1 / b->speedup);
}

void mk_tune_print_table(const mk_tune_candidate *c, int n, const mk_tune_verdict *v,
                         const mk_tune_opts *o, FILE *out)
{
    fputs("memkit tune:", out);
    for (int i = 0; o->cmd[i]; i++) {
        fputc(' ', out);
        put_word(o->cmd[i], out);
    }
    fprintf(out,
            "\n%d measured run%s per candidate after one warm-up, interleaved; "
            "median [min-max]\n\n",
            o->runs, o->runs == 1 ? "" : "s");
    fprintf(out, "%-17s %25s %9s %8s %7s %10s %12s %6s\n", "candidate", "wall s",
            "vs glibc", "user s", "sys s", "peak RSS", "minor faults", "major");
    for (int i = 0; i < n; i++)
        print_row(&c[i], i == 0, out);
    fprintf(out, "(* faster than glibc's default beyond noise, - slower: one-sided "
                 "Mann-Whitney p <= 0.05)\n\n");
    print_choice("fastest", c, v->fastest, o, true, out);
    print_choice("leanest", c, v->leanest, o, false, out);
    if (o->runs < 3)
        fprintf(out, "note: with fewer than 3 runs per candidate no difference can be "
                     "told from noise\n");
    fprintf(out,
            "\n%d runs of the command took %.1f s; memkit tune spent %.2f%% of its "
            "%.2f s outside them\n",
            v->total_runs, v->runs_wall_s,
            v->tool_wall_s > 0 ? 100 * (v->tool_wall_s - v->runs_wall_s) / v->tool_wall_s
                               : 0,
            v->tool_wall_s);
}

/* ------------------------------------------------------------------------ */
/* JSON                                                                      */

void mk_json_stat(mk_json *j, const char *key, mk_stat s)
{
    mk_json_key(j, key);
    mk_json_begin_object(j);
    mk_json_key(j, "median");
    mk_json_double(j, s.median);
    mk_json_key(j, "min");
    mk_json_double(j, s.min);
    mk_json_key(j, "max");
    mk_json_double(j, s.max);
    mk_json_end_object(j);
}

static void json_env(mk_json *j, const mk_tune_candidate *c)
{
    mk_json_key(j, "env");
    mk_json_begin_object(j);
    for (int e = 0; c->env[e]; e++) {
        char name[128];
        const char *eq = strchr(c->env[e], '=');

        snprintf(name, sizeof name, "%.*s", (int)(eq - c->env[e]), c->env[e]);
        mk_json_key(j, name);
        mk_json_string(j, eq + 1);
    }
    mk_json_end_object(j);
}

static void json_number_or_null(mk_json *j, const char *key, double v, bool have)
{
    mk_json_key(j, key);
    if (have)
        mk_json_double(j, v);
    else
        mk_json_null(j);
}

static void json_candidate(mk_json *j, const mk_tune_candidate *c, bool base)
{
    bool ok = strcmp(c->status, "ok") == 0, measured = ok && !base;

    mk_json_begin_object(j);
    mk_json_key(j, "name");
    mk_json_string(j, c->name);
    mk_json_key(j, "about");
    mk_json_string(j, c->about);
    json_env(j, c);
    mk_json_key(j, "status");
    mk_json_string(j, c->status);
    mk_json_key(j, "reason");
    if (ok)
        mk_json_null(j);
    else
        mk_json_string(j, c->reason);
    mk_json_key(j, "runs");
    mk_json_uint(j, (uint64_t)c->nruns);
    if (ok) {
        mk_json_stat(j, "wall_s", c->wall_s);
        mk_json_stat(j, "user_s", c->user_s);
        mk_json_stat(j, "sys_s", c->sys_s);
        mk_json_key(j, "peak_rss_bytes");
        mk_json_uint(j, (uint64_t)c->peak_rss.median);
        mk_json_key(j, "minor_faults");
        mk_json_uint(j, (uint64_t)c->minor_faults.median);
        mk_json_key(j, "major_faults");
        mk_json_uint(j, (uint64_t)c->major_faults.median);
    } else {
        const char *keys[] = {"wall_s",         "user_s",       "sys_s",
                              "peak_rss_bytes", "minor_faults", "major_faults"};
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            mk_json_key(j, keys[k]);
            mk_json_null(j);
        }
    }
    json_number_or_null(j, "speedup", base ? 1 : c->speedup, ok);
    json_number_or_null(j, "p_faster", c->p_faster, measured);
    json_number_or_null(j, "rss_ratio", base ? 1 : c->rss_ratio, ok);
    json_number_or_null(j, "p_leaner", c->p_leaner, measured);
    mk_json_end_object(j);
}

void mk_tune_print_json(const mk_tune_candidate *c, int n, const mk_tune_verdict *v,
                        const mk_tune_opts *o, FILE *out)
{
    mk_json j = {.out = out};
    char *fastest, *leanest;

    mk_json_begin_object(&j);
    mk_json_key(&j, "schema");
    mk_json_string(&j, "memkit-tune");
    mk_json_key(&j, "version");
    mk_json_uint(&j, 1);
    mk_json_key(&j, "command");
    mk_json_begin_array(&j);
    for (int i = 0; o->cmd[i]; i++)
        mk_json_string(&j, o->cmd[i]);
    mk_json_end_array(&j);
    mk_json_key(&j, "runs");
    mk_json_uint(&j, (uint64_t)o->runs);
    mk_json_key(&j, "check_output");
    mk_json_bool(&j, o->check_output);
    mk_json_key(&j, "candidates");
    mk_json_begin_array(&j);
    for (int i = 0; i < n; i++)
        json_candidate(&j, &c[i], i == 0);
    mk_json_end_array(&j);
    fastest = command_string(&c[v->fastest], o->cmd);
    leanest = command_string(&c[v->leanest], o->cmd);
    mk_json_key(&j, "recommendation");
    mk_json_begin_object(&j);
    mk_json_key(&j, "fastest");
    mk_json_string(&j, c[v->fastest].name);
    mk_json_key(&j, "fastest_command");
    mk_json_string(&j, fastest ? fastest : "");
    mk_json_key(&j, "leanest");
    mk_json_string(&j, c[v->leanest].name);
    mk_json_key(&j, "leanest_command");
    mk_json_string(&j, leanest ? leanest : "");
    mk_json_key(&j, "command"); /* the primary recommendation: the fastest */
    mk_json_string(&j, fastest ? fastest : "");
    mk_json_end_object(&j);
    free(fastest);
    free(leanest);
    mk_json_key(&j, "tool");
    mk_json_begin_object(&j);
    mk_json_key(&j, "wall_s");
    mk_json_double(&j, v->tool_wall_s);
    mk_json_key(&j, "runs_wall_s");
    mk_json_double(&j, v->runs_wall_s);
    mk_json_key(&j, "total_runs");
    mk_json_uint(&j, (uint64_t)v->total_runs);
    mk_json_end_object(&j);
    mk_json_end_object(&j);
    fputc('\n', out);
}
