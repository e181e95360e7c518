/*
 * killed.c - 2,000,000 mallocs (several trace records' worth), then SIGKILL
 * to itself: no exit path runs. The trace must still read, up to the last
 * record the tracer flushed.
 *
 * With "slow": 150 mallocs 20 ms apart (3 s, far from a full record), then
 * SIGKILL. The tracer writes a record once it is about a second old, so only
 * the last second's mallocs may be lost.
 *
 * With "sites" (for --summary-only's checkpoints): for 1.5 s (at most
 * 100,000,000 iterations), malloc at one of two sites in turn and free the
 * block allocated 1,000 iterations before; then SIGKILL.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sites(void)
{
    static void *ring[1000];
    double start = seconds();
    for (long i = 0; i < 100000000 && ((i & 1023) || seconds() - start < 1.5); i++) {
        free(ring[i % 1000]);
        if (i & 1)
            ring[i % 1000] = malloc(24); /* site one */
        else
            ring[i % 1000] = malloc(40); /* site two */
        if (!ring[i % 1000])
            abort();
    }
    raise(SIGKILL);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "sites"))
        sites();
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
