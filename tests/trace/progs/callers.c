/*
 * callers.c - one call site reached from two callers: the summary's top call
 * sites are places in the code, so make()'s malloc is one site with 8 calls
 * (5 from first(), 3 from second()), above main's own 4. Listed by stack it
 * would be two sites that read the same, 5 and 3 calls.
 */
#include <stdlib.h>

static void *blocks[16];
static int nblocks;

static void make(size_t size)
{
    blocks[nblocks++] = malloc(size); /* the one site */
}

static void first(void)
{
    for (int i = 0; i < 5; i++)
        make(32);
}

static void second(void)
{
    for (int i = 0; i < 3; i++)
        make(32);
}

int main(void)
{
    first();
    second();
    for (int i = 0; i < 4; i++)
        blocks[nblocks++] = malloc(8);
    for (int i = 0; i < nblocks; i++)
        free(blocks[i]);
    return 0;
}
