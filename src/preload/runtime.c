/*
 * runtime.c - the tracer's life cycle (runtime.h): start-up, a thread's first
 * event, the end of the trace, exec and fork.
 */
#define _GNU_SOURCE
#include "runtime.h"

#include "child_env.h"
#include "glibc_heap.h"
#include "modules.h"
#include "oncpu.h"
#include "output.h"
#include "sampling.h"
#include "elf_sym.h"
#include "go_exit.h"
#include "signals.h"
#include "stacks.h"
#include "summary.h"

#include <cpuid.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

/* ---- configuration ---- */

/* --sample and its snapshots (the command checked the values; a bad one
 * here turns the feature off rather than guess). */
static void read_sampling(mk_config_t *c)
{
    const char *v;
    char *end;

    c->sample_mean = 0;
    if ((v = getenv("MEMKIT_TRACE_SAMPLE")) && *v) {
        unsigned long long n = strtoull(v, &end, 10);
        if (!*end && n > 0 && n <= (1ull << 30))
            c->sample_mean = n;
    }
    if (!c->sample_mean)
        return;
    if ((v = getenv("MEMKIT_SAMPLE_SEED")) && *v)
        c->sample_seed = strtoull(v, NULL, 0);
    else
        c->sample_seed = mk_now() ^ ((uint64_t)getpid() << 32) ^ __rdtsc();
    if ((v = getenv("MEMKIT_TRACE_SNAPSHOT_NS")) && *v)
        c->snapshot_every_ns = strtoull(v, NULL, 10);
    if ((v = getenv("MEMKIT_TRACE_SNAPSHOT_SIGNAL")) && *v)
        c->snapshot_signal = atoi(v);
}

static bool env_is_1(const char *name)
{
    const char *v = getenv(name);
    return v && v[0] == '1' && !v[1];
}

/* The one place the mode is decided. `memkit trace` sets one variable per
 * option and never a contradictory pair; set by hand, they may disagree,
 * and the stronger wins as the command would have it: --sample with
 * --summary-only is a sampled run at depth 1 (the command passes it so),
 * and --sample drops the counted summary (a sampled run's summary is made
 * by replaying its samples). */
static void decide_mode(mk_config_t *c)
{
    bool summary_only = env_is_1("MEMKIT_TRACE_SUMMARY_ONLY");
    bool summary_too = env_is_1("MEMKIT_TRACE_SUMMARY");

    if (c->sample_mean) {
        c->mode = MK_MODE_SAMPLED;
        if (summary_only)
            c->depth = 1;
    } else if (summary_only) {
        c->mode = MK_MODE_SUMMARY;
    } else {
        c->mode = summary_too ? MK_MODE_FULL_SUMMARY : MK_MODE_FULL;
    }
}

/* The body malloc, free, new and delete run in the mode (mk_path_t). */
static mk_path_t path_of(const mk_config_t *c)
{
    if (c->syscalls || (c->mode == MK_MODE_SUMMARY && c->cpu_samples))
        return MK_PATH_GENERAL;
    return c->mode == MK_MODE_SUMMARY   ? MK_PATH_SUMMARY
           : c->mode == MK_MODE_SAMPLED ? MK_PATH_SAMPLE
                                        : MK_PATH_GENERAL;
}

