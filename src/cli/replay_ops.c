/*
 * replay_ops.c - a trace's allocation calls, walked in time order, compiled
 * into `memkit replay`'s operations (replay.h): one file per replayed
 * thread, blocks named by slots.
 *
 * The compiler keeps only what is live: each live block's address maps to
 * its slot, size and thread, each replayed thread has the list of slots it
 * freed (its next allocations take them back), and each slot its generation
 * (the allocations made into it). Its memory is bounded by the most blocks
 * live at once, as the report's is; the operations go to disk.
 */
#define _GNU_SOURCE
#include "replay.h"

#include "../trace/reader.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* More threads than this replay on these many, a traced thread on the
 * replayed thread (its index of first appearance) % MAX_THREADS: a trace of
 * thousands of short-lived threads must not open thousands of files and
 * start thousands of threads at once. */
#define MAX_THREADS 64

typedef struct rthread {
    FILE *f;
    uint64_t window;      /* of its latest MK_ROP_TIME, + 1 (0: none yet) */
    uint32_t *free_slots; /* slots this thread freed, reused last in first out */
    size_t nfree, cap;
} rthread_t;

typedef struct compiler {
    mk_replay_prog *prog;
    bool one_thread;
    rthread_t th[MAX_THREADS];
    mk_kv_table_t live; /* address -> a: slot | thread << 32, b: size */
    uint32_t *gen;      /* per slot: allocations made into it */
    uint8_t *owner;     /* per slot: the replayed thread that allocated it last */
    uint32_t *site;     /* per slot: the stack that allocated it last */
    size_t slots_cap;
    uint32_t *thread_of; /* a trace thread id -> its replayed thread + 1 */
    size_t thread_cap;
    uint32_t seen_threads;
    uint64_t live_bytes, live_blocks;
    bool failed;
    char why[300];
} compiler_t;

