/*
 * meta.c - what a trace says beside its events: the module map, notes, the
 * END record, the process summary and its per-thread checkpoints
 * (format.h), absorbed into mk_trace_t.
 */
#define _GNU_SOURCE
#include "reader.h"
#include "reader_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static bool absorb_modules(mk_trace_t *tr, mk_cursor_t *c)
{
    uint64_t n = mk_get_varint(c);
    for (uint64_t i = 0; i < n && !c->err; i++) {
        mk_module_t m = {0};
        uint64_t path_len, id_len;
        m.base = mk_get_u64(c);
        const uint8_t *path = mk_get_bytes(c, &path_len);
        const uint8_t *id = mk_get_bytes(c, &id_len);
        uint64_t nseg = mk_get_varint(c);
        m.lo = UINT64_MAX;
        for (uint64_t s = 0; s < nseg && !c->err; s++) {
            uint64_t vaddr = mk_get_varint(c), memsz = mk_get_varint(c);
            if (m.base + vaddr < m.lo)
                m.lo = m.base + vaddr;
            if (m.base + vaddr + memsz > m.hi)
                m.hi = m.base + vaddr + memsz;
        }
        if (c->err || id_len > sizeof m.build_id)
            return false;
        if (!mk_grow((void **)&tr->modules, &tr->modules_cap, tr->nmodules + 1, sizeof m))
            return false;
        m.path = strndup((const char *)path, path_len);
        const char *slash = m.path ? strrchr(m.path, '/') : NULL;
        m.name = slash ? slash + 1 : m.path;
        if (m.name && strncmp(m.name, "libmemkit-preload", 17) == 0) {
            tr->own_lo = m.lo;
            tr->own_hi = m.hi;
        }
        memcpy(m.build_id, id, id_len);
        m.build_id_len = id_len;
        tr->modules[tr->nmodules++] = m;
    }
    return !c->err;
}

static bool absorb_notes(mk_trace_t *tr, mk_cursor_t *c)
{
    uint64_t flags = mk_get_varint(c), len;
    const uint8_t *by = mk_get_bytes(c, &len);
    if (c->err || flags > 0x3f)
        return false;
    tr->shadowed = (unsigned)flags;
    if (len >= sizeof tr->shadowed_by)
        len = sizeof tr->shadowed_by - 1;
    memcpy(tr->shadowed_by, by, len);
    tr->shadowed_by[len] = 0;
    return true;
}

static bool absorb_end(mk_trace_t *tr, mk_cursor_t *c)
{
    mk_trace_end_t *e = &tr->end;
    uint64_t *fields[] = {
        &e->reason,      &e->events_written, &e->events_lost, &e->threads,
        &e->maxrss_kb,   &e->minflt,         &e->majflt,      &e->utime_us,
        &e->stime_us,    &e->rchar,          &e->wchar,       &e->read_bytes,
        &e->write_bytes, &e->duration_ns,    &e->end_tick,    &e->trace_bytes};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        *fields[i] = mk_get_varint(c);
    e->present = !c->err;
    /* optional, appended later: a count, then glibc's view of its heap (a
     * reader takes the fields it knows and skips the rest) */
    if (!c->err && c->p < c->end) {
        uint64_t *view[] = {&e->glibc_arena, &e->glibc_in_use, &e->glibc_free,
                            &e->glibc_mmapped, &e->heap_rss};
        uint64_t n = mk_get_varint(c);
        for (uint64_t i = 0; i < n && !c->err; i++) {
            uint64_t v = mk_get_varint(c);
            if (i < sizeof view / sizeof view[0])
                *view[i] = v;
        }
        e->has_heap_view = !c->err && n >= sizeof view / sizeof view[0];
    }
    if (!c->err && c->p < c->end) { /* then whether switches were seen */
        e->switches_seen = mk_get_varint(c) != 0;
        e->switched_calls = mk_get_varint(c);
        e->switched_clocked = mk_get_varint(c);
        e->switches_seen = e->switches_seen && !c->err;
    }
    if (!c->err && c->p < c->end) { /* then the CPU samples: a count, the fields */
        uint64_t *oncpu[] = {&e->oncpu,         &e->oncpu_errno, &e->oncpu_period_ns,
                             &e->oncpu_threads, &e->oncpu_alloc, &e->oncpu_tracer,
                             &e->oncpu_program, &e->oncpu_lost};
        uint64_t n = mk_get_varint(c);
        for (uint64_t i = 0; i < n && !c->err; i++) {
            uint64_t v = mk_get_varint(c);
            if (i < sizeof oncpu / sizeof oncpu[0])
                *oncpu[i] = v;
        }
        if (c->err || n < sizeof oncpu / sizeof oncpu[0] || e->oncpu > 2)
            e->oncpu = 0; /* damaged: as if not sampled */
    }
    return !c->err;
}

