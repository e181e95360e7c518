/*
 * report.h - one analysed input, ready for the renderers: the profile, the
 * names of its stacks, sites rolled up three ways, and the findings.
 *
 * Input is a memkit trace or a curl memdebug log, told apart by content.
 */
#ifndef MEMKIT_ANALYZE_REPORT_H
#define MEMKIT_ANALYZE_REPORT_H

#include "fmt.h"
#include "memdebug.h"
#include "names.h"
#include "profile.h"

#include <stdio.h>

enum mk_input_kind { MK_INPUT_TRACE, MK_INPUT_MEMDEBUG };

/* What to look at. Strings may be NULL. */
typedef struct mk_report_opts {
    const char *module;   /* the allocating frame is in this object (libcurl.so) */
    const char *function; /* some frame is this function */
    const char *file;     /* some frame is in this source file */
    int64_t thread;       /* -1: all */
    int64_t pid;          /* of several traces, only this process's; -1: all */
    struct mk_names *share_names; /* mk_report_load_many's: the run's shared frames */
    double from_s, to_s;          /* time window in seconds from the start; to 0: end */
    uint64_t min_count;           /* a site needs this many allocations for a finding */
    double cost_ns;               /* malloc+free cost; 0: measure it on this machine */
    bool no_symbols;              /* frames as module+offset: no debug information read */
    bool totals_only;             /* no sites, rollups or findings (nothing symbolized) */
    bool summary_first; /* a trace with a SUMMARY beside its events (memkit trace's
                         * own): the summary's totals and sites, no replay, so
                         * no findings, temporaries or peak holders */
    bool counts_only;   /* with summary_first: totals only (a process table) */
    bool growth;        /* keep each site's live bytes at the growth points
                         * (profile.h), for mk_report_growth */
    bool growth_asked;  /* --growth: the page carries them without snapshots */
    bool slices;        /* each site's calls, bytes and time per time slice (the
                         * page's ranges; one process's report only) */
    int sort;           /* enum mk_sort: the rows' order (--sort) */
    bool wait_known;    /* the process's end as its parent saw it (memkit trace's
                         * own child): what a missing end record means */
    int wait_status;    /* waitpid's status, with wait_known */
    /* How the text and the page show it: the findings shown (0: those that
     * hold 90% of the saving, at most 10; SIZE_MAX: all; JSON has every
     * one), and the frames of each stack in text (0: each table's own). */
    size_t findings_shown;
    int depth_shown;
} mk_report_opts_t;

/* The order of the site, function and line rows (--sort): the default is
 * the allocator's time where the trace measured it, else calls. */
enum mk_sort {
    MK_SORT_DEFAULT,
    MK_SORT_TIME,
    MK_SORT_CALLS,
    MK_SORT_BYTES,
    MK_SORT_PEAK
};

typedef struct mk_report mk_report_t;
void mk_report_opts_default(mk_report_opts_t *o);

/* The order r's rows are in (never MK_SORT_DEFAULT: time needs times), and
 * its name in headings ("allocator time", "allocations", ...). */
enum mk_sort mk_report_sort_of(const mk_report_t *r);
/* The shortest time the input can tell from 0, in ns (a trace's tick:
 * lifetimes within one read 0); 0 for inputs without times (logs). */
double mk_report_time_resolution_ns(const mk_report_t *r);
const char *mk_report_sort_title(const mk_report_t *r);

/* The answer first: how much the allocator costs the run, what that is
 * worth, where, and the first fix (mk_report_answer). */
typedef struct mk_answer_where {
    char name[512]; /* a calling function, or an allocating row's label */
    double share;   /* of the allocator's time (by_time), else of the calls */
} mk_answer_where_t;

typedef struct mk_answer {
    bool present;        /* a trace with allocation calls */
    bool measured;       /* ns measured in the run, else priced */
    bool from_samples;   /* measured by CPU samples, else by timed calls */
    double ns, cpu_ns;   /* the allocator's time; the run's CPU (0: unknown) */
    double price_ns;     /* when priced: one malloc+free's */
    const char *verdict; /* by ns / cpu_ns; NULL without the CPU time */
    bool by_time;        /* where: by the allocator's time, else by calls */
    mk_answer_where_t where[3];
    size_t nwhere;
    const struct mk_finding *first_fix; /* the top finding, or NULL */
} mk_answer_t;

