/*
 * stacks.c - call-stack capture and interning for the tracer.
 *
 * Capture uses libunwind (loaded when first needed: below), which reads the
 * DWARF unwind tables, so programs built without frame pointers (all of
 * Debian) get full stacks: its
 * unw_backtrace, whose per-thread cache of frame layouts by code address
 * walks known frames with plain loads (unwind_fast), and unw_step where that
 * cannot start (unwind). On top, memkit's own cache (below) makes repeated
 * stacks a few loads.
 *
 * Interning: an open-addressing table maps a stack (hash, frames) to a small
 * id. Lookups take no lock; a new stack is added under a lock, which keeps
 * one record per stack while the table grows. Records live in an mmap'd
 * arena bumped with one atomic add. Ids are dense from 1; 0 means "no
 * stack" (table or arena full: counted, said once).
 *
 * Most allocations come from a few hot paths, so each thread keeps a cache
 * of recent stacks (64 entries, more on busy threads: below), keyed by the
 * hook's (return address, frame address), and remembers where on the stack
 * each return address of the stack was found. A hit re-reads those slots: if
 * every one still holds the same return address at the same place, the
 * unwinder would walk the very same frames (each frame's size follows from
 * its code address), so the cached id is the stack's id: a few loads
 * instead of a DWARF walk.
 *
 * A stack's definition is written by the first thread that uses it in the
 * current file (generation): another thread may use the id in an event that
 * reaches the file first, so readers resolve ids at the end, not in order.
 */
#define _GNU_SOURCE
#include "stacks.h"

#include "elf_sym.h"

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <unwind.h>

/* ---- libunwind, loaded when first needed ----
 *
 * It is no dependency of the tracer: --sample walks with libgcc and needs it
 * only once the program registers unwind tables, and loading it (with its
 * liblzma) cost every sampled process about 0.2 ms before any sample. Full
 * tracing loads it at start-up (mk_stacks_init). RTLD_LOCAL: its own
 * _Unwind_* functions never stand in for libgcc's in the program. The names
 * are the header's (unw_step is a macro for the architecture's symbol). */
#define MK_LIBUNWIND "libunwind.so.8"
#define MK_NAME_(x)  #x
#define MK_NAME(x)   MK_NAME_(x)

static struct {
    __typeof__(unw_tdep_getcontext) *getcontext;
    __typeof__(unw_init_local) *init_local;
    __typeof__(unw_step) *step;
    __typeof__(unw_get_reg) *get_reg;
    __typeof__(unw_is_signal_frame) *is_signal_frame;
    __typeof__(unw_set_caching_policy) *set_caching_policy;
    __typeof__(unw_flush_cache) *flush_cache;
    __typeof__(unw_backtrace) *backtrace;
    unw_addr_space_t *local_as;
} unw;
static atomic_int unw_state; /* 0 not tried, 1 loading, 2 loaded, 3 not there */

/* libunwind's code, for the calls it makes from within a capture. */
static uintptr_t unwinder_lo, unwinder_hi;

static bool unw_open(void)
{
    void *h = mk_own_dlopen(MK_LIBUNWIND, RTLD_NOW | RTLD_LOCAL);
    uintptr_t lo, hi;

    if (!h)
        return false;
#define UNW_SYM(field, name) (unw.field = (__typeof__(unw.field))dlsym(h, MK_NAME(name)))
    if (!UNW_SYM(getcontext, unw_tdep_getcontext) ||
        !UNW_SYM(init_local, unw_init_local) || !UNW_SYM(step, unw_step) ||
        !UNW_SYM(get_reg, unw_get_reg) ||
        !UNW_SYM(is_signal_frame, unw_is_signal_frame) ||
        !UNW_SYM(set_caching_policy, unw_set_caching_policy) ||
        !UNW_SYM(flush_cache, unw_flush_cache) || !UNW_SYM(backtrace, unw_backtrace) ||
        !UNW_SYM(local_as, unw_local_addr_space))
        return false; /* the library stays: nodelete, as a dependency would */
#undef UNW_SYM
    if (!mk_mode_sampled())
        /* Per-thread caches: no lock inside libunwind on the capture path. */
        unw.set_caching_policy(*unw.local_as, UNW_CACHE_PER_THREAD);
    if (mk_elf_segment_of((const void *)unw.backtrace, &lo, &hi)) {
        unwinder_lo = lo;
        unwinder_hi = hi;
    }
    return true;
}

/* Is libunwind there? Loads it on the first call. False while another
 * thread loads it: that thread may wait for the loader's lock, which this
 * one may hold (a malloc inside dlopen), so this capture goes without. */
static bool unw_ready(void)
{
    int none = 0;

    if (MK_LIKELY(atomic_load_explicit(&unw_state, memory_order_acquire) == 2))
        return true;
    if (atomic_compare_exchange_strong(&unw_state, &none, 1)) {
        bool ok = unw_open();
        if (!ok)
            mk_warn_once("memkit: cannot load " MK_LIBUNWIND "; stacks past libgcc's "
                         "walk are not recorded");
        atomic_store_explicit(&unw_state, ok ? 2 : 3, memory_order_release);
        return ok;
    }
    return false;
}

typedef struct mk_stack_cache mk_stack_cache_t;

/* A thread's stacks state, in its room of the thread state (thread.h). */
struct mk_stacks_thread {
    mk_stack_cache_t *stack_cache; /* recent stacks by (ra, fp) */
    uintptr_t stack_lo, stack_hi;  /* this thread's stack, for the cache */
    bool stack_known;              /* stack_lo/hi asked for; until then both 0 */
};
_Static_assert(sizeof(struct mk_stacks_thread) <= sizeof(((mk_thread_t *)0)->room_stacks),
               "the stacks state outgrew its room (thread.h)");

