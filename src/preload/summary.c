/*
 * summary.c - --summary-only: aggregate in process instead of writing events.
 * The event path is inline (summary.h); here are its slow parts (a new call
 * site, a peak sample, the switch to multi mode), the SUMMARY record
 * written at the end, and the checkpoints before it.
 *
 * Checkpoints: the SUMMARY comes at the process's end, which SIGKILL (the
 * OOM killer's too) never lets come, so a thread also writes its own totals
 * so far now and then, as a SUMMARY_PART record (format.h): at 1 s into the
 * run, then at gaps doubling to 64 s, so that a long run writes a record a
 * minute per thread at most. Only the thread itself reads its table (another
 * thread's may be growing), so each thread writes its own part; a reader of
 * a trace without a SUMMARY adds up each state's last part. The clock is
 * read on the slow paths only (a new site, a peak sample), one call in
 * MK_CHECKPOINT_GATE: a thread that stays on one site and in one band of
 * live bytes (a loop freeing what it just allocated) writes none.
 */
#define _GNU_SOURCE
#include "summary.h"

#include "output.h"

#include <assert.h>
#include <errno.h>
#include <string.h>

#define MK_CHECKPOINT_FIRST_NS 1000000000ull        /* the first, 1 s into the run */
#define MK_CHECKPOINT_MAX_NS   (64ull * 1000000000) /* the longest gap */
#define MK_CHECKPOINT_GATE     64u                  /* slow-path calls per clock read */

static void maybe_checkpoint(mk_thread_t *t);

/* Site table: key site, a = calls, b = bytes, in mmap'd memory. */
#define MMAP_TABLE ((mk_kv_table_t){.alloc = mk_pages_table, .release = mk_pages_release})

typedef struct mk_site_table {
    mk_kv_table_t t;
} site_table_t;

atomic_int mk_summary_multi;
mk_kv_t mk_summary_no_site; /* key 0: matches no site */
atomic_llong mk_summary_peak_bytes, mk_summary_peak_blocks;

static void raise_peak(atomic_llong *peak, long long now)
{
    long long p = atomic_load_explicit(peak, memory_order_relaxed);
    while (now > p && !atomic_compare_exchange_weak_explicit(
                          peak, &p, now, memory_order_relaxed, memory_order_relaxed))
        ;
}

/* The live totals: the sum over every thread state (racy reads of the others'
 * counters: a sample). */
static void live_totals(long long *bytes, long long *blocks)
{
    *bytes = *blocks = 0;
    for (mk_thread_t *t = (mk_thread_t *)atomic_load(&mk_st.threads); t; t = t->next) {
        *bytes += __atomic_load_n(&mk_summary_of(t)->live_bytes, __ATOMIC_RELAXED);
        *blocks += __atomic_load_n(&mk_summary_of(t)->live_blocks, __ATOMIC_RELAXED);
    }
}

/* The band around the thread's present share (summary.h). */
static void set_band(mk_thread_t *t)
{
    mk_summary_of(t)->sample_hi = mk_summary_of(t)->live_bytes + MK_PEAK_SLACK;
    mk_summary_of(t)->sample_lo = mk_summary_of(t)->live_bytes - MK_PEAK_SLACK;
    mk_summary_of(t)->sample_hi_blocks =
        mk_summary_of(t)->live_blocks + MK_PEAK_SLACK_BLOCKS;
    mk_summary_of(t)->sample_lo_blocks =
        mk_summary_of(t)->live_blocks - MK_PEAK_SLACK_BLOCKS;
}

void mk_summary_sample_peak(mk_thread_t *t)
{
    long long bytes, blocks;
    set_band(t);
    live_totals(&bytes, &blocks);
    raise_peak(&mk_summary_peak_bytes, bytes);
    raise_peak(&mk_summary_peak_blocks, blocks);
    maybe_checkpoint(t);
}

/* A thread state is being added: from the second on, switch to multi mode;
 * true when the caller must then wait until every other thread is out of its
 * hook (so that no thread is between reading its own totals and raising the
 * peak with them). */
bool mk_summary_thread_added(mk_thread_t *t)
{
    if (!mk_summary_of(t)->last_site) { /* a new state, not one an exited thread left */
        mk_summary_of(t)->last_site = &mk_summary_no_site;
        set_band(t);
    }
    mk_thread_t *head = (mk_thread_t *)atomic_load(&mk_st.threads);
    if (atomic_load(&mk_summary_multi) || (head == t && !t->next))
        return false;
    /* One waiter: two new states, each taken (in_hook set) while it is
     * made, would wait for each other. */
    return !atomic_exchange(&mk_summary_multi, 1);
}

/* Adds a call to a site's totals: the slow path, for a site other than the
 * last one. last_site always points into the current table (a growth is
 * followed by setting it). */
