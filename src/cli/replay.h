/*
 * replay.h - what the parts of `memkit replay` share: a trace's allocation
 * calls compiled into per-thread operation files, and one replay of them in
 * a fresh process under one allocator.
 *
 *   cmd_replay.c   options, the allocators, interleaved rounds, the verdict, output
 *   replay_ops.c   a trace walked in time order into operations (slots, not addresses)
 *   replay_run.c   the child that performs them, timing each call, and its parent side
 *   replay_fix.c   the child's what-if: a finding's calls served by its fix
 *   replay_whatif.c  the findings chosen, their fixes described, replayed, compared
 *   report_replay.c  memkit report's side: a what-if's JSON onto the findings
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

/* ---- what-if ---- */

/* How a fix serves the calls of a stack (replay_fix.c). A block a fix
 * serves goes back to it, and a call the fix cannot serve (too big, another
 * thread's block, two alive where the fix holds one) goes to the heap as
 * traced, so every fix is what the finding's code change would do, no more. */
enum {
    MK_RFIX_POOL = 1, /* an mk_pool of items of `size` bytes */
    MK_RFIX_HOIST,    /* one block of `size`, taken from the heap once, reused */
    MK_RFIX_LOCAL,    /* a local buffer of `size` bytes: no call while it is free */
    MK_RFIX_FRAME,    /* an mk_stack frame, open while a block of it lives, of at
                       * most `size` bytes */
    MK_RFIX_FIFO,     /* an mk_fifo */
    MK_RFIX_JOINED,   /* a pair's first block, from the heap (`extra` bytes more) */
    MK_RFIX_INSIDE,   /* a pair's second block: inside the first, no call */
};

/* A fix file is an array of these: stack `site`'s calls served by fix
 * instance `inst` (stacks of one finding share its instance, as one code
 * change serves them all; each thread has its own), each call `extra`
 * bytes larger (a pair's first block, holding the second: any kind). */
typedef struct mk_replay_fix {
    uint32_t site;
    uint8_t kind;
    uint8_t pad;
    uint16_t inst;
    uint64_t size;
    uint64_t extra;
} mk_replay_fix;
_Static_assert(sizeof(mk_replay_fix) == 24, "a fix entry stays 24 bytes");

typedef struct mk_rfix mk_rfix;               /* the fixes, shared by the threads */
typedef struct mk_rfix_thread mk_rfix_thread; /* one thread's instances */

/* The fixes of file path for a replay of nsites stacks and nslots slots;
 * NULL with why set when the file is bad or memory short. */
mk_rfix *mk_rfix_load(const char *path, uint32_t nsites, uint32_t nslots, char *why,
                      size_t whylen);
mk_rfix_thread *mk_rfix_thread_new(mk_rfix *fx, int thread, uint64_t empty_ticks);
/* Operation op on slot op->slot (whose block is *pp) by thread t: 0 when no
 * fix serves it (the heap's call as traced); 1 when a fix did and 2 when
 * the fix made a heap call of its own (a pair's block, a realloc of a fix's
 * block), *pp then the new block (NULL after a free, or for a block inside
 * another), *touch its bytes to write, *ticks the call's time; -1 when a
 * call failed (why set). */
int mk_rfix_call(mk_rfix_thread *t, const mk_replay_op *op, uint64_t size, void **pp,
                 uint64_t *touch, uint64_t *ticks, char *why, size_t whylen);
/* Gives back what t's fixes hold (their pools, stacks, FIFOs and hoisted
 * blocks): a sanitizer build's leak checker scans no mapping of ours. */
void mk_rfix_thread_release(mk_rfix_thread *t);
/* The heap calls t's fixes took instead (allocations and frees). */
uint64_t mk_rfix_removed(const mk_rfix_thread *t);
/* Slot's block is the heap's (fx NULL: every block is). */
bool mk_rfix_heap_block(const mk_rfix *fx, uint32_t slot);

/* One finding tried (replay_whatif.c): what the report says of it, its fix
 * file, and what its replays measured (cmd_replay.c fills those). */
typedef struct mk_whatif {
    int number;       /* the report's finding number (1-based); 0: all together */
    const char *kind; /* the finding's kind, "all" */
    char site[256];   /* its busiest stack's allocating frame */
    uint32_t nstacks;
    uint64_t removable;
    double estimated_ns; /* the report's saving */
    const char *status;  /* "ok", "not replayed" */
    char reason[300];
    char fixes[4200]; /* its fix file, "" when not replayed */
    uint32_t *sites;  /* the stacks its fixes serve */
    size_t nsites;
    double base_ticks[MK_STAT_MAX], fixed_ticks[MK_STAT_MAX]; /* at those stacks, per
                                                               * round */
    double alloc_ns;         /* the heap's time with the fix */
    double replay_saving_ns; /* the heap's time without it less alloc_ns */
    double saving_ns;        /* each site's share of its heap time the fix removes, times
                              * its time in the traced run (a trace without times:
                              * replay_saving_ns) */
    double fix_ns;           /* the fix's own calls' time (each with the timer's floor) */
    double p_saves, calls_removed, peak_rss;
} mk_whatif;

