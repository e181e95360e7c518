/*
 * test_tlsf.c - unit tests of mk_tlsf: configuration, sizes and alignment, calloc,
 * realloc in place and by moving, memalign, exhaustion, regions given and grown,
 * statistics and the bounded step count, thread-safe mode, prelocked mode (no page
 * faults after creation), the quick lists of a heap that grows and when they are
 * merged back, the integrity check catching damage, and the debug-mode aborts.
 */
#include "check.h"
#include "fake_clock.h"

#include <memkit/tlsf.h>

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/resource.h>

#define KIB ((size_t)1 << 10)

static char why[256];

static bool heap_ok(mk_tlsf_t *t)
{
    bool ok = mk_tlsf_check(t, why, sizeof why);
    if (!ok)
        fprintf(stderr, "mk_tlsf_check: %s\n", why);
    return ok;
}

static void test_config_errors(void)
{
    static char small[4096];

    errno = 0;
    CHECK(mk_tlsf_create_in(small, sizeof small, 0) == NULL);
    CHECK_EQ(errno, EINVAL);
    CHECK(mk_tlsf_create_in(NULL, 1 << 20, 0) == NULL);
    CHECK(mk_tlsf_create(&(mk_tlsf_config_t){.flags = 1u << 9}) == NULL);
    mk_tlsf_destroy(mk_tlsf_create(NULL));
    mk_tlsf_destroy(NULL);
}

static void test_basics(void)
{
    static _Alignas(64) char arena[256 * KIB];
    mk_tlsf_t *t = mk_tlsf_create_in(arena, sizeof arena, 0);
    mk_tlsf_stats_t s;

    CHECK(t != NULL);
    CHECK(heap_ok(t));
    char *a = mk_tlsf_malloc(t, 1), *b = mk_tlsf_malloc(t, 100),
         *c = mk_tlsf_malloc(t, 5000);
    CHECK(a && b && c);
    CHECK_EQ((uintptr_t)a % 16, 0);
    CHECK_EQ((uintptr_t)b % 16, 0);
    /* Usable sizes are 16k + 8, at least 24: one 8-byte header per block. */
    CHECK_EQ(mk_tlsf_usable_size(t, a), 24);
    CHECK_EQ(mk_tlsf_usable_size(t, b), 104);
    CHECK_EQ(b - a, 32);
    memset(c, 0x11, 5000);
    mk_tlsf_stats(t, &s);
    CHECK_EQ(s.used_blocks, 3);
    CHECK_EQ(s.free_blocks, 1);
    CHECK(s.fragmentation == 0);
    mk_tlsf_free(t, b);
    mk_tlsf_stats(t, &s);
    CHECK_EQ(s.free_blocks, 2);
    CHECK(s.fragmentation > 0);
    CHECK(heap_ok(t));
    /* Freeing the rest merges everything back into one block. */
    mk_tlsf_free(t, a);
    mk_tlsf_free(t, c);
    mk_tlsf_free(t, NULL);
    mk_tlsf_stats(t, &s);
    CHECK_EQ(s.used_blocks, 0);
    CHECK_EQ(s.free_blocks, 1);
    CHECK(heap_ok(t));
    /* calloc zeroes recycled memory and checks n * size. */
    char *z = mk_tlsf_calloc(t, 100, 50);
    for (int i = 0; i < 5000; i++)
        if (z[i]) {
            CHECK(z[i] == 0);
            break;
        }
    errno = 0;
    CHECK(mk_tlsf_calloc(t, SIZE_MAX / 2, 3) == NULL);
    CHECK_EQ(errno, ENOMEM);
    mk_tlsf_free(t, z);
    mk_tlsf_destroy(t);
}

