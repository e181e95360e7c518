/*
 * setuidchild.c - a child that drops its privileges (to uid and gid 65534)
 * and then forks a child of its own, as a server started as root does for
 * its workers. That grandchild cannot create its trace where root's run
 * writes them; it must say so in a line and run on untraced. Run as root.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void churn(int n)
{
    for (int i = 0; i < n; i++)
        free(malloc(32 + (size_t)i));
}

int main(void)
{
    churn(10);
    pid_t child = fork();
    if (child < 0)
        return 1;
    if (child == 0) {
        if (setgid(65534) != 0 || setuid(65534) != 0) {
            perror("setuidchild: setuid");
            _exit(3);
        }
        pid_t grandchild = fork();
        if (grandchild == 0) {
            churn(100);
            _exit(0);
        }
        int st;
        if (grandchild < 0 || waitpid(grandchild, &st, 0) < 0 || st != 0)
            _exit(4);
        churn(100);
        _exit(0);
    }
    int st;
    if (waitpid(child, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return 2;
    puts("setuidchild: done");
    return 0;
}
