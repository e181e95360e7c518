/*
 * sigexit.c - 6 mallocs, then a signal handler that calls _exit(3): the
 * tracer flushes on _exit, so all 6 are in the trace, and the status is 3.
 *
 * With "in-write": mallocs until a SIGUSR2 handler calls exit(4). The test
 * has the tracer raise SIGUSR2 while it writes the first record
 * (MEMKIT_TRACE_TEST_SIGNAL): the exit must neither hang nor lose events.
 */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

static void on_alarm(int sig)
{
    (void)sig;
    _exit(3);
}

static void on_usr2(int sig)
{
    (void)sig;
    exit(4);
}

int main(int argc, char **argv)
{
    if (argc > 1) { /* in-write */
        signal(SIGUSR2, on_usr2);
        for (int i = 0; i < 1000000; i++)
            if (!malloc(16))
                abort();
        return 0; /* the signal never came */
    }
    for (int i = 0; i < 6; i++)
        if (!malloc(16))
            abort();
    signal(SIGUSR1, on_alarm);
    raise(SIGUSR1);
    return 0;
}
