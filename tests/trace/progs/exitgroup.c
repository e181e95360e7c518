/*
 * exitgroup.c - 1,000 mallocs and 1,000 frees on two threads' worth of work,
 * then the process ends through the exit_group system call made with syscall(),
 * as a program that skips its atexit handlers (or a runtime that calls the
 * kernel directly) does: no exit, no _exit. Exits with status 5.
 *
 * With "summary": the same, for --summary-only, whose totals come only at the
 * end.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void)
{
    void *p[1000];

    for (int i = 0; i < 1000; i++)
        if (!(p[i] = malloc(32 + (size_t)i)))
            abort();
    for (int i = 0; i < 1000; i++)
        free(p[i]);
    if (!malloc(100)) /* one leak: the 2,001st call */
        abort();
    syscall(SYS_exit_group, 5);
    return 0; /* not reached */
}
