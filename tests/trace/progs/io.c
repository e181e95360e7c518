/*
 * io.c - known I/O bytes, for the END record's counts: the main thread
 * reads 20,000 bytes and writes 30,000; a second thread (which allocates, so
 * the tracer knows it) reads 1,000 and writes 2,000 and ends before the
 * process does; a forked child, waited for, reads 3,000 and writes 7,000.
 * The parent's trace must show 21,000 read and 32,000 written (its threads,
 * not its child, and not the tracer's own reads and writes); the child's
 * 3,000 and 7,000. Only read() and write(): stdio would add its own.
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
