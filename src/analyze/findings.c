/*
 * findings.c - from per-stack aggregates to advice: which allocations a
 * known change removes, with the evidence and the saving.
 *
 * Each stack gets at most one finding about how its blocks live and die
 * (the first that applies, most specific first: cross-thread, hoist,
 * temporary, LIFO, FIFO, pool; tiny if none does), and independently one
 * about realloc growth. Pairs of stacks are judged on their own.
 *
 * Thresholds are ratios of a stack's own counts, with a floor on the count
 * (opts.min_count) so a handful of calls never makes a finding.
 */
#define _GNU_SOURCE
#include "report.h"

#include "../mk_assert.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[MK_F_KINDS] = {
    [MK_F_HOIST] = "hoist",
    [MK_F_TEMPORARY] = "temporary",
    [MK_F_LIFO] = "lifo",
    [MK_F_FIFO] = "fifo",
    [MK_F_CROSS_THREAD] = "cross_thread",
    [MK_F_POOL] = "pool",
    [MK_F_TINY] = "tiny",
    [MK_F_PAIRED] = "paired",
    [MK_F_REALLOC_CHAIN] = "realloc_chain",
};

const char *mk_finding_name(enum mk_finding_kind k)
{
    return k < MK_F_KINDS ? kind_names[k] : "?";
}

static const char *const fixes[MK_F_KINDS] = {
    [MK_F_HOIST] = "allocate the block once, outside the loop, and reuse it",
    [MK_F_TEMPORARY] = ("use a local buffer (MK_LOCALBUF, memkit/localbuf.h): stack "
                        "storage for the usual size, the heap only beyond"),
    [MK_F_LIFO] = "allocate from an mk_stack frame and release the frame at once",
    [MK_F_FIFO] = "allocate from an mk_fifo: blocks are released in the order they came",
    [MK_F_CROSS_THREAD] =
        "allocate from an mk_ring: the consumer thread releases cheaply",
    [MK_F_POOL] = "take the blocks from an mk_pool of this size",
    [MK_F_TINY] = "embed the value in its owner, or take it from an mk_pool",
    [MK_F_PAIRED] = "allocate the two as one block (a struct with both parts)",
    [MK_F_REALLOC_CHAIN] = "reserve the final size once instead of growing step by step",
};

/* a >= ratio * b, in integers */
static bool at_least(uint64_t a, unsigned percent, uint64_t b)
{
    return (unsigned __int128)a * 100 >= (unsigned __int128)b * percent;
}

static bool add(mk_report_t *r, size_t *cap, mk_finding_t f)
{
    if (!mk_grow((void **)&r->findings, cap, r->nfindings + 1, sizeof *r->findings))
        return false;
    f.fix = fixes[f.kind];
    f.stacks[0] = f.stack;
    f.nstacks = 1;
    r->findings[r->nfindings++] = f; /* priced at the end, merged after */
    return true;
}

/* The one finding about how this stack's blocks live and die, if any. */
static bool lifetime_finding(const mk_report_t *r, uint32_t stack,
                             const mk_stack_agg_t *a, mk_finding_t *f)
{
    char life[32];
    uint64_t frees = a->frees;
    *f = (mk_finding_t){.stack = stack};
    if (!frees)
        return false;
    mk_fmt_ns(a->lifetime_ns ? (double)a->lifetime_ns / (double)frees : 0, life,
              sizeof life);
    if (at_least(a->cross_thread, 50, frees)) {
        f->kind = MK_F_CROSS_THREAD;
        f->count = f->removable = a->cross_thread;
        snprintf(f->evidence, sizeof f->evidence,
                 "%" PRIu64 " of %" PRIu64 " blocks are freed by another thread than the "
                 "one that allocated them",
                 a->cross_thread, frees);
        return true;
    }
    if (a->max_live_blocks == 1 && a->min_size == a->max_size &&
        at_least(frees, 90, a->calls)) {
        f->kind = MK_F_HOIST;
        f->count = a->calls;
        f->removable = a->calls - 1;
        snprintf(f->evidence, sizeof f->evidence,
                 "%" PRIu64 " allocations of %" PRIu64 " bytes, never two alive at once "
                 "(each lives %s on average)",
                 a->calls, a->max_size, life);
        return true;
    }
    if (at_least(a->temporaries, 50, a->calls)) {
        f->kind = MK_F_TEMPORARY;
        f->count = f->removable = a->temporaries;
        snprintf(f->evidence, sizeof f->evidence,
                 "%" PRIu64 " of %" PRIu64 " blocks are freed before their thread "
                 "allocates anything else (%s on average)",
                 a->temporaries, a->calls, life);
        return true;
    }
    bool judged = a->max_live_blocks >= 2 && at_least(a->ordered_frees, 80, frees);
    if (judged && at_least(a->lifo_frees, 90, a->ordered_frees) &&
        a->lifo_frees > a->fifo_frees) {
        f->kind = MK_F_LIFO;
        f->count = f->removable = a->lifo_frees;
        snprintf(f->evidence, sizeof f->evidence,
                 "%" PRIu64 " of %" PRIu64
                 " frees release the youngest live block of the "
                 "site (LIFO), up to %" PRIu64 " alive at once",
                 a->lifo_frees, frees, a->max_live_blocks);
        return true;
    }
    if (judged && at_least(a->fifo_frees, 90, a->ordered_frees) &&
        a->fifo_frees > a->lifo_frees) {
        f->kind = MK_F_FIFO;
        f->count = f->removable = a->fifo_frees;
        snprintf(f->evidence, sizeof f->evidence,
                 "%" PRIu64 " of %" PRIu64 " frees release the oldest live block of the "
                 "site (FIFO), up to %" PRIu64 " alive at once",
                 a->fifo_frees, frees, a->max_live_blocks);
        return true;
    }
    if (a->min_size == a->max_size && at_least(frees, 50, a->calls)) {
        f->kind = MK_F_POOL;
        f->count = f->removable = frees;
        snprintf(f->evidence, sizeof f->evidence,
                 "%" PRIu64 " allocations, all of %" PRIu64 " bytes, %" PRIu64
                 " freed again: fixed-size churn",
                 a->calls, a->max_size, frees);
        return true;
    }
    (void)r;
    return false;
}