static inline struct mk_stacks_thread *mk_stacks_of(mk_thread_t *t)
{
    return (struct mk_stacks_thread *)(void *)t->room_stacks;
}

void mk_stacks_thread_start(mk_thread_t *t)
{
    /* A reused state's bounds were its last thread's: none until learnt;
     * its cache stays (stacks are the process's). */
    mk_stacks_of(t)->stack_known = false;
    mk_stacks_of(t)->stack_lo = mk_stacks_of(t)->stack_hi = 0;
}
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

/* The table of distinct stacks starts at 4,096 slots (32 KiB) and grows 4x
 * when half full, up to 1M slots. A table of its largest size from the
 * start has each new stack touch a page of it at random, twice (a read
 * fault, then the write's), in every process: 49,497 of the 112,297 page
 * faults of cmake's configure traced (68 processes). */
#define TABLE_BITS_FIRST 12
#define TABLE_BITS_MAX   20
#define TABLE_BITS_STEP  2
#define ARENA_SIZE       (256ul << 20) /* reserved, touched only as used */

typedef struct stack_rec {
    uint64_t hash;
    uint32_t id;
    atomic_uint gen; /* generation (file) in which the definition was written */
    uint32_t depth;
    uintptr_t frames[];
} stack_rec_t;

typedef struct stack_table {
    size_t mask;  /* slots - 1 */
    size_t limit; /* records it takes before the next grows */
    int bits;
    _Atomic(stack_rec_t *) slot[];
} stack_table_t;

/* Lookups read the current table without a lock; a stack not found there is
 * looked for again and added under table_lock, which growth takes too, so a
 * stack has one record and one id. A lookup on a table that has just been
 * replaced finds nothing (its slots are released) and goes the locked way. */
static _Atomic(stack_table_t *) table;
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t table_used;       /* records in the current table; under table_lock */
static atomic_bool table_stuck; /* the lock's holder never came back */
static uint8_t *arena;
/* For a return address, how far above its slot the next frame's slot was
 * (find_slots): the caller's frame size at that call, which its code fixes. */
typedef struct gap_map {
    int bits;
    atomic_size_t learned; /* entries written over a different address */
    _Atomic uint64_t entry[];
} gap_map_t;
/* The map starts at 4K entries (32 KiB) and grows 4x when as many return
 * addresses as half its entries were learned, up to 64K (512 KiB): a short
 * process touches a few pages of it, not a hundred. A lossy cache, so a
 * growth copies what it can and loses what a racing thread writes into the
 * old map. */
#define GAP_BITS_FIRST 12
#define GAP_BITS_MAX   16
#define GAP_BITS_STEP  2
static _Atomic(gap_map_t *) gaps;
static atomic_flag gaps_growing = ATOMIC_FLAG_INIT;
static atomic_size_t arena_used;
static atomic_uint next_id = 1;

/* Frames of memkit's own above mk_stack_id at most: the hook, and the body
 * that records (general_malloc) when the compiler did not make it a tail
 * call. */
#define MK_OWN_FRAMES 3

/* --sample's walk: libgcc's unwinder (_Unwind_Backtrace). A sample's stack
 * is seldom seen before, so libunwind's per-address caches rarely help it,
 * and each address libunwind has not seen costs it a dl_iterate_phdr between
 * two signal-mask system calls and checks of memory through a pipe; libgcc
 * finds a code address's unwind table with glibc's _dl_find_object, with no
 * system call. Frames as unwind_fast gives them; a stack seen again is still
 * found in the cache of mk_stack_id without a walk.
 *
 * libgcc's lookup in tables registered at run time (__register_frame: JIT
 * compilers) may malloc under its own lock, which a sample taken inside
 * that malloc would want again: once a program registers a table
 * (mk_frames_registered, hooks_proc.c), samples go back to libunwind. */
atomic_bool mk_frames_registered;

/* libgcc's own: libunwind exports a _Unwind_Backtrace of its own (over
 * unw_step, the costly walk), and which of the two a plain reference binds
 * to depends on the program's libraries. Found in libgcc_s by handle at the
 * first sample (mk_stacks_init), which loads it in a program that has none
 * (RTLD_LOCAL: a C program's scope stays as it was); NULL: the samples use
 * libunwind. */
static _Unwind_Reason_Code (*gcc_backtrace)(_Unwind_Trace_Fn, void *);
static _Unwind_Word (*gcc_get_ip)(struct _Unwind_Context *);

