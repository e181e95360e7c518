/*
 * forkexec.c - a process tree. The parent mallocs 3 blocks, forks; the
 * child mallocs 5 blocks then execs this program with "child", which mallocs
 * 7 blocks (and frees them) and exits. Each of the three images must have
 * its own trace with exactly its own allocations. No stdio anywhere.
 *
 * With "spawn": the parent mallocs 2 blocks and posix_spawn()s the child
 * with an environment of its own making (no tracer variables in it); the
 * child must be traced all the same.
 *
 * With "vfork": the parent mallocs 2 blocks, vforks a child whose exec
 * fails and who calls _exit, then mallocs 4 more: the child shares the
 * parent's memory and must leave the parent's trace alone (it once ended
 * it: the 4 were lost).
 */
#include <spawn.h>
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
    int status;
    if (argc > 1 && strcmp(argv[1], "spawn") == 0) {
        char *child_argv[] = {argv[0], "child", NULL};
        char *child_env[] = {"SPAWNED=1", NULL};
        pid_t pid;
        allocate(2);
        if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, child_argv, child_env) != 0)
            return 1;
        waitpid(pid, &status, 0);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    }
    if (argc > 1 && strcmp(argv[1], "vfork") == 0) {
        allocate(2);
        pid_t pid = vfork();
        if (pid == 0) {
            execl("/nonexistent/program", "program", (char *)NULL);
            _exit(127);
        }
        waitpid(pid, &status, 0);
        allocate(4);
        return WIFEXITED(status) && WEXITSTATUS(status) == 127 ? 0 : 1;
    }
    allocate(3);
    pid_t pid = fork();
    if (pid == 0) {
        allocate(5);
        execl("/proc/self/exe", argv[0], "child", (char *)NULL);
        _exit(127);
    }
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