typedef struct mk_whatif_set {
    mk_whatif *w; /* n findings, then w[n] when together */
    size_t n;
    bool together;   /* w[n] is the findings replayed together */
    double *site_ns; /* the traced run's allocator time per stack, or NULL */
    uint32_t nsites;
} mk_whatif_set;

/* The findings of prog's trace that list names (report numbers, "1,3"; NULL
 * or "": those the report shows), their fix files written. -1, or an exit
 * status after one line. */
int mk_whatif_prepare(const mk_replay_prog *prog, const char *list, mk_whatif_set *set);
void mk_whatif_free(mk_whatif_set *set);
/* The ticks of one round at w's stacks (ticks: the round's per stack). */
double mk_whatif_ticks(const mk_whatif *w, const uint64_t *ticks);
/* w's savings from the replay's ticks per stack without the fix (base) and
 * with it (fixed), each summed over nrounds rounds, and its per-round
 * ticks at its stacks: replay_saving_ns, saving_ns and p_saves. */
void mk_whatif_measure(const mk_whatif_set *set, mk_whatif *w, const uint64_t *base,
                       const uint64_t *fixed, int nrounds, double ns_per_tick);
void mk_whatif_print(const mk_whatif_set *set, double base_ns, FILE *out);
/* "what_if" and "what_if_all", as docs/replay-json.md says. */
void mk_whatif_json(const mk_whatif_set *set, mk_json *j);

/* The heap over a replay: RSS (base included) against the live bytes the
 * trace's calls hold, at a time from the replay's start. */
#define MK_REPLAY_POINTS 64
typedef struct mk_replay_point {
    uint64_t t_ns, live_bytes, rss_bytes;
} mk_replay_point;
/* p after the *n points of pts (time order kept: p is the latest); when
 * they are MK_REPLAY_POINTS, every other one goes first, so the curve keeps
 * its shape in the room. */
void mk_replay_point_add(mk_replay_point *pts, uint32_t *n, mk_replay_point p);

/* What one replay measured (the child's, sent whole over a pipe). */
typedef struct mk_replay_result {
    uint64_t calls, alloc_ticks; /* every call's ticks, the empty reading's taken off */
    double ns_per_tick;
    uint64_t wall_ns;        /* the replay, start to end */
    uint64_t base_rss_bytes; /* the child's RSS before its first call */
    uint64_t peak_rss_bytes; /* its peak RSS since then (VmHWM), base included */
    uint64_t end_rss_bytes;  /* its RSS after the last call, base included (the growth
                              * counted page by page) */
    uint64_t minor_faults;   /* taken during the replay */
    uint64_t fix_calls;      /* heap calls a what-if's fixes took instead */
    uint64_t fix_ticks;      /* the fixes' own calls (not in alloc_ticks) */
    mk_bench_hist hist;      /* per-call ticks */
    uint32_t npoints;        /* the heap over the replay, in time order */
    mk_replay_point points[MK_REPLAY_POINTS];
} mk_replay_result;

/* Replays prog in a fresh child (this executable, `memkit replay --child`)
 * with the environment entries env (NULL-terminated: LD_PRELOAD,
 * GLIBC_TUNABLES) added and the fixes of file fixes (NULL: none);
 * site_ticks (prog->nsites of them, or NULL) gets the ticks per site added.
 * False with why set when the child failed. */
bool mk_replay_run(const mk_replay_prog *prog, char *const *env, const char *fixes,
                   mk_replay_result *res, uint64_t *site_ticks, char *why, size_t whylen);

/* The child: `memkit replay --child DIR NTHREADS NSLOTS NSITES [FIXES]`,
 * results on stdout. */
int mk_replay_child(int argc, char **argv);

/* ---- memkit report's side (report_replay.c) ---- */

struct mk_report;
/* The what-if rows of a replay's JSON at path onto r's findings (each row
 * checked against its finding's kind and site). -1, or an exit status
 * after one line. */
int mk_report_read_replay(struct mk_report *r, const char *path);
/* The same from `memkit replay --what-if --json` run now on trace. */
int mk_report_run_what_if(struct mk_report *r, const char *trace);

#endif /* MEMKIT_CLI_REPLAY_H */