static void test_realloc(void)
{
    mk_tlsf_t *t = mk_tlsf_create(NULL);
    char *a = mk_tlsf_malloc(t, 100), *b = mk_tlsf_malloc(t, 100);

    memset(a, 'a', 100);
    memset(b, 'b', 100);
    /* b's next block is the big free one: b grows where it is. */
    char *b2 = mk_tlsf_realloc(t, b, 4000);
    CHECK(b2 == b);
    CHECK(b2[99] == 'b');
    /* a's neighbour is used: a moves, keeping its bytes. */
    char *a2 = mk_tlsf_realloc(t, a, 300);
    CHECK(a2 != a && a2[0] == 'a' && a2[99] == 'a');
    /* Shrinking stays in place and gives the tail back. */
    CHECK(mk_tlsf_realloc(t, b2, 50) == b2);
    CHECK_EQ(mk_tlsf_usable_size(t, b2), 56);
    /* a's old block is free now, and b2's next is free: both merge on free. */
    CHECK(heap_ok(t));
    CHECK(mk_tlsf_realloc(t, NULL, 10) != NULL);
    CHECK(mk_tlsf_realloc(t, a2, 0) == NULL); /* frees, like glibc */
    errno = 0;
    CHECK(mk_tlsf_realloc(t, b2, (size_t)1 << 50) == NULL);
    CHECK_EQ(errno, ENOMEM);
    CHECK(b2[49] == 'b'); /* untouched */
    CHECK(heap_ok(t));
    mk_tlsf_destroy(t);
}

static void test_memalign(void)
{
    mk_tlsf_t *t = mk_tlsf_create(NULL);

    for (size_t align = 1; align <= 65536; align *= 2) {
        char *p = mk_tlsf_memalign(t, align, 40);
        CHECK(p != NULL);
        CHECK_EQ((uintptr_t)p % (align < 16 ? 16 : align), 0);
        memset(p, 1, 40);
        CHECK(heap_ok(t));
        if (align % 4 == 0)
            mk_tlsf_free(t, p);
    }
    errno = 0;
    CHECK(mk_tlsf_memalign(t, 48, 10) == NULL);
    CHECK_EQ(errno, EINVAL);
    CHECK(heap_ok(t));
    mk_tlsf_destroy(t);
}

/* Exhaustion returns NULL and leaves the heap whole; a region added later serves. */
static void test_exhaustion_and_regions(void)
{
    static _Alignas(64) char arena[64 * KIB], more[64 * KIB];
    mk_tlsf_t *t = mk_tlsf_create_in(arena, sizeof arena, 0);
    void *p[1000];
    int n = 0;
    mk_tlsf_stats_t s;

    while (n < 1000 && (p[n] = mk_tlsf_malloc(t, 1000)))
        n++;
    CHECK(n > 40 && n < 60);
    CHECK_EQ(errno, ENOMEM);
    CHECK(mk_tlsf_malloc(t, 100000) == NULL);
    CHECK(heap_ok(t));
    CHECK_EQ(mk_tlsf_add_region(t, more, sizeof more), 0);
    CHECK(mk_tlsf_malloc(t, 30000) != NULL);
    mk_tlsf_stats(t, &s);
    CHECK_EQ(s.regions, 2);
    CHECK(heap_ok(t));
    CHECK_EQ(mk_tlsf_add_region(t, more, 100), -1);
    mk_tlsf_destroy(t);

    /* MK_TLSF_GROW maps a region when the heap runs out. */
    t = mk_tlsf_create(
        &(mk_tlsf_config_t){.initial_size = 64 * KIB, .flags = MK_TLSF_GROW});
    for (n = 0; n < 1000; n++)
        CHECK((p[n] = mk_tlsf_malloc(t, 1000)) != NULL);
    void *big = mk_tlsf_malloc(t, 10 << 20);
    CHECK(big != NULL);
    mk_tlsf_stats(t, &s);
    CHECK(s.regions > 2);
    CHECK(heap_ok(t));
    mk_tlsf_destroy(t);
}

/* Frees are merged two calls late (see defer_release in src/alloc/tlsf.c), and
 * nothing may tell: not a malloc that needs a just-freed block, not realloc, not
 * the stats. */
static void test_frees_in_flight(void)
{
    static _Alignas(64) char arena[64 * KIB];
    mk_tlsf_t *t = mk_tlsf_create_in(arena, sizeof arena, 0);
    void *p[100];
    int n = 0;
    mk_tlsf_stats_t s;

    while (n < 100 && (p[n] = mk_tlsf_malloc(t, 1000)))
        n++;
    CHECK(n > 40 && n < 60);
    /* Two neighbours freed just now: on a full heap, a malloc that needs both
     * merged gets them (what is left at the end is under 1000 bytes). Merged,
     * they hold 2008 bytes, class [1984, 2016): a request finds that class up to
     * 1984 bytes (requests are rounded up to their class). */
    mk_tlsf_free(t, p[10]);
    mk_tlsf_free(t, p[11]);
    CHECK(mk_tlsf_malloc(t, 1976) == p[10]);
    /* The stats see a free at once. */
    mk_tlsf_free(t, p[20]);
    mk_tlsf_stats(t, &s);
    CHECK_EQ(s.used_blocks, (size_t)n - 2);
    /* realloc grows into a neighbour freed just now, in place. */
    mk_tlsf_free(t, p[31]);
    CHECK(mk_tlsf_realloc(t, p[30], 1900) == p[30]);
    CHECK(heap_ok(t));
    mk_tlsf_destroy(t);
}

