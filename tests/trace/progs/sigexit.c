/*
 * sigexit.c - 6 mallocs, then a signal handler that calls _exit(3): the
 * tracer flushes on _exit, so all 6 are in the trace, and the status is 3.
 */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

static void on_alarm(int sig)
{
    (void)sig;
    _exit(3);
}

int main(void)
{
    for (int i = 0; i < 6; i++)
        if (!malloc(16))
            abort();
    signal(SIGUSR1, on_alarm);
    raise(SIGUSR1);
    return 0;
}
