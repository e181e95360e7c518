/*
 * replay_whatif.c - `memkit replay --what-if`: which findings to try, each
 * one's fix described for the child (replay.h, MK_RFIX_*), and the measured
 * savings written out.
 *
 * The findings are the report's (the same analysis, the same numbers as
 * `memkit report` prints), one fix file each and one with them all. Every
 * stack a finding merged gets the fix, served by one instance per finding
 * and thread: one code change at one allocating line serves all its
 * stacks. A finding whose fix is not a change of allocator (cross_thread,
 * tiny, realloc_chain) is listed as not replayed.
 */
#define _GNU_SOURCE
#include "replay.h"
#include "tune.h"

#include "../analyze/fmt.h"
#include "../analyze/json.h"
#include "../analyze/names.h"
#include "../analyze/report.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A local buffer holds at most this much: a stack buffer beyond it is not a
 * fix a program makes (MK_LOCALBUF's guidance); bigger blocks use the heap. */
#define LOCAL_MAX 65536
/* A frame holds its blocks until the last of them is freed: it may hold
 * this many times the site's most live bytes (at least FRAME_MIN) before
 * the heap serves the rest, so a site that never empties stays bounded. */
#define FRAME_SLACK 4
#define FRAME_MIN   (1u << 20)

static int fix_kind(enum mk_finding_kind k)
{
    switch (k) {
    case MK_F_POOL:
        return MK_RFIX_POOL;
    case MK_F_HOIST:
        return MK_RFIX_HOIST;
    case MK_F_TEMPORARY:
        return MK_RFIX_LOCAL;
    case MK_F_LIFO:
        return MK_RFIX_FRAME;
    case MK_F_FIFO:
        return MK_RFIX_FIFO;
    case MK_F_PAIRED:
        return MK_RFIX_JOINED;
    default:
        return 0;
    }
}

/* Finding f's fix entries appended to *fix (*n of them), its stacks served
 * by instance inst. */
static bool describe(mk_report_t *r, const mk_finding_t *f, uint16_t inst,
                     mk_replay_fix **fix, size_t *n, size_t *cap, uint32_t nsites)
{
    mk_finding_member_t *m;
    size_t nm;
    uint64_t size = 0, live = 0;
    int kind = fix_kind(f->kind);

    if (!mk_finding_members(r, f, &m, &nm))
        return false;
    for (size_t i = 0; i < nm; i++) { /* one instance: the largest block of them all */
        if (m[i].max_size > size)
            size = m[i].max_size;
        live += m[i].max_live_bytes;
    }
    if (kind == MK_RFIX_LOCAL && size > LOCAL_MAX)
        size = LOCAL_MAX;
    if (kind == MK_RFIX_FRAME) /* a frame's budget (replay.h) */
        size = live * FRAME_SLACK > FRAME_MIN ? live * FRAME_SLACK : FRAME_MIN;
    bool ok = true;
    for (size_t i = 0; ok && i < nm; i++) {
        if (m[i].stack >= nsites || m[i].stack2 >= nsites)
            continue; /* a stack the replay never saw call */
        if (!(ok = mk_grow((void **)fix, cap, *n + 2, sizeof **fix)))
            break;
        (*fix)[(*n)++] =
            (mk_replay_fix){.site = m[i].stack,
                            .kind = (uint8_t)kind,
                            .inst = inst,
                            .size = size ? size : 1,
                            .extra = kind == MK_RFIX_JOINED ? m[i].max_size2 : 0};
        if (kind == MK_RFIX_JOINED)
            (*fix)[(*n)++] = (mk_replay_fix){
                .site = m[i].stack2, .kind = MK_RFIX_INSIDE, .inst = inst};
    }
    free(m);
    return ok;
}

static int by_site(const void *x, const void *y)
{
    const mk_replay_fix *a = x, *b = y;
    if (a->site != b->site)
        return a->site < b->site ? -1 : 1;
    return a->pad < b->pad ? -1 : a->pad > b->pad; /* the findings' rank */
}

/* The findings' fixes together, one entry per stack: a pair's second block
 * is gone whatever else its stack's findings say; a pair's first block is
 * served by the stack's other fix, if it has one, holding the second;
 * else the best-ranked finding's fix serves the stack. */
static size_t compose(mk_replay_fix *e, size_t n)
{
    size_t out = 0;

    for (size_t i = 0; i < n; i++)
        e[i].pad = (uint8_t)(i < 255 ? i : 255);
    qsort(e, n, sizeof *e, by_site);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        mk_replay_fix best = e[i], *joined = NULL, *other = NULL;
        for (; j < n && e[j].site == e[i].site; j++) {
            if (e[j].kind == MK_RFIX_INSIDE)
                best = e[j];
            else if (e[j].kind == MK_RFIX_JOINED && !joined)
                joined = &e[j];
            else if (e[j].kind != MK_RFIX_JOINED && !other)
                other = &e[j];
        }
        if (best.kind != MK_RFIX_INSIDE && joined && other) {
            best = *other;
            best.extra = joined->extra;
            if (best.kind != MK_RFIX_FRAME && best.kind != MK_RFIX_FIFO)
                best.size += joined->extra; /* an item holds both */
        } else if (best.kind != MK_RFIX_INSIDE && other) {
            best = *other;
        }
        best.pad = 0;
        e[out++] = best;
        i = j;
    }
    return out;
}