/* No call takes more steps when the heap holds 10x more blocks. */
static unsigned long long rng_state = 12345;

static size_t churn_max_steps(size_t live, int calls)
{
    mk_tlsf_t *t = mk_tlsf_create(&(mk_tlsf_config_t){.initial_size = 64 << 20});
    void **slot = calloc(live, sizeof *slot);
    mk_tlsf_stats_t s;

    for (size_t i = 0; i < live; i++)
        slot[i] = mk_tlsf_malloc(t, 16 + rng_next(&rng_state) % 4081);
    for (int i = 0; i < calls; i++) {
        size_t k = rng_next(&rng_state) % live;
        mk_tlsf_free(t, slot[k]);
        slot[k] = mk_tlsf_malloc(t, 16 + rng_next(&rng_state) % 4081);
        CHECK(slot[k] != NULL);
    }
    mk_tlsf_stats(t, &s);
    free(slot);
    mk_tlsf_destroy(t);
    return s.max_call_steps;
}

static void test_bounded_steps(void)
{
    size_t small = churn_max_steps(1000, 200000), large = churn_max_steps(10000, 200000);

    printf("test_tlsf: most steps in one call: %zu with 1,000 live blocks, %zu with "
           "10,000\n",
           small, large);
    CHECK(small <= 10 && large <= 10);
    CHECK(large <= small);
}

/* ---- thread-safe mode ---- */

static mk_tlsf_t *shared;

static void *hammer(void *arg)
{
    unsigned long long r = (uintptr_t)arg;
    void *p[64] = {0};

    for (int i = 0; i < 50000; i++) {
        int k = (int)(rng_next(&r) % 64);
        mk_tlsf_free(shared, p[k]);
        p[k] = mk_tlsf_malloc(shared, 8 + rng_next(&r) % 2000);
        if (p[k])
            memset(p[k], k, 8);
    }
    for (int k = 0; k < 64; k++)
        mk_tlsf_free(shared, p[k]);
    return NULL;
}

static void test_thread_safe(void)
{
    pthread_t th[3];
    mk_tlsf_stats_t s;

    shared = mk_tlsf_create(
        &(mk_tlsf_config_t){.initial_size = 4 << 20, .flags = MK_TLSF_THREAD_SAFE});
    for (uintptr_t i = 0; i < 3; i++)
        pthread_create(&th[i], NULL, hammer, (void *)(i + 1));
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    CHECK(heap_ok(shared));
    mk_tlsf_stats(shared, &s);
    CHECK_EQ(s.used_blocks, 0);
    mk_tlsf_destroy(shared);
}

/* ---- prelocked mode: no page faults after creation ---- */

static long minor_faults(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

static void test_prelock(void)
{
    mk_tlsf_t *t = mk_tlsf_create(
        &(mk_tlsf_config_t){.initial_size = 32 << 20, .flags = MK_TLSF_PRELOCK});
    static void *p[4000];

    if (!t) {
        printf("prelock: skipped (mlock of 32 MiB failed: %s; raise RLIMIT_MEMLOCK)\n",
               strerror(errno));
        return;
    }
    memset(p, 0, sizeof p); /* the test's own array faults in before measuring */
    long before = minor_faults();
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 4000; i++) {
            p[i] = mk_tlsf_malloc(t, 4096);
            memset(p[i], i, 4096); /* touch every page of every block */
        }
        for (int i = 0; i < 4000; i++)
            mk_tlsf_free(t, p[i]);
    }
    long faults = minor_faults() - before;
    printf("test_tlsf: prelocked heap, 12,000 x malloc(4096) + touch: %ld minor faults\n",
           faults);
#if defined(TEST_ASAN) || defined(__SANITIZE_THREAD__)
    bool shadowed = true;
#else
    const char *preload = getenv("LD_PRELOAD");
    bool shadowed = preload && strstr(preload, "vgpreload");
