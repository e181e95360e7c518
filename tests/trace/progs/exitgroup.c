/*
 * exitgroup.c - 1,000 mallocs and 1,000 frees on two threads' worth of work,
 * then the process ends through the exit_group system call made with syscall(),
 * as a program that skips its atexit handlers (or a runtime that calls the
 * kernel directly) does: no exit, no _exit. Exits with status 5.
 *
 * With "summary": the same, for --summary-only, whose totals come only at the
 * end. With "raw": the system call made by the instruction itself, as Go's
 * runtime makes it, which no function memkit can hook sees.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    void *p[1000];

    for (int i = 0; i < 1000; i++)
        if (!(p[i] = malloc(32 + (size_t)i)))
            abort();
    for (int i = 0; i < 1000; i++)
        free(p[i]);
    if (!malloc(100)) /* one leak: the 2,001st call */
        abort();
    if (argc > 1 && argv[1][0] == 'r') {
        __asm__ volatile("syscall" ::"a"(SYS_exit_group), "D"(5)
                         : "rcx", "r11", "memory");
        __builtin_unreachable();
    }
    syscall(SYS_exit_group, 5);
    return 0; /* not reached */
}