/* The stacks of w's n fix entries e. */
static bool take_sites(mk_whatif *w, const mk_replay_fix *e, size_t n)
{
    if (!(w->sites = malloc((n ? n : 1) * sizeof *w->sites)))
        return false;
    for (size_t i = 0; i < n; i++)
        w->sites[i] = e[i].site;
    w->nsites = n;
    return true;
}

static bool write_file(const char *path, const void *p, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    bool ok = fd >= 0 && write(fd, p, n) == (ssize_t)n;

    if (fd >= 0 && close(fd) != 0)
        ok = false;
    return ok;
}

/* The numbers of list ("1,3") into want (want[k]: finding k + 1). */
static int parse_list(const char *list, bool *want, size_t n)
{
    const char *p = list;

    while (*p) {
        char *end;
        errno = 0;
        unsigned long k = strtoul(p, &end, 10);
        if (end == p || errno || (*end && *end != ','))
            return mk_usage_error("replay: --what-if=%s: finding numbers expected, "
                                  "as memkit report numbers them (1,3)",
                                  list);
        if (k < 1 || k > n)
            return mk_usage_error("replay: --what-if: no finding %lu (the trace has %zu)",
                                  k, n);
        want[k - 1] = true;
        p = *end ? end + 1 : end;
    }
    return -1;
}