static void find_gcc_unwinder(void)
{
    /* never closed: the pointers below live as long as the process */
    void *h = mk_own_dlopen("libgcc_s.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!h)
        return;
    void *bt = dlsym(h, "_Unwind_Backtrace"), *ip = dlsym(h, "_Unwind_GetIP");
    if (bt && ip) { /* both or neither: a context of one is not the other's */
        gcc_get_ip = (_Unwind_Word(*)(struct _Unwind_Context *))ip;
        gcc_backtrace = (_Unwind_Reason_Code(*)(_Unwind_Trace_Fn, void *))bt;
    }
}

/* ---- a thread's stack bounds ----
 *
 * Slots are only trusted inside the thread's own stack, which glibc's
 * pthread_getattr_np tells. But it holds the thread's own lock while it
 * allocates (the affinity mask; for the main thread, its /proc/self/maps
 * stream too), and runtimes ask it first thing in a new thread (a Java VM,
 * garbage collectors): asked from inside such an allocation, the thread
 * waits on itself forever. So it is asked on a thread's first capture whose
 * stack does not pass through it; until then, stacks are walked uncached. */

static uintptr_t query_lo, query_len; /* pthread_getattr_np's code */

/* Frames looked at for it: the allocation is at most a few calls deep
 * inside it (fopen, getline, realloc). */
#define QUERY_FRAMES 8

static void find_stack_query(void)
{
    mk_elf_sym_t at;
    query_lo = (uintptr_t)&pthread_getattr_np;
    /* Without its symbol's size, a page: the function is about 1 KB. */
    query_len = 4096;
    if (mk_elf_symbol_at((void *)query_lo, "pthread_getattr_np", &at) == MK_ELF_FOUND &&
        at.sym && at.base + at.sym->st_value == query_lo && at.sym->st_size)
        query_len = at.sym->st_size;
}

typedef struct gcc_walk {
    uintptr_t *frames;
    int n, max, skip;
    uintptr_t ra;
} gcc_walk_t;

static _Unwind_Reason_Code gcc_frame(struct _Unwind_Context *ctx, void *arg)
{
    gcc_walk_t *w = arg;
    uintptr_t ip = (uintptr_t)gcc_get_ip(ctx);
    if (w->n == 0 && ip != w->ra) { /* still in memkit's own frames */
        return ++w->skip > MK_OWN_FRAMES + 2 ? _URC_END_OF_STACK : _URC_NO_REASON;
    }
    if (!ip)
        return _URC_END_OF_STACK;
    w->frames[w->n++] = ip;
    return w->n < w->max ? _URC_NO_REASON : _URC_END_OF_STACK;
}

static int unwind_gcc(uintptr_t *frames, int max, uintptr_t ra)
{
    gcc_walk_t w = {frames, 0, max, 0, ra};
    gcc_backtrace(gcc_frame, &w);
    return w.n > 0 ? w.n : -1; /* the caller not found: libunwind's walk decides */
}

static size_t gap_map_bytes(int bits)
{
    return sizeof(gap_map_t) + (sizeof(uint64_t) << bits);
}

static gap_map_t *gap_map_new(int bits)
{
    gap_map_t *m = mk_pages_zeroed(gap_map_bytes(bits));
    if (m)
        m->bits = bits;
    return m;
}

/* Gives back the whole pages of a replaced table from `from` to `end`: the
 * part before `from` (its header) stays, so a lookup still on the table
 * reads its size and then zeroed entries, which find nothing. A raw system
 * call, as for all of the tracer's own mappings. */
static void give_back_pages(const void *from, const void *end)
{
    uintptr_t lo = ((uintptr_t)from + 4095) & ~(uintptr_t)4095;
    uintptr_t hi = (uintptr_t)end & ~(uintptr_t)4095;
    if (hi > lo)
        mk_syscall(SYS_madvise, (void *)lo, hi - lo, MADV_DONTNEED);
}

static size_t table_bytes(int bits)
{
    return sizeof(stack_table_t) + (sizeof(stack_rec_t *) << bits);
}

/* An empty table of 2^bits slots (zeroed by mmap), NULL if it cannot be had. */
static stack_table_t *table_new(int bits)
{
    stack_table_t *tb = mk_pages_zeroed(table_bytes(bits));
    if (!tb)
        return NULL;
    tb->bits = bits;
    tb->mask = ((size_t)1 << bits) - 1;
    /* half full, linear probing stays short; the largest stops at 3/4 */
    tb->limit = bits < TABLE_BITS_MAX ? (size_t)1 << (bits - 1) : (size_t)3 << (bits - 2);
    return tb;
}

void mk_stacks_init(void)
{
    /* --sample unwinds with libgcc (unwind_gcc) and leaves libunwind alone:
     * it is loaded if a registered table sends samples back to it. */
    if (!mk_mode_sampled())
        (void)unw_ready();
    else
        find_gcc_unwinder();
    find_stack_query();
    stack_table_t *first = table_new(TABLE_BITS_FIRST);
    arena = mk_sys_mmap(NULL, ARENA_SIZE, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (!first || arena == MAP_FAILED) {
        first = NULL;
        arena = NULL;
        mk_warn_once("memkit: cannot map the stack table; stacks are not recorded");
    }
    atomic_store_explicit(&table, first, memory_order_release);
    /* without a map, slots are scanned for */
    atomic_store_explicit(&gaps, gap_map_new(GAP_BITS_FIRST), memory_order_release);
}

atomic_int mk_stacks_state;

bool mk_unwinder_calls(uintptr_t pc)
{
    return pc - unwinder_lo < unwinder_hi - unwinder_lo;
}

bool mk_stacks_init_once(void)
{
    int none = 0;
    if (atomic_compare_exchange_strong(&mk_stacks_state, &none, 1)) {
        mk_stacks_init();
        atomic_store_explicit(&mk_stacks_state, 2, memory_order_release);
        return true;
    }
    /* Another thread is starting libunwind, which may wait for the loader's
     * lock: this thread may hold it (a malloc inside dlopen), so it must not
     * wait in turn. Its sample goes without a stack. */
    return atomic_load_explicit(&mk_stacks_state, memory_order_acquire) == 2;
}

void mk_stacks_flush_cache(void)
{
    if (atomic_load(&unw_state) != 2)
        return;                           /* nothing cached yet */
    unw.flush_cache(*unw.local_as, 0, 0); /* after dlclose: stale entries */
}

static uint64_t hash_frames(const uintptr_t *f, int depth)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)depth;
    for (int i = 0; i < depth; i++) {
        h ^= f[i];
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    return h;
}

static stack_rec_t *rec_new(uint64_t h, const uintptr_t *f, int depth)
{
    size_t need =
        (sizeof(stack_rec_t) + (size_t)depth * sizeof(uintptr_t) + 15) & ~(size_t)15;
    size_t at = atomic_fetch_add_explicit(&arena_used, need, memory_order_relaxed);
    if (at + need > ARENA_SIZE)
        return NULL;
    stack_rec_t *r = (stack_rec_t *)(arena + at);
    r->hash = h;
    r->depth = (uint32_t)depth;
    memcpy(r->frames, f, (size_t)depth * sizeof(uintptr_t));
    r->id = atomic_fetch_add_explicit(&next_id, 1, memory_order_relaxed);
    atomic_store_explicit(&r->gen, 0, memory_order_relaxed);
    return r;
}

static inline bool rec_equal(const stack_rec_t *r, uint64_t h, const uintptr_t *f,
                             int depth)
{
    if (r->hash != h || r->depth != (uint32_t)depth)
        return false;
    for (int i = 0; i < depth; i++) /* a few words: cheaper inline than memcmp */
        if (r->frames[i] != f[i])
            return false;
    return true;
}

/* Writes the definition item into the thread's record (the caller made room). */
static void write_definition(mk_thread_t *t, const stack_rec_t *r)
{
    mk_writer_define_stack(&t->w, r->id, r->depth, r->frames);
}

static uint32_t use_rec(mk_thread_t *t, stack_rec_t *r)
{
    unsigned gen = atomic_load_explicit(&mk_st.stack_gen, memory_order_relaxed);
    unsigned had = atomic_load_explicit(&r->gen, memory_order_relaxed);
    /* The one thread whose CAS moves gen forward writes the definition. */
    if (had != gen && atomic_compare_exchange_strong_explicit(
                          &r->gen, &had, gen, memory_order_relaxed, memory_order_relaxed))
        write_definition(t, r);
    return r->id;
}

static stack_rec_t *intern_rec(mk_thread_t *t, uintptr_t *frames, int depth);

uint32_t mk_stack_intern(mk_thread_t *t, uintptr_t *frames, int depth)
{
    stack_rec_t *r = intern_rec(t, frames, depth);
    return r ? use_rec(t, r) : 0;
}

/* The record of the stack in tb, or NULL with *empty set to the slot where
 * it would go. */
static stack_rec_t *table_find(stack_table_t *tb, uint64_t h, const uintptr_t *frames,
                               int depth, size_t *empty)
{
    size_t mask = tb->mask;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        /* Acquire: the record's fields, written before it was published. */
        stack_rec_t *r = atomic_load_explicit(&tb->slot[i], memory_order_acquire);
        if (!r) {
            *empty = i;
            return NULL;
        }
        if (rec_equal(r, h, frames, depth))
            return r; /* the usual case: one probe, one compare */
    }
}

