/*
 * replay.h - what the parts of `memkit replay` share: a trace's allocation
 * calls compiled into per-thread operation files, and one replay of them in
 * a fresh process under one allocator.
 *
 *   cmd_replay.c   options, the allocators, interleaved rounds, the verdict, output
 *   replay_ops.c   a trace walked in time order into operations (slots, not addresses)
 *   replay_run.c   the child that performs them, timing each call, and its parent side
 *
 * An operation names a slot, not an address: the compiler gives each live
 * block a slot and the child keeps the slot's pointer, so any allocator can
 * serve the calls. A freed slot is reused only by the thread that freed it,
 * so a slot is written by one thread at a time; a call on a block another
 * thread allocated first waits for that allocation (MK_ROP_WAIT names the
 * slot's generation), which keeps cross-thread frees in their traced order,
 * and MK_ROP_TIME keeps the threads' calls near their traced times.
 */
#ifndef MEMKIT_CLI_REPLAY_H
#define MEMKIT_CLI_REPLAY_H

#include "cli.h"
#include "workload.h" /* mk_bench_hist */

#include <stdint.h>

enum {
    MK_ROP_MALLOC = 1, /* slot = malloc(size) */
    MK_ROP_CALLOC,     /* slot = calloc(1, size) */
    MK_ROP_ALIGNED,    /* slot = posix_memalign(1 << align_log2, size) */
    MK_ROP_REALLOC,    /* slot = realloc(slot, size) */
    MK_ROP_FREE,       /* free(slot) */
    MK_ROP_WAIT,       /* until the slot holds generation `arg` (another thread's;
                        * its low 31 bits: the child keeps a flag in the top bit) */
    MK_ROP_SIZE_HI,    /* the next operation's size has these high 32 bits */
    MK_ROP_TIME,       /* the next calls are of window `arg` of the traced time */
};

/* Threads keep the trace's order to within a window of its time: a thread
 * starts window W's calls once every other thread is at W - 1 or later.
 * Threads that ran at once in the trace run at once (a window is short
 * next to a run), and threads that took turns take them (a program that
 * serializes its threads is not replayed with contention it never had). */
#define MK_REPLAY_WINDOW_NS 100000

/* 16 bytes: a 20M-call trace is 320 MB of operations on disk, read in
 * batches (the child's own memory stays small, so its RSS is the heap's). */
typedef struct mk_replay_op {
    uint8_t kind;
    uint8_t align_log2;
    uint16_t pad;
    uint32_t slot;
    uint32_t site; /* the trace's stack id: per-site time */
    uint32_t arg;  /* size (low 32 bits), or WAIT's generation */
} mk_replay_op;
_Static_assert(sizeof(mk_replay_op) == 16, "an operation stays 16 bytes");

/* One trace compiled: a file of operations per replayed thread. */
typedef struct mk_replay_prog {
    char path[4096];     /* the trace */
    struct mk_trace *tr; /* open, its stacks read: the sites' names */
    char dir[4096];      /* a private directory holding t<N>.ops */
    int nthreads;
    uint32_t nslots;  /* the most blocks live at once, plus the free lists' */
    uint32_t nsites;  /* stack ids are below this */
    uint64_t calls;   /* allocator calls replayed (waits and size words not counted) */
    uint64_t frees;   /* of them, frees */
    uint64_t skipped; /* frees and reallocs of blocks the trace never showed allocated */
    uint64_t peak_live_bytes, peak_live_blocks;
    uint64_t cross_thread; /* calls on a block another thread allocated */
} mk_replay_prog;

/* Compiles the trace at path (one process) into prog, replayed threads as
 * traced or all on one (one_thread). MK_EXIT_OK (prog->calls 0, nothing
 * kept, when the trace holds no call), or MK_EXIT_USAGE after one line (not
 * a trace, sampled, damaged before any event, no room on disk). */
int mk_replay_compile(const char *path, bool one_thread, mk_replay_prog *prog);
/* Removes the operations and closes the trace. */
void mk_replay_remove(mk_replay_prog *prog);

/* What one replay measured (the child's, sent whole over a pipe). */
typedef struct mk_replay_result {
    uint64_t calls, alloc_ticks; /* every call's ticks, the empty reading's taken off */
    double ns_per_tick;
    uint64_t wall_ns;        /* the replay, start to end */
    uint64_t base_rss_bytes; /* the child's RSS before its first call */
    uint64_t peak_rss_bytes; /* its peak RSS since then (VmHWM), base included */
    uint64_t minor_faults;   /* taken during the replay */
    mk_bench_hist hist;      /* per-call ticks */
} mk_replay_result;

/* Replays prog in a fresh child (this executable, `memkit replay --child`)
 * with the environment entries env (NULL-terminated: LD_PRELOAD,
 * GLIBC_TUNABLES) added; site_ticks (prog->nsites of them, or NULL) gets
 * the ticks per site added. False with why set when the child failed. */
bool mk_replay_run(const mk_replay_prog *prog, char *const *env, mk_replay_result *res,
                   uint64_t *site_ticks, char *why, size_t whylen);

/* The child: `memkit replay --child DIR NTHREADS NSLOTS NSITES`, results on
 * stdout. */
int mk_replay_child(int argc, char **argv);

#endif /* MEMKIT_CLI_REPLAY_H */
