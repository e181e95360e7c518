/*
 * signals.c - the trace of a program that a signal ends.
 *
 * A signal whose default action ends the process (Ctrl-C's SIGINT, SIGTERM
 * from kill or timeout, SIGPIPE from `| head`, a crash's SIGSEGV, abort()'s
 * SIGABRT) runs no exit code, so the events still in the threads' buffers
 * would be lost: for a program that allocates little, every one of them. Where
 * the program leaves such a signal at its default action, the tracer puts a
 * handler in its place that ends the trace as _exit does, restores the
 * default action and lets the signal take it: the process ends as it would
 * have, by the same signal (so with the same status and core dump).
 *
 * With --sample, the snapshot signal (SIGUSR2 by default) is the exception
 * when it is a snapshot request (memkit trace --snapshot: sigqueue with
 * MK_SNAPSHOT_SIGVAL): where the program leaves the signal at its default,
 * the request marks a snapshot and the process runs on. The same signal sent
 * by kill (or raise) is the program's, and ends it as untraced.
 *
 * The program is not to see the difference: sigaction() and signal() report
 * the default action while our handler stands in for it, with the flags and
 * mask the program last set it with (as the kernel would keep them, with
 * glibc's SA_RESTORER and restorer); a handler the
 * program installs (or SIG_IGN) replaces ours; setting the default again puts
 * ours back. Calls that bypass those two (the system call itself, sigset(),
 * glibc's internal ones such as system()'s) see our handler; those that save
 * an action and restore it later restore ours, which is what they meant.
 */
#define _GNU_SOURCE
#include "signals.h"

#include "hook.h"
#include "sampling.h"
#include "stacks.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

/* The kernel's flag for a user-space restorer, which glibc's sigaction
 * always sets and reads back, but does not define for programs. */
#ifndef SA_RESTORER
#define SA_RESTORER 0x04000000
#endif

/* Signals whose default action ends the process: the user's and the
 * system's (HUP, INT, QUIT, TERM, PIPE, PWR), crashes (ILL, ABRT, BUS, FPE,
 * SEGV; the faults come back by themselves, see below; TRAP, SYS and
 * STKFLT, sent again), timers and limits (ALRM, VTALRM, PROF, XCPU, XFSZ),
 * I/O readiness (IO) and the user signals; and the real-time ones, from
 * SIGRTMIN on (glibc keeps the two below it for itself). */
static const int fixed_signals[] = {
    SIGHUP,  SIGINT,  SIGQUIT,   SIGILL,  SIGTRAP, SIGABRT,  SIGBUS,  SIGFPE,
    SIGSEGV, SIGPIPE, SIGTERM,   SIGALRM, SIGUSR1, SIGUSR2,  SIGXCPU, SIGXFSZ,
    SIGSYS,  SIGPROF, SIGVTALRM, SIGIO,   SIGPWR,  SIGSTKFLT};

/* The signals above, real-time ones included (set by mk_signals_arm). */
static bool covered_signals[NSIG];

/* Our handler is installed where the program believes the default is. */
static atomic_bool stands_in[NSIG];
/* What the program believes is there meanwhile: the default, with the flags,
 * mask and restorer the kernel would hold for it (read back as they were at
 * start-up, or as the program set them since). */
static struct sigaction believed[NSIG];
/* The restorer glibc gives the kernel with SA_RESTORER (read back from our
 * own action): what a default set with flags reads back with. */
static void (*glibc_restorer)(void);
/* Set once mk_signals_arm has run: before, every call passes through. */
static atomic_bool armed;

/* What ends the trace (mk_signals_arm's caller: runtime.c's mk_finish). */
static void (*end_trace)(int reason);

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef sighandler_t (*signal_fn)(int, sighandler_t);

static sigaction_fn next_sigaction(void)
{
    return NEXT(sigaction_fn, "sigaction");
}

static bool covered(int sig)
{
    return sig > 0 && sig < NSIG && covered_signals[sig];
}

static bool is_fault(int sig)
{
    return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE;
}

