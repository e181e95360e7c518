/* fdlist.c - lists its descriptors as a program cleaning up before exec
 * does (readdir of /proc/self/fd), closes every one above 2 but the
 * listing's own, and says which closes failed: traced and untraced, the
 * output must be the same. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
    free(malloc(16)); /* the tracer is running: its descriptors exist */
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return 1;
    int fds[256], n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 256)
        if (e->d_name[0] != '.' && atoi(e->d_name) != dirfd(d))
            fds[n++] = atoi(e->d_name);
    closedir(d);
    for (int i = 0; i < n; i++) {
        printf("fd %d\n", fds[i]);
        if (fds[i] > 2 && close(fds[i]) != 0)
            printf("close(%d): %s\n", fds[i], strerror(errno));
    }
    free(malloc(32)); /* and still runs after the cleanup */
    puts("fdlist: done");
    return 0;
}