void mk_summary_count_site(mk_thread_t *t, uint64_t key, size_t size)
{
    int saved_errno = errno; /* a new or growing table maps memory */
    if (!mk_summary_of(t)->sites) {
        mk_summary_of(t)->sites = mk_pages_zeroed(sizeof *mk_summary_of(t)->sites);
        if (mk_summary_of(t)->sites)
            mk_summary_of(t)->sites->t = MMAP_TABLE;
    }
    bool fresh;
    mk_kv_t *s = mk_summary_of(t)->sites
                     ? mk_kv_put(&mk_summary_of(t)->sites->t, key, &fresh)
                     : NULL;
    if (s) {
        s->a++;
        s->b += size;
    } else { /* no room for the site: its kind's totals still count it */
        unsigned kind = (unsigned)(key >> MK_SITE_KIND_SHIFT);
        t->counts[kind]++;
        t->bytes[kind] += size;
    }
    mk_summary_of(t)->last_site = s ? s : &mk_summary_no_site;
    maybe_checkpoint(t);
    errno = saved_errno;
}

void mk_summary_after_fork_child(void)
{
    /* The child counts from zero; what the parent left live stays live. */
    for (mk_thread_t *t = (mk_thread_t *)atomic_load(&mk_st.threads); t; t = t->next) {
        memset(t->counts, 0, sizeof t->counts);
        memset(t->bytes, 0, sizeof t->bytes);
        mk_summary_of(t)->frees_unseen = 0;
        t->w.slow_sum = t->w.timed_sum = 0;
        t->w.slow_calls = t->w.timed_calls = t->w.switched = t->w.switched_clocked = 0;
        if (mk_summary_of(t)->sites) {
            memset(mk_summary_of(t)->sites->t.slots, 0,
                   mk_summary_of(t)->sites->t.cap * sizeof(mk_kv_t));
            mk_summary_of(t)->sites->t.used = 0;
        }
    }
    mk_live_after_fork_child();
    long long bytes, blocks;
    live_totals(&bytes, &blocks);
    atomic_store(&mk_summary_peak_bytes, bytes);
    atomic_store(&mk_summary_peak_blocks, blocks);
}

/* ---- the records: SUMMARY and SUMMARY_PART share their layout's parts ---- */

/* Bytes a record with nsites sites needs at most. */
static size_t record_cap(size_t nsites)
{
    return 192 + MK_K_COUNT * 2 * MK_VARINT_MAX + nsites * (8 + 2 * MK_VARINT_MAX);
}

/* varint nkinds, then the calls and the bytes of every kind. */
static uint8_t *put_kind_totals(uint8_t *p, const uint64_t counts[MK_K_COUNT],
                                const uint64_t bytes[MK_K_COUNT])
{
    p = mk_put_varint(p, MK_K_COUNT);
    for (int k = 0; k < MK_K_COUNT; k++)
        p = mk_put_varint(p, counts[k]);
    for (int k = 0; k < MK_K_COUNT; k++)
        p = mk_put_varint(p, bytes[k]);
    return p;
}

/* varint n, then a site table's n entries: u64 key, varint calls, varint
 * bytes. used counts the table's keys (sites are never removed), so the loop
 * finds n of them; the bound keeps record_cap's buffer safe regardless. */
static uint8_t *put_sites(uint8_t *p, const mk_kv_table_t *sites)
{
    size_t n = sites ? sites->used : 0, written = 0;
    p = mk_put_varint(p, n);
    for (size_t i = 0; sites && i < sites->cap && written < n; i++) {
        const mk_kv_t *s = &sites->slots[i];
        if (!s->key)
            continue;
        p = mk_put_u64(p, s->key);
        p = mk_put_varint(p, s->a);
        p = mk_put_varint(p, s->b);
        written++;
    }
    assert(written == n);
    return p;
}

/* Writes the thread's SUMMARY_PART: its own counts, share and sites. */
static void write_part(mk_thread_t *t, uint64_t now_ns)
{
    const mk_kv_table_t *sites =
        mk_summary_of(t)->sites ? &mk_summary_of(t)->sites->t : NULL;
    size_t cap = record_cap(sites ? sites->used : 0);
    uint8_t *raw = mk_pages_zeroed(cap);
    if (!raw)
        return;
    uint8_t *p = mk_put_varint(raw, t->state_id);
    p = mk_put_varint(p, now_ns);
    p = put_kind_totals(p, t->counts, t->bytes);
    p = mk_put_varint(p, mk_summary_of(t)->frees_unseen);
    p = mk_put_varint(p, mk_zigzag(mk_summary_of(t)->live_bytes));
    p = mk_put_varint(p, mk_zigzag(mk_summary_of(t)->live_blocks));
    p = mk_put_varint(p, (uint64_t)atomic_load(&mk_summary_peak_bytes));
    p = mk_put_varint(p, (uint64_t)atomic_load(&mk_summary_peak_blocks));
    p = put_sites(p, sites);
    mk_output_record(NULL, MK_REC_SUMMARY_PART, raw, (size_t)(p - raw));
    mk_pages_release(raw, cap);
}