/* Whether stands_in is this process's: a vfork child shares our memory (and
 * not our handlers) until it execs, and must leave the parent's view alone. */
static bool own_process(void)
{
    return atomic_load(&armed) && getpid() == mk_st.pid;
}

/* The default action, with no flags (as a signal never set has). */
static void reset_default(struct sigaction *act)
{
    memset(act, 0, sizeof *act);
    act->sa_handler = SIG_DFL;
}

/* The program set the default with act: what the kernel would keep. */
static void believe(int sig, const struct sigaction *act)
{
    struct sigaction b = *act;
    b.sa_flags |= SA_RESTORER;
    if (!(act->sa_flags & SA_RESTORER))
        b.sa_restorer = glibc_restorer;
    sigdelset(&b.sa_mask, SIGKILL);
    sigdelset(&b.sa_mask, SIGSTOP);
    believed[sig] = b;
}

static void on_fatal_signal(int sig, siginfo_t *info, void *context)
{
    int saved_errno = errno;
    struct sigaction dfl;

    (void)context;
    /* A snapshot request on --sample's snapshot signal (SIGUSR2 unless told
     * otherwise), where the program left it at its default: a snapshot at
     * the next sample, and the program runs on. Only a request: the signal
     * from anyone else takes its default action. */
    if (sig == mk_st.cfg.snapshot_signal && mk_mode_sampled() && info &&
        info->si_code == SI_QUEUE && info->si_value.sival_int == MK_SNAPSHOT_SIGVAL) {
        mk_snapshot_request();
        return;
    }
    /* The default action first: a fault while the trace ends then ends the
     * process at once instead of coming back here. */
    reset_default(&dfl);
    next_sigaction()(sig, &dfl, NULL);
    if (own_process())
        atomic_store(&stands_in[sig], false);
    /* As _exit does: no allocation (the signal may have interrupted malloc
     * holding its lock), buffers of threads stuck in a hook left behind. */
    end_trace(MK_END_SIGNAL);
    /* A fault the kernel raised comes back when the instruction runs again,
     * so a core dump shows it where it happened; any other signal is sent
     * again. Either way it arrives as this handler returns and lifts its
     * mask, and the default action ends the process. */
    if (!(is_fault(sig) && info && info->si_code > 0))
        raise(sig);
    errno = saved_errno;
}

/* Puts our handler in place of the default action; the previous action in
 * *prev (may be NULL). */
static int stand_in(int sig, struct sigaction *prev)
{
    struct sigaction ours;

    memset(&ours, 0, sizeof ours);
    ours.sa_sigaction = on_fatal_signal;
    /* Nothing interrupts the trace's end; an alternate stack, if the program
     * set one up, lets a stack overflow's SIGSEGV run it too. */
    ours.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigfillset(&ours.sa_mask);
    int rc = next_sigaction()(sig, &ours, prev);
    if (rc == 0)
        atomic_store(&stands_in[sig], true);
    if (rc == 0 && !glibc_restorer) {
        struct sigaction now;
        if (next_sigaction()(sig, NULL, &now) == 0 && (now.sa_flags & SA_RESTORER))
            glibc_restorer = now.sa_restorer;
    }
    return rc;
}

void mk_signals_arm(void (*end)(int reason))
{
    end_trace = end;
    for (size_t i = 0; i < sizeof fixed_signals / sizeof fixed_signals[0]; i++)
        covered_signals[fixed_signals[i]] = true;
    for (int sig = SIGRTMIN; sig <= SIGRTMAX && sig < NSIG; sig++)
        covered_signals[sig] = true;
    /* One call a signal (not a query, then a change: 54 signals, in every
     * process): ours goes in and the action it replaced comes back. One the
     * program set, or SIG_IGN (nohup, a background job), is not ours to
     * touch: it goes back at once. Signals wait meanwhile, so that none
     * meets our handler where the program's action was. */
    sigset_t all, was;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &was);
    for (int sig = 1; sig < NSIG; sig++) {
        struct sigaction prev;
        if (covered_signals[sig] && stand_in(sig, &prev) == 0) {
            if (prev.sa_handler != SIG_DFL) {
                next_sigaction()(sig, &prev, NULL);
                atomic_store(&stands_in[sig], false);
            } else {
                believed[sig] = prev; /* the default as it was, flags and all */
            }
        }
    }
    pthread_sigmask(SIG_SETMASK, &was, NULL);
    atomic_store(&armed, true);
}