/* SUMMARY and SUMMARY_PART alike: varint nkinds, then nkinds calls and
 * nkinds bytes; kinds this reader does not know are skipped. */
static bool get_kind_totals(mk_cursor_t *c, uint64_t counts[MK_K_COUNT],
                            uint64_t bytes[MK_K_COUNT])
{
    uint64_t nkinds = mk_get_varint(c);
    if (c->err || nkinds > 255)
        return false;
    for (int pass = 0; pass < 2; pass++)
        for (uint64_t k = 0; k < nkinds; k++) {
            uint64_t v = mk_get_varint(c);
            if (k < MK_K_COUNT)
                (pass ? bytes : counts)[k] = v;
        }
    return !c->err;
}

/* And their sites: varint n, then n x (u64 pc, varint calls, varint bytes),
 * into a new array; NULL if malformed or out of memory. */
static mk_summary_site_t *get_sites(mk_cursor_t *c, size_t *nsites)
{
    uint64_t n = mk_get_varint(c);
    if (c->err || n > (uint64_t)(c->end - c->p) / 10) /* 10: a site's least bytes */
        return NULL;
    mk_summary_site_t *sites = calloc(n ? n : 1, sizeof *sites);
    if (!sites)
        return NULL;
    for (uint64_t i = 0; i < n && !c->err; i++) {
        sites[i].pc = mk_get_u64(c);
        sites[i].calls = mk_get_varint(c);
        sites[i].bytes = mk_get_varint(c);
    }
    if (c->err) {
        free(sites);
        return NULL;
    }
    *nsites = (size_t)n;
    return sites;
}

/* A SAMPLES record (format.h): the latest's counts replace the earlier's;
 * a snapshot's time joins the list. */
static bool absorb_samples(mk_trace_t *tr, mk_cursor_t *c)
{
    mk_trace_sampling_t *s = &tr->sampling;
    uint64_t counts[MK_K_COUNT] = {0}, bytes[MK_K_COUNT] = {0};
    uint64_t mean = mk_get_varint(c), seed = mk_get_varint(c);
    uint64_t reason = mk_get_varint(c), at = mk_get_varint(c);
    if (c->err || mean == 0 || mean > (1ull << 30) || reason > MK_SAMPLES_END ||
        !get_kind_totals(c, counts, bytes))
        return false;
    uint64_t live = mk_get_varint(c);
    if (c->err)
        return false;
    if (reason == MK_SAMPLES_SNAPSHOT) {
        if (!mk_grow((void **)&s->snapshots, &s->snapshots_cap, s->nsnapshots + 1,
                     sizeof *s->snapshots))
            return false;
        s->snapshots[s->nsnapshots++] = at;
    }
    s->present = true;
    s->mean = mean;
    s->seed = seed;
    if (at >= s->at_ns || reason == MK_SAMPLES_END) {
        s->at_ns = at;
        s->ended = reason == MK_SAMPLES_END;
        memcpy(s->counts, counts, sizeof counts);
        memcpy(s->bytes, bytes, sizeof bytes);
        s->live_samples = live;
    }
    return true;
}

static bool absorb_summary(mk_trace_t *tr, mk_cursor_t *c)
{
    mk_trace_summary_t *s = &tr->summary;
    if (!get_kind_totals(c, s->counts, s->bytes))
        return false;
    s->peak_bytes = mk_get_varint(c);
    s->peak_blocks = mk_get_varint(c);
    s->live_blocks = mk_get_varint(c);
    s->live_bytes = mk_get_varint(c);
    s->frees_live = mk_get_varint(c);
    mk_summary_site_t *sites = get_sites(c, &s->nsites);
    if (!sites)
        return false;
    free(s->sites);
    s->sites = sites;
    s->present = true;
    s->has_times = c->p < c->end; /* added later, so optional */
    if (s->has_times) {
        s->alloc_cycles = mk_get_varint(c);
        s->slow_cycles = mk_get_varint(c);
        s->slow_calls = mk_get_varint(c);
        s->timed_calls = mk_get_varint(c);
    }
    return !c->err;
}

/* A SUMMARY_PART: replaces the same state's earlier part. */
static bool absorb_part(mk_trace_t *tr, mk_cursor_t *c)
{
    mk_summary_part_t p = {.id = mk_get_varint(c), .at_ns = mk_get_varint(c)};
    if (!get_kind_totals(c, p.counts, p.bytes))
        return false;
    p.frees_unseen = mk_get_varint(c);
    p.live_bytes = mk_unzigzag(mk_get_varint(c));
    p.live_blocks = mk_unzigzag(mk_get_varint(c));
    p.peak_bytes = mk_get_varint(c);
    p.peak_blocks = mk_get_varint(c);
    p.sites = get_sites(c, &p.nsites);
    if (!p.sites)
        return false;
    size_t i = 0;
    while (i < tr->nparts && tr->parts[i].id != p.id)
        i++;
    if (i == tr->nparts) {
        if (!mk_grow((void **)&tr->parts, &tr->parts_cap, i + 1, sizeof *tr->parts)) {
            free(p.sites);
            return false;
        }
        tr->nparts++;
    } else {
        free(tr->parts[i].sites);
    }
    tr->parts[i] = p;
    return true;
}

