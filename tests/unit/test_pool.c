/*
 * test_pool.c - unit tests of mk_pool: configuration, O(1) reuse, slab return,
 * zeroing, statistics, thread-safe mode, and the debug-mode aborts.
 */
#include "check.h"

#include <memkit/pool.h>

#include <errno.h>
#include <pthread.h>
#include <stdint.h>

static void test_config_errors(void)
{
    errno = 0;
    CHECK(mk_pool_create(&(mk_pool_config_t){.item_size = 0}) == NULL);
    CHECK_EQ(errno, EINVAL);
    CHECK(mk_pool_create(&(mk_pool_config_t){.item_size = 8, .align = 3}) == NULL);
    CHECK(mk_pool_create(&(mk_pool_config_t){.item_size = 8, .slab_size = 5000}) == NULL);
    CHECK(mk_pool_create(&(mk_pool_config_t){.item_size = 8000, .slab_size = 4096}) ==
          NULL);
    CHECK(mk_pool_create(NULL) == NULL);
}

static void test_basics(void)
{
    mk_pool_t *pool = mk_pool_create(&(mk_pool_config_t){.item_size = 8});
    mk_pool_stats_t s;
    void *a, *b, *c;

    a = mk_pool_alloc(pool);
    b = mk_pool_alloc(pool);
    CHECK(a && b && a != b);
    mk_pool_stats(pool, &s);
    CHECK_EQ(s.item_size, 8);
    CHECK_EQ(s.live_items, 2);
    CHECK_EQ(s.slabs, 1);
    /* 8-byte items are packed 8 bytes apart. */
    CHECK_EQ((char *)b - (char *)a, 8);
    /* A freed item is the next one handed out (LIFO free list). */
    mk_pool_free(pool, a);
    c = mk_pool_alloc(pool);
    CHECK(c == a);
    mk_pool_free(pool, NULL); /* ignored */
    mk_pool_free(pool, b);
    mk_pool_free(pool, c);
    mk_pool_stats(pool, &s);
    CHECK_EQ(s.live_items, 0);
    mk_pool_destroy(pool);
}

static void test_alignment_and_stride(void)
{
    mk_pool_t *p12 = mk_pool_create(&(mk_pool_config_t){.item_size = 12});
    mk_pool_t *p48 = mk_pool_create(&(mk_pool_config_t){.item_size = 48});
    mk_pool_t *p64 = mk_pool_create(&(mk_pool_config_t){.item_size = 24, .align = 64});
    mk_pool_stats_t s;

    mk_pool_stats(p12, &s);
    CHECK_EQ(s.item_size, 16);
    mk_pool_stats(p48, &s);
    CHECK_EQ(s.item_size, 48);
    for (int i = 0; i < 100; i++) {
        CHECK_EQ((uintptr_t)mk_pool_alloc(p48) % 16, 0);
        CHECK_EQ((uintptr_t)mk_pool_alloc(p64) % 64, 0);
    }
    mk_pool_destroy(p12);
    mk_pool_destroy(p48);
    mk_pool_destroy(p64);
}

static void test_slab_return(void)
{
    enum { N = 100000 };
    static void *items[N];
    mk_pool_t *pool =
        mk_pool_create(&(mk_pool_config_t){.item_size = 32, .max_empty_slabs = 2});
    mk_pool_stats_t s;

    for (int i = 0; i < N; i++)
        items[i] = mk_pool_alloc(pool);
    mk_pool_stats(pool, &s);
    CHECK(s.slabs > 40);
    CHECK_EQ(s.peak_slabs, s.slabs);
    for (int i = 0; i < N; i++)
        mk_pool_free(pool, items[i]);
    mk_pool_stats(pool, &s);
    CHECK_EQ(s.live_items, 0);
    /* All but max_empty_slabs empty slabs (plus the current one) went back. */
    CHECK(s.slabs <= 3);
    CHECK(s.empty_slabs <= 2);
    /* Reuse after return works. */
    for (int i = 0; i < N; i++)
        items[i] = mk_pool_alloc(pool);
    for (int i = 0; i < N; i += 2)
        mk_pool_free(pool, items[i]);
    for (int i = 1; i < N; i += 2)
        mk_pool_free(pool, items[i]);
    mk_pool_stats(pool, &s);
    CHECK_EQ(s.live_items, 0);
    mk_pool_destroy(pool);
}

