/* dllib.c - a library loaded with dlopen; its function strdups n times. */
#include <stdlib.h>
#include <string.h>

void dllib_allocate(int n);

void dllib_allocate(int n)
{
    for (int i = 0; i < n; i++)
        free(strdup("from the dlopened library"));
}
