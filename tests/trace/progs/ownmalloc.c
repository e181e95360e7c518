/* ownmalloc.c - a program with its own malloc family, as Chromium
 * (PartitionAlloc) or a statically linked jemalloc have: the executable's
 * definitions come before any preloaded library's, so memkit's hooks never
 * see them. It strdups 100 strings (libc's strdup, which memkit does see)
 * and frees them with its own free. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#define ARENA (64u << 20)
static char *arena, *next_free;

/* A bump allocator: 16-byte header holding the size, free does nothing. */
void *malloc(size_t n)
{
    if (!arena) {
        arena =
            mmap(NULL, ARENA, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        next_free = arena;
    }
    n = (n + 15) & ~(size_t)15;
    if (arena == MAP_FAILED || (size_t)(arena + ARENA - next_free) < n + 16)
        return NULL;
    char *p = next_free + 16;
    memcpy(next_free, &n, sizeof n);
    next_free += n + 16;
    return p;
}

void free(void *p)
{
    (void)p;
}

void *calloc(size_t n, size_t m)
{
    void *p = n && m > (size_t)-1 / n ? NULL : malloc(n * m);
    return p ? memset(p, 0, n * m) : NULL;
}

void *realloc(void *old, size_t n)
{
    void *p = malloc(n);
    if (p && old) {
        size_t was;
        memcpy(&was, (char *)old - 16, sizeof was);
        memcpy(p, old, was < n ? was : n);
    }
    return p;
}

int main(void)
{
    for (int i = 0; i < 100; i++)
        free(strdup("a string of the program's"));
    puts("ownmalloc: done");
    return 0;
}
