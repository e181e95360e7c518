/*
 * summary.c - --summary-only: aggregate in process instead of writing events.
 *
 * Calls and bytes per kind, and per call site (the calling instruction), are
 * counted per thread with no sharing. Peak requested bytes need the size of
 * every freed block, so live blocks sit in an address map split into shards.
 *
 * While one thread is all there is, nothing is locked and the peak is exact:
 * the map and the counters are that thread's alone. When a second thread
 * records its first event, it waits until the others are out of their hooks
 * (as the final flush does) and switches to "multi" mode: each shard then
 * has its own small lock (threads meet only on the same shard at the same
 * moment), each thread keeps its own live totals, and the peak is sampled
 * from their sum every PEAK_SAMPLE events of each thread. No event touches a
 * shared counter, so threads do not serialize.
 */
#define _GNU_SOURCE
#include "preload.h"

#include <string.h>
#include <sys/mman.h>

/* The tables (kv_table.h) live in mmap'd memory: the tracer never mallocs.
 * Live map: key address, a = size. Site table: key site, a = calls, b = bytes. */
static void *map_alloc(size_t n)
{
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p; /* fresh mappings are zeroed */
}

static void map_release(void *p, size_t n)
{
    munmap(p, n);
}

#define MMAP_TABLE ((mk_kv_table_t){.alloc = map_alloc, .release = map_release})

/* ---- the live map ---- */

#define SHARDS 64

typedef struct shard {
    atomic_int lock;
    mk_kv_table_t map;
    char pad[64 - sizeof(atomic_int) - sizeof(mk_kv_table_t) % 64];
} shard_t;

#define PEAK_SAMPLE 64

static shard_t shards[SHARDS] = {
    [0 ... SHARDS - 1] = {.map = {.alloc = map_alloc, .release = map_release}}};
static atomic_int multi; /* 0 while one thread has recorded events */
static atomic_llong peak_bytes, peak_blocks;

typedef struct mk_site_table {
    mk_kv_table_t t;
} site_table_t;

static inline shard_t *shard_for(uintptr_t addr)
{
    return &shards[(addr >> 4) * 0x9e3779b97f4a7c15ull >> 58];
}

static inline bool shard_lock(shard_t *s)
{
    if (!atomic_load_explicit(&multi, memory_order_relaxed))
        return false; /* one thread: nothing to exclude */
    while (atomic_exchange_explicit(&s->lock, 1, memory_order_acquire))
        __builtin_ia32_pause();
    return true;
}

static inline void shard_unlock(shard_t *s, bool locked)
{
    if (locked)
        atomic_store_explicit(&s->lock, 0, memory_order_release);
}

static inline void raise_peak(atomic_llong *peak, long long now)
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
        *bytes += __atomic_load_n(&t->live_bytes, __ATOMIC_RELAXED);
        *blocks += __atomic_load_n(&t->live_blocks, __ATOMIC_RELAXED);
    }
}

static inline void update_peak(mk_thread_t *t)
{
    long long bytes, blocks;
    if (!atomic_load_explicit(&multi, memory_order_relaxed)) {
        bytes = t->live_bytes; /* the only thread: exact */
        blocks = t->live_blocks;
        if (bytes > atomic_load_explicit(&peak_bytes, memory_order_relaxed))
            atomic_store_explicit(&peak_bytes, bytes, memory_order_relaxed);
        if (blocks > atomic_load_explicit(&peak_blocks, memory_order_relaxed))
            atomic_store_explicit(&peak_blocks, blocks, memory_order_relaxed);
        return;
    }
    if (++t->since_sample < PEAK_SAMPLE)
        return;
    t->since_sample = 0;
    live_totals(&bytes, &blocks);
    raise_peak(&peak_bytes, bytes);
    raise_peak(&peak_blocks, blocks);
}

/* Live totals change only by their owner thread, never atomically shared. */
static inline void live_add(mk_thread_t *t, long long bytes, long long blocks)
{
    __atomic_store_n(&t->live_bytes, t->live_bytes + bytes, __ATOMIC_RELAXED);
    __atomic_store_n(&t->live_blocks, t->live_blocks + blocks, __ATOMIC_RELAXED);
}

/* A thread state is being added: from the second on, switch to multi mode
 * once every other thread is out of its hook. */
void mk_summary_thread_added(mk_thread_t *t)
{
    mk_thread_t *head = (mk_thread_t *)atomic_load(&mk_st.threads);
    if (atomic_load(&multi) || (head == t && !t->next))
        return;
    atomic_store(&multi, 1);
    mk_quiesce_others();
}

/* Adds a call to a site's totals: the slow path, for a site other than the
 * last one. last_site always points into the current table (a growth is
 * followed by setting it). */
static void count_site(mk_thread_t *t, uintptr_t site, size_t size)
{
    if (!t->sites) {
        t->sites = map_alloc(sizeof *t->sites);
        if (t->sites)
            t->sites->t = MMAP_TABLE;
    }
    bool fresh;
    mk_kv_t *s = t->sites ? mk_kv_put(&t->sites->t, site, &fresh) : NULL;
    if (s) {
        s->a++;
        s->b += size;
    }
    t->last_site = s;
}

