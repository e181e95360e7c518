/*
 * switched.c - 50 allocations of 100 KiB, each of which libslowlib.so's
 * malloc serves after a 2 ms sleep, and 2,000 small ones it serves at once
 * (tests/trace/run.sh, switched).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
    for (int i = 0; i < 50; i++) {
        char *p = malloc(100u << 10);
        if (!p)
            return 1;
        memset(p, i, 64);
        free(p);
    }
    for (int i = 0; i < 2000; i++)
        free(malloc(32 + (size_t)(i & 15)));
    puts("switched: done");
    return 0;
}