/* The next table, 4x larger, holding tb's records; tb's slots are given
 * back (lookups still on it find nothing there and take the lock). Under
 * table_lock. */
static stack_table_t *table_grow(stack_table_t *tb)
{
    stack_table_t *nt = table_new(tb->bits + TABLE_BITS_STEP);
    if (!nt)
        return NULL;
    for (size_t i = 0; i <= tb->mask; i++) {
        stack_rec_t *r = atomic_load_explicit(&tb->slot[i], memory_order_relaxed);
        size_t at;
        if (r && !table_find(nt, r->hash, r->frames, (int)r->depth, &at))
            atomic_store_explicit(&nt->slot[at], r, memory_order_relaxed);
    }
    atomic_store_explicit(&table, nt, memory_order_release);
    give_back_pages(tb->slot, (const uint8_t *)tb + table_bytes(tb->bits));
    return nt;
}

/* table_lock, waited for at most a second: a holder that never comes back
 * (a signal handler that interrupted it and exited, or jumped away) must
 * not hang every other thread; their new stacks then go without. */
static bool table_lock_take(void)
{
    if (pthread_mutex_trylock(&table_lock) == 0)
        return true;
    uint64_t give_up = mk_now() + 1000000000u;
    while (!atomic_load_explicit(&table_stuck, memory_order_relaxed)) {
        sched_yield();
        if (pthread_mutex_trylock(&table_lock) == 0)
            return true;
        if (mk_now() > give_up) {
            atomic_store(&table_stuck, true);
            mk_warn_once("memkit: the stack table stayed locked; further new stacks "
                         "are recorded without a stack");
        }
    }
    return false;
}

/* A stack the lock-free lookup did not find: looked for again, and added,
 * under table_lock. */
static stack_rec_t *intern_locked(uint64_t h, const uintptr_t *frames, int depth)
{
    if (!table_lock_take())
        return NULL;
    stack_table_t *tb = atomic_load_explicit(&table, memory_order_relaxed);
    size_t at;
    stack_rec_t *r = table_find(tb, h, frames, depth, &at);
    if (!r && table_used >= tb->limit) {
        stack_table_t *nt = tb->bits < TABLE_BITS_MAX ? table_grow(tb) : NULL;
        if (!nt) {
            mk_warn_once("memkit: more than %zu distinct stacks; further new stacks are "
                         "recorded without a stack",
                         tb->limit);
            pthread_mutex_unlock(&table_lock);
            return NULL;
        }
        tb = nt;
        r = table_find(tb, h, frames, depth, &at); /* not there: finds its slot */
    }
    if (!r) {
        r = rec_new(h, frames, depth);
        if (r) {
            /* Release: a lookup that finds the record sees its fields. */
            atomic_store_explicit(&tb->slot[at], r, memory_order_release);
            table_used++;
        } else {
            mk_warn_once("memkit: stack arena full; further new stacks are recorded "
                         "without a stack");
        }
    }
    pthread_mutex_unlock(&table_lock);
    return r;
}

