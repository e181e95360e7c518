/*
 * closefds.c - a program that closes every file descriptor it did not open,
 * as daemons and shells do, then works with files of its own.
 *
 * usage: closefds loop|range|from OBSERVATIONS
 * Closes descriptors 3 and up with a close() loop, close_range() or
 * closefrom(), opens a data file, writes to it around 300,000 mallocs and
 * frees (enough for several trace records), and reads it back. What it saw
 * (descriptor numbers, close results, the data read back) goes to
 * OBSERVATIONS: a traced run must see exactly what an untraced one sees.
 * Nothing here uses stdio, so the mallocs are the loop's alone.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ROUNDS 300000

static char seen[4096];
static size_t seen_len;

static void note(const char *what, long value)
{
    int n = snprintf(seen + seen_len, sizeof seen - seen_len, "%s %ld\n", what, value);
    if (n > 0 && (size_t)n < sizeof seen - seen_len)
        seen_len += (size_t)n;
}

static void *volatile sink;

/* Two call sites, so the tracer walks (and caches) more than one stack. */
static __attribute__((noinline)) void churn_small(int i)
{
    sink = malloc(16 + (size_t)(i & 63));
    *(volatile char *)sink = 1;
    free(sink);
}

static __attribute__((noinline)) void churn_large(int i)
{
    sink = malloc(1024 + (size_t)(i & 255));
    *(volatile char *)sink = 1;
    free(sink);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: closefds loop|range|from OBSERVATIONS\n");
        return 2;
    }
    const char *mode = argv[1];
    char data_path[4096];
    snprintf(data_path, sizeof data_path, "%s.data", argv[2]);

    int probe = open("/dev/null", O_RDONLY);
    note("first-open", probe); /* the number the program's first open gets */
    close(probe);

    if (strcmp(mode, "loop") == 0) {
        long closed = 0, limit = sysconf(_SC_OPEN_MAX);
        for (int fd = 3; fd < limit; fd++)
            closed += close(fd) == 0;
        note("closed", closed);
    } else if (strcmp(mode, "range") == 0) {
        note("close_range", close_range(3, ~0u, 0));
    } else {
        closefrom(3);
    }

    int data = open(data_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    note("data-fd", data);
    note("write", write(data, "user data\n", 10));
    for (int i = 0; i < ROUNDS; i++) {
        if (i % 3)
            churn_small(i);
        else
            churn_large(i);
    }
    note("write", write(data, "end\n", 4));
    char back[64] = {0};
    note("read", pread(data, back, sizeof back - 1, 0));
    note(strcmp(back, "user data\nend\n") == 0 ? "data-intact" : "data-changed", 1);
    note("close", close(data));
    int again = open("/dev/null", O_RDONLY);
    note("reopen-fd", again);
    close(again);

    int out = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (out < 0 || write(out, seen, seen_len) != (ssize_t)seen_len)
        return 1;
    close(out);
    unlink(data_path);
    return 0;
}