void mk_summary_alloc(mk_thread_t *t, unsigned kind, size_t size, uintptr_t addr,
                      uintptr_t site)
{
    t->counts[kind]++;
    t->bytes[kind] += size;
    if (MK_LIKELY(t->last_site && t->last_site->key == site)) {
        t->last_site->a++; /* a hot loop: the same site again */
        t->last_site->b += size;
    } else {
        count_site(t, site, size);
    }
    if (!addr)
        return; /* failed: nothing became live */
    shard_t *sh = shard_for(addr);
    bool locked = shard_lock(sh);
    bool fresh;
    mk_kv_t *l = mk_kv_put(&sh->map, addr, &fresh);
    long long was = -1;
    if (l) {
        if (!fresh)
            was = (long long)l->a; /* still live to us: freed where we could not see */
        l->a = size;
    }
    shard_unlock(sh, locked);
    if (l) {
        if (was >= 0)
            live_add(t, -was, -1);
        live_add(t, (long long)size, 1);
        update_peak(t);
    }
}

void mk_summary_free(mk_thread_t *t, unsigned kind, uintptr_t addr)
{
    uint64_t size = 0;
    bool found = false;

    t->counts[kind]++; /* kind NONE: the free half of a realloc, not a call */
    if (!addr)
        return;
    shard_t *sh = shard_for(addr);
    bool locked = shard_lock(sh);
    mk_kv_t *l = mk_kv_find(&sh->map, addr);
    if (l) {
        size = l->a;
        found = true;
        mk_kv_remove(&sh->map, l);
    }
    shard_unlock(sh, locked);
    if (found) {
        live_add(t, -(long long)size, -1);  /* a thread's total may go below 0 */
        t->frees_live += kind == MK_K_FREE; /* memanalyze's Frees */
    }
}

void mk_summary_after_fork_child(void)
{
    /* The child counts from zero; what the parent left live stays live. */
    for (mk_thread_t *t = (mk_thread_t *)atomic_load(&mk_st.threads); t; t = t->next) {
        memset(t->counts, 0, sizeof t->counts);
        memset(t->bytes, 0, sizeof t->bytes);
        t->frees_live = 0;
        if (t->sites) {
            memset(t->sites->t.slots, 0, t->sites->t.cap * sizeof(mk_kv_t));
            t->sites->t.used = 0;
        }
    }
    for (int i = 0; i < SHARDS; i++)
        atomic_store(&shards[i].lock, 0);
    long long bytes, blocks;
    live_totals(&bytes, &blocks);
    atomic_store(&peak_bytes, bytes);
    atomic_store(&peak_blocks, blocks);
}

/* Writes the SUMMARY record: totals, peaks and every site. */
void mk_summary_write(void)
{
    uint64_t counts[MK_K_COUNT] = {0}, bytes[MK_K_COUNT] = {0}, frees_live = 0;
    mk_kv_table_t all = MMAP_TABLE;

    for (mk_thread_t *t = (mk_thread_t *)atomic_load(&mk_st.threads); t; t = t->next) {
        for (int k = 0; k < MK_K_COUNT; k++) {
            counts[k] += t->counts[k];
            bytes[k] += t->bytes[k];
        }
        frees_live += t->frees_live;
        for (size_t i = 0; t->sites && i < t->sites->t.cap; i++) {
            mk_kv_t *s = &t->sites->t.slots[i];
            bool fresh;
            mk_kv_t *d = s->key ? mk_kv_put(&all, s->key, &fresh) : NULL;
            if (!d)
                continue;
            d->a += s->a;
            d->b += s->b;
        }
    }
    size_t cap = 64 + MK_K_COUNT * 2 * MK_VARINT_MAX + all.used * (8 + 2 * MK_VARINT_MAX);
    uint8_t *raw =
        mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return;
    uint8_t *p = mk_put_varint(raw, MK_K_COUNT);
    for (int k = 0; k < MK_K_COUNT; k++)
        p = mk_put_varint(p, counts[k]);
    for (int k = 0; k < MK_K_COUNT; k++)
        p = mk_put_varint(p, bytes[k]);
    long long live_b, live_n;
    live_totals(&live_b, &live_n);
    raise_peak(&peak_bytes, live_b); /* the last sample may be behind */
    raise_peak(&peak_blocks, live_n);
    p = mk_put_varint(p, (uint64_t)atomic_load(&peak_bytes));
    p = mk_put_varint(p, (uint64_t)atomic_load(&peak_blocks));
    p = mk_put_varint(p, (uint64_t)(live_n > 0 ? live_n : 0));
    p = mk_put_varint(p, (uint64_t)(live_b > 0 ? live_b : 0));
    p = mk_put_varint(p, frees_live);
    p = mk_put_varint(p, all.used);
    for (size_t i = 0; i < all.cap; i++) {
        if (!all.slots[i].key)
            continue;
        p = mk_put_u64(p, all.slots[i].key);
        p = mk_put_varint(p, all.slots[i].a);
        p = mk_put_varint(p, all.slots[i].b);
    }
    mk_output_record(NULL, MK_REC_SUMMARY, raw, (size_t)(p - raw));
    munmap(raw, cap);
    if (all.slots)
        munmap(all.slots, all.cap * sizeof(mk_kv_t));
}