static stack_rec_t *intern_rec(mk_thread_t *t, uintptr_t *frames, int depth)
{
    (void)t;
    stack_table_t *tb = atomic_load_explicit(&table, memory_order_acquire);
    if (MK_UNLIKELY(!tb || depth <= 0))
        return NULL;
    uint64_t h = hash_frames(frames, depth);
    size_t at;
    stack_rec_t *r = table_find(tb, h, frames, depth, &at);
    return r ? r : intern_locked(h, frames, depth);
}

/* In a forked child: a thread the fork left behind may have held the lock. */
void mk_stacks_after_fork_child(void)
{
    pthread_mutex_init(&table_lock, NULL);
    atomic_store(&table_stuck, false);
    atomic_flag_clear(&gaps_growing);
}

/* ---- the per-thread stack cache ---- */

/* A thread's cache starts at 64 entries, since a program with thousands of
 * threads pays for each, and grows 4x at a time while its keys keep missing,
 * up to 4,096: a compiler's or a build tool's main thread sees tens of
 * thousands of keys, and 64 entries hit 42-45% of its allocations where
 * 4,096 hit 62-67% (cmake configuring, clang compiling).
 *
 * Entries come in sets of CACHE_WAYS, a key's set picked by its hash, and a
 * key may hold several ways with different stacks: a helper reached at the
 * same depth from different callers has one key and as many stacks. Those
 * were most of the misses left at 4,096 direct-mapped entries (45,630 of
 * 77,554 on cmake, 59,743 of 92,982 on clang), each an unwind and a scan. */
#define CACHE_BITS_FIRST 6
#define CACHE_BITS_MAX   12
#define CACHE_BITS_STEP  2
#define CACHE_WAYS_BITS  2
#define CACHE_WAYS       (1u << CACHE_WAYS_BITS)
_Static_assert(CACHE_BITS_FIRST >= CACHE_WAYS_BITS, "the first cache holds a set");

/* Where frame i+1's return address lives, in words above the key's fp: the
 * slot scan stays within MK_SLOT_SCAN_BYTES of fp, so 16 bits hold it, and an
 * entry's slots take 62 bytes at the default depth where pointers took 248. */
typedef uint16_t slot_off_t;
#define SLOT_OFF_MAX UINT16_MAX

/* An entry holds its slots, so that a hit reads one or two cache lines. */
typedef struct cache_entry {
    uintptr_t ra, fp; /* the key; ra == 0: empty */
    stack_rec_t *rec;
    uint32_t nslots;  /* slots to check: frames after the first; or SLOTS_LATER */
    slot_off_t off[]; /* depth - 1 of them */
} cache_entry_t;

/* An entry whose key was seen once: its slots are found when the key comes
 * back. Finding them scans the stack (find_slots), and on a compiler's or a
 * build tool's deep, varied stacks most keys are never seen again. */
#define SLOTS_LATER UINT32_MAX

struct mk_stack_cache {
    unsigned shift;    /* 64 - log2(sets): a key's hash >> shift is its set */
    unsigned misses;   /* keys not found since the cache was made */
    unsigned next_way; /* the way a full set gives up next (round robin) */
    size_t entry_size, map_len;
    uint8_t *entries;
};

static inline unsigned cache_bits(const mk_stack_cache_t *c)
{
    return 64 - c->shift + CACHE_WAYS_BITS;
}

static inline cache_entry_t *cache_set(const mk_stack_cache_t *c, uintptr_t ra,
                                       uintptr_t fp)
{
    size_t i = ((ra ^ (fp >> 4)) * 0x9e3779b97f4a7c15ull) >> c->shift;
    return (cache_entry_t *)(c->entries + i * CACHE_WAYS * c->entry_size);
}

static inline cache_entry_t *cache_way(const mk_stack_cache_t *c, cache_entry_t *set,
                                       unsigned way)
{
    return (cache_entry_t *)((uint8_t *)set + way * c->entry_size);
}

/* The way a new stack of the set takes: an empty one, else the next in turn. */
static cache_entry_t *cache_victim(mk_stack_cache_t *c, cache_entry_t *set)
{
    for (unsigned w = 0; w < CACHE_WAYS; w++)
        if (!cache_way(c, set, w)->ra)
            return cache_way(c, set, w);
    return cache_way(c, set, c->next_way++ % CACHE_WAYS);
}

