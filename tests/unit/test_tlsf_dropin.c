/*
 * test_tlsf_dropin.c - libmemkit-tlsf.so as the process's malloc (run with
 * LD_PRELOAD set to it, tests/CMakeLists.txt): the C allocation API against
 * a model. Mixed sequences of malloc, calloc, realloc, reallocarray,
 * posix_memalign, aligned_alloc, memalign, valloc and free, with sizes from 0
 * to 4 MiB, on two threads at once; every block's bytes carry its own
 * pattern, checked before it is resized or freed (so overlap or a lost
 * copy shows), alignments and malloc_usable_size are checked, bad
 * alignments and overflows fail as POSIX says, and a child forked while the
 * other thread allocates can allocate (the lock is not inherited taken).
 * First: the symbol malloc resolves into the drop-in, or the test says it
 * did not run. MEMKIT_TEST_SEED replays a failure.
 */
#define _GNU_SOURCE
#include "check.h"

#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>

#define LIVE  512
#define STEPS 60000

typedef struct blk {
    unsigned char *p;
    size_t size;
    unsigned char tag;
} blk_t;

static void fill(blk_t *b)
{
    for (size_t i = 0; i < b->size; i += 61)
        b->p[i] = (unsigned char)(b->tag + i);
    if (b->size)
        b->p[b->size - 1] = b->tag;
}

/* b's first upto bytes (at most its size) hold what fill wrote. */
static bool intact(const blk_t *b, size_t upto)
{
    if (upto > b->size)
        upto = b->size;
    for (size_t i = 0; i < upto; i += 61)
        if (i != b->size - 1 && b->p[i] != (unsigned char)(b->tag + i))
            return false;
    return upto < b->size || !b->size || b->p[b->size - 1] == b->tag;
}

static size_t some_size(uint64_t *rng)
{
    uint64_t r = xorshift64(rng);
    switch (r % 8) {
    case 0:
        return 0;
    case 1:
        return (size_t)(r >> 8) % (4u << 20); /* up to 4 MiB */
    case 2:
        return (size_t)(r >> 8) % 65536;
    default:
        return (size_t)(r >> 8) % 512;
    }
}

typedef struct run {
    uint64_t seed;
    int failures;
} run_t;

#define FAIL_IF(cond, ...)                                                               \
    do {                                                                                 \
        if (cond) {                                                                      \
            fprintf(stderr, __VA_ARGS__);                                                \
            fputc('\n', stderr);                                                         \
            r->failures++;                                                               \
        }                                                                                \
    } while (0)

static void *mixed(void *arg)
{
    run_t *r = arg;
    uint64_t rng = r->seed;
    blk_t b[LIVE] = {{0}};

    for (int step = 0; step < STEPS; step++) {
        blk_t *x = &b[xorshift64(&rng) % LIVE];
        unsigned op = (unsigned)(xorshift64(&rng) % 10);
        if (x->p) {
            FAIL_IF(!intact(x, x->size), "step %d: a block's bytes changed", step);
            FAIL_IF(malloc_usable_size(x->p) < x->size, "step %d: usable size %zu < %zu",
                    step, malloc_usable_size(x->p), x->size);
            if (op < 4) { /* grow or shrink, the bytes kept */
                size_t n = some_size(&rng);
                unsigned char *q = op & 1 ? realloc(x->p, n) : reallocarray(x->p, 1, n);
                if (!q && n) {
                    FAIL_IF(true, "step %d: realloc of %zu failed", step, n);
                    continue;
                }
                size_t kept = n < x->size ? n : x->size;
                blk_t moved = {q, x->size, x->tag}; /* the old block's pattern */
                FAIL_IF(q && !intact(&moved, kept), "step %d: realloc lost bytes", step);
                x->p = q;
                x->size = q ? n : 0;
                if (q)
                    fill(x);
            } else {
                free(x->p);
                x->p = NULL;
            }
            continue;
        }
        size_t n = some_size(&rng), align = (size_t)16 << (xorshift64(&rng) % 9);
        void *p = NULL;
        switch (op) {
        case 0:
            p = calloc(1, n);
            for (size_t i = 0; p && i < n; i += 509)
                FAIL_IF(((unsigned char *)p)[i], "step %d: calloc's byte %zu not 0", step,
                        i);
            break;
        case 1:
            FAIL_IF(posix_memalign(&p, align, n) != 0, "step %d: posix_memalign", step);
            break;
        case 2:
            p = aligned_alloc(align, n);
            break;
        case 3:
            p = memalign(align, n);
            break;
        case 4:
            p = valloc(n);
            align = (size_t)sysconf(_SC_PAGESIZE);
            break;
        default:
            p = malloc(n);
            align = 16;
        }
        FAIL_IF(!p && n, "step %d: an allocation of %zu failed", step, n);
        FAIL_IF(op >= 1 && op <= 4 && ((uintptr_t)p & (align - 1)),
                "step %d: %p not aligned to %zu", step, p, align);
        FAIL_IF(op > 4 && ((uintptr_t)p & 15), "step %d: malloc's %p not 16-aligned",
                step, p);
        *x = (blk_t){p, p ? n : 0, (unsigned char)xorshift64(&rng)};
        if (p)
            fill(x);
    }
    for (int i = 0; i < LIVE; i++) {
        FAIL_IF(b[i].p && !intact(&b[i], b[i].size), "the end: a block's bytes changed");
        free(b[i].p);
    }
    return NULL;
}

static void *fork_while_busy(void *arg)
{
    (void)arg;
    for (int i = 0; i < 20; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            void *p = malloc(100);
            free(p);
            _exit(p ? 0 : 1);
        }
        int status;
        CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
              WEXITSTATUS(status) == 0);
    }
    return NULL;
}

int main(void)
{
    Dl_info info;
    void *m = dlsym(RTLD_DEFAULT, "malloc");
    if (!m || !dladdr(m, &info) || !strstr(info.dli_fname, "libmemkit-tlsf")) {
        printf("SKIP: malloc is %s's, not libmemkit-tlsf.so's (run with LD_PRELOAD)\n",
               m && dladdr(m, &info) ? info.dli_fname : "unknown");
        return 77;
    }
    const char *s = getenv("MEMKIT_TEST_SEED");
    uint64_t seed = s ? strtoull(s, NULL, 0) : 0x5eed5eedull;
    printf("seed %#llx\n", (unsigned long long)seed);

    /* POSIX's errors */
    void *p = (void *)1;
    CHECK_EQ(posix_memalign(&p, 24, 16), EINVAL);
    CHECK(p == (void *)1);
    CHECK_EQ(posix_memalign(&p, 4, 16), EINVAL);
    volatile size_t huge = SIZE_MAX / 2; /* not a constant the compiler refuses */
    errno = 0;
    CHECK(calloc(huge, 4) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(reallocarray(NULL, huge, 4) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(malloc(huge * 2 - 4096) == NULL && errno == ENOMEM);
    free(NULL);
    CHECK_EQ(malloc_usable_size(NULL), 0);

    /* one thread, then two at once with a third forking */
    run_t one = {seed, 0};
    mixed(&one);
    CHECK_EQ(one.failures, 0);
    run_t two[2] = {{seed * 3 + 1, 0}, {seed * 5 + 2, 0}};
    pthread_t t[3];
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&t[i], NULL, mixed, &two[i]) == 0);
    CHECK(pthread_create(&t[2], NULL, fork_while_busy, NULL) == 0);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ(two[0].failures + two[1].failures, 0);
    return check_report("test_tlsf_dropin");
}
