/*
 * sites.c - known sites for the sampler's calibration (bench/sample/
 * calibrate.py): eight functions, each allocating blocks of one size a known
 * number of times, from 16 bytes to 256 KiB and from a few hundred KB to a
 * few tens of MB in all; a third of each site's blocks stay live until the
 * end, the rest are freed at once. Deterministic: every run makes the same
 * calls.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SITE(name, size, count)                                                          \
    static __attribute__((noinline)) void name(void **keep)                              \
    {                                                                                    \
        for (int i = 0; i < (count); i++) {                                              \
            char *p = malloc(size);                                                      \
            if (!p)                                                                      \
                abort();                                                                 \
            p[0] = (char)i;                                                              \
            if (i % 3 == 0)                                                              \
                keep[i / 3] = p;                                                         \
            else                                                                         \
                free(p);                                                                 \
        }                                                                                \
    }

SITE(site_16, 16, 200000)    /* 3.2 MB */
SITE(site_96, 96, 60000)     /* 5.8 MB */
SITE(site_48, 48, 100000)    /* 4.8 MB */
SITE(site_200, 200, 40000)   /* 8 MB */
SITE(site_1k, 1024, 4000)    /* 4 MB */
SITE(site_3k, 3000, 3000)    /* 9 MB */
SITE(site_8k, 8192, 700)     /* 5.7 MB */
SITE(site_16k, 16384, 1000)  /* 16 MB */
SITE(site_100k, 100000, 100) /* 10 MB */
SITE(site_256k, 262144, 120) /* 31 MB */

int main(void)
{
    static void *keep[10][200000 / 3 + 1];
    site_16(keep[0]);
    site_48(keep[1]);
    site_96(keep[2]);
    site_200(keep[3]);
    site_1k(keep[4]);
    site_3k(keep[5]);
    site_8k(keep[6]);
    site_16k(keep[7]);
    site_100k(keep[8]);
    site_256k(keep[9]);
    size_t live = 0;
    for (int s = 0; s < 10; s++)
        for (int i = 0; i < 200000 / 3 + 1; i++)
            if (keep[s][i]) {
                live++;
                free(keep[s][i]);
            }
    printf("%zu blocks kept\n", live);
    return 0;
}