/* A checkpoint if this thread's is due (see the top of the file). Called in
 * the thread's own hook, which the program's errno must leave unchanged. */
static void maybe_checkpoint(mk_thread_t *t)
{
    if (++mk_summary_of(t)->checkpoint_gate % MK_CHECKPOINT_GATE)
        return;
    uint64_t now = mk_now() - mk_st.t_start;
    if (!mk_summary_of(t)
             ->checkpoint_every_ns) { /* a new state: its first is 1 s into the run */
        mk_summary_of(t)->checkpoint_every_ns = MK_CHECKPOINT_FIRST_NS;
        mk_summary_of(t)->checkpoint_due_ns = MK_CHECKPOINT_FIRST_NS;
    }
    if (now < mk_summary_of(t)->checkpoint_due_ns || mk_st.fd < 0)
        return;
    int saved_errno = errno;
    write_part(t, now);
    errno = saved_errno;
    mk_summary_of(t)->checkpoint_due_ns = now + mk_summary_of(t)->checkpoint_every_ns;
    if (mk_summary_of(t)->checkpoint_every_ns < MK_CHECKPOINT_MAX_NS)
        mk_summary_of(t)->checkpoint_every_ns *= 2;
}

/* Writes the SUMMARY record: totals, peaks and every site. */
void mk_summary_write(void)
{
    uint64_t counts[MK_K_COUNT] = {0}, bytes[MK_K_COUNT] = {0}, frees_unseen = 0;
    uint64_t slow_calls = 0, timed_calls = 0;
    double slow_sum = 0, timed_sum = 0;
    mk_kv_table_t all = MMAP_TABLE;

    /* the threads' sites come in their tables' order: reserve (kv_table.h);
     * short of memory, the puts below grow the table as they go */
    size_t sites = 0;
    for (mk_thread_t *t = (mk_thread_t *)atomic_load(&mk_st.threads); t; t = t->next)
        sites += mk_summary_of(t)->sites ? mk_summary_of(t)->sites->t.used : 0;
    mk_kv_reserve(&all, sites);

    for (mk_thread_t *t = (mk_thread_t *)atomic_load(&mk_st.threads); t; t = t->next) {
        for (int k = 0; k < MK_K_COUNT; k++) {
            counts[k] += t->counts[k];
            bytes[k] += t->bytes[k];
        }
        frees_unseen += mk_summary_of(t)->frees_unseen;
        slow_sum += t->w.slow_sum;
        timed_sum += t->w.timed_sum;
        slow_calls += t->w.slow_calls;
        timed_calls += t->w.timed_calls;
        for (size_t i = 0; mk_summary_of(t)->sites && i < mk_summary_of(t)->sites->t.cap;
             i++) {
            mk_kv_t *s = &mk_summary_of(t)->sites->t.slots[i];
            if (!s->key)
                continue;
            unsigned kind = (unsigned)(s->key >> MK_SITE_KIND_SHIFT);
            counts[kind] += s->a;
            bytes[kind] += s->b;
            /* The record's sites are calling instructions, whatever they called. */
            bool fresh;
            uint64_t site = s->key & ((1ull << MK_SITE_KIND_SHIFT) - 1);
            mk_kv_t *d = mk_kv_put(&all, site, &fresh);
            if (!d)
                continue;
            d->a += s->a;
            d->b += s->b;
        }
    }
    size_t cap = record_cap(all.used);
    uint8_t *raw = mk_pages_zeroed(cap);
    if (!raw) {
        mk_kv_release(&all);
        return;
    }
    uint8_t *p = put_kind_totals(raw, counts, bytes);
    long long live_b, live_n;
    live_totals(&live_b, &live_n);
    raise_peak(&mk_summary_peak_bytes, live_b); /* the last sample may be behind */
    raise_peak(&mk_summary_peak_blocks, live_n);
    p = mk_put_varint(p, (uint64_t)atomic_load(&mk_summary_peak_bytes));
    p = mk_put_varint(p, (uint64_t)atomic_load(&mk_summary_peak_blocks));
    p = mk_put_varint(p, (uint64_t)(live_n > 0 ? live_n : 0));
    p = mk_put_varint(p, (uint64_t)(live_b > 0 ? live_b : 0));
    p = mk_put_varint(p, counts[MK_K_FREE] - frees_unseen); /* memanalyze's Frees */
    p = put_sites(p, &all);
    if (mk_st.timing) { /* added later, so optional: the allocator's time */
        p = mk_put_varint(p, (uint64_t)(slow_sum + timed_sum));
        p = mk_put_varint(p, (uint64_t)slow_sum);
        p = mk_put_varint(p, slow_calls);
        p = mk_put_varint(p, slow_calls + timed_calls);
    }
    mk_output_record(NULL, MK_REC_SUMMARY, raw, (size_t)(p - raw));
    mk_pages_release(raw, cap);
    mk_kv_release(&all);
}
