/*
 * bench_output.c - what `memkit bench` prints: an aligned table like the
 * published ones, JSON (one object per configuration, docs/bench-json.md), and
 * one self-contained HTML page with bar charts (bench_page.html, embedded at
 * build time, drawing from that same JSON).
 */
#define _GNU_SOURCE
#include "bench.h"

#include <memkit/common.h>

#include <string.h>
#include <time.h>
#include <unistd.h>

extern const unsigned char mk_bench_page[];
extern const size_t mk_bench_page_len;

static const mk_bench_result *find_ok(const mk_bench_config *c, const char *name)
{
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->res[i].alloc->name, name) == 0 &&
            strcmp(c->res[i].status, "ok") == 0)
            return &c->res[i];
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* the table                                                                 */

static void print_title(const mk_bench_config *c, FILE *out)
{
    fprintf(out, "memkit bench %s: %llu %s", c->w->name, (unsigned long long)c->scale,
            c->w->scale_unit);
    if (c->size)
        fprintf(out, " of %llu bytes on %llu thread%s", (unsigned long long)c->size,
                (unsigned long long)c->threads, c->threads == 1 ? "" : "s");
    fprintf(out, ", %d round%s per process, median [min-max]\n", c->rounds,
            c->rounds == 1 ? "" : "s");
}

/* "median [min-max]" in millions per second; a rate too large for the column
 * (mk_stack frees a whole frame with one pop) keeps only its median; "-" for
 * a phase the run does not have. */
static void format_rate(char *buf, size_t len, mk_stat s)
{
    if (s.max == 0) { /* no such phase (bump-ceiling's free) */
        snprintf(buf, len, "-");
        return;
    }
    if (snprintf(buf, len, "%.1f [%.1f-%.1f]", s.median / 1e6, s.min / 1e6, s.max / 1e6) >
        24)
        snprintf(buf, len, "%.4g", s.median / 1e6);
}

static void print_row(const mk_bench_result *r, const mk_bench_result *base, bool latency,
                      bool free_latency, FILE *out)
{
    char a[64], f[64], ratio[32] = "-";

    if (strcmp(r->status, "ok") != 0) {
        fprintf(out, "%-11s %s: %s\n", r->alloc->name, r->status, r->reason);
        return;
    }
    format_rate(a, sizeof a, r->alloc_rate);
    format_rate(f, sizeof f, r->free_rate);
    if (base)
        snprintf(ratio, sizeof ratio, "%.2fx",
                 r->alloc_rate.median / base->alloc_rate.median);
    fprintf(out, "%-11s %24s %24s %10.2f %7.0f MiB %12llu %8.2f %8s", r->alloc->name, a,
            f, r->free_s.median * 1e3, (double)r->peak_rss_bytes / (1 << 20),
            (unsigned long long)r->minor_faults, r->wall_s, ratio);
    if (latency)
        fprintf(out, " %8llu %8llu %8llu %10llu", (unsigned long long)r->p50_ns,
                (unsigned long long)r->p99_ns, (unsigned long long)r->p999_ns,
                (unsigned long long)r->max_ns);
    if (free_latency)
        fprintf(out, " %8llu %8llu %8llu", (unsigned long long)r->free_p50_ns,
                (unsigned long long)r->free_p99_ns, (unsigned long long)r->free_p999_ns);
    if (latency && !free_latency)
        fprintf(out, " %7.2fx", r->first_to_steady);
    fprintf(out, "\n");
}

/* A pattern's row: its whole time, against glibc's and mimalloc's (their time
 * over this one: above 1 is faster), and its memory. */
static void print_pattern_row(const mk_bench_result *r, const mk_bench_result *glibc,
                              const mk_bench_result *mimalloc, FILE *out)
{
    char t[64], vg[16] = "-", vm[16] = "-", fin[24] = "-";

    if (strcmp(r->status, "ok") != 0) {
        fprintf(out, "%-11s %s: %s\n", r->alloc->name, r->status, r->reason);
        return;
    }
    snprintf(t, sizeof t, "%.1f [%.1f-%.1f]", r->time_s.median * 1e3, r->time_s.min * 1e3,
             r->time_s.max * 1e3);
    if (glibc && r->time_s.median > 0)
        snprintf(vg, sizeof vg, "%.2fx", glibc->time_s.median / r->time_s.median);
    if (mimalloc && r->time_s.median > 0)
        snprintf(vm, sizeof vm, "%.2fx", mimalloc->time_s.median / r->time_s.median);
    if (r->final_rss_bytes)
        snprintf(fin, sizeof fin, "%.1f MiB", (double)r->final_rss_bytes / (1 << 20));
    fprintf(out, "%-11s %26s %9s %11s %8.1f MiB %12s %10llu %7.2f\n", r->alloc->name, t,
            vg, vm, (double)r->peak_rss_bytes / (1 << 20), fin,
            (unsigned long long)r->minor_faults, r->wall_s);
}