static mk_stack_cache_t *cache_new(unsigned bits)
{
    size_t depth = (size_t)mk_st.cfg.depth;
    size_t head = (sizeof(mk_stack_cache_t) + 63) & ~(size_t)63;
    size_t entry =
        (sizeof(cache_entry_t) + (depth - 1) * sizeof(slot_off_t) + 7) & ~(size_t)7;
    size_t len = head + (entry << bits);
    uint8_t *p = mk_sys_mmap(NULL, len, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    mk_stack_cache_t *c = (mk_stack_cache_t *)p;
    c->shift = 64 - (bits - CACHE_WAYS_BITS); /* sets, not entries */
    c->entry_size = entry;
    c->map_len = len;
    c->entries = p + head;
    return c;
}

static void cache_drop(mk_stack_cache_t *c)
{
    if (c)
        mk_sys_munmap(c, c->map_len);
}

/* A key that missed: past twice as many misses as entries, the thread's keys
 * do not fit, and a 4x larger cache (empty: its keys come back) replaces it. */
static void cache_missed(mk_thread_t *t, mk_stack_cache_t *c)
{
    if (++c->misses <= 2u << cache_bits(c) || cache_bits(c) >= CACHE_BITS_MAX)
        return;
    mk_stack_cache_t *bigger = cache_new(cache_bits(c) + CACHE_BITS_STEP);
    if (!bigger) {
        c->misses = 0; /* no memory now: try again later */
        return;
    }
    cache_drop(c);
    mk_stacks_of(t)->stack_cache = bigger;
}

static bool inside_stack_query(const uintptr_t *frames, int n)
{
    for (int i = 0; i < n && i < QUERY_FRAMES; i++)
        if (frames[i] - query_lo <= query_len) /* a return address may be its end */
            return true;
    return false;
}

/* The loader's: the stack pointer the process image started with. */
extern void *__libc_stack_end;

/* The process's initial thread, running on the stack it started with: its
 * bounds without pthread_getattr_np, which reads /proc/self/maps to find
 * the stack's top (a read of a file as long as the process has mappings,
 * in every process; and its bytes had to be taken off the program's I/O
 * with two more reads). The top is the stack pointer at the start: every
 * frame lies below it. The bottom is the top less the stack's size limit
 * (as glibc takes it), at most 128 MiB: the kernel keeps that much below
 * the stack free of other mappings (mmap_base), so [fp, top) is the stack
 * itself for any fp in the bounds. False for any other thread or stack
 * (a fork child's thread that was not the initial one, a stack of the
 * program's own). */
static bool initial_stack(mk_thread_t *t, uintptr_t sp)
{
    uintptr_t hi = (uintptr_t)__libc_stack_end;
    struct rlimit rl;
    if (t->tid != mk_st.pid || !hi || getrlimit(RLIMIT_STACK, &rl) != 0)
        return false;
    uintptr_t size = rl.rlim_cur < (128ul << 20) ? (uintptr_t)rl.rlim_cur : 128ul << 20;
    if (size < (64u << 10) || hi < size || sp >= hi || sp < hi - size)
        return false;
    mk_stacks_of(t)->stack_lo = hi - size;
    mk_stacks_of(t)->stack_hi = hi;
    return true;
}

/* The thread's bounds and an empty cache, unless its stack (n frames) is
 * inside pthread_getattr_np. */
static void learn_stack(mk_thread_t *t, const uintptr_t *frames, int n)
{
    if (inside_stack_query(frames, n))
        return;                          /* the next capture asks */
    mk_stacks_of(t)->stack_known = true; /* lo == hi == 0 until glibc tells them below */
    /* A state that served an ended thread: its keys are that stack's, and
     * its size was that thread's. */
    mk_stack_cache_t *c = mk_stacks_of(t)->stack_cache;
    if (c && cache_bits(c) == CACHE_BITS_FIRST) {
        memset(c->entries, 0, c->entry_size << CACHE_BITS_FIRST);
        c->misses = 0;
    } else {
        cache_drop(c);
        mk_stacks_of(t)->stack_cache = cache_new(CACHE_BITS_FIRST);
    }
    if (!mk_stacks_of(t)->stack_cache)
        return;
    uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    if (initial_stack(t, here))
        return;
    pthread_attr_t attr;
    void *lo;
    size_t len;
    int cancel = mk_cancel_off();
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        if (pthread_attr_getstack(&attr, &lo, &len) == 0) {
            mk_stacks_of(t)->stack_lo = (uintptr_t)lo;
            mk_stacks_of(t)->stack_hi = (uintptr_t)lo + len;
        }
        pthread_attr_destroy(&attr);
    }
    mk_cancel_restore(cancel);
}

/* Walks the stack with libunwind: frames from the hook's caller (the frame
 * that returns to ra) outward, and the stack address each return address was
 * read from (0: not a plain call frame, so the stack is not cached). */
static int unwind(uintptr_t *frames, uintptr_t *slots, int max, uintptr_t ra)
{
    unw_context_t uc;
    unw_cursor_t cur;
    int n = 0;

    if (unw.getcontext(&uc) != 0 || unw.init_local(&cur, &uc) != 0)
        return 0;
    /* Step out of mk_stack_id, then out of memkit: up to the caller. */
    for (int skip = 0;; skip++) {
        unw_word_t ip;
        if (unw.step(&cur) <= 0 || unw.get_reg(&cur, UNW_REG_IP, &ip) != 0)
            return 0;
        if (ip == ra)
            break;
        if (skip == MK_OWN_FRAMES)
            return 0; /* not called the way the hooks are: no stack */
    }
    do {
        unw_word_t ip, sp;
        if (unw.get_reg(&cur, UNW_REG_IP, &ip) != 0 || ip == 0)
            break;
        unw.get_reg(&cur, UNW_REG_SP, &sp);
        frames[n] = ip;
        /* A return address sits just below the caller's stack pointer. */
        slots[n] =
            unw.is_signal_frame(&cur) <= 0 && *(uintptr_t *)(sp - 8) == ip ? sp - 8 : 0;
        n++;
    } while (n < max && unw.step(&cur) > 0);
    return n;
}

/* How far up the stack unwind_fast looks for return addresses, in all. */
#define MK_SLOT_SCAN_BYTES (256u << 10)
_Static_assert(MK_SLOT_SCAN_BYTES / 8 <= SLOT_OFF_MAX,
               "a found slot's offset fits slot_off_t");

