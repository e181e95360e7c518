/*
 * sampled.c - programs for --sample's tests (tests/trace/sampled.sh).
 *
 *   sampled known    fixed sizes and counts at four sites (below), so that
 *                    the estimates can be checked against the truth
 *   sampled grow S   for S seconds: one site keeps 1 MB more every second
 *                    (grow_site), the others churn and hold steady
 *   sampled usr2     asks for a snapshot twice between allocations (SIGUSR2
 *                    with memkit's value, as memkit trace --snapshot sends
 *                    it), then exits 0
 *   sampled raise2   raises a plain SIGUSR2 between allocations: the
 *                    program's own, whose default action ends it
 *   sampled ready F  writes its pid to F, then allocates for 3 s and exits 0
 *   sampled growkill S   grow for S seconds, then SIGKILL itself
 *   sampled jit      registers an (empty) unwind table first, as a JIT
 *                    compiler does, then runs the known sites
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile char sink;

static void *touch(void *p)
{
    if (p)
        sink = *(volatile char *)p;
    return p;
}

/* 100,000 x 48 B, 20,000 x 1000 B, 500 x 64 KiB, 20 x 1 MiB: each freed. */
static void __attribute__((noinline)) small_site(void)
{
    for (int i = 0; i < 100000; i++)
        free(touch(malloc(48)));
}

static void __attribute__((noinline)) medium_site(void)
{
    for (int i = 0; i < 20000; i++)
        free(touch(calloc(1, 1000)));
}

static void __attribute__((noinline)) large_site(void)
{
    for (int i = 0; i < 500; i++)
        free(touch(malloc(64 << 10)));
}

static void __attribute__((noinline)) huge_site(void)
{
    for (int i = 0; i < 20; i++)
        free(touch(malloc(1 << 20)));
}

/* 10,000 reallocs growing one block by 100 bytes, then its free. */
static void __attribute__((noinline)) realloc_site(void)
{
    char *p = NULL;
    for (int i = 1; i <= 10000; i++)
        p = touch(realloc(p, (size_t)i * 100));
    free(p);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Kept forever: 1 MB a second in 4 KB blocks. */
static void __attribute__((noinline)) grow_site(void **keep, size_t *n)
{
    keep[(*n)++] = touch(malloc(4000));
}

static void __attribute__((noinline)) churn_site(void **ring, size_t i)
{
    free(ring[i % 64]);
    ring[i % 64] = touch(malloc(200 + i % 2000));
}

static int grow(double seconds)
{
    size_t cap = (size_t)(seconds * 300) + 1000, n = 0;
    void **keep = calloc(cap, sizeof *keep);
    void *ring[64] = {0};
    double start = now_s(), t;
    size_t i = 0;
    while ((t = now_s() - start) < seconds) {
        /* 250 blocks of 4000 bytes a second, on schedule */
        while (n < cap && (double)n < t * 250)
            grow_site(keep, &n);
        for (int k = 0; k < 200; k++)
            churn_site(ring, i++);
        struct timespec pause = {0, 1000000};
        nanosleep(&pause, NULL);
    }
    for (int k = 0; k < 64; k++)
        free(ring[k]);
    printf("kept %zu\n", n);
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "known";
    if (strcmp(mode, "known") == 0) {
        small_site();
        medium_site();
        large_site();
        huge_site();
        realloc_site();
        return 0;
    }
    if (strcmp(mode, "grow") == 0)
        return grow(argc > 2 ? atof(argv[2]) : 3.5);
    if (strcmp(mode, "jit") == 0) {
        /* libgcc returns at once for a NULL table: only the call matters */
        void (*reg)(const void *, void *) =
            (void (*)(const void *, void *))dlsym(RTLD_DEFAULT, "__register_frame_info");
        static char object[256];
        if (reg)
            reg(NULL, object);
        small_site();
        medium_site();
        return 0;
    }
    if (strcmp(mode, "growkill") == 0) {
        grow(argc > 2 ? atof(argv[2]) : 2.5);
        fflush(stdout);
        raise(SIGKILL);
    }
    if (strcmp(mode, "usr2") == 0) {
        /* MK_SNAPSHOT_SIGVAL (src/trace/format.h), written out */
        union sigval request = {.sival_int = 0x6d6b736e};
        small_site();
        sigqueue(getpid(), SIGUSR2, request);
        medium_site();
        sigqueue(getpid(), SIGUSR2, request);
        large_site();
        puts("alive");
        return 0;
    }
    if (strcmp(mode, "raise2") == 0) {
        small_site();
        raise(SIGUSR2);
        puts("alive");
        return 0;
    }
    if (strcmp(mode, "ready") == 0 && argc > 2) {
        FILE *f = fopen(argv[2], "w");
        if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) != 0)
            return 1;
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        do {
            small_site();
            clock_gettime(CLOCK_MONOTONIC, &t);
        } while (t.tv_sec - t0.tv_sec < 3);
        puts("alive");
        return 0;
    }
    fprintf(stderr, "sampled: unknown mode %s\n", mode);
    return 2;
}