void mk_report_answer(mk_report_t *r, mk_answer_t *a);

/* A module whose frames the report shows as module+offset: no symbol table
 * or debug information for it was found here. */
typedef struct mk_unsymbolized {
    const char *module, *path; /* base name; the path the trace recorded */
    char build_id[129];        /* hex, "" if the trace has none */
    unsigned frames;           /* its frames in the sites looked at */
} mk_unsymbolized_t;

/* The modules of that kind in the first `top` sites' stacks, the most
 * frames first, at most max; 0 with --no-symbols (offsets were asked for). */
size_t mk_report_unsymbolized(mk_report_t *r, size_t top, mk_unsymbolized_t *out,
                              size_t max);
/* Where a debugger and memkit look for a module's separate debug file, by
 * its build-id, in buf ("" when it has none). */
const char *mk_debug_file_of(const mk_unsymbolized_t *u, char *buf, size_t len);

/* A row: one stack, or every stack with the same allocating function or
 * source line. agg sums its stacks (without their order windows). */
typedef struct mk_row {
    uint32_t stack;        /* the stack, or the row's busiest stack */
    const char *name;      /* the function or line; NULL for a stack row */
    mk_stack_agg_t *agg;   /* a stack row: the profile's own aggregate (no copy:
                            * a compiler's trace has tens of thousands);
                            * a roll-up: the sum of its stacks' */
    uint64_t calls, bytes; /* agg's, copied when the rows are sorted: the sort
                            * then reads the rows alone, not tens of thousands
                            * of scattered aggregates */
    double key;            /* the sort's own key (mk_report_sort_of), copied too */
} mk_row_t;

enum mk_finding_kind {
    MK_F_HOIST,         /* one block at a time, one size: allocate it once */
    MK_F_TEMPORARY,     /* freed before the thread's next allocation */
    MK_F_LIFO,          /* freed in reverse order: mk_stack frames */
    MK_F_FIFO,          /* freed in allocation order: the FIFO allocator */
    MK_F_CROSS_THREAD,  /* freed on another thread: the ring allocator */
    MK_F_POOL,          /* one size, churning: mk_pool */
    MK_F_TINY,          /* under MK_TINY_SIZE bytes */
    MK_F_PAIRED,        /* two sites allocated and freed together */
    MK_F_REALLOC_CHAIN, /* grown step by step: reserve once */
    MK_F_KINDS
};

/* The JSON and text name of a finding kind ("lifo", "temporary", ...). */
const char *mk_finding_name(enum mk_finding_kind k);

/* A finding is one fix: one kind at one allocation site (the allocating
 * frame's function and line, or module+offset), with the stacks that reach
 * it merged (mk_findings_merge); the busiest few are its evidence. */
#define MK_FINDING_STACKS 3

typedef struct mk_finding {
    enum mk_finding_kind kind;
    uint32_t stack, stack2; /* the busiest stack; stack2: the other site of a pair */
    uint32_t stacks[MK_FINDING_STACKS]; /* the busiest stacks, stacks[0] == stack */
    uint32_t nstacks;                   /* stacks merged (1: a single one) */
    uint32_t npriced;                   /* of them, those priced */
    uint64_t count;                     /* allocations showing the pattern */
    uint64_t removable;                 /* malloc/free pairs the fix removes */
    double saving_ns;                   /* removable x the measured malloc+free cost */
    double alloc_ns;    /* the allocator's time at its site (and stack2's) */
    bool priced;        /* saving_ns from the price, not measured times */
    char evidence[256]; /* the busiest stack's */
    const char *fix;
    /* memkit replay --what-if's measure of the fix (memkit report --replay
     * or --what-if fills it): the heap time it removes, its own time, the
     * heap calls it takes, and whether the saving is beyond noise */
    bool replayed;
    double replay_saving_ns, replay_fix_ns, replay_calls_removed;
    bool replay_beyond_noise;
} mk_finding_t;

/* The allocator's time by the function that called it (a trace with site
 * times): allocations by the allocating function, frees by the freeing one,
 * as a profiler's call graph puts it. */
typedef struct mk_caller {
    char *name;
    double ns, slow_ns; /* slow_ns: in slow calls (format.h) */
} mk_caller_t;

