/*
 * io.c - a program that does I/O: the main thread reads 20,000 bytes and
 * writes 30,000; a second thread (which allocates, so the tracer knows it)
 * reads 1,000 and writes 2,000 and ends before the process does; a forked
 * child, waited for, reads 3,000 and writes 7,000. No report may show an
 * I/O figure for it: the tracer does not measure I/O (tests/trace/run.sh,
 * io).
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static char buf[30000];
static int in, out;

static int move(size_t reads, size_t writes)
{
    return read(in, buf, reads) == (ssize_t)reads &&
                   write(out, buf, writes) == (ssize_t)writes
               ? 0
               : 1;
}

static void *worker(void *arg)
{
    (void)arg;
    free(malloc(64)); /* a thread the tracer has seen */
    return (void *)(intptr_t)move(1000, 2000);
}

int main(void)
{
    in = open("/dev/zero", O_RDONLY);
    out = open("/dev/null", O_WRONLY);
    if (in < 0 || out < 0 || move(20000, 30000))
        return 1;
    pthread_t th;
    void *rc;
    if (pthread_create(&th, NULL, worker, NULL) || pthread_join(th, &rc) || rc)
        return 1;
    pid_t child = fork();
    if (child == 0)
        _exit(move(3000, 7000));
    int status;
    if (child < 0 || waitpid(child, &status, 0) != child || status != 0)
        return 1;
    return 0;
}