#endif
    if (shadowed)
        printf("prelock fault count: not checked under a sanitizer or Valgrind (their "
               "shadow memory faults)\n");
    else
        CHECK_EQ(faults, 0);
    mk_tlsf_destroy(t);
}

/* ---- the quick lists (MK_TLSF_GROW) ---- */

static size_t cached_blocks(mk_tlsf_t *t, size_t *regions)
{
    mk_tlsf_stats_t s;

    mk_tlsf_stats(t, &s);
    if (regions)
        *regions = s.regions;
    return s.cached_blocks;
}

static void test_quick_lists(void)
{
    enum { N = 2000 };
    static void *p[N], *q[N];
    mk_tlsf_t *t = mk_tlsf_create(&(mk_tlsf_config_t){
        .initial_size = 64 * KIB, .grow_size = 64 * KIB, .flags = MK_TLSF_GROW});
    size_t regions, before;
    bool same = true;

    fake_clock_install();
    /* The first emptying of a heap that grew merges everything back. */
    for (int i = 0; i < N; i++)
        CHECK((p[i] = mk_tlsf_malloc(t, 100)) != NULL);
    for (int i = 0; i < N; i++)
        mk_tlsf_free(t, p[i]);
    CHECK_EQ(cached_blocks(t, NULL), 0);
    CHECK(heap_ok(t));
    /* Emptied again within the retention period: the blocks stay cached, and the
     * next requests of their size take them back, newest first. */
    for (int i = 0; i < N; i++)
        CHECK((p[i] = mk_tlsf_malloc(t, 100)) != NULL);
    for (int i = 0; i < N; i++)
        mk_tlsf_free(t, p[i]);
    CHECK_EQ(cached_blocks(t, NULL), N);
    CHECK(heap_ok(t));
    for (int i = 0; i < N; i++)
        same &= (q[i] = mk_tlsf_malloc(t, 100)) == p[N - 1 - i];
    CHECK(same);
    CHECK_EQ(cached_blocks(t, NULL), 0);
    /* Blocks of 2 KiB and more are merged as before. */
    void *big = mk_tlsf_malloc(t, 3000);
    mk_tlsf_free(t, big);
    CHECK_EQ(cached_blocks(t, NULL), 0);
    for (int i = 0; i < N; i++)
        mk_tlsf_free(t, q[i]);
    CHECK_EQ(cached_blocks(t, &before), N);
    /* A request nothing free serves merges the cached blocks before the heap
     * grows: 40 KiB fits in a region of 64 KiB once its blocks merge. */
    big = mk_tlsf_malloc(t, 40 * KIB);
    CHECK(big != NULL);
    CHECK_EQ(cached_blocks(t, &regions), 0);
    CHECK(regions <= before);
    CHECK(heap_ok(t));
    /* An emptying a retention period after the last merges them back. */
    for (int i = 0; i < N; i++)
        p[i] = mk_tlsf_malloc(t, 200);
    for (int i = 0; i < N; i++)
        mk_tlsf_free(t, p[i]);
    CHECK_EQ(cached_blocks(t, NULL), N); /* big is still held */
    fake_clock_advance_ms(2 * MK_DECAY_MS);
    mk_tlsf_free(t, big);
    CHECK_EQ(cached_blocks(t, NULL), 0);
    /* Trim merges them back and unmaps every grown region but keep's. */
    for (int i = 0; i < N; i++)
        p[i] = mk_tlsf_malloc(t, 100);
    void *keep = mk_tlsf_malloc(t, 24);
    for (int i = 0; i < N; i++)
        mk_tlsf_free(t, p[i]);
    CHECK_EQ(cached_blocks(t, NULL), N);
    mk_tlsf_trim(t);
    CHECK_EQ(cached_blocks(t, &regions), 0);
    CHECK(regions <= 2);
    mk_tlsf_free(t, keep);
    CHECK(heap_ok(t));
    mk_tlsf_destroy(t);

    /* A heap that does not grow keeps TLSF's bound: no quick lists. */
    static _Alignas(64) char arena[256 * KIB];
    t = mk_tlsf_create_in(arena, sizeof arena, 0);
    keep = mk_tlsf_malloc(t, 100);
    mk_tlsf_free(t, mk_tlsf_malloc(t, 100));
    CHECK_EQ(cached_blocks(t, NULL), 0);
    mk_tlsf_free(t, keep);
    mk_tlsf_destroy(t);

    /* A thread-safe heap that grows caches under its lock. */
    t = mk_tlsf_create(&(mk_tlsf_config_t){.flags = MK_TLSF_GROW | MK_TLSF_THREAD_SAFE});
    keep = mk_tlsf_malloc(t, 100);
    void *x = mk_tlsf_malloc(t, 100);
    mk_tlsf_free(t, x);
    CHECK_EQ(cached_blocks(t, NULL), 1);
    CHECK(mk_tlsf_malloc(t, 100) == x);
    CHECK(heap_ok(t));
    mk_tlsf_destroy(t);
}

