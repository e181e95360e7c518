/*
 * dlopen.c - dlopen a library (path in argv[1]) and call its function that
 * does 25 strdup/free pairs. The top call site must be symbolized inside
 * the library: its module map entry is written on dlopen. With argv[2],
 * it waits that many milliseconds between the dlopen and the calls.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    void *h = dlopen(argv[1], RTLD_NOW);
    if (!h)
        return 3;
    void (*fn)(int) = (void (*)(int))dlsym(h, "dllib_allocate");
    if (!fn)
        return 4;
    if (argc > 2) {
        long ms = atol(argv[2]);
        struct timespec wait = {ms / 1000, (ms % 1000) * 1000000L};
        nanosleep(&wait, NULL);
    }
    fn(25);
    dlclose(h);
    return 0;
}