static bool tiny_finding(uint32_t stack, const mk_stack_agg_t *a, mk_finding_t *f)
{
    if (!at_least(a->tiny, 50, a->calls))
        return false;
    *f = (mk_finding_t){
        .kind = MK_F_TINY, .stack = stack, .count = a->tiny, .removable = a->tiny};
    snprintf(f->evidence, sizeof f->evidence,
             "%" PRIu64 " of %" PRIu64 " allocations are under %d bytes, where malloc's "
             "own header and rounding cost more than the data",
             a->tiny, a->calls, MK_TINY_SIZE);
    return true;
}

static bool realloc_finding(uint32_t stack, const mk_stack_agg_t *a, uint64_t min,
                            mk_finding_t *f)
{
    if (a->realloc_grows < min || !at_least(a->realloc_steps, 50, a->realloc_grows))
        return false;
    *f = (mk_finding_t){.kind = MK_F_REALLOC_CHAIN,
                        .stack = stack,
                        .count = a->realloc_grows,
                        .removable = a->realloc_steps};
    snprintf(f->evidence, sizeof f->evidence,
             "%" PRIu64 " reallocs grew a block, %" PRIu64 " of them a block that "
             "realloc had grown before; sizes reach %" PRIu64 " bytes",
             a->realloc_grows, a->realloc_steps, a->max_size);
    return true;
}

static int by_saving(const void *x, const void *y)
{
    const mk_finding_t *a = x, *b = y;
    if (a->removable != b->removable)
        return a->removable < b->removable ? 1 : -1;
    if (a->kind != b->kind)
        return (int)a->kind - (int)b->kind;
    return a->stack < b->stack ? -1 : a->stack > b->stack;
}

bool mk_findings_compute(mk_report_t *r)
{
    size_t cap = 0;
    uint64_t min = r->opts.min_count ? r->opts.min_count : 1;
    const mk_profile_t *p = &r->prof;
    if (p->from_summary)
        return true; /* no lifetimes in a summary */
    if (p->sampled)
        return true; /* orders and temporaries need every event: no finding from
                      * a sample (report_text.c says so) */
    for (size_t i = 0; i < r->nsites; i++) {
        const mk_stack_agg_t *a = r->sites[i].agg;
        uint32_t stack = r->sites[i].stack;
        mk_finding_t f;
        if (a->calls >= min &&
            (lifetime_finding(r, stack, a, &f) || tiny_finding(stack, a, &f)) &&
            !add(r, &cap, f))
            return false;
        if (realloc_finding(stack, a, min, &f) && !add(r, &cap, f))
            return false;
    }
    for (size_t i = 0; i < p->pairs.cap; i++) {
        const mk_kv_t *e = &p->pairs.slots[i];
        if (!e->key || e->a < min)
            continue;
        uint32_t older = (uint32_t)((e->key - 1) >> 32), younger = (uint32_t)(e->key - 1);
        const mk_stack_agg_t *a = mk_profile_stack(p, older),
                             *b = mk_profile_stack(p, younger);
        if (!a || !b)
            continue;
        uint64_t fewer = a->calls < b->calls ? a->calls : b->calls;
        if (!at_least(e->a, 80, fewer))
            continue;
        mk_finding_t f = {.kind = MK_F_PAIRED,
                          .stack = older,
                          .stack2 = younger,
                          .count = e->a,
                          .removable = e->a};
        snprintf(f.evidence, sizeof f.evidence,
                 "%" PRIu64
                 " times a block from here was allocated right before one from "
                 "the second site, and the two were freed together",
                 e->a);
        if (!add(r, &cap, f))
            return false;
    }
    if (r->nfindings > 1) /* findings may be NULL when there is none */
        qsort(r->findings, r->nfindings, sizeof *r->findings, by_saving);
    return true;
}