static void print_pattern_table(const mk_bench_config *c, FILE *out)
{
    const mk_bench_result *glibc = find_ok(c, "glibc"), *mi = find_ok(c, "mimalloc");

    print_title(c, out);
    fprintf(out, "%-11s %26s %9s %11s %12s %12s %10s %7s\n", "allocator",
            "time ms [min-max]", "vs glibc", "vs mimalloc", "peak RSS", "final RSS",
            "minor flt", "wall s");
    bool unsuited = false;
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->res[i].status, "n/a") != 0)
            print_pattern_row(&c->res[i], glibc, mi, out);
        else
            unsuited = true;
    if (unsuited) { /* one line, not a row each */
        fprintf(out, "(not this pattern's:");
        for (int i = 0; i < c->n; i++)
            if (strcmp(c->res[i].status, "n/a") == 0)
                fprintf(out, " %s", c->res[i].alloc->name);
        fprintf(out, ")\n");
    }
    fprintf(out,
            "(vs glibc, vs mimalloc: their median time over this allocator's; "
            "above 1.00x is faster. final RSS: at a round's end%s, median)\n",
            strcmp(c->w->name, "burst-idle") == 0 ? ", after the idle period" : "");
}

void mk_bench_print_table(const mk_bench_config *c, FILE *out)
{
    const mk_bench_result *base = find_ok(c, "glibc");
    bool latency = false, free_latency = false;

    if (c->w->group) {
        print_pattern_table(c, out);
        return;
    }
    for (int i = 0; i < c->n; i++) {
        latency |= c->res[i].max_ns != 0;
        free_latency |= c->res[i].free_max_ns != 0;
    }
    print_title(c, out);
    fprintf(out, "%-11s %24s %24s %10s %10s %12s %8s %8s", "allocator", "alloc M/s",
            "free M/s", "free ms", "peak RSS", "minor flt", "wall s", "vs glibc");
    if (latency)
        fprintf(out, " %8s %8s %8s %10s", "p50 ns", "p99 ns", "p99.9 ns", "max ns");
    if (free_latency)
        fprintf(out, " %8s %8s %8s", "free p50", "free p99", "free p99.9");
    if (latency && !free_latency)
        fprintf(out, " %8s", "1st/rest");
    fprintf(out, "\n");
    for (int i = 0; i < c->n; i++)
        print_row(&c->res[i], base, latency, free_latency, out);
    if (base)
        fprintf(out,
                "(vs glibc: median allocation rate relative to glibc's in this run)\n");
    if (latency && free_latency)
        fprintf(out,
                "(latencies: single malloc and free calls timed with the cycle counter, "
                "a sample of every 8th operation, ns; medians over rounds, max over "
                "all)\n");
    else if (latency)
        fprintf(
            out,
            "(latencies: single malloc calls, clock included, medians over rounds, max "
            "over all; 1st/rest: round 1's time over the median of the others)\n");
    for (int i = 0; i < c->n; i++)
        if (c->res[i].max_steps)
            fprintf(out, "(%s: at most %llu steps in any single call)\n",
                    c->res[i].alloc->name, (unsigned long long)c->res[i].max_steps);
}

/* ------------------------------------------------------------------------ */
/* JSON                                                                      */

static void json_stat(mk_json *j, const char *key, const char *kmin, const char *kmax,
                      mk_stat s)
{
    mk_json_key(j, key);
    mk_json_double(j, s.median);
    mk_json_key(j, kmin);
    mk_json_double(j, s.min);
    mk_json_key(j, kmax);
    mk_json_double(j, s.max);
}

static void json_uint(mk_json *j, const char *key, uint64_t v)
{
    mk_json_key(j, key);
    mk_json_uint(j, v);
}