MK_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    sigaction_fn next = next_sigaction();
    if (!next) {
        errno = ENOSYS;
        return -1;
    }
    if (!covered(sig) || !own_process())
        return next(sig, act, old);
    if (atomic_load(&stands_in[sig])) {
        if (act && act->sa_handler != SIG_DFL) { /* the program's own replaces ours */
            int rc = next(sig, act, NULL);
            if (rc != 0)
                return rc;
            atomic_store(&stands_in[sig], false);
        }
        if (old) /* a query, or the default again: ours stays */
            *old = believed[sig];
        if (act && act->sa_handler == SIG_DFL)
            believe(sig, act);
        return 0;
    }
    if (act && act->sa_handler == SIG_DFL && mk_tracing_on()) {
        int rc = stand_in(sig, old); /* back to the default: ours stands in again */
        if (rc == 0)
            believe(sig, act);
        return rc;
    }
    return next(sig, act, old);
}

/* libunwind blocks every signal around its dl_iterate_phdr, two system calls
 * each time it meets a code address its caches lack: 290,242 of them in
 * cmake's configure traced (68 processes), more than all other system calls
 * together. Inside a capture they guard nothing: a handler that interrupts
 * the hook finds the thread in one and does not unwind (mk_nested), and the
 * loader's lock dl_iterate_phdr takes is recursive. So while the thread is
 * in libunwind for a capture, libunwind's calls are answered here: the mask
 * is left as it is, and a caller that asks for it gets it as it was when
 * the capture began, read with one system call. Every other call (the
 * program's, a handler's that interrupted the capture) goes through. */
MK_EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
    typedef int (*sigprocmask_fn)(int, const sigset_t *, sigset_t *);
    sigprocmask_fn next = NEXT(sigprocmask_fn, "sigprocmask");
    if (!next) {
        errno = ENOSYS;
        return -1;
    }
    /* A handler that interrupted the capture calls from its own code. */
    if (MK_LIKELY(!mk_tls.in_unwind) || !mk_unwinder_calls(CALLER()))
        return next(how, set, old);
    if (old) {
        if (!mk_tls.unwind_mask_known && mk_syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL,
                                                    &mk_tls.unwind_mask, _NSIG / 8) == 0)
            mk_tls.unwind_mask_known = true;
        if (!mk_tls.unwind_mask_known)
            return next(how, set, old); /* cannot say: the real call, then */
        *old = mk_tls.unwind_mask;
    }
    return 0;
}

MK_EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
    signal_fn next = NEXT(signal_fn, "signal");
    if (!next) {
        errno = ENOSYS;
        return SIG_ERR;
    }
    if (!covered(sig) || !own_process())
        return next(sig, handler);
    /* glibc's signal() is sigaction with SA_RESTART, the signal itself masked */
    struct sigaction as_glibc;
    memset(&as_glibc, 0, sizeof as_glibc);
    as_glibc.sa_handler = SIG_DFL;
    as_glibc.sa_flags = SA_RESTART;
    sigaddset(&as_glibc.sa_mask, sig);
    if (atomic_load(&stands_in[sig])) {
        if (handler == SIG_DFL) {
            believe(sig, &as_glibc);
            return SIG_DFL; /* ours stays */
        }
        if (next(sig, handler) == SIG_ERR)
            return SIG_ERR;
        atomic_store(&stands_in[sig], false);
        return SIG_DFL;
    }
    if (handler == SIG_DFL && mk_tracing_on()) {
        struct sigaction prev;
        if (stand_in(sig, &prev) != 0)
            return SIG_ERR;
        believe(sig, &as_glibc);
        return prev.sa_handler;
    }
    return next(sig, handler);
}