int mk_whatif_prepare(const mk_replay_prog *prog, const char *list, mk_whatif_set *set)
{
    mk_report_opts_t o;
    char err[1024];
    mk_report_t *r = calloc(1, sizeof *r);
    mk_replay_fix *all = NULL, *one = NULL; /* every finding's fixes, and one's */
    size_t nall = 0, call = 0, cone = 0;
    bool *want = NULL;
    int rc = -1;

    memset(set, 0, sizeof *set);
    mk_report_opts_default(&o);
    if (!r)
        return mk_usage_error("replay: out of memory");
    if (mk_report_load(r, prog->path, &o, err, sizeof err) != 0) {
        free(r);
        return mk_usage_error("%s", err);
    }
    if (r->prof.site_times) { /* the traced run's time per stack: the scale */
        set->nsites = prog->nsites;
        if (!(set->site_ns =
                  calloc(prog->nsites ? prog->nsites : 1, sizeof *set->site_ns))) {
            mk_report_free(r);
            free(r);
            return mk_usage_error("replay: out of memory");
        }
        for (size_t i = 0; i < r->nsites; i++)
            if (r->sites[i].stack < prog->nsites)
                set->site_ns[r->sites[i].stack] = r->sites[i].agg->alloc_ns;
    }
    want = calloc(r->nfindings + 1, sizeof *want);
    set->w = calloc(r->nfindings + 1, sizeof *set->w);
    if (!want || !set->w) {
        rc = mk_usage_error("replay: out of memory");
        goto out;
    }
    if (list && *list && (rc = parse_list(list, want, r->nfindings)) >= 0)
        goto out;
    if (!list || !*list)
        for (size_t i = 0; i < mk_findings_shown(r, 0); i++)
            want[i] = true;
    for (size_t i = 0; i < r->nfindings; i++) {
        const mk_finding_t *f = &r->findings[i];
        mk_whatif *w = &set->w[set->n];
        mk_frame_t fr;
        size_t none = 0;

        if (!want[i])
            continue;
        set->n++;
        w->number = (int)i + 1;
        w->kind = mk_finding_name(f->kind);
        w->removable = f->removable;
        w->estimated_ns = f->saving_ns;
        w->nstacks = f->nstacks;
        if (!mk_names_innermost(r->names, f->stack, &fr))
            snprintf(w->site, sizeof w->site, "(no stack)");
        else
            mk_frame_label(&fr, w->site, sizeof w->site);
        if (!fix_kind(f->kind)) {
            w->status = "not replayed";
            snprintf(w->reason, sizeof w->reason,
                     "its fix is no change of allocator: replay cannot try it");
            continue;
        }
        if (!describe(r, f, (uint16_t)set->n, &one, &none, &cone, prog->nsites) ||
            !mk_grow((void **)&all, &call, nall + none, sizeof *all) ||
            !take_sites(w, one, none)) {
            rc = mk_usage_error("replay: out of memory");
            goto out;
        }
        memcpy(all + nall, one, none * sizeof *one);
        nall += none;
        snprintf(w->fixes, sizeof w->fixes, "%s/fix-%d", prog->dir, w->number);
        if (!write_file(w->fixes, one, none * sizeof *one)) {
            rc = mk_usage_error("replay: cannot write %s: %s", w->fixes, strerror(errno));
            goto out;
        }
        w->status = "ok";
    }
    if (set->n > 1 && nall) { /* the findings together: the last entry */
        mk_whatif *w = &set->w[set->n];
        w->number = 0;
        w->kind = "all";
        w->status = "ok";
        snprintf(w->site, sizeof w->site, "(the findings replayed together)");
        snprintf(w->fixes, sizeof w->fixes, "%s/fix-all", prog->dir);
        for (size_t k = 0; k < set->n; k++)
            if (strcmp(set->w[k].status, "ok") == 0) {
                w->removable += set->w[k].removable;
                w->estimated_ns += set->w[k].estimated_ns;
            }
        nall = compose(all, nall);
        w->nstacks = (uint32_t)nall; /* one entry a stack */
        if (!take_sites(w, all, nall)) {
            rc = mk_usage_error("replay: out of memory");
            goto out;
        }
        if (!write_file(w->fixes, all, nall * sizeof *all)) {
            rc = mk_usage_error("replay: cannot write %s: %s", w->fixes, strerror(errno));
            goto out;
        }
        set->together = true;
    }
    if (set->n == 0)
        rc = mk_usage_error("replay: --what-if: %s has no finding to try", prog->path);
out:
    free(one);
    free(all);
    free(want);
    mk_report_free(r);
    free(r);
    return rc;
}

void mk_whatif_free(mk_whatif_set *set)
{
    for (size_t i = 0; set->w && i < set->n + set->together; i++) {
        if (set->w[i].fixes[0])
            unlink(set->w[i].fixes);
        free(set->w[i].sites);
    }
    free(set->w);
    free(set->site_ns);
    memset(set, 0, sizeof *set);
}

double mk_whatif_ticks(const mk_whatif *w, const uint64_t *ticks)
{
    double sum = 0;

    for (size_t i = 0; i < w->nsites; i++)
        sum += (double)ticks[w->sites[i]];
    return sum;
}

void mk_whatif_measure(const mk_whatif_set *set, mk_whatif *w, const uint64_t *base,
                       const uint64_t *fixed, int nrounds, double ns_per_tick)
{
    double saving = 0, ticks = 0;

    /* The replay's calls run colder or warmer than the program's (what the
     * program does between them is not replayed), by a factor that differs
     * from stack to stack: what the replay says of a stack is the share of
     * its time a fix removes, and the traced run says what that time is.
     * Only the fix's stacks count: the others' changes are the replay's
     * noise here (allocator_ns, the whole heap's time, keeps them). */
    for (size_t i = 0; i < w->nsites; i++) {
        uint32_t s = w->sites[i];
        double b = (double)base[s], d = (double)base[s] - (double)fixed[s];
        ticks += d;
        if (set->site_ns && b > 0)
            saving += set->site_ns[s] * d / b;
    }
    w->replay_saving_ns = nrounds ? ticks * ns_per_tick / nrounds : 0;
    w->saving_ns = set->site_ns ? saving : w->replay_saving_ns;
    w->p_saves = mk_p_smaller(w->fixed_ticks, nrounds, w->base_ticks, nrounds);
}

/* ------------------------------------------------------------------------ */
/* output                                                                    */

