/*
 * summary.c - --summary-only: aggregate in process instead of writing events.
 *
 * Calls and bytes per kind, and per call site (the calling instruction), are
 * counted per thread with no sharing. Peak requested bytes need the size of
 * every freed block, so live blocks sit in an address map split into shards,
 * each with its own small lock: threads meet only when they touch the same
 * shard at the same moment. Live totals are global atomics so the peak is
 * the true high-water mark, not a sum of per-thread peaks.
 */
#define _GNU_SOURCE
#include "preload.h"

#include <string.h>
#include <sys/mman.h>

/* ---- open-addressing tables in mmap'd memory ---- */

typedef struct kv {
    uintptr_t key; /* 0: empty */
    uint64_t a, b; /* live map: size, -; site table: calls, bytes */
} kv_t;

typedef struct kv_table {
    kv_t *slots;
    size_t cap, used; /* cap is a power of two */
} kv_table_t;

static inline size_t slot_of(uintptr_t key, size_t cap)
{
    uint64_t h = (uint64_t)key * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 20) & (cap - 1);
}

static bool table_grow(kv_table_t *t)
{
    size_t cap = t->cap ? t->cap * 2 : 1024;
    kv_t *s = mmap(NULL, cap * sizeof(kv_t), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (s == MAP_FAILED)
        return false;
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->slots[i].key)
            continue;
        size_t j = slot_of(t->slots[i].key, cap);
        while (s[j].key)
            j = (j + 1) & (cap - 1);
        s[j] = t->slots[i];
    }
    if (t->slots)
        munmap(t->slots, t->cap * sizeof(kv_t));
    t->slots = s;
    t->cap = cap;
    return true;
}

/* The slot holding key, or the empty slot where it goes (NULL: no memory). */
static kv_t *table_find(kv_table_t *t, uintptr_t key, bool insert)
{
    if (insert && (t->used + 1) * 4 > t->cap * 3 && !table_grow(t))
        return NULL;
    if (!t->cap)
        return NULL;
    for (size_t i = slot_of(key, t->cap);; i = (i + 1) & (t->cap - 1)) {
        kv_t *s = &t->slots[i];
        if (s->key == key)
            return s;
        if (!s->key)
            return insert ? s : NULL;
    }
}

/* Removes s, shifting later members of its probe run back (no tombstones). */
static void table_remove(kv_table_t *t, kv_t *s)
{
    size_t mask = t->cap - 1, hole = (size_t)(s - t->slots);
    for (size_t i = (hole + 1) & mask; t->slots[i].key; i = (i + 1) & mask) {
        size_t home = slot_of(t->slots[i].key, t->cap);
        /* Move i into the hole unless its home lies cyclically in (hole, i]. */
        if (((i - home) & mask) >= ((i - hole) & mask)) {
            t->slots[hole] = t->slots[i];
            hole = i;
        }
    }
    t->slots[hole].key = 0;
    t->used--;
}

/* ---- the live map ---- */

#define SHARDS 64

typedef struct shard {
    atomic_int lock;
    kv_table_t map;
    char pad[64 - sizeof(atomic_int) - sizeof(kv_table_t) % 64];
} shard_t;

static shard_t shards[SHARDS];
static atomic_ullong live_bytes, live_blocks, peak_bytes, peak_blocks;

typedef struct mk_site_table {
    kv_table_t t;
} site_table_t;

static inline shard_t *shard_for(uintptr_t addr)
{
    return &shards[(addr >> 4) * 0x9e3779b97f4a7c15ull >> 58];
}

static inline void shard_lock(shard_t *s)
{
    while (atomic_exchange_explicit(&s->lock, 1, memory_order_acquire))
        __builtin_ia32_pause();
}

static inline void raise_peak(atomic_ullong *peak, uint64_t now)
{
    unsigned long long p = atomic_load_explicit(peak, memory_order_relaxed);
    while (now > p && !atomic_compare_exchange_weak_explicit(
                          peak, &p, now, memory_order_relaxed, memory_order_relaxed))
        ;
}