static void read_config(mk_config_t *c)
{
    const char *v;

    c->depth = 32;
    if ((v = getenv("MEMKIT_TRACE_DEPTH")) && *v) {
        long d = strtol(v, NULL, 10);
        c->depth = d < 1 ? 1 : d > MK_MAX_DEPTH ? MK_MAX_DEPTH : (int)d;
    }
    c->syscalls = env_is_1("MEMKIT_TRACE_SYSCALLS");
    v = getenv("MEMKIT_TRACE_PREFIX");
    if (!v || !*v)
        v = "memkit";
    /* Relative to where the process started: a forked child that changed
     * directory first still writes beside its parent's trace. */
    char cwd[PATH_MAX];
    int len = -1;
    if (v[0] != '/' && getcwd(cwd, sizeof cwd))
        len = snprintf(c->prefix, sizeof c->prefix, "%s/%s", cwd, v);
    if (len < 0 || (size_t)len >= sizeof c->prefix)
        snprintf(c->prefix, sizeof c->prefix, "%s", v);
    v = getenv("MEMKIT_TRACE_RUN");
    snprintf(c->run_id, sizeof c->run_id, "%s", v ? v : "");
    v = getenv("MEMKIT_TRACE_TEST_SIGNAL");
    c->test_signal = v ? atoi(v) : 0;
    read_sampling(c);
    decide_mode(c);
    /* MEMKIT_TRACE_TIMES (memkit trace sets it): 0 nothing timed, 2 the
     * counted summary samples the CPU too. Full tracing samples unless
     * times are off; --summary-only only when asked, as its own bodies have
     * no windows to pay for (it runs the general ones, path_of: 1.27-1.30x
     * the counted summary on the churn loop); --sample by address alone, at
     * its own rate (oncpu.h). */
    v = getenv("MEMKIT_TRACE_TIMES");
    c->times = !(v && strcmp(v, "0") == 0);
    c->cpu_samples =
        c->times && (c->mode != MK_MODE_SUMMARY || (v && strcmp(v, "2") == 0));
}

/* ---- the way in for a thread without a state ---- */

mk_thread_t *mk_enter_slow(void)
{
    int phase = atomic_load(&mk_st.phase);
    if (phase == MK_PHASE_OFF) {
        int cancel = mk_cancel_off();
        mk_init(); /* the process's first call: constructors may not have run */
        mk_cancel_restore(cancel);
        phase = atomic_load(&mk_st.phase);
    }
    if (phase != MK_PHASE_ON || mk_tls.no_state)
        return NULL;
    mk_guard = 1;
    int cancel = mk_cancel_off();
    mk_thread_t *t = mk_thread_get();
    mk_cancel_restore(cancel);
    if (!t) {
        mk_guard = 0;
        return NULL;
    }
    atomic_store(&t->in_hook, 1); /* taken already; seq_cst, as in mk_enter's protocol */
    mk_guard = 0;                 /* the flag says "nested" from here on (mk_nested) */
    if (atomic_load(&mk_st.phase) != MK_PHASE_ON) {
        mk_leave(t);
        return NULL;
    }
    return t;
}

/* ---- the END record ---- */

static void write_end(int reason)
{
    uint8_t raw[256], *p = raw;
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    p = mk_put_varint(p, (uint64_t)reason);
    p = mk_put_varint(p, atomic_load(&mk_st.events_written));
    p = mk_put_varint(p, atomic_load(&mk_st.events_lost));
    p = mk_put_varint(p, atomic_load(&mk_st.next_thread) - 1);
    p = mk_put_varint(p, (uint64_t)ru.ru_maxrss);
    p = mk_put_varint(p, (uint64_t)ru.ru_minflt);
    p = mk_put_varint(p, (uint64_t)ru.ru_majflt);
    p = mk_put_varint(p, (uint64_t)ru.ru_utime.tv_sec * 1000000u +
                             (uint64_t)ru.ru_utime.tv_usec);
    p = mk_put_varint(p, (uint64_t)ru.ru_stime.tv_sec * 1000000u +
                             (uint64_t)ru.ru_stime.tv_usec);
    /* The I/O counters' places (trace/reader.h): 0, not measured. */
    for (int i = 0; i < 4; i++)
        p = mk_put_varint(p, 0);
    p = mk_put_varint(p, mk_now() - mk_st.t_start);
    p = mk_put_varint(p, mk_ticks());
    p = mk_put_varint(p, 0); /* the trace bytes to subtract from them */
    /* Added later, so optional: glibc's view of its heap. Not after _exit,
     * which is often called from a signal handler, nor from ours: either may
     * have interrupted malloc holding the arena lock mallinfo2 takes. */
    if (reason == MK_END_EXIT || reason == MK_END_EXEC) {
        uint64_t view[MK_HEAP_VIEW_FIELDS];

        mk_glibc_heap_view(view);
        p = mk_put_varint(p, MK_HEAP_VIEW_FIELDS);
        for (int i = 0; i < MK_HEAP_VIEW_FIELDS; i++)
            p = mk_put_varint(p, view[i]);
    } else {
        p = mk_put_varint(p, 0);
    }
    /* Added later, so optional: whether switches were seen (base.h), the
     * read calls whose time was dropped for one, and the clocked calls
     * whose time on the CPU was taken (record.h). */
    uint64_t switched = 0, clocked = 0;
    for (mk_thread_t *t = (mk_thread_t *)atomic_load(&mk_st.threads); t; t = t->next) {
        switched += t->w.switched;
        clocked += t->w.switched_clocked;
    }
    p = mk_put_varint(p, mk_st.switches);
    p = mk_put_varint(p, switched);
    p = mk_put_varint(p, clocked);
    /* Added later, so optional: the CPU samples by class (oncpu.h). */
    uint64_t oncpu[MK_ONCPU_END_FIELDS];
    mk_oncpu_end_fields(oncpu);
    p = mk_put_varint(p, MK_ONCPU_END_FIELDS);
    for (int i = 0; i < MK_ONCPU_END_FIELDS; i++)
        p = mk_put_varint(p, oncpu[i]);
    mk_output_record(NULL, MK_REC_END, raw, (size_t)(p - raw));
}