/* A finding's site's aggregate, and its second site's (a pair's; else NULL). */
static void site_aggs(const mk_report_t *r, const mk_finding_t *f,
                      const mk_stack_agg_t **a, const mk_stack_agg_t **b)
{
    *a = mk_profile_stack(&r->prof, f->stack);
    *b = f->kind == MK_F_PAIRED ? mk_profile_stack(&r->prof, f->stack2) : NULL;
}

static double agg_ns(const mk_stack_agg_t *a)
{
    return a ? a->alloc_ns : 0;
}

/* The measured allocator time per call (its calls' and its blocks' frees'),
 * 0 for no aggregate or one without calls. */
static double ns_per_call(const mk_stack_agg_t *a)
{
    return a && a->calls ? a->alloc_ns / (double)a->calls : 0;
}

void mk_findings_price(mk_report_t *r, double cost_ns)
{
    for (size_t i = 0; i < r->nfindings; i++) {
        mk_finding_t *f = &r->findings[i];
        const mk_stack_agg_t *a, *b;
        site_aggs(r, f, &a, &b);
        f->saving_ns = (double)f->removable * cost_ns;
        f->priced = true;
        f->npriced = 1;
        f->alloc_ns = agg_ns(a) + agg_ns(b);
    }
    r->savings_measured = false;
}

/* Biggest saving first; ties as by_saving. */
static int by_saving_ns(const void *x, const void *y)
{
    const mk_finding_t *a = x, *b = y;
    if (a->saving_ns != b->saving_ns)
        return a->saving_ns < b->saving_ns ? 1 : -1;
    return by_saving(x, y);
}

void mk_findings_measure(mk_report_t *r, double (*price_ns)(mk_report_t *))
{
    for (size_t i = 0; i < r->nfindings; i++) {
        mk_finding_t *f = &r->findings[i];
        const mk_stack_agg_t *a, *b;
        site_aggs(r, f, &a, &b);
        /* One block for two removes one call of the two (and its free), and
         * the block left costs at least what the dearer one did: a pair
         * saves the cheaper site's time per call. */
        double per = ns_per_call(a);
        if (b && ns_per_call(b) < per)
            per = ns_per_call(b);
        /* No timed call at the site read above the reading's own cost (a
         * few dozen calls, each a fast path): the price says more than 0. */
        f->priced = !(per > 0);
        f->npriced = f->priced;
        f->saving_ns = (double)f->removable * (f->priced ? price_ns(r) : per);
        f->alloc_ns = agg_ns(a) + agg_ns(b);
    }
    if (r->nfindings > 1)
        qsort(r->findings, r->nfindings, sizeof *r->findings, by_saving_ns);
    r->savings_measured = true;
}

/* ---- one finding per fix ---- */

/* A stack's allocation site, as the merge tells sites apart: the innermost
 * frame's label (function and line, or module+offset). */
static const char *site_of(mk_report_t *r, uint32_t stack, char *buf, size_t cap)
{
    mk_frame_t f;
    if (!mk_names_innermost(r->names, stack, &f))
        return "(no stack)";
    return mk_frame_label(&f, buf, cap);
}

static uint64_t finding_key(mk_report_t *r, const mk_finding_t *f)
{
    char a[1024], b[1024];
    const char *s = site_of(r, f->stack, a, sizeof a);
    uint64_t h =
        mk_hash_bytes(s, strlen(s)) ^ ((uint64_t)f->kind * 0x9e3779b97f4a7c15ull);
    if (f->kind == MK_F_PAIRED) {
        const char *t = site_of(r, f->stack2, b, sizeof b);
        h ^= mk_hash_bytes(t, strlen(t)) * 31;
    }
    return h | 1; /* 0 is an empty slot */
}

static bool same_fix(mk_report_t *r, const mk_finding_t *x, const mk_finding_t *y)
{
    char a[1024], b[1024];
    if (x->kind != y->kind)
        return false;
    if (strcmp(site_of(r, x->stack, a, sizeof a), site_of(r, y->stack, b, sizeof b)) != 0)
        return false;
    return x->kind != MK_F_PAIRED || strcmp(site_of(r, x->stack2, a, sizeof a),
                                            site_of(r, y->stack2, b, sizeof b)) == 0;
}

