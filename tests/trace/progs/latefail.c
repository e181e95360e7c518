/*
 * latefail.c - a process that outlives `memkit trace` and then fails to write
 * its trace: the parent exits at once; the child waits, lowers its own
 * file-size limit to one byte, allocates past a record (262,144 events) and
 * exits. Its flush fails with EFBIG and the tracer says so; the marker that
 * keeps a run's message to one line must not be left in /dev/shm, since the
 * `memkit trace` that removes it is gone.
 */
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

int main(void)
{
    pid_t pid = fork();

    if (pid != 0)
        return pid < 0 ? 1 : 0;
    sleep(1);
    struct rlimit one = {.rlim_cur = 1, .rlim_max = RLIM_INFINITY};
    getrlimit(RLIMIT_FSIZE, &one);
    one.rlim_cur = 1;
    setrlimit(RLIMIT_FSIZE, &one);
    for (int i = 0; i < 300000; i++)
        free(malloc(16));
    return 0;
}
