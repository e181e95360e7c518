/*
 * killed.c - 2,000,000 mallocs (several trace records' worth), then SIGKILL
 * to itself: no exit path runs. The trace must still read, up to the last
 * record the tracer flushed.
 */
#include <signal.h>
#include <stdlib.h>

int main(void)
{
    for (int i = 0; i < 2000000; i++)
        free(malloc(32));
    raise(SIGKILL);
    return 0;
}