/* The fast walk. libunwind's unw_backtrace keeps, per thread, the frame
 * layout of each code address it has seen, and walks known frames with
 * plain loads: no DWARF lookup, no dl_iterate_phdr (which libunwind wraps in
 * two signal-mask system calls) and no memory validation (mincore and a
 * pipe), which unw_step pays whenever its 128-entry cache misses, as on a
 * compiler's deep and varied stacks. Frames as unwind() gives them; -1 when
 * the hook's caller is not among the first frames (then unwind() decides).
 *
 * It gives no stack addresses, so the slot each return address was read
 * from is found by scanning up the stack: a call pushes its return address
 * where the stack pointer is 16-byte aligned less 8 (the psABI), so frame
 * i's slot is the first such word above frame i-1's that holds frames[i].
 * A slot not found within the scan's bound is 0: the stack is not cached. */
/* The first slot-aligned word from at (itself slot-aligned) below end that
 * holds want, 0 if none. Four slots a step while they fit below end: a
 * compiler's 32 frames span tens of KB, and the bound is then checked once
 * per 64 bytes instead of once per slot. */
static inline uintptr_t scan_for(uintptr_t at, uintptr_t end, uintptr_t want)
{
    for (; at + 56 < end; at += 64) { /* the step's last slot is at + 48 */
        const uintptr_t *w = (const uintptr_t *)at;
        if (w[0] == want)
            return at;
        if (w[2] == want)
            return at + 16;
        if (w[4] == want)
            return at + 32;
        if (w[6] == want)
            return at + 48;
    }
    for (; at + 8 <= end; at += 16)
        if (*(const uintptr_t *)at == want)
            return at;
    return 0;
}

/* A gap entry: the return address above 16 bits of gap, in words. User
 * addresses take 47 bits, and the scan's bound keeps a gap below 2^16 words. */
_Static_assert(MK_SLOT_SCAN_BYTES / 8 < 1u << 16, "a gap fits its entry");

static inline _Atomic uint64_t *gap_entry(gap_map_t *m, uintptr_t ra)
{
    return &m->entry[(ra * 0x9e3779b97f4a7c15ull) >> (64 - m->bits)];
}

/* Where the slot after ra's (at slot) was last time, if the map knows. */
static inline uintptr_t gap_guess(uintptr_t ra, uintptr_t slot)
{
    gap_map_t *m = atomic_load_explicit(&gaps, memory_order_acquire);
    uint64_t g = m ? atomic_load_explicit(gap_entry(m, ra), memory_order_relaxed) : 0;
    return g >> 16 == ra && (g & 0xffff) >= 2 ? slot + 8 * (g & 0xffff) : 0;
}

/* A map 4x larger takes m's place: one thread grows it, the others go on
 * with m meanwhile. m's pages are given back; a reader still on it reads
 * zeros, which guess nothing. */
static __attribute__((noinline)) void gap_map_grow(gap_map_t *m)
{
    if (atomic_flag_test_and_set(&gaps_growing))
        return;
    gap_map_t *n = gap_map_new(m->bits + GAP_BITS_STEP);
    if (n) {
        for (size_t i = 0; i < (size_t)1 << m->bits; i++) {
            uint64_t g = atomic_load_explicit(&m->entry[i], memory_order_relaxed);
            if (g)
                atomic_store_explicit(gap_entry(n, (uintptr_t)(g >> 16)), g,
                                      memory_order_relaxed);
        }
        atomic_store_explicit(&n->learned, (size_t)1 << (m->bits - 1),
                              memory_order_relaxed);
        atomic_store_explicit(&gaps, n, memory_order_release);
        give_back_pages(m->entry, (const uint8_t *)m + gap_map_bytes(m->bits));
    }
    atomic_flag_clear(&gaps_growing);
}

static inline void gap_learn(uintptr_t ra, uintptr_t slot, uintptr_t next)
{
    gap_map_t *m = atomic_load_explicit(&gaps, memory_order_acquire);
    if (!m || ra >> 47)
        return;
    /* one relaxed word: a torn pair cannot be read */
    _Atomic uint64_t *e = gap_entry(m, ra);
    uint64_t was = atomic_exchange_explicit(e, (uint64_t)ra << 16 | (next - slot) / 8,
                                            memory_order_relaxed);
    if (was >> 16 != ra && m->bits < GAP_BITS_MAX &&
        atomic_fetch_add_explicit(&m->learned, 1, memory_order_relaxed) + 1 ==
            (size_t)1 << (m->bits - 1))
        gap_map_grow(m);
}

/* The slot each return address of frames[0..n) was read from (see
 * unwind_fast), 0 where it was not found.
 *
 * Each frame's slot is looked for first where the gap from the frame below
 * put it last time (a compiler's frames are large, and the scan read about
 * 27 KB of stack a stack), and scanned for only if that word does not hold
 * the frame's return address. */
static void find_slots(const uintptr_t *frames, uintptr_t *slots, int n, uintptr_t fp,
                       uintptr_t hi)
{
    uintptr_t at = (fp | 15) - 7; /* the first slot-aligned word above fp */
    uintptr_t end = hi - fp > MK_SLOT_SCAN_BYTES ? fp + MK_SLOT_SCAN_BYTES : hi;
    int i = 0;
    for (; i < n; i++) {
        uintptr_t guess = i ? gap_guess(frames[i - 1], slots[i - 1]) : 0;
        if (guess && guess + 8 <= end && *(const uintptr_t *)guess == frames[i]) {
            slots[i] = guess;
        } else {
            slots[i] = scan_for(at, end, frames[i]);
            if (!slots[i])
                break;
            if (i)
                gap_learn(frames[i - 1], slots[i - 1], slots[i]);
        }
        at = slots[i] + 16; /* the next frame's slot lies above */
    }
    for (; i < n; i++)
        slots[i] = 0; /* not found: the rest are not looked for */
}