/* The end of a program image: every buffer, the summary, the END record. */
static void end_image(int reason)
{
    mk_threads_flush_all();
    if (mk_mode_counts_sites())
        mk_summary_write();
    if (mk_mode_sampled())
        mk_samples_write(MK_SAMPLES_END);
    write_end(reason);
}

/* Ends tracing: every buffer flushed, the END record written. Later calls
 * (and events) are ignored. */
void mk_finish(int reason)
{
    int on = MK_PHASE_ON;
    int guarded = mk_guard;

    /* A vfork child (its exec failed, it calls _exit) shares our memory: the
     * parent's trace goes on after it. */
    if (getpid() != mk_st.pid)
        return;
    mk_guard = 1;
    if (atomic_compare_exchange_strong(&mk_st.phase, &on, MK_PHASE_DONE))
        end_image(reason);
    mk_guard = guarded;
}

/* Before exec: flush and write an END; the new image starts its own trace.
 * If exec fails, tracing goes on and a later END supersedes this one. */
void mk_before_exec(void)
{
    int guarded = mk_guard;

    int on = MK_PHASE_ON;
    /* A vfork child shares our memory and must not touch the parent's state. */
    if (getpid() != mk_st.pid ||
        !atomic_compare_exchange_strong(&mk_st.phase, &on, MK_PHASE_PAUSED))
        return;
    mk_guard = 1;
    end_image(MK_END_EXEC);
    atomic_store(&mk_st.phase, MK_PHASE_ON); /* exec failed if we get to run on */
    mk_guard = guarded;
}

/* ---- fork ---- */

static void fork_prepare(void)
{
    mk_guard++;
    mk_output_lock();
}

static void fork_parent(void)
{
    mk_output_unlock();
    mk_guard--;
}

static void fork_child(void)
{
    mk_output_after_fork_child();
    mk_modules_after_fork_child();
    mk_stacks_after_fork_child();
    if (atomic_load(&mk_st.phase) != MK_PHASE_ON) {
        mk_guard--;
        return;
    }
    mk_st.pid = getpid();
    atomic_store(&mk_st.events_written, 0);
    atomic_store(&mk_st.events_lost, 0);
    atomic_store(&mk_st.next_thread, 1);
    /* Stacks are defined again in the child's file. */
    atomic_fetch_add(&mk_st.stack_gen, 1);
    mk_threads_after_fork_child();
    mk_summary_after_fork_child();
    if (mk_mode_sampled())
        mk_sampling_after_fork_child();
    if (mk_output_open()) {
        mk_modules_write();
        mk_shadowed_write();
        if (mk_mode_sampled())
            mk_samples_write(MK_SAMPLES_START);
    }
    mk_guard--;
}

/* ---- start-up ---- */

/* CPUID 0x80000007 EDX bit 8: the TSC runs at a constant rate in all states. */
static bool invariant_tsc(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000007, &a, &b, &c, &d))
        return false;
    return (d >> 8) & 1;
}

#define RESOLVE(name) (mk_real.name = (__typeof__(mk_real.name))dlsym(RTLD_NEXT, #name))

