/*
 * forkexec.c - a process tree. The parent mallocs 3 blocks, forks; the
 * child mallocs 5 blocks then execs this program with "child", which mallocs
 * 7 blocks (and frees them) and exits. Each of the three images must have
 * its own trace with exactly its own allocations. No stdio anywhere.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void allocate(int n)
{
    for (int i = 0; i < n; i++)
        if (!malloc(32))
            abort();
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "child") == 0) {
        for (int i = 0; i < 7; i++)
            free(malloc(100));
        return 0;
    }
    allocate(3);
    pid_t pid = fork();
    if (pid == 0) {
        allocate(5);
        execl("/proc/self/exe", argv[0], "child", (char *)NULL);
        _exit(127);
    }
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
