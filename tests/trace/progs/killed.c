/*
 * killed.c - 2,000,000 mallocs (several trace records' worth), then SIGKILL
 * to itself: no exit path runs. The trace must still read, up to the last
 * record the tracer flushed.
 *
 * With "slow": 150 mallocs 20 ms apart (3 s, far from a full record), then
 * SIGKILL. The tracer writes a record once it is about a second old, so only
 * the last second's mallocs may be lost.
 */
#include <signal.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
    if (argc > 1) { /* slow */
        struct timespec gap = {0, 20 * 1000 * 1000};
        for (int i = 0; i < 150; i++) {
            if (!malloc(32))
                abort();
            nanosleep(&gap, NULL);
        }
        raise(SIGKILL);
    }
    for (int i = 0; i < 2000000; i++)
        free(malloc(32));
    raise(SIGKILL);
    return 0;
}