/* One process of a merged report (several traces). */
typedef struct mk_report_process {
    const char *path;
    uint32_t pid;
    char command[80];
    uint64_t calls, peak_bytes, total_bytes;
} mk_report_process_t;

struct mk_report {
    const char *path;
    enum mk_input_kind kind;
    mk_trace_t *tr; /* NULL for a log */
    mk_memdebug_info_t md;
    mk_profile_t prof;
    mk_names_t *names;
    mk_report_opts_t opts;
    bool partial;                        /* damaged or cut: what came before the fault */
    char problem[512];                   /* the warning about partial input, "" if none */
    mk_row_t *sites, *functions, *lines; /* by calls, most first */
    mk_stack_agg_t *function_aggs, *line_aggs; /* the roll-ups' sums */
    size_t nsites, nfunctions, nlines;
    uint32_t *line_of_site; /* sites[i] rolls up to lines[line_of_site[i]] */
    mk_finding_t *findings; /* by saving, most first */
    size_t nfindings;
    mk_caller_t *callers; /* by time, most first; none without site times */
    size_t ncallers;
    double cost_ns;        /* malloc+free pair used for savings; 0 until
                            * mk_report_cost_ns measures it */
    bool savings_measured; /* savings from measured times, not the price */
    double duration_s;     /* of the traced run; 0 when unknown */
    const char *time_unit; /* "ns" for a trace, "line" for a log */
    /* Allocation memkit could not see: the program's own malloc/free ahead
     * of memkit's, or most frees of blocks never seen allocated. "" when
     * none; leaks_unknown: blocks live at the end may have been freed. */
    char outside[1024];
    bool leaks_unknown;
    /* Several traces merged (mk_report_load_many): one row per process,
     * busiest first; sites are matched by their symbolized frames, totals
     * are sums, and the peak is the largest single process's. */
    mk_report_process_t *procs;
    size_t nprocs;
    int spool_fd; /* a piped input's copy (memfd), when spooled */
    bool spooled;
};

/* Reads and analyses path ("-": standard input; a pipe or FIFO is read once,
 * into memory). Returns 0 with r filled (r->partial and
 * r->problem say when the input was cut or damaged), or 2 with a one-line
 * reason in err when nothing could be read. */
int mk_report_load(mk_report_t *r, const char *path, const mk_report_opts_t *opts,
                   char *err, size_t errlen);
void mk_report_free(mk_report_t *r);

/* One process's row, from its loaded report r (a trace's) read from path
 * (kept by pointer). */
void mk_report_process_of(mk_report_process_t *p, const mk_report_t *r, const char *path);
/* Sorts processes busiest first (allocation calls; ties: the older pid). */
void mk_report_sort_processes(mk_report_process_t *procs, size_t n);

/* Reads several traces (the processes of one run) into one report, as
 * mk_report_load reads one; n == 1 is mk_report_load. A curl log cannot be
 * merged (exit 2, one line); a damaged trace adds what came before its
 * damage and sets r->partial. */
int mk_report_load_many(mk_report_t *r, const char *const *paths, size_t n,
                        const mk_report_opts_t *opts, char *err, size_t errlen);

/* A site whose live bytes grow across the growth points (growth.c). */
typedef struct mk_growth_row {
    uint32_t stack;
    const mk_row_t *row;  /* its row in r->sites */
    double slope;         /* least-squares growth, bytes per second */
    uint64_t first, last; /* live bytes at the first and the last point */
    unsigned rises;       /* intervals in which it grew */
} mk_growth_row_t;

/* The sites that grow, fastest first, into a new array (free it); 0 when
 * none does or r has fewer than 2 growth points (opts.growth off). */
size_t mk_report_growth(const mk_report_t *r, mk_growth_row_t **out);

/* Findings (findings.c), run by mk_report_load: computed, ranked by the
 * calls they remove, then priced at cost_ns per malloc+free removed (the
 * caller measures it only when there is a finding to price). */
bool mk_findings_compute(mk_report_t *r);
void mk_findings_price(mk_report_t *r, double cost_ns);
/* Savings from the allocator's time measured at the findings' sites (a
 * trace with site times): the removed calls' share of it; findings are then
 * ordered by saving. */
void mk_findings_measure(mk_report_t *r, double (*price_ns)(mk_report_t *));
/* One finding per fix: those of one kind at one site (and a pair's second
 * site) become one, their counts and savings summed, ranked again. */