/* ---- the check catches damage; debug mode aborts ---- */

static void test_check_catches_damage(void)
{
    mk_tlsf_t *t = mk_tlsf_create(NULL);
    size_t *p = mk_tlsf_malloc(t, 64);

    /* Defined contents: the check will read them as headers once damaged. */
    memset(p, 0, 64);
    memset(mk_tlsf_malloc(t, 64), 0, 64);
    CHECK(heap_ok(t));
    p[-1] ^= 16 * 7; /* the block's size field: a heap overrun from the front */
    CHECK(!mk_tlsf_check(t, why, sizeof why));
    CHECK(strlen(why) > 0);
    p[-1] ^= 16 * 7;
    CHECK(heap_ok(t));
    mk_tlsf_destroy(t);
}

static void child_double_free(void)
{
    mk_tlsf_t *t = mk_tlsf_create(&(mk_tlsf_config_t){.flags = MK_TLSF_DEBUG});
    void *p = mk_tlsf_malloc(t, 24);

    mk_tlsf_malloc(t, 24);
    mk_tlsf_free(t, p);
    mk_tlsf_free(t, p);
}

static void child_foreign(void)
{
    mk_tlsf_t *t = mk_tlsf_create(&(mk_tlsf_config_t){.flags = MK_TLSF_DEBUG});
    static _Alignas(16) char not_ours[64];

    mk_tlsf_free(t, not_ours + 16);
}

static void child_inside(void)
{
    mk_tlsf_t *t = mk_tlsf_create(&(mk_tlsf_config_t){.flags = MK_TLSF_DEBUG});
    char *p = mk_tlsf_calloc(t, 1, 200);

    mk_tlsf_free(t, p + 64);
}

static void child_overrun(void)
{
    mk_tlsf_t *t = mk_tlsf_create(&(mk_tlsf_config_t){.flags = MK_TLSF_DEBUG});
    char *p = mk_tlsf_malloc(t, 30);

    p[30] = 'x'; /* one byte past the end */
    mk_tlsf_free(t, p);
}

static void test_debug_aborts(void)
{
    CHECK_ABORTS(child_double_free, "already free (double free)");
    CHECK_ABORTS(child_foreign, "is not a block of this heap");
    CHECK_ABORTS(child_inside, "is not a live block");
    CHECK_ABORTS(child_overrun, "was written past its end");
}

#ifdef TEST_ASAN
static void child_use_after_free(void)
{
    mk_tlsf_t *t = mk_tlsf_create(NULL);
    volatile char *p = mk_tlsf_malloc(t, 200);

    mk_tlsf_malloc(t, 200);
    mk_tlsf_free(t, (void *)p);
    p[100] = 1;
}
#endif

int main(int argc, char **argv)
{
    /* `test_tlsf churn LIVE CALLS`: the churn alone, for an instrument of
     * its own to count (tests/unit/tlsf_instructions.sh) */
    if (argc == 4 && strcmp(argv[1], "churn") == 0) {
        churn_max_steps(strtoul(argv[2], NULL, 10), atoi(argv[3]));
        return check_report("test_tlsf churn");
    }
    test_config_errors();
    test_basics();
    test_realloc();
    test_memalign();
    test_exhaustion_and_regions();
    test_frees_in_flight();
    test_bounded_steps();
    test_thread_safe();
    test_prelock();
    test_quick_lists();
    test_check_catches_damage();
    test_debug_aborts();
#ifdef TEST_ASAN
    CHECK_ABORTS(child_use_after_free, "use-after-poison");
#else
    printf("use-after-free poisoning: skipped (not an AddressSanitizer build; make "
           "test-sanitize runs it)\n");
#endif
    return check_report("test_tlsf");
}