void mk_summary_init(void) {}

void mk_summary_alloc(mk_thread_t *t, unsigned kind, size_t size, uintptr_t addr,
                      uintptr_t site)
{
    t->counts[kind]++;
    t->bytes[kind] += size;
    if (!t->sites) {
        site_table_t *st = mmap(NULL, sizeof *st, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        t->sites = st == MAP_FAILED ? NULL : st;
    }
    kv_t *s = t->sites ? table_find(&t->sites->t, site, true) : NULL;
    if (s) {
        if (!s->key) {
            s->key = site;
            t->sites->t.used++;
        }
        s->a++;
        s->b += size;
    }
    if (!addr)
        return; /* failed: nothing became live */
    shard_t *sh = shard_for(addr);
    shard_lock(sh);
    kv_t *l = table_find(&sh->map, addr, true);
    if (l) {
        if (!l->key) {
            l->key = addr;
            sh->map.used++;
        } else {
            /* Still live to us: freed where we could not see it. Replace it. */
            atomic_fetch_sub(&live_bytes, l->a);
            atomic_fetch_sub(&live_blocks, 1);
        }
        l->a = size;
    }
    atomic_store_explicit(&sh->lock, 0, memory_order_release);
    if (l) {
        raise_peak(&peak_bytes, atomic_fetch_add(&live_bytes, size) + size);
        raise_peak(&peak_blocks, atomic_fetch_add(&live_blocks, 1) + 1);
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
    shard_lock(sh);
    kv_t *l = table_find(&sh->map, addr, false);
    if (l) {
        size = l->a;
        found = true;
        table_remove(&sh->map, l);
    }
    atomic_store_explicit(&sh->lock, 0, memory_order_release);
    if (found) {
        atomic_fetch_sub(&live_bytes, size);
        atomic_fetch_sub(&live_blocks, 1);
    }
}

void mk_summary_after_fork_child(void)
{
    /* The child counts from zero; what the parent left live stays live. */
    for (mk_thread_t *t = (mk_thread_t *)atomic_load(&mk_st.threads); t; t = t->next) {
        memset(t->counts, 0, sizeof t->counts);
        memset(t->bytes, 0, sizeof t->bytes);
        if (t->sites) {
            memset(t->sites->t.slots, 0, t->sites->t.cap * sizeof(kv_t));
            t->sites->t.used = 0;
        }
    }
    for (int i = 0; i < SHARDS; i++)
        atomic_store(&shards[i].lock, 0);
    atomic_store(&peak_bytes, atomic_load(&live_bytes));
    atomic_store(&peak_blocks, atomic_load(&live_blocks));
}

/* Writes the SUMMARY record: totals, peaks and every site. */
void mk_summary_write(void)
{
    uint64_t counts[MK_K_COUNT] = {0}, bytes[MK_K_COUNT] = {0};
    kv_table_t all = {0};

    for (mk_thread_t *t = (mk_thread_t *)atomic_load(&mk_st.threads); t; t = t->next) {
        for (int k = 0; k < MK_K_COUNT; k++) {
            counts[k] += t->counts[k];
            bytes[k] += t->bytes[k];
        }
        for (size_t i = 0; t->sites && i < t->sites->t.cap; i++) {
            kv_t *s = &t->sites->t.slots[i];
            kv_t *d = s->key ? table_find(&all, s->key, true) : NULL;
            if (!d)
                continue;
            if (!d->key) {
                d->key = s->key;
                all.used++;
            }
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
    p = mk_put_varint(p, atomic_load(&peak_bytes));
    p = mk_put_varint(p, atomic_load(&peak_blocks));
    p = mk_put_varint(p, atomic_load(&live_blocks));
    p = mk_put_varint(p, atomic_load(&live_bytes));
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
        munmap(all.slots, all.cap * sizeof(kv_t));
}
