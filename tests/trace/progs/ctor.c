/*
 * ctor.c - allocations before main (a constructor: 4 mallocs) and after it
 * (a destructor: frees them and callocs 2 that leak). main mallocs 1.
 */
#include <stdlib.h>

static void *early[4];

__attribute__((constructor)) static void before_main(void)
{
    for (int i = 0; i < 4; i++)
        early[i] = malloc(24);
}

__attribute__((destructor)) static void after_main(void)
{
    for (int i = 0; i < 4; i++)
        free(early[i]);
    if (!calloc(1, 40) || !calloc(1, 40))
        abort();
}

int main(void)
{
    free(malloc(8));
    return 0;
}