static bool fail(compiler_t *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static bool fail(compiler_t *c, const char *fmt, ...)
{
    va_list ap;

    if (!c->failed) {
        va_start(ap, fmt);
        vsnprintf(c->why, sizeof c->why, fmt, ap);
        va_end(ap);
    }
    c->failed = true;
    return false;
}

static int replayed_thread(compiler_t *c, uint32_t thread)
{
    if (c->one_thread)
        return 0;
    if (thread >= c->thread_cap && !mk_grow((void **)&c->thread_of, &c->thread_cap,
                                            (size_t)thread + 1, sizeof *c->thread_of))
        return -1;
    if (!c->thread_of[thread])
        c->thread_of[thread] = c->seen_threads++ % MAX_THREADS + 1;
    return (int)c->thread_of[thread] - 1;
}

static bool emit(compiler_t *c, int t, uint8_t kind, uint32_t slot, uint32_t site,
                 uint64_t arg, unsigned align_log2)
{
    rthread_t *th = &c->th[t];
    mk_replay_op op = {
        .kind = kind, .align_log2 = (uint8_t)align_log2, .slot = slot, .site = site};

    if (!th->f) {
        char path[4200];

        snprintf(path, sizeof path, "%s/t%d.ops", c->prog->dir, t);
        th->f = fopen(path, "wbx");
        if (!th->f)
            return fail(c, "cannot write the replay's operations: %s", strerror(errno));
        setvbuf(th->f, NULL, _IOFBF, 1 << 16);
        if (t + 1 > c->prog->nthreads)
            c->prog->nthreads = t + 1;
    }
    if (arg > UINT32_MAX) {
        mk_replay_op hi = {.kind = MK_ROP_SIZE_HI, .arg = (uint32_t)(arg >> 32)};
        if (fwrite(&hi, sizeof hi, 1, th->f) != 1)
            return fail(c, "cannot write the replay's operations: %s", strerror(errno));
    }
    op.arg = (uint32_t)arg;
    if (fwrite(&op, sizeof op, 1, th->f) != 1)
        return fail(c, "cannot write the replay's operations: %s", strerror(errno));
    if (site >= c->prog->nsites)
        c->prog->nsites = site + 1;
    if (kind != MK_ROP_WAIT && kind != MK_ROP_TIME)
        c->prog->calls++;
    if (kind == MK_ROP_FREE)
        c->prog->frees++;
    return true;
}

/* A slot for a new block of thread t: one it freed, else a new one. */
static bool take_slot(compiler_t *c, int t, uint32_t *slot)
{
    rthread_t *th = &c->th[t];

    if (th->nfree) {
        *slot = th->free_slots[--th->nfree];
        return true;
    }
    if (c->prog->nslots == UINT32_MAX)
        return fail(c, "more blocks live at once than a replay holds");
    *slot = c->prog->nslots++;
    if (*slot >= c->slots_cap) {
        size_t cap = c->slots_cap;
        size_t cap2 = c->slots_cap;
        if (!mk_grow((void **)&c->gen, &cap, (size_t)*slot + 1, sizeof *c->gen) ||
            !mk_grow((void **)&c->site, &cap2, (size_t)*slot + 1, sizeof *c->site) ||
            !mk_grow((void **)&c->owner, &c->slots_cap, (size_t)*slot + 1,
                     sizeof *c->owner))
            return fail(c, "out of memory");
    }
    return true;
}

static bool give_slot(compiler_t *c, int t, uint32_t slot)
{
    rthread_t *th = &c->th[t];

    if (th->nfree == th->cap && !mk_grow((void **)&th->free_slots, &th->cap,
                                         th->nfree + 1, sizeof *th->free_slots))
        return fail(c, "out of memory");
    th->free_slots[th->nfree++] = slot;
    return true;
}

/* Another thread allocated the slot: wait for that allocation first. */
static bool order_after(compiler_t *c, int t, uint32_t slot, uint32_t site)
{
    if (c->owner[slot] == t)
        return true;
    c->prog->cross_thread++;
    return emit(c, t, MK_ROP_WAIT, slot, site, c->gen[slot] & 0x7fffffffu, 0);
}

static bool born(compiler_t *c, int t, uint64_t addr, uint64_t size, uint32_t slot,
                 uint32_t site)
{
    bool fresh;
    mk_kv_t *kv = mk_addr_put(&c->live, addr, &fresh);

    if (!kv)
        return fail(c, "out of memory");
    kv->a = slot | (uint64_t)t << 32;
    kv->b = size;
    c->gen[slot]++;
    c->owner[slot] = (uint8_t)t;
    c->site[slot] = site;
    c->live_bytes += size;
    c->live_blocks++;
    if (c->live_bytes > c->prog->peak_live_bytes)
        c->prog->peak_live_bytes = c->live_bytes;
    if (c->live_blocks > c->prog->peak_live_blocks)
        c->prog->peak_live_blocks = c->live_blocks;
    return true;
}

/* The block at kv dies by thread t's free, which counts as its allocating
 * stack's: a site's time is the time of the blocks it allocates, which is
 * what a fix there removes (and most frees carry no stack in a trace). */
static bool dies(compiler_t *c, int t, mk_kv_t *kv)
{
    uint32_t slot = (uint32_t)kv->a;

    if (!order_after(c, t, slot, c->site[slot]) ||
        !emit(c, t, MK_ROP_FREE, slot, c->site[slot], 0, 0))
        return false;
    c->live_bytes -= kv->b;
    c->live_blocks--;
    mk_addr_remove(&c->live, kv);
    return give_slot(c, t, slot);
}

static unsigned log2_of(uint64_t align)
{
    return align > 1 ? 63u - (unsigned)__builtin_clzll(align) : 0;
}

static bool on_alloc(compiler_t *c, int t, const mk_event_t *ev)
{
    uint32_t slot;
    uint8_t kind = MK_ROP_MALLOC;
    unsigned align = 0;

    if (!ev->addr)
        return true; /* failed: no block to replay */
    mk_kv_t *old = mk_addr_find(&c->live, ev->addr);
    if (old) {
        /* live twice: its free went unseen (a hook the trace missed); the
         * replay frees it here, so its live set stays the trace's */
        c->prog->skipped++;
        if (!dies(c, t, old))
            return false;
    }
    if (ev->kind == MK_K_CALLOC)
        kind = MK_ROP_CALLOC;
    else if (ev->align > 16 && (ev->align & (ev->align - 1)) == 0) {
        kind = MK_ROP_ALIGNED;
        align = log2_of(ev->align);
    }
    return take_slot(c, t, &slot) && emit(c, t, kind, slot, ev->stack, ev->size, align) &&
           born(c, t, ev->addr, ev->size, slot, ev->stack);
}

static bool on_free(compiler_t *c, int t, const mk_event_t *ev)
{
    mk_kv_t *kv;

    if (!ev->addr)
        return true; /* free(NULL) reaches no allocator code worth replaying */
    kv = mk_addr_find(&c->live, ev->addr);
    if (!kv) {
        c->prog->skipped++; /* allocated before the trace began, or by a hook it missed */
        return true;
    }
    return dies(c, t, kv);
}

static bool on_realloc(compiler_t *c, int t, const mk_event_t *ev)
{
    mk_kv_t *kv = ev->old_addr ? mk_addr_find(&c->live, ev->old_addr) : NULL;
    uint32_t slot;

    if (ev->old_addr && !kv)
        c->prog->skipped++; /* its block was never seen: replayed as a new one */
    if (!kv) {
        if (!ev->addr)
            return true;
        return take_slot(c, t, &slot) &&
               emit(c, t, MK_ROP_REALLOC, slot, ev->stack, ev->size, 0) &&
               born(c, t, ev->addr, ev->size, slot, ev->stack);
    }
    if (!ev->addr && ev->size)
        return true; /* failed: the old block stays */
    if (!ev->addr)
        return dies(c, t, kv); /* realloc(p, 0) freed it */
    slot = (uint32_t)kv->a;
    if (!order_after(c, t, slot, ev->stack) ||
        !emit(c, t, MK_ROP_REALLOC, slot, ev->stack, ev->size, 0))
        return false;
    c->live_bytes -= kv->b;
    c->live_blocks--;
    mk_addr_remove(&c->live, kv);
    return born(c, t, ev->addr, ev->size, slot, ev->stack);
}

/* The window of the traced time the event is in, when it starts one for its
 * thread (replay.h). */
static bool mark_time(compiler_t *c, int t, const mk_event_t *ev)
{
    uint64_t w = ev->time / MK_REPLAY_WINDOW_NS;

    if (c->one_thread || w + 1 <= c->th[t].window)
        return true;
    if (w >= UINT32_MAX)
        return fail(c, "a trace longer than a replay's clock (%u windows)", UINT32_MAX);
    c->th[t].window = w + 1;
    return emit(c, t, MK_ROP_TIME, 0, 0, w, 0);
}

static bool on_event(void *ctx, const mk_event_t *ev)
{
    compiler_t *c = ctx;
    int t = replayed_thread(c, ev->thread);

    if (t < 0)
        return fail(c, "out of memory");
    if (mk_kind_class(ev->kind) != MK_CLASS_SYSMAP && !mark_time(c, t, ev))
        return false;
    switch (mk_kind_class(ev->kind)) {
    case MK_CLASS_ALLOC:
        return on_alloc(c, t, ev);
    case MK_CLASS_FREE:
        return on_free(c, t, ev);
    case MK_CLASS_REALLOC:
        return on_realloc(c, t, ev);
    default:
        return true; /* the memory system calls: the allocator's, replayed by it */
    }
}

static void compiler_free(compiler_t *c)
{
    for (int t = 0; t < MAX_THREADS; t++)
        free(c->th[t].free_slots);
    free(c->live.slots);
    free(c->gen);
    free(c->owner);
    free(c->site);
    free(c->thread_of);
}

int mk_replay_compile(const char *path, bool one_thread, mk_replay_prog *prog)
{
    char err[512];
    const char *tmp = getenv("TMPDIR");
    compiler_t c = {.prog = prog, .one_thread = one_thread};
    bool closed = true;

    memset(prog, 0, sizeof *prog);
    snprintf(prog->path, sizeof prog->path, "%s", path);
    mk_trace_t *tr = mk_trace_open(path, err, sizeof err);
    if (!tr)
        return mk_usage_error("replay: %s", err);
    if (tr->header.flags & MK_TF_SUMMARY_ONLY) {
        mk_trace_close(tr);
        return mk_usage_error("replay: %s holds a summary, not the calls "
                              "(traced with --summary-only): trace it without",
                              path);
    }
    snprintf(prog->dir, sizeof prog->dir, "%s/memkit-replay.XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(prog->dir)) {
        mk_trace_close(tr);
        return mk_usage_error("replay: cannot make a directory in %s: %s",
                              tmp && *tmp ? tmp : "/tmp", strerror(errno));
    }
    c.live = mk_kv_heap_table();
    mk_trace_walk(tr, on_event, &c);
    if (!c.failed && tr->sampling.present)
        fail(&c,
             "%s is a sampled trace (--sample): a sample is not the sequence of "
             "calls a replay needs; trace it without --sample",
             path);
    for (int t = 0; t < MAX_THREADS; t++)
        if (c.th[t].f && fclose(c.th[t].f) != 0)
            closed = false;
    if (!closed)
        fail(&c, "cannot write the replay's operations: %s", strerror(errno));
    if (!c.failed && tr->damage[0] && tr->events_read == 0)
        fail(&c, "%s", tr->damage);
    if (!c.failed && tr->damage[0])
        fprintf(stderr, "memkit: replay: %s; replaying the calls before it\n",
                tr->damage);
    compiler_free(&c);
    mk_trace_drop_buffers(tr);
    prog->tr = tr;
    if (c.failed) {
        mk_replay_remove(prog);
        return mk_usage_error("replay: %s", c.why);
    }
    if (prog->calls == 0)
        mk_replay_remove(
            prog); /* nothing to replay: the caller says whether that is wrong */
    return MK_EXIT_OK;
}

void mk_replay_remove(mk_replay_prog *prog)
{
    char path[4200];

    if (prog->tr)
        mk_trace_close(prog->tr);
    prog->tr = NULL;
    if (!prog->dir[0])
        return;
    for (int t = 0; t < MAX_THREADS; t++) {
        snprintf(path, sizeof path, "%s/t%d.ops", prog->dir, t);
        unlink(path);
    }
    rmdir(prog->dir);
    prog->dir[0] = 0;
}
