/*
 * profile.c - replay: events in time order -> totals, stacks, peak, leaks.
 */
#define _GNU_SOURCE
#include "profile.h"

#include <stdlib.h>
#include <string.h>

/* The address table (kv_table.h): key address, a = size, b = stack id. */
static void *zalloc(size_t n)
{
    return calloc(1, n);
}

static void release(void *p, size_t n)
{
    (void)n;
    free(p);
}

static mk_stack_agg_t *agg_of(mk_profile_t *p, uint32_t stack)
{
    if (!mk_grow((void **)&p->stacks, &p->stacks_cap, (size_t)stack + 1,
                 sizeof *p->stacks))
        return NULL;
    p->stacks[stack].stack = stack;
    return &p->stacks[stack];
}

/* A block becomes live. Returns false when memory ran out. */
static bool block_born(mk_profile_t *p, const mk_event_t *ev)
{
    mk_stack_agg_t *a = agg_of(p, ev->stack);
    if (!a)
        return false;
    a->calls++;
    a->bytes += ev->size;
    if (!ev->addr) {
        p->failed++;
        return true;
    }
    bool fresh;
    mk_kv_t *l = mk_kv_put(&p->live, ev->addr, &fresh);
    if (!l)
        return false;
    if (!fresh) {
        /* Live already: its free was not seen (another thread's, inside the
         * same instant, or before tracing). Retire the old block. */
        p->live_bytes -= l->a;
        p->live_blocks--;
    }
    l->a = ev->size;
    l->b = ev->stack;
    p->live_bytes += ev->size;
    p->live_blocks++;
    p->total_allocated += ev->size;
    if (p->live_bytes > p->max_allocated)
        p->max_allocated = p->live_bytes;
    if (p->live_blocks > p->peak_blocks)
        p->peak_blocks = p->live_blocks;
    return true;
}

/* A block dies; false if it was not live. */
static bool block_dies(mk_profile_t *p, uint64_t addr)
{
    mk_kv_t *l = mk_kv_find(&p->live, addr);
    if (!l)
        return false;
    p->live_bytes -= l->a;
    p->live_blocks--;
    mk_kv_remove(&p->live, l);
    return true;
}

/* A free of a block that is not live: either its allocation is another
 * thread's event in the same tick that the time order put after it (a
 * producer/consumer pair), or it is a block allocated before tracing. Hold
 * it for a moment; an allocation of the address within the tie window takes
 * it, the rest are unknown frees. Few: a short array. */
typedef struct mk_pending {
    uint64_t addr, time;
    uint8_t kind;
} pending_t;

static void expire_pending(mk_profile_t *p, uint64_t now)
{
    size_t keep = 0;
    for (size_t i = 0; i < p->npending; i++) {
        if (p->pending[i].time + p->tie_ns < now)
            p->free_unknown++;
        else
            p->pending[keep++] = p->pending[i];
    }
    p->npending = keep;
}

static bool hold_free(mk_profile_t *p, const mk_event_t *ev)
{
    if (!mk_grow((void **)&p->pending, &p->pending_cap, p->npending + 1,
                 sizeof *p->pending))
        return false;
    p->pending[p->npending++] = (pending_t){ev->addr, ev->time, ev->kind};
    return true;
}

/* After a block became live: a held free of its address within the tie
 * window was its free. */
static void take_pending(mk_profile_t *p, const mk_event_t *ev)
{
    for (size_t i = 0; i < p->npending; i++) {
        if (p->pending[i].addr != ev->addr)
            continue;
        unsigned kind = p->pending[i].kind;
        p->pending[i] = p->pending[--p->npending];
        if (block_dies(p, ev->addr) && kind == MK_K_FREE)
            p->frees++;
        return;
    }
}

static bool replay_event(void *ctx, const mk_event_t *ev)
{
    mk_profile_t *p = ctx;
    unsigned k = ev->kind;

    p->events++;
    if (ev->thread > p->threads)
        p->threads = ev->thread;
    p->calls[k]++;
    p->bytes[k] += ev->size;
    if (p->npending)
        expire_pending(p, ev->time);
    switch (mk_kind_class(k)) {
    case MK_CLASS_ALLOC:
        if (!block_born(p, ev))
            return false;
        if (p->npending && ev->addr)
            take_pending(p, ev);
        return true;
    case MK_CLASS_FREE:
        if (!ev->addr)
            p->free_null++;
        else if (!block_dies(p, ev->addr))
            return hold_free(p, ev);
        else if (k == MK_K_FREE)
            p->frees++;
        return true;
    case MK_CLASS_REALLOC:
        /* NULL back with a size: failed, the old block stays. NULL back for
         * size 0: the old block was freed. */
        if (ev->old_addr && (ev->addr || ev->size == 0))
            block_dies(p, ev->old_addr);
        if (!ev->addr && ev->size == 0) {
            mk_stack_agg_t *a = agg_of(p, ev->stack);
            if (a)
                a->calls++;
            return a != NULL;
        }
        return block_born(p, ev);
    default:
        return true; /* the memory system calls are not heap blocks */
    }
}