bool mk_findings_merge(mk_report_t *r);
/* A stack merged into a finding, with its sizes (a pair's second stack,
 * else the same stack again). */
typedef struct mk_finding_member {
    uint32_t stack, stack2;
    uint64_t max_size, max_size2;
    uint64_t max_live_bytes; /* its most live blocks x its largest size */
} mk_finding_member_t;
/* Every stack merged into finding f: the findings computed again per stack
 * (after a load, on an index of the stacks rebuilt for the call), those of
 * f's fix kept, into *out (*n of them; free it). False when out of memory. */
bool mk_finding_members(mk_report_t *r, const mk_finding_t *f, mk_finding_member_t **out,
                        size_t *n);
/* How many findings a reader is shown: those that hold 90% of the total
 * saving, at most limit (0: the default, 10); SIZE_MAX: all of them. */
size_t mk_findings_shown(const mk_report_t *r, size_t limit);

/* Adds s's counts to d's, as a roll-up sums its stacks (without their order
 * windows and growth). */
void mk_agg_add(mk_stack_agg_t *d, const mk_stack_agg_t *s);

/* A row's median request size: its histogram's, kept within its min and max
 * (exact when every request had one size). */
uint64_t mk_agg_median_size(const mk_stack_agg_t *a);

/* A stack as one string: frame labels joined by ';', innermost first. Used
 * to match sites across runs. */
const char *mk_report_stack_key(mk_report_t *r, uint32_t stack, char *buf, size_t cap);

/* The name a stack rolls up to (the rows of r->functions and r->lines): its
 * allocating function, or its source line; the frame's label without them. */
const char *mk_report_rollup_name(mk_report_t *r, uint32_t stack, bool by_line, char *buf,
                                  size_t cap);

/* The label of a row: its name, or its stack's innermost frame. */
const char *mk_row_label(mk_report_t *r, const mk_row_t *row, char *buf, size_t cap);

/* A stack row's label with its caller, "xmalloc (make) <- parse_file_seq
 * (make)": enough to tell apart two stacks through the same wrapper.
 * mk_row_label's for a named row or a stack of one frame. */
const char *mk_row_label_with_caller(mk_report_t *r, const mk_row_t *row, char *buf,
                                     size_t cap);

/* The cost of a malloc+free pair here, in ns (median of a few short runs). */
double mk_measure_malloc_free_ns(void);

/* The malloc+free cost that prices r's findings: the one given in the
 * options, else this machine's, measured on first use. Measuring takes about
 * 7 ms, and most inputs have no finding to price: a --summary-only trace
 * never has one, and `memkit trace` prints its summary after every run. */
double mk_report_cost_ns(mk_report_t *r);

/* Renderers (report_text.c, report_json.c, report_html.c, report_collapsed.c,
 * report_pprof.c). */
/* brief: the summary `memkit trace` prints (totals, top sites, top findings). */
void mk_render_text(mk_report_t *r, FILE *out, int top, bool color, bool brief);
/* The growth ranking (memkit report --growth): its points, then the sites
 * whose live bytes grow, fastest first, with their stacks. */
void mk_render_growth(mk_report_t *r, FILE *out, int top, bool color);
/* The table of a run's processes (pid, allocation calls, peak, command),
 * its first max_rows rows and a line counting the rest. */
void mk_render_processes(FILE *out, const mk_report_process_t *procs, size_t n,
                         size_t max_rows);
void mk_render_json(mk_report_t *r, FILE *out, int top);
/* The HTML page's data: the JSON report with each frame once ("frame_table")
 * and stacks as indices into it, rows under 0.1% of every weight folded
 * into one "other" row, growth only from snapshots or --growth. */
void mk_render_page_json(mk_report_t *r, FILE *out, int top);
bool mk_render_html(mk_report_t *r, FILE *out, int top);
enum mk_weight { MK_WEIGHT_CALLS, MK_WEIGHT_BYTES, MK_WEIGHT_PEAK, MK_WEIGHT_LEAKED };
void mk_render_collapsed(mk_report_t *r, FILE *out, enum mk_weight w);
/* A gzipped pprof profile (report_pprof.c): false when out of memory or the
 * write failed. */
bool mk_render_pprof(mk_report_t *r, FILE *out);

#endif /* MEMKIT_ANALYZE_REPORT_H */