static __attribute__((noinline)) int unwind_fast(uintptr_t *frames, uintptr_t *slots,
                                                 int max, uintptr_t ra, uintptr_t fp,
                                                 uintptr_t hi, bool *slots_found)
{
    void *buf[MK_MAX_DEPTH + MK_OWN_FRAMES + 2];
    int got = unw.backtrace(buf, max + MK_OWN_FRAMES + 2);
    int skip = 0;
    while (skip < got && skip <= MK_OWN_FRAMES + 1 && (uintptr_t)buf[skip] != ra)
        skip++;
    if (skip >= got || skip > MK_OWN_FRAMES + 1)
        return -1;
    int n = got - skip < max ? got - skip : max;
    for (int i = 0; i < n; i++)
        frames[i] = (uintptr_t)buf[skip + i];
    if (*slots_found)
        find_slots(frames, slots, n, fp, hi);
    return n;
}

static inline bool cache_valid(const cache_entry_t *e, uintptr_t fp)
{
    for (uint32_t i = 0; i < e->nslots; i++)
        if (((const uintptr_t *)fp)[e->off[i]] != e->rec->frames[i + 1])
            return false;
    return true;
}

__attribute__((noinline)) uint32_t mk_stack_id(mk_thread_t *t, uintptr_t ra, uintptr_t fp)
{
    uintptr_t frames[MK_MAX_DEPTH], slots[MK_MAX_DEPTH];
    int depth = mk_st.cfg.depth;

    if (depth <= 1) {
        frames[0] = ra; /* --no-stacks: the calling instruction only, no unwinding */
        return mk_stack_intern(t, frames, 1);
    }
    /* Bounds unknown: lo == hi == 0, so no cache and no frame-pointer walk */
    mk_stack_cache_t *c =
        mk_stacks_of(t)->stack_known ? mk_stacks_of(t)->stack_cache : NULL;
    bool cacheable =
        c && fp >= mk_stacks_of(t)->stack_lo && fp < mk_stacks_of(t)->stack_hi;
    cache_entry_t *set = NULL, *same = NULL; /* same: a way holding the key */
    if (cacheable) {
        set = cache_set(c, ra, fp);
        for (unsigned w = 0; w < CACHE_WAYS; w++) {
            cache_entry_t *e = cache_way(c, set, w);
            if (e->ra != ra || e->fp != fp)
                continue;
            if (e->nslots != SLOTS_LATER && cache_valid(e, fp))
                return use_rec(t, e->rec);
            if (!same || e->nslots == SLOTS_LATER)
                same = e; /* its slots are found now: it takes them */
        }
    }
    /* Slots are looked for at a key's second sight (SLOTS_LATER), and when its
     * cached stacks no longer hold. */
    bool slots_found = same != NULL;
    int cancel = mk_cancel_off(); /* libunwind checks memory through a pipe */
    int n = -1;
    mk_tls.in_unwind = true; /* its signal masking skipped (signals.c) */
    mk_tls.unwind_mask_known = false;
    if (mk_mode_sampled() && gcc_backtrace &&
        !atomic_load_explicit(&mk_frames_registered, memory_order_relaxed)) {
        n = unwind_gcc(frames, depth, ra); /* a sample: libgcc's walk (above) */
        if (n > 0 && slots_found)
            find_slots(frames, slots, n, fp, mk_stacks_of(t)->stack_hi);
    } else if (!unw_ready()) {
        n = 0;
    } else if (fp >= mk_stacks_of(t)->stack_lo && fp < mk_stacks_of(t)->stack_hi) {
        n = unwind_fast(frames, slots, depth, ra, fp, mk_stacks_of(t)->stack_hi,
                        &slots_found);
    }
    /* A stack we do not know the bounds of, or an unusual call. */
    if (n < 0 && unw_ready()) {
        n = unwind(frames, slots, depth, ra);
        slots_found = true; /* libunwind's walk reads them on the way */
    }
    mk_tls.in_unwind = false;
    mk_cancel_restore(cancel);
    if (n <= 0)
        return 0;
    if (MK_UNLIKELY(!mk_stacks_of(t)->stack_known))
        learn_stack(t, frames, n);
    stack_rec_t *r = intern_rec(t, frames, n);
    if (!r)
        return 0;
    if (set && !slots_found) { /* the key, for its second sight */
        cache_entry_t *e = cache_victim(c, set);
        e->ra = ra;
        e->fp = fp;
        e->rec = r;
        e->nslots = SLOTS_LATER;
        cache_missed(t, c); /* last: it may replace c and set with it */
    } else if (set) {
        /* A second sight takes its first sight's way; another stack of a key
         * whose stacks all failed, or a first sight walked by unw_step (its
         * slots come with the walk), takes a way of its own. */
        cache_entry_t *e =
            same && same->nslots == SLOTS_LATER ? same : cache_victim(c, set);
        e->ra = 0;
        /* Cache only stacks whose every slot lies in our stack, above the
         * hook, a whole number of words and at most SLOT_OFF_MAX words up. */
        bool ok = frames[0] == ra;
        for (int i = 1; i < n && ok; i++)
            ok = slots[i] > fp && slots[i] < mk_stacks_of(t)->stack_hi &&
                 (slots[i] - fp) % 8 == 0 && (slots[i] - fp) / 8 <= SLOT_OFF_MAX;
        if (ok) {
            for (int i = 1; i < n; i++)
                e->off[i - 1] = (slot_off_t)((slots[i] - fp) / 8);
            e->nslots = (uint32_t)(n - 1);
            e->rec = r;
            e->fp = fp;
            e->ra = ra;
        }
    }
    return use_rec(t, r);
}