static void resolve_real(void)
{
    RESOLVE(malloc);
    RESOLVE(calloc);
    RESOLVE(realloc);
    RESOLVE(reallocarray);
    RESOLVE(free);
    RESOLVE(posix_memalign);
    RESOLVE(aligned_alloc);
    RESOLVE(memalign);
    RESOLVE(valloc);
    RESOLVE(pvalloc);
    RESOLVE(strdup);
    RESOLVE(strndup);
    RESOLVE(wcsdup);
    RESOLVE(malloc_usable_size);
    /* Asked about blocks free is given (record.h's read_slot): only if it is
     * the same allocator's. A drop-in that defines free but not it would
     * leave glibc's reading a header the drop-in never wrote. */
    /* (the object holding each, by the loader's list: dladdr walked libc's
     * dynamic symbols twice, 50 us of every process's start) */
    mk_elf_sym_t f, u;
    if (mk_real.malloc_usable_size &&
        (!mk_real.free ||
         mk_elf_symbol_at((void *)mk_real.free, "", &f) == MK_ELF_NO_OBJECT ||
         mk_elf_symbol_at((void *)mk_real.malloc_usable_size, "", &u) ==
             MK_ELF_NO_OBJECT ||
         f.base != u.base || strcmp(f.path, u.path) != 0))
        mk_real.malloc_usable_size = NULL;
}

/* Whether calls are timed (format.h: every event written, so full
 * tracing; --sample's events are too few for the stride), and what an empty
 * fenced span reads (tsc.h), which readers take off every timed call. */
static void calibrate_timing(void)
{
    mk_st.timing = mk_st.use_tsc && mk_mode_full() && mk_st.cfg.times;
    if (!mk_st.timing)
        return;
    uint64_t median = mk_tsc_empty();
    mk_st.cost_overhead_x16 =
        (uint32_t)(median > UINT32_MAX / 16 ? UINT32_MAX : median * 16);
    /* A slow call (format.h): about a microsecond at this decade's clock
     * rates, a dozen times a fast malloc's cost, read unfenced. Cycles,
     * not ns: the tracer does not know the TSC's rate, the reader does. */
    mk_st.slow_cycles = 2048;
}

void mk_init(void)
{
    int off = MK_PHASE_OFF;

    if (!atomic_compare_exchange_strong(&mk_st.phase, &off, MK_PHASE_INIT))
        return; /* already done, or another thread is at it */
    mk_guard++;
    mk_stderr_remember();
    resolve_real();
    if (!mk_real.malloc || !mk_real.free || !mk_real.calloc || !mk_real.realloc) {
        atomic_store(&mk_st.phase, MK_PHASE_FAILED);
        mk_warn_once("memkit: cannot find the real malloc; the program runs untraced");
        mk_guard--;
        return;
    }
    read_config(&mk_st.cfg);
    if (mk_mode_sampled() && !mk_sampling_init()) {
        mk_st.cfg.mode = MK_MODE_FULL; /* said once: every event is recorded */
        mk_st.cfg.sample_mean = 0;
    }
    mk_glibc_apply_mallopt();
    mk_child_env_save();
    mk_st.pid = getpid();
    mk_st.t_start = mk_now();
    mk_st.use_tsc = invariant_tsc();
    calibrate_timing();
    mk_oncpu_init();
    mk_st.tick_start = mk_ticks();
    atomic_store(&mk_st.next_thread, 1);
    atomic_store(&mk_st.stack_gen, 1);
    mk_threads_init();
    /* --summary-only keeps calling instructions only; --sample unwinds its
     * first sample's stack first (mk_stacks_ready) */
    if (mk_mode_full())
        mk_stacks_init_once();
    if (!mk_output_open()) {
        mk_guard--;
        return;
    }
    mk_modules_write();
    mk_shadowed_find();
    mk_shadowed_write();
    if (mk_mode_sampled())
        mk_samples_write(MK_SAMPLES_START);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    mk_st.path = path_of(&mk_st.cfg);
    atomic_store_explicit(&mk_st.phase, MK_PHASE_ON, memory_order_release);
    mk_signals_arm(mk_finish);
    mk_go_exit_arm(mk_finish);
    mk_guard--;
}

__attribute__((constructor)) static void mk_constructor(void)
{
    mk_init();
}

__attribute__((destructor)) static void mk_destructor(void)
{
    mk_finish(MK_END_EXIT);
}
