/*
 * signaled.c - programs that a signal's default action ends, after 10
 * mallocs in the main thread. No exit code runs, yet the tracer must keep
 * every event, and the process must still end by the same signal.
 *
 *   term     raise(SIGTERM)
 *   segv     a write through NULL
 *   abort    abort()
 *   threads  two threads make 1,000 mallocs each and wait; then SIGTERM
 *   own      the program's view: SIGINT reads as the default, its own
 *            handler replaces the tracer's and runs, and setting the default
 *            again before raising SIGINT ends the process (as Python does
 *            after a KeyboardInterrupt); prints what it saw
 *   ignored  raise(SIGINT), which the test has ignored: exits 0
 *   wait     waits for a signal from outside (timeout's, to the group)
 *   alarm    alarm(1), then waits: the timer's SIGALRM ends it
 *   prof     a profiling timer, then spins: its SIGPROF ends it
 *   rt       raise(SIGRTMIN + 3)
 *   trap     raise(SIGTRAP)
 *   readback what sigaction reads back (handler, flags, a mask member) for
 *            SIGTERM, SIGUSR1 and SIGINT: at start, after signal(), after
 *            a sigaction of its own, after signal(SIG_DFL); the test
 *            compares it with the untraced run's
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static pthread_barrier_t ready;

static void *allocate(void *arg)
{
    (void)arg;
    for (int i = 0; i < 1000; i++)
        if (!malloc(16))
            abort();
    pthread_barrier_wait(&ready); /* the main thread may signal now */
    for (;;)
        pthread_barrier_wait(&ready); /* never completes again: waits */
    return NULL;
}

static volatile sig_atomic_t handled;

static void on_int(int sig)
{
    (void)sig;
    handled = 1;
}

static int own_handler(void)
{
    struct sigaction now;
    if (sigaction(SIGINT, NULL, &now) != 0)
        return 1;
    printf("sigaction reads %s\n", now.sa_handler == SIG_DFL ? "SIG_DFL" : "another");
    printf("signal returns %s\n",
           signal(SIGINT, on_int) == SIG_DFL ? "SIG_DFL" : "another");
    raise(SIGINT);
    printf("own handler %s\n", handled ? "ran" : "did not run");
    printf("signal returns %s\n",
           signal(SIGINT, SIG_DFL) == on_int ? "on_int" : "another");
    fflush(stdout);
    raise(SIGINT);
    return 0;
}

static void show(int sig, const char *when)
{
    struct sigaction now;
    if (sigaction(sig, NULL, &now) != 0) {
        printf("%d %s: sigaction failed\n", sig, when);
        return;
    }
    const char *h = now.sa_handler == SIG_DFL   ? "SIG_DFL"
                    : now.sa_handler == SIG_IGN ? "SIG_IGN"
                    : now.sa_handler == on_int  ? "on_int"
                                                : "another";
    printf("%d %s: %s flags %#x usr2 masked %d\n", sig, when, h, (unsigned)now.sa_flags,
           sigismember(&now.sa_mask, SIGUSR2));
}

static int readback(void)
{
    const int sigs[] = {SIGTERM, SIGUSR1, SIGINT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        int sig = sigs[i];
        show(sig, "at start");
        signal(sig, on_int);
        show(sig, "after signal");
        struct sigaction own;
        memset(&own, 0, sizeof own);
        own.sa_handler = on_int;
        own.sa_flags = SA_ONSTACK | SA_NODEFER;
        sigemptyset(&own.sa_mask);
        sigaddset(&own.sa_mask, SIGUSR2);
        sigaction(sig, &own, NULL);
        show(sig, "after sigaction");
        signal(sig, SIG_DFL);
        show(sig, "after the default");
        own.sa_handler = SIG_DFL;
        sigaction(sig, &own, NULL);
        show(sig, "after the default with flags");
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "term";
    for (int i = 0; i < 10; i++)
        if (!malloc(32))
            abort();
    if (!strcmp(mode, "segv")) {
        volatile int *nowhere = NULL;
        *nowhere = 1;
    } else if (!strcmp(mode, "abort")) {
        abort();
    } else if (!strcmp(mode, "threads")) {
        pthread_t t[2];
        pthread_barrier_init(&ready, NULL, 3);
        for (int i = 0; i < 2; i++)
            if (pthread_create(&t[i], NULL, allocate, NULL) != 0)
                return 1;
        pthread_barrier_wait(&ready);
    } else if (!strcmp(mode, "own")) {
        return own_handler();
    } else if (!strcmp(mode, "readback")) {
        return readback();
    } else if (!strcmp(mode, "ignored")) {
        raise(SIGINT);
        return 0;
    } else if (!strcmp(mode, "alarm")) {
        alarm(1);
        for (;;)
            pause();
    } else if (!strcmp(mode, "prof")) {
        struct itimerval every = {.it_interval = {0, 10000}, .it_value = {0, 10000}};
        if (setitimer(ITIMER_PROF, &every, NULL) != 0)
            return 1;
        for (volatile unsigned long spin = 0;; spin++)
            ;
    } else if (!strcmp(mode, "rt")) {
        raise(SIGRTMIN + 3);
        return 0;
    } else if (!strcmp(mode, "trap")) {
        raise(SIGTRAP);
        return 0;
    } else if (!strcmp(mode, "wait")) {
        for (;;)
            pause();
    }
    raise(SIGTERM);
    return 0;
}
