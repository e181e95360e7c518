/*
 * sigmask.c - the program's signal mask under the tracer, which answers
 * libunwind's own sigprocmask calls itself while it unwinds (signals.c).
 * SIGUSR1 is blocked from the start; the main thread then allocates from
 * stacks of many depths and callers (most captures walk the stack) while a
 * profiling timer's handler, often interrupting a walk, blocks SIGUSR2,
 * checks that the mask says so, and restores it. At the end SIGUSR1 must
 * still be blocked (a raise stays pending) and nothing else. Prints
 * "sigmask: ok" and exits 0, or says what went wrong and exits 1.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

static volatile sig_atomic_t handled, wrong;

static void on_prof(int sig)
{
    sigset_t usr2, old, now;
    (void)sig;
    sigemptyset(&usr2);
    sigaddset(&usr2, SIGUSR2);
    if (sigprocmask(SIG_BLOCK, &usr2, &old) != 0 ||
        sigprocmask(SIG_BLOCK, NULL, &now) != 0 || !sigismember(&now, SIGUSR2) ||
        sigismember(&old, SIGUSR2) || !sigismember(&old, SIGUSR1))
        wrong = 1;
    if (sigprocmask(SIG_SETMASK, &old, NULL) != 0)
        wrong = 1;
    handled++;
}

/* A capture from depth d: each depth is a different stack. */
static __attribute__((noinline)) void *descend(int d)
{
    if (d == 0)
        return malloc(24);
    void *p = descend(d - 1);
    __asm__ volatile("" ::: "memory"); /* no tail call: a frame per depth */
    return p;
}

/* Eight callers of descend with frames of one size: the tracer's cache is
 * keyed by the hook's frame, so the same key comes with eight stacks, more
 * than its ways hold, and most captures walk the stack with libunwind. */
#define OUTER(n)                                                                         \
    static __attribute__((noinline)) void *outer##n(int d)                               \
    {                                                                                    \
        void *p = descend(d);                                                            \
        __asm__ volatile("" ::: "memory");                                               \
        return p;                                                                        \
    }
OUTER(0)
OUTER(1)
OUTER(2)
OUTER(3)
OUTER(4)
OUTER(5)
OUTER(6)
OUTER(7)
static void *(*const outers[8])(int) = {outer0, outer1, outer2, outer3,
                                        outer4, outer5, outer6, outer7};

int main(void)
{
    sigset_t usr1, now;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    if (sigprocmask(SIG_BLOCK, &usr1, NULL) != 0)
        return 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_prof;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGPROF, &sa, NULL);
    struct itimerval every = {{0, 200}, {0, 200}};
    setitimer(ITIMER_PROF, &every, NULL);
    for (int round = 0; round < 400 || (handled < 200 && round < 100000); round++)
        for (int d = 0; d < 48; d++)
            free(outers[(round + d) % 8](d));
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_PROF, &off, NULL);

    if (wrong) {
        puts("sigmask: a handler's sigprocmask did not take effect");
        return 1;
    }
    if (sigprocmask(SIG_BLOCK, NULL, &now) != 0 || !sigismember(&now, SIGUSR1) ||
        sigismember(&now, SIGUSR2) || sigismember(&now, SIGPROF)) {
        puts("sigmask: the program's mask changed");
        return 1;
    }
    raise(SIGUSR1); /* blocked: stays pending instead of ending the program */
    sigset_t pending;
    if (sigpending(&pending) != 0 || !sigismember(&pending, SIGUSR1)) {
        puts("sigmask: SIGUSR1 is not pending");
        return 1;
    }
    printf("sigmask: ok (%d handler runs)\n", (int)handled);
    return 0;
}