static void json_result(mk_json *j, const mk_bench_result *r)
{
    mk_json_begin_object(j);
    mk_json_key(j, "allocator");
    mk_json_string(j, r->alloc->name);
    mk_json_key(j, "status");
    mk_json_string(j, r->status);
    if (strcmp(r->status, "ok") != 0) {
        mk_json_key(j, "reason");
        mk_json_string(j, r->reason);
        mk_json_end_object(j);
        return;
    }
    json_stat(j, "alloc_rate", "alloc_rate_min", "alloc_rate_max", r->alloc_rate);
    json_stat(j, "free_rate", "free_rate_min", "free_rate_max", r->free_rate);
    json_stat(j, "alloc_s", "alloc_s_min", "alloc_s_max", r->alloc_s);
    json_stat(j, "free_s", "free_s_min", "free_s_max", r->free_s);
    json_stat(j, "time_s", "time_s_min", "time_s_max", r->time_s);
    json_uint(j, "peak_rss_bytes", r->peak_rss_bytes);
    if (r->final_rss_bytes)
        json_uint(j, "final_rss_bytes", r->final_rss_bytes);
    json_uint(j, "minor_faults", r->minor_faults);
    mk_json_key(j, "wall_s");
    mk_json_double(j, r->wall_s);
    if (r->max_ns) {
        json_uint(j, "p50_ns", r->p50_ns);
        json_uint(j, "p99_ns", r->p99_ns);
        json_uint(j, "p999_ns", r->p999_ns);
        json_uint(j, "max_ns", r->max_ns);
    }
    if (r->free_max_ns) {
        json_uint(j, "free_p50_ns", r->free_p50_ns);
        json_uint(j, "free_p99_ns", r->free_p99_ns);
        json_uint(j, "free_p999_ns", r->free_p999_ns);
        json_uint(j, "free_max_ns", r->free_max_ns);
    }
    if (r->max_steps)
        json_uint(j, "max_call_steps", r->max_steps);
    if (r->first_to_steady > 0) {
        mk_json_key(j, "first_to_steady");
        mk_json_double(j, r->first_to_steady);
    }
    mk_json_end_object(j);
}

static void json_config(mk_json *j, const mk_bench_config *c)
{
    mk_json_begin_object(j);
    mk_json_key(j, "schema");
    mk_json_string(j, "memkit-bench");
    json_uint(j, "version", 1);
    mk_json_key(j, "workload");
    mk_json_string(j, c->w->name);
    if (c->w->group) {
        mk_json_key(j, "group");
        mk_json_string(j, c->w->group);
    }
    json_uint(j, "scale", c->scale);
    mk_json_key(j, "scale_unit");
    mk_json_string(j, c->w->scale_unit);
    if (c->size) {
        json_uint(j, "size", c->size);
        json_uint(j, "threads", c->threads);
    }
    json_uint(j, "rounds", (uint64_t)c->rounds);
    mk_json_key(j, "results");
    mk_json_begin_array(j);
    for (int i = 0; i < c->n; i++)
        json_result(j, &c->res[i]);
    mk_json_end_array(j);
    mk_json_end_object(j);
}

void mk_bench_print_json(const mk_bench_config *c, FILE *out)
{
    mk_json j = {.out = out};

    json_config(&j, c);
}

/* ------------------------------------------------------------------------ */
/* HTML                                                                      */

/* The page's data: the run's context, then the configurations exactly as
 * --json prints them. */
static void json_page(mk_json *j, const mk_bench_config *c, int n)
{
    char date[32];
    time_t now = time(NULL);
    struct tm tm;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);

    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime_r(&now, &tm));
    mk_json_begin_object(j);
    mk_json_key(j, "schema");
    mk_json_string(j, "memkit-bench-page");
    json_uint(j, "version", 1);
    mk_json_key(j, "memkit");
    mk_json_string(j, mk_version());
    mk_json_key(j, "date");
    mk_json_string(j, date);
    json_uint(j, "cores", cores > 0 ? (uint64_t)cores : 0);
    mk_json_key(j, "configs");
    mk_json_begin_array(j);
    for (int i = 0; i < n; i++)
        json_config(j, &c[i]);
    mk_json_end_array(j);
    mk_json_end_object(j);
}

bool mk_bench_write_html(const mk_bench_config *c, int n, FILE *out)
{
    static const char marker[] = "@MEMKIT_DATA@";
    const char *page = (const char *)mk_bench_page;
    const char *at = memmem(page, mk_bench_page_len, marker, sizeof marker - 1);
    mk_json j = {.out = out};

    if (!at)
        return false;
    fwrite(page, 1, (size_t)(at - page), out);
    /* The writer escapes <, > and &, so no string ends the script early; at
     * depth 0 it ends the object with a newline, harmless inside <script>. */
    json_page(&j, c, n);
    const char *rest = at + sizeof marker - 1;
    fwrite(rest, 1, mk_bench_page_len - (size_t)(rest - page), out);
    return !ferror(out);
}