void mk_whatif_print(const mk_whatif_set *set, double base_ns, FILE *out)
{
    const char *scale = set->site_ns
                            ? "each stack's share of its time the fix removes in the "
                              "replay, times its time in the traced run"
                            : "the heap's time it removes in the replay (the trace has "
                              "no times to scale it by)";
    char b1[32], b2[32], b3[32], b4[32], b5[32];

    fprintf(out,
            "\nWhat-if: each finding's fix applied to the calls it names, replayed "
            "under glibc\n(glibc's allocator time without a fix: %s; medians of the "
            "rounds; * beyond noise):\n",
            mk_fmt_ns(base_ns, b1, sizeof b1));
    fprintf(out, "  %-4s %-13s %10s %10s %10s %10s %10s  %s\n", "#", "kind", "estimated",
            "measured", "fix's time", "calls gone", "heap RSS", "site");
    for (size_t i = 0; i < set->n + set->together; i++) {
        const mk_whatif *w = &set->w[i];
        char num[16] = "all";
        if (w->number)
            snprintf(num, sizeof num, "%d", w->number);
        if (strcmp(w->status, "ok") != 0) {
            fprintf(out, "  %-4s %-13s %11s %s: %s (%s)\n", num, w->kind,
                    mk_fmt_ns(w->estimated_ns, b1, sizeof b1), w->status, w->reason,
                    w->site);
            continue;
        }
        snprintf(
            b2, sizeof b2, "%s%s", w->saving_ns < 0 ? "-" : "",
            mk_fmt_ns(w->saving_ns < 0 ? -w->saving_ns : w->saving_ns, b4, sizeof b4));
        if (w->p_saves <= MK_P_BEYOND_NOISE)
            strcat(b2, "*");
        fprintf(out, "  %-4s %-13s %10s %10s %10s %10s %10s  %s\n", num, w->kind,
                mk_fmt_ns(w->estimated_ns, b1, sizeof b1), b2,
                mk_fmt_ns(w->fix_ns, b5, sizeof b5),
                mk_fmt_count((uint64_t)w->calls_removed, b3, sizeof b3),
                mk_fmt_bytes((uint64_t)w->peak_rss, b4, sizeof b4), w->site);
    }
    fprintf(out,
            "(estimated: the report's saving; measured: the heap's time the fix removes, "
            "as tracing the fixed program would show it: %s; fix's time: its own calls' "
            "in the replay, each read with the timer's floor, so at most that; calls "
            "gone: heap calls the fix took)\n",
            scale);
}

void mk_whatif_json(const mk_whatif_set *set, mk_json *j)
{
    mk_json_key(j, "what_if");
    mk_json_begin_array(j);
    for (size_t i = 0; i < set->n + set->together; i++) {
        const mk_whatif *w = &set->w[i];
        bool ok = strcmp(w->status, "ok") == 0;
        if (i == set->n) { /* together: its own key */
            mk_json_end_array(j);
            mk_json_key(j, "what_if_all");
        }
        mk_json_begin_object(j);
        mk_json_key(j, "finding");
        if (w->number)
            mk_json_uint(j, (uint64_t)w->number);
        else
            mk_json_null(j);
        mk_json_key(j, "kind");
        mk_json_string(j, w->kind);
        mk_json_key(j, "site");
        mk_json_string(j, w->site);
        mk_json_key(j, "stacks");
        mk_json_uint(j, w->nstacks);
        mk_json_key(j, "status");
        mk_json_string(j, w->status);
        if (!ok) {
            mk_json_key(j, "reason");
            mk_json_string(j, w->reason);
        }
        mk_json_key(j, "estimated_saving_ns");
        mk_json_double(j, w->estimated_ns);
        const char *keys[] = {"saving_ns",       "replay_saving_ns", "allocator_ns",
                              "fix_ns",          "p_saves",          "calls_removed",
                              "peak_bytes_after"};
        double vals[] = {w->saving_ns, w->replay_saving_ns, w->alloc_ns, w->fix_ns,
                         w->p_saves,   w->calls_removed,    w->peak_rss};
        for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
            mk_json_key(j, keys[k]);
            if (ok)
                mk_json_double(j, vals[k]);
            else
                mk_json_null(j);
        }
        mk_json_end_object(j);
    }
    if (!set->together)
        mk_json_end_array(j);
    if (!set->together) {
        mk_json_key(j, "what_if_all");
        mk_json_null(j);
    }
}
