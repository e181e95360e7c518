/*
 * bulk.c - 300,000 mallocs in a row, then 300,000 frees: more allocations
 * than one EVENTS record holds, with no frees between them (a program
 * building a large structure at start-up). The tracer must count exactly:
 * malloc 300,000 of 16-72 bytes (13,200,000 bytes, all live at the peak),
 * free 300,000, no leaks. No stdio: libc allocates nothing of its own.
 *
 * With "hostile": first makes stderr a pipe nobody reads and limits files to
 * 1 KB, so that the tracer's first record write fails (EFBIG, with SIGXFSZ)
 * and its one message meets EPIPE (with SIGPIPE). Neither signal is the
 * program's doing: it must exit 0 all the same.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

enum { N = 300000 };
static void *block[N];

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "hostile") == 0) {
        int p[2];
        struct rlimit small = {1024, 1024};
        if (pipe(p) != 0 || close(p[0]) != 0 || dup2(p[1], STDERR_FILENO) < 0 ||
            setrlimit(RLIMIT_FSIZE, &small) != 0)
            return 2;
    }
    for (int i = 0; i < N; i++)
        if (!(block[i] = malloc(16 + (size_t)(i & 7) * 8)))
            return 1;
    for (int i = 0; i < N; i++)
        free(block[i]);
    return 0;
}