static int by_site_pc(const void *a, const void *b)
{
    const mk_summary_site_t *x = a, *y = b;
    return (x->pc > y->pc) - (x->pc < y->pc);
}

bool mk_trace_summary_from_parts(mk_trace_t *tr)
{
    mk_trace_summary_t *s = &tr->summary;
    if (s->present || !tr->nparts)
        return true;
    size_t n = 0;
    for (size_t i = 0; i < tr->nparts; i++)
        n += tr->parts[i].nsites;
    mk_summary_site_t *sites = calloc(n ? n : 1, sizeof *sites);
    if (!sites)
        return false;
    uint64_t frees_unseen = 0;
    int64_t live_bytes = 0, live_blocks = 0;
    n = 0;
    for (size_t i = 0; i < tr->nparts; i++) {
        const mk_summary_part_t *p = &tr->parts[i];
        for (int k = 0; k < MK_K_COUNT; k++) {
            s->counts[k] += p->counts[k];
            s->bytes[k] += p->bytes[k];
        }
        for (size_t j = 0; j < p->nsites; j++) {
            unsigned kind = (unsigned)(p->sites[j].pc >> MK_SITE_KIND_SHIFT);
            if (kind < MK_K_COUNT) {
                s->counts[kind] += p->sites[j].calls;
                s->bytes[kind] += p->sites[j].bytes;
            }
            sites[n] = p->sites[j];
            sites[n++].pc &= (1ull << MK_SITE_KIND_SHIFT) - 1;
        }
        frees_unseen += p->frees_unseen;
        live_bytes += p->live_bytes;
        live_blocks += p->live_blocks;
        s->peak_bytes = p->peak_bytes > s->peak_bytes ? p->peak_bytes : s->peak_bytes;
        s->peak_blocks =
            p->peak_blocks > s->peak_blocks ? p->peak_blocks : s->peak_blocks;
        s->parts_at_ns = p->at_ns > s->parts_at_ns ? p->at_ns : s->parts_at_ns;
    }
    /* One site per calling instruction, whatever it called and which thread. */
    qsort(sites, n, sizeof *sites, by_site_pc);
    size_t m = 0;
    for (size_t j = 0; j < n; j++) {
        if (m && sites[m - 1].pc == sites[j].pc) {
            sites[m - 1].calls += sites[j].calls;
            sites[m - 1].bytes += sites[j].bytes;
        } else {
            sites[m++] = sites[j];
        }
    }
    s->live_bytes = live_bytes > 0 ? (uint64_t)live_bytes : 0;
    s->live_blocks = live_blocks > 0 ? (uint64_t)live_blocks : 0;
    /* Parts written at different times: the peak is at least what they hold. */
    s->peak_bytes = s->live_bytes > s->peak_bytes ? s->live_bytes : s->peak_bytes;
    s->peak_blocks = s->live_blocks > s->peak_blocks ? s->live_blocks : s->peak_blocks;
    s->frees_live =
        s->counts[MK_K_FREE] > frees_unseen ? s->counts[MK_K_FREE] - frees_unseen : 0;
    free(s->sites);
    s->sites = sites;
    s->nsites = m;
    s->from_parts = s->present = true;
    return true;
}

bool mk_trace_absorb(mk_trace_t *tr, unsigned type, const uint8_t *raw, size_t len)
{
    mk_cursor_t c = {raw, raw + len, 0};
    bool ok = true;

    switch (type) {
    case MK_REC_MODULES:
        ok = absorb_modules(tr, &c);
        break;
    case MK_REC_END:
        ok = absorb_end(tr, &c);
        break;
    case MK_REC_SUMMARY:
        ok = absorb_summary(tr, &c);
        break;
    case MK_REC_SUMMARY_PART:
        ok = absorb_part(tr, &c);
        break;
    case MK_REC_NOTES:
        ok = absorb_notes(tr, &c);
        break;
    case MK_REC_SAMPLES:
        ok = absorb_samples(tr, &c);
        break;
    default:
        break; /* unknown record types from newer writers are skipped */
    }
    if (!ok)
        mk_trace_damage(tr, "malformed record (type %u) before offset %" PRIu64, type,
                        tr->offset);
    return ok;
}

const mk_module_t *mk_trace_module_at(const mk_trace_t *tr, uint64_t addr)
{
    for (size_t i = tr->nmodules; i-- > 0;)
        if (addr >= tr->modules[i].lo && addr < tr->modules[i].hi)
            return &tr->modules[i];
    return NULL;
}