static void test_zero(void)
{
    mk_pool_t *pool =
        mk_pool_create(&(mk_pool_config_t){.item_size = 100, .flags = MK_POOL_ZERO});
    unsigned char *p = mk_pool_alloc(pool);

    memset(p, 0xff, 100);
    mk_pool_free(pool, p);
    p = mk_pool_alloc(pool);
    for (int i = 0; i < 100; i++)
        if (p[i])
            CHECK(p[i] == 0);
    mk_pool_destroy(pool);
}

static mk_pool_t *shared_pool;

static void *thread_churn(void *arg)
{
    void *mine[64];

    (void)arg;
    for (int round = 0; round < 2000; round++) {
        for (int i = 0; i < 64; i++) {
            mine[i] = mk_pool_alloc(shared_pool);
            memset(mine[i], round & 0xff, 16);
        }
        for (int i = 0; i < 64; i++) {
            if (((unsigned char *)mine[i])[15] != (round & 0xff))
                return (void *)1;
            mk_pool_free(shared_pool, mine[i]);
        }
    }
    return NULL;
}

static void test_thread_safe(void)
{
    pthread_t t[4];
    void *bad;
    mk_pool_stats_t s;

    shared_pool = mk_pool_create(
        &(mk_pool_config_t){.item_size = 16, .flags = MK_POOL_THREAD_SAFE});
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, thread_churn, NULL);
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], &bad);
        CHECK(bad == NULL);
    }
    mk_pool_stats(shared_pool, &s);
    CHECK_EQ(s.live_items, 0);
    mk_pool_destroy(shared_pool);
}

/* ---- debug mode aborts ---- */

static void child_double_free(void)
{
    mk_pool_t *pool =
        mk_pool_create(&(mk_pool_config_t){.item_size = 24, .flags = MK_POOL_DEBUG});
    void *p = mk_pool_alloc(pool);

    mk_pool_alloc(pool);
    mk_pool_free(pool, p);
    mk_pool_free(pool, p);
}

static void child_foreign_pointer(void)
{
    mk_pool_t *pool =
        mk_pool_create(&(mk_pool_config_t){.item_size = 24, .flags = MK_POOL_DEBUG});
    static char not_ours[64];

    mk_pool_alloc(pool);
    mk_pool_free(pool, not_ours + 8);
}

static void child_other_pool(void)
{
    mk_pool_t *a =
        mk_pool_create(&(mk_pool_config_t){.item_size = 24, .flags = MK_POOL_DEBUG});
    mk_pool_t *b =
        mk_pool_create(&(mk_pool_config_t){.item_size = 24, .flags = MK_POOL_DEBUG});

    mk_pool_free(b, mk_pool_alloc(a));
}

static void child_misaligned(void)
{
    mk_pool_t *pool =
        mk_pool_create(&(mk_pool_config_t){.item_size = 24, .flags = MK_POOL_DEBUG});
    char *p = mk_pool_alloc(pool);

    mk_pool_free(pool, p + 4);
}

static void test_debug_aborts(void)
{
    CHECK_ABORTS(child_double_free, "double free of");
    CHECK_ABORTS(child_foreign_pointer, "does not belong to this pool");
    CHECK_ABORTS(child_other_pool, "does not belong to this pool");
    CHECK_ABORTS(child_misaligned, "not an item of this pool");
}

#ifdef TEST_ASAN
static void child_use_after_free(void)
{
    mk_pool_t *pool = mk_pool_create(&(mk_pool_config_t){.item_size = 64});
    volatile char *p = mk_pool_alloc(pool);

    mk_pool_free(pool, (void *)p);
    p[20] = 1;
}
#endif

int main(void)
{
    test_config_errors();
    test_basics();
    test_alignment_and_stride();
    test_slab_return();
    test_zero();
    test_thread_safe();
    test_debug_aborts();
#ifdef TEST_ASAN
    CHECK_ABORTS(child_use_after_free, "use-after-poison");
#else
    printf("use-after-free poisoning: skipped (not an AddressSanitizer build; make "
           "test-sanitize runs it)\n");
#endif
    return check_report("test_pool");
}
