/* stderrfile.c DATA N - closes stderr, opens DATA (which takes fd 2), writes
 * a line to it, then makes N malloc/free pairs from varied sites, enough to
 * outgrow a small file-size limit: memkit's message about that must not land
 * in DATA, which is the program's. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *__attribute__((noinline)) grab(size_t n)
{
    return malloc(n);
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    close(2);
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd != 2)
        return 3;
    const char line[] = "the program's data\n";
    if (write(fd, line, strlen(line)) != (ssize_t)strlen(line))
        return 4;
    long n = atol(argv[2]);
    for (long i = 0; i < n; i++) {
        void *keep = grab((size_t)(i % 4096) + 1);
        free(grab((size_t)(i * 7 % 1000) + 1));
        free(keep);
    }
    puts("stderrfile: done");
    return 0;
}
