/*
 * bulk.c - 300,000 mallocs in a row, then 300,000 frees: more allocations
 * than one EVENTS record holds, with no frees between them (a program
 * building a large structure at start-up). The tracer must count exactly:
 * malloc 300,000 of 16-72 bytes (13,200,000 bytes, all live at the peak),
 * free 300,000, no leaks. No stdio: libc allocates nothing of its own.
 */
#include <stdlib.h>

enum { N = 300000 };
static void *block[N];

int main(void)
{
    for (int i = 0; i < N; i++)
        if (!(block[i] = malloc(16 + (size_t)(i & 7) * 8)))
            return 1;
    for (int i = 0; i < N; i++)
        free(block[i]);
    return 0;
}