/* Into the finding into, which saves at least as much as f (the findings
 * are ranked): f's counts and savings, and its stack while there is room. */
static void absorb(mk_finding_t *into, const mk_finding_t *f)
{
    MK_ASSERT(into->saving_ns >= f->saving_ns || into->removable >= f->removable);
    into->count += f->count;
    into->removable += f->removable;
    into->saving_ns += f->saving_ns;
    into->alloc_ns += f->alloc_ns;
    into->npriced += f->npriced;
    into->priced = into->npriced > 0;
    if (into->nstacks < MK_FINDING_STACKS)
        into->stacks[into->nstacks] = f->stack;
    into->nstacks++;
}

bool mk_findings_merge(mk_report_t *r)
{
    if (r->nfindings < 2)
        return true;
    mk_kv_table_t index = mk_kv_heap_table(); /* key -> the first finding's index */
    size_t n = 0;
    bool ok = true;
    for (size_t i = 0; i < r->nfindings; i++) {
        mk_finding_t *f = &r->findings[i];
        bool fresh;
        mk_kv_t *e = ok ? mk_kv_put(&index, finding_key(r, f), &fresh) : NULL;
        if (!e) {
            ok = false; /* out of memory: the rest stay as they are */
            r->findings[n++] = *f;
            continue;
        }
        size_t j = n;
        if (!fresh && same_fix(r, &r->findings[e->a], f))
            j = e->a;
        else if (!fresh) /* a hash shared by two fixes: search */
            for (j = 0; j < n && !same_fix(r, &r->findings[j], f); j++)
                ;
        if (j < n) {
            absorb(&r->findings[j], f);
            continue;
        }
        if (fresh)
            e->a = n;
        r->findings[n++] = *f;
    }
    free(index.slots);
    r->nfindings = n;
    if (n > 1)
        qsort(r->findings, n, sizeof *r->findings,
              r->savings_measured ? by_saving_ns : by_saving);
    return ok;
}

/* The profile's stack index, which a load releases once the findings are
 * made, rebuilt from the site rows (which point at the aggregates). */
static bool index_stacks(mk_report_t *r)
{
    mk_profile_t *p = &r->prof;
    for (size_t i = 0; i < r->nsites; i++) {
        bool fresh;
        mk_kv_t *e = mk_kv_put(&p->stack_index, (uint64_t)r->sites[i].stack + 1, &fresh);
        if (!e)
            return false;
        e->a = (uint64_t)(r->sites[i].agg - p->stacks);
    }
    return true;
}

static mk_finding_member_t member(const mk_report_t *r, const mk_finding_t *g)
{
    const mk_stack_agg_t *a = mk_profile_stack(&r->prof, g->stack);
    uint32_t s2 = g->kind == MK_F_PAIRED ? g->stack2 : g->stack;
    const mk_stack_agg_t *b = mk_profile_stack(&r->prof, s2);
    return (mk_finding_member_t){.stack = g->stack,
                                 .stack2 = s2,
                                 .max_size = a ? a->max_size : 0,
                                 .max_size2 = b ? b->max_size : 0,
                                 .max_live_bytes =
                                     a ? a->max_live_blocks * a->max_size : 0};
}

bool mk_finding_members(mk_report_t *r, const mk_finding_t *f, mk_finding_member_t **out,
                        size_t *n)
{
    mk_finding_t *kept = r->findings;
    size_t nkept = r->nfindings, cap = 0;
    bool released = r->prof.stack_index.used == 0, ok;

    ok = !released || index_stacks(r);
    /* compute appends to r->findings: run it on an empty list of its own */
    r->findings = NULL;
    r->nfindings = 0;
    ok = ok && mk_findings_compute(r);
    mk_finding_t *all = r->findings;
    size_t nall = r->nfindings;
    r->findings = kept;
    r->nfindings = nkept;
    *out = NULL;
    *n = 0;
    for (size_t i = 0; ok && i < nall; i++)
        if (same_fix(r, f, &all[i]) &&
            (ok = mk_grow((void **)out, &cap, *n + 1, sizeof **out)))
            (*out)[(*n)++] = member(r, &all[i]);
    free(all);
    if (released) {
        free(r->prof.stack_index.slots);
        r->prof.stack_index = mk_kv_heap_table();
    }
    if (!ok) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return ok;
}

size_t mk_findings_shown(const mk_report_t *r, size_t limit)
{
    double total = 0, held = 0;
    if (limit == SIZE_MAX) /* --findings all */
        return r->nfindings;
    if (!limit)
        limit = 10;
    for (size_t i = 0; i < r->nfindings; i++)
        total += r->findings[i].saving_ns;
    size_t n = 0;
    while (n < r->nfindings && n < limit && (n == 0 || held < 0.9 * total))
        held += r->findings[n++].saving_ns;
    return n;
}