static void derive_totals(mk_profile_t *p)
{
    const uint64_t *c = p->calls;
    p->mallocs = c[MK_K_MALLOC];
    p->callocs = c[MK_K_CALLOC];
    p->reallocs = c[MK_K_REALLOC] + c[MK_K_REALLOCARRAY];
    p->strdups = c[MK_K_STRDUP] + c[MK_K_STRNDUP];
    p->wcsdups = c[MK_K_WCSDUP];
    p->allocations = p->mallocs + p->callocs + p->reallocs + p->strdups + p->wcsdups;
    p->news =
        c[MK_K_NEW] + c[MK_K_NEW_ARRAY] + c[MK_K_NEW_ALIGNED] + c[MK_K_NEW_ARRAY_ALIGNED];
    p->deletes = c[MK_K_DELETE] + c[MK_K_DELETE_ARRAY];
    p->aligned = c[MK_K_POSIX_MEMALIGN] + c[MK_K_ALIGNED_ALLOC] + c[MK_K_MEMALIGN] +
                 c[MK_K_VALLOC] + c[MK_K_PVALLOC] + c[MK_K_NEW_ALIGNED] +
                 c[MK_K_NEW_ARRAY_ALIGNED];
    p->allocation_calls = p->allocations + p->news + c[MK_K_POSIX_MEMALIGN] +
                          c[MK_K_ALIGNED_ALLOC] + c[MK_K_MEMALIGN] + c[MK_K_VALLOC] +
                          c[MK_K_PVALLOC];
}

/* A --summary-only trace carries its totals; per-site data are by caller. */
static void from_summary(mk_profile_t *p, const mk_trace_t *tr)
{
    const mk_trace_summary_t *s = &tr->summary;
    memcpy(p->calls, s->counts, sizeof p->calls);
    memcpy(p->bytes, s->bytes, sizeof p->bytes);
    p->max_allocated = s->peak_bytes;
    p->peak_blocks = s->peak_blocks;
    p->live_blocks = s->live_blocks;
    p->live_bytes = s->live_bytes;
    p->from_summary = true;
    derive_totals(p);
    p->frees = s->frees_live;
    for (int k = 0; k < MK_K_COUNT; k++)
        if (mk_kind_class((unsigned)k) == MK_CLASS_ALLOC ||
            mk_kind_class((unsigned)k) == MK_CLASS_REALLOC)
            p->total_allocated += s->bytes[k];
}

bool mk_profile_build(mk_profile_t *p, mk_trace_t *tr)
{
    /* Times are whole ticks: events of two threads in one tick, or the next,
     * are not ordered by time. ns_per_tick is known once the walk calibrated
     * it; until then the default is close enough for a window. */
    p->tie_ns = (uint64_t)(2 * tr->ns_per_tick) + 1;
    p->live = (mk_kv_table_t){.alloc = zalloc, .release = release};
    bool ok = mk_trace_walk(tr, replay_event, p);
    p->free_unknown += p->npending; /* held to the end: never allocated */
    p->npending = 0;
    if (tr->summary.present) {
        from_summary(p, tr);
        return true;
    }
    derive_totals(p);
    /* What is still live is leaked at exit; charge it to its stacks. */
    for (size_t i = 0; i < p->live.cap; i++) {
        const mk_kv_t *l = &p->live.slots[i];
        if (!l->key)
            continue;
        mk_stack_agg_t *a = agg_of(p, (uint32_t)l->b);
        if (a) {
            a->leaked_blocks++;
            a->leaked_bytes += l->a;
        }
    }
    return ok;
}

void mk_profile_free(mk_profile_t *p)
{
    free(p->stacks);
    free(p->live.slots);
    free(p->pending);
    memset(p, 0, sizeof *p);
}

static int by_calls(const void *a, const void *b)
{
    const mk_site_t *x = a, *y = b;
    if (x->calls != y->calls)
        return x->calls < y->calls ? 1 : -1;
    return x->pc < y->pc ? -1 : x->pc > y->pc;
}

size_t mk_profile_sites(const mk_profile_t *p, const mk_trace_t *tr, mk_site_t **out)
{
    size_t n = 0, cap = 0;
    mk_site_t *sites = NULL;

    if (p->from_summary) {
        const mk_trace_summary_t *s = &tr->summary;
        sites = calloc(s->nsites ? s->nsites : 1, sizeof *sites);
        for (size_t i = 0; sites && i < s->nsites; i++)
            sites[n++] = (mk_site_t){.pc = s->sites[i].pc,
                                     .calls = s->sites[i].calls,
                                     .bytes = s->sites[i].bytes};
    } else {
        /* Group stacks by their innermost frame; a small table keyed by pc. */
        for (size_t id = 0; id < p->stacks_cap; id++) {
            const mk_stack_agg_t *a = &p->stacks[id];
            if (!a->calls && !a->leaked_blocks)
                continue;
            const mk_stack_def_t *d = mk_trace_stack(tr, (uint32_t)id);
            uint64_t pc = d && d->depth ? d->frames[0] : 0;
            size_t j;
            for (j = 0; j < n && sites[j].pc != pc; j++)
                ;
            if (j == n) {
                if (!mk_grow((void **)&sites, &cap, n + 1, sizeof *sites))
                    break;
                sites[n++] = (mk_site_t){.pc = pc};
            }
            mk_site_t *s = &sites[j];
            if (a->calls > (s->example_stack ? p->stacks[s->example_stack].calls : 0))
                s->example_stack = (uint32_t)id;
            s->calls += a->calls;
            s->bytes += a->bytes;
            s->leaked_blocks += a->leaked_blocks;
            s->leaked_bytes += a->leaked_bytes;
        }
    }
    if (sites)
        qsort(sites, n, sizeof *sites, by_calls);
    *out = sites;
    return sites ? n : 0;
}
