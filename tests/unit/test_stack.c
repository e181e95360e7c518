/*
 * test_stack.c - unit tests of mk_stack: frames, alignment, realloc, errors, scopes,
 * the thread stack, statistics and retention, and the aborts of broken contracts.
 * Also run with MEMKIT_BYPASS=1 (see tests/CMakeLists.txt), where the checks about
 * chunk layout are skipped because blocks are real mallocs.
 */
#include "check.h"

#include <memkit/stack.h>

#include <errno.h>
#include <pthread.h>
#include <sys/resource.h>
#include <stdint.h>

typedef struct node {
    struct node *next;
} node_t;

static void test_push_pop_basics(void)
{
    mk_stack_t *st = mk_stack_create();
    mk_stack_stats_t s;
    char *a, *b;

    CHECK(st != NULL);
    mk_stack_push(st);
    a = mk_stack_alloc(st, 100);
    b = mk_stack_alloc(st, 100);
    CHECK(a && b && a != b);
    memset(a, 'a', 100);
    memset(b, 'b', 100);
    CHECK(a[99] == 'a' && b[0] == 'b');
    mk_stack_stats(st, &s);
    CHECK_EQ(s.frames, 1);
    if (!bypass_mode())
        CHECK(s.used_bytes >= 200);
    mk_stack_pop(st);
    mk_stack_stats(st, &s);
    CHECK_EQ(s.frames, 0);
    CHECK_EQ(s.used_bytes, 0);
    if (!bypass_mode())
        CHECK(s.peak_bytes >= 200);
    mk_stack_destroy(st);
}

static void test_typed_alignment(void)
{
    mk_stack_t *st = mk_stack_create();
    node_t *n[4];

    mk_stack_push(st);
    for (int i = 0; i < 4; i++)
        n[i] = mk_stack_new(st, node_t, 1);
    /* 8-byte nodes are packed 8 bytes apart, not 16 like malloc's. */
    if (!bypass_mode())
        for (int i = 1; i < 4; i++)
            CHECK_EQ((char *)n[i] - (char *)n[i - 1], 8);
    for (size_t align = 1; align <= 4096; align *= 2) {
        char *c = mk_stack_alloc_aligned(st, 1, 1); /* misalign the bump pointer */
        void *p = mk_stack_alloc_aligned(st, 24, align);

        CHECK(c != NULL && p != NULL);
        CHECK_EQ((uintptr_t)p % align, 0);
    }
    CHECK_EQ((uintptr_t)mk_stack_alloc(st, 3) % 16, 0);
    CHECK_EQ((uintptr_t)mk_stack_new(st, long double, 2) % _Alignof(long double), 0);
    mk_stack_pop(st);
    mk_stack_destroy(st);
}

/* The bump fast path (common.h) on its own, at its edges: a block that ends
 * exactly at end fits, one byte more does not; end 0 refuses everything; a
 * size whose rounding would wrap, or above PTRDIFF_MAX, goes slow; an
 * alignment that carries the position past end refuses; size 0 takes a grain. */
static void test_bump_edges(void)
{
    _Alignas(512) static uint8_t area[256];
    uintptr_t base = (uintptr_t)area, end = base + sizeof area, pos;

    pos = base;
    CHECK(mk__bump(&pos, end, 256, 8, 8) == (void *)base && pos == end);
    pos = base;
    CHECK(mk__bump(&pos, end, 257, 8, 8) == NULL && pos == base);
    pos = base + 8;
    CHECK(mk__bump(&pos, end, 248, 8, 8) != NULL && pos == end);
    pos = base + 8;
    CHECK(mk__bump(&pos, end, 249, 8, 8) == NULL);
    pos = base;
    CHECK(mk__bump(&pos, 0, 8, 8, 8) == NULL && pos == base); /* end 0: slow path */
    pos = base;
    CHECK(mk__bump(&pos, end, SIZE_MAX, 8, 8) == NULL);
    CHECK(mk__bump(&pos, end, SIZE_MAX - 7, 8, 8) == NULL); /* rounds to 0: wraps */
    CHECK(mk__bump(&pos, end, (size_t)PTRDIFF_MAX + 1, 8, 8) == NULL);
    pos = base + 8;
    CHECK(mk__bump(&pos, end, 8, 512, 8) == NULL); /* aligned past end */
    pos = base + 8;
    void *p = mk__bump(&pos, end, 8, 64, 8);
    CHECK(p == (void *)(base + 64) && pos == base + 72);
    pos = base;
    CHECK(mk__bump(&pos, end, 0, 8, 8) == (void *)base && pos == base + 8);
    pos = base;
    CHECK(mk__bump(&pos, end, 1, 16, 16) == (void *)base && pos == base + 16);
}

static void test_zero_and_overflow(void)
{
    mk_stack_t *st = mk_stack_create();
    mk_stack_stats_t before, after;
    int *z;

    mk_stack_push(st);
    CHECK(mk_stack_alloc(st, 0) != NULL);
    errno = 0;
    CHECK(mk_stack_new(st, uint64_t, SIZE_MAX / 4) == NULL);
    CHECK_EQ(errno, ENOMEM);
    errno = 0;
    CHECK(mk_stack_alloc(st, SIZE_MAX - 3) == NULL);
    CHECK_EQ(errno, ENOMEM);
    /* A request the OS refuses (64 TiB) fails cleanly and leaves the stack usable. */
    mk_stack_stats(st, &before);
    errno = 0;
    CHECK(mk_stack_alloc(st, (size_t)1 << 46) == NULL);
    CHECK_EQ(errno, ENOMEM);
    mk_stack_stats(st, &after);
    CHECK_EQ(before.used_bytes, after.used_bytes);
    CHECK_EQ(before.frames, after.frames);
    z = mk_stack_new0(st, int, 1000);
    CHECK(z != NULL);
    for (int i = 0; i < 1000; i++)
        if (z[i] != 0)
            CHECK(z[i] == 0);
    mk_stack_pop(st);
    mk_stack_destroy(st);
}

static void test_realloc(void)
{
    mk_stack_t *st = mk_stack_create();
    char *a, *b, *c;

    mk_stack_push(st);
    a = mk_stack_alloc(st, 16);
    memcpy(a, "0123456789abcde", 16);
    /* The newest block grows in place. */
    b = mk_stack_realloc(st, a, 16, 4000);
    CHECK(b != NULL && !memcmp(b, "0123456789abcde", 16));
    if (!bypass_mode())
        CHECK(b == a);
    /* ...and shrinks in place, giving the space back to the next allocation. */
    b = mk_stack_realloc(st, b, 4000, 32);
    c = mk_stack_alloc(st, 8);
    if (!bypass_mode()) {
        CHECK(b == a);
        CHECK_EQ(c - a, 32);
    }
    /* An older block is copied. */
    c = mk_stack_realloc(st, b, 32, 64);
    CHECK(c != NULL && !memcmp(c, "0123456789abcde", 16));
    if (!bypass_mode())
        CHECK(c != b);
    /* NULL acts as alloc. */
    CHECK(mk_stack_realloc(st, NULL, 0, 10) != NULL);
    mk_stack_pop(st);
    mk_stack_destroy(st);
}

static void test_large_and_many_chunks(void)
{
    mk_stack_t *st = mk_stack_create();
    mk_stack_stats_t s;
    char *big;
    node_t *head = NULL;

    mk_stack_push(st);
    big = mk_stack_alloc(st, 10u << 20); /* larger than the first chunks */
    CHECK(big != NULL);
    memset(big, 7, 10u << 20);
    for (int i = 0; i < 200000; i++) {
        node_t *n = mk_stack_new(st, node_t, 1);

        n->next = head;
        head = n;
    }
    int count = 0;
    for (node_t *n = head; n; n = n->next)
        count++;
    CHECK_EQ(count, 200000);
    CHECK(big[(10u << 20) - 1] == 7);
    mk_stack_stats(st, &s);
    if (!bypass_mode())
        CHECK(s.chunks >= 2);
    mk_stack_pop(st);
    mk_stack_stats(st, &s);
    CHECK_EQ(s.chunks, 0);
    mk_stack_destroy(st);
}

/* A cursor's blocks are the stack's: consecutive in a chunk, aligned, across
 * chunk boundaries (its slow path), and the stack carries on where the cursor
 * closed; a sealed frame still refuses it (the checks are the stack's). */
static void test_cursor(void)
{
    mk_stack_t *st = mk_stack_create();
    mk_stack_stats_t s;
    node_t *head = NULL;

    mk_stack_push(st);
    char *before = mk_stack_alloc(st, 24);
    mk_stack_cursor_t c = mk_stack_cursor_open(st);
    node_t *first = mk_stack_cursor_new(&c, node_t, 1);
    CHECK(first != NULL);
    if (!bypass_mode())
        CHECK((char *)first == before + 24); /* right after: 8-byte nodes pack */
    first->next = NULL;
    head = first;
    uint64_t rng = 42;
    for (int i = 1; i < 300000; i++) { /* 2.4 MB of nodes: several chunks */
        node_t *n = mk_stack_cursor_new(&c, node_t, 1);
        CHECK(n != NULL && ((uintptr_t)n & 7) == 0);
        n->next = head;
        head = n;
        if (xorshift64(&rng) % 1000 == 0) { /* a few over-aligned blocks between */
            double *d = mk_stack_cursor_alloc(&c, 40, 64);
            CHECK(d != NULL && ((uintptr_t)d & 63) == 0);
            d[4] = 1.0;
        }
    }
    CHECK(mk_stack_cursor_new(&c, node_t, SIZE_MAX / 2) == NULL && errno == ENOMEM);
    mk_stack_cursor_close(&c);
    int count = 0;
    for (node_t *n = head; n; n = n->next)
        count++;
    CHECK_EQ(count, 300000);
    char *after = mk_stack_alloc(st, 8); /* the stack goes on past the cursor's blocks */
    CHECK(after != NULL && after != (char *)head);
    mk_stack_stats(st, &s);
    if (!bypass_mode())
        CHECK(s.chunks >= 2 && s.used_bytes >= 300000 * sizeof(node_t));
    mk_stack_pop(st);
    mk_stack_stats(st, &s);
    CHECK_EQ(s.used_bytes, 0);
    mk_stack_destroy(st);
}

static void test_spare_and_retain(void)
{
    mk_stack_t *st = mk_stack_create();
    mk_stack_stats_t s1, s2;

    if (bypass_mode()) {
        printf("test_spare_and_retain: skipped in bypass mode (no chunks to keep)\n");
        mk_stack_destroy(st);
        return;
    }
    /* A loop that pushes, fills and pops keeps one spare: mapped stays constant. */
    for (int i = 0; i < 50; i++) {
        mk_stack_push(st);
        CHECK(mk_stack_alloc(st, 200000) != NULL);
        mk_stack_pop(st);
        if (i == 1)
            mk_stack_stats(st, &s1);
    }
    mk_stack_stats(st, &s2);
    CHECK_EQ(s1.mapped_bytes, s2.mapped_bytes);
    CHECK(s2.spare_bytes > 0 && s2.spare_bytes == s2.mapped_bytes);
    /* Default: several released chunks leave only the largest. */
    mk_stack_push(st);
    for (int i = 0; i < 40; i++)
        mk_stack_alloc(st, 100000);
    mk_stack_pop(st);
    mk_stack_stats(st, &s1);
    CHECK(s1.spare_bytes == s1.mapped_bytes);
    /* Retain everything: refilling maps nothing new. */
    mk_stack_set_retain(st, SIZE_MAX);
    mk_stack_push(st);
    for (int i = 0; i < 40; i++)
        mk_stack_alloc(st, 100000);
    mk_stack_pop(st);
    mk_stack_stats(st, &s1);
    mk_stack_push(st);
    for (int i = 0; i < 40; i++)
        mk_stack_alloc(st, 100000);
    mk_stack_pop(st);
    mk_stack_stats(st, &s2);
    CHECK_EQ(s1.mapped_bytes, s2.mapped_bytes);
    CHECK(s2.spare_bytes > 4000000);
    mk_stack_trim(st);
    mk_stack_stats(st, &s2);
    CHECK_EQ(s2.mapped_bytes, 0);
    mk_stack_destroy(st);
}

static void test_nested_frames(void)
{
    mk_stack_t *st = mk_stack_create();
    char *outer, *inner;
    mk_stack_stats_t s;

    mk_stack_push(st);
    outer = mk_stack_strdup(st, "outer");
    mk_stack_push(st);
    inner = mk_stack_fmt(st, "inner %d", 42);
    CHECK(!strcmp(inner, "inner 42"));
    mk_stack_stats(st, &s);
    CHECK_EQ(s.frames, 2);
    mk_stack_pop(st);
    CHECK(!strcmp(outer, "outer"));
    /* The outer frame's newest block can grow again after the inner pop. */
    outer = mk_stack_realloc(st, outer, 6, 64);
    CHECK(outer && !strcmp(outer, "outer"));
    mk_stack_pop(st);
    mk_stack_destroy(st);
}

/* ---- scopes ---- */

static int scope_early_return(mk_stack_t *st, int x)
{
    MK_STACK_SCOPE(st);
    char *tmp = mk_stack_alloc(st, 64);

    if (x > 0)
        return tmp != NULL;
    return 0;
}

static void scope_goto(mk_stack_t *st)
{
    for (int i = 0; i < 3; i++) {
        MK_STACK_SCOPE(st);
        mk_stack_alloc(st, 10);
        if (i == 1)
            goto out;
    }
out:
    return;
}

static char *t_greeting(const char *who)
{
    /* A t_ function: allocates in its caller's frame, opens no scope. */
    return mk_t_fmt("hello, %s", who);
}

static void test_scopes(void)
{
    mk_stack_t *st = mk_stack_create();
    mk_stack_stats_t s;

    CHECK_EQ(scope_early_return(st, 1), 1);
    mk_stack_stats(st, &s);
    CHECK_EQ(s.frames, 0);
    scope_goto(st);
    mk_stack_stats(st, &s);
    CHECK_EQ(s.frames, 0);
    {
        MK_SCOPE();
        char *g = t_greeting("world");
        int *v = mk_t_new0(int, 10);

        CHECK(!strcmp(g, "hello, world"));
        CHECK(v[9] == 0);
        CHECK(!strcmp(mk_t_strdup("x"), "x"));
        mk_stack_stats(mk_tstack(), &s);
        CHECK_EQ(s.frames, 1);
    }
    mk_stack_stats(mk_tstack(), &s);
    CHECK_EQ(s.frames, 0);
    mk_stack_destroy(st);
}

static pthread_barrier_t threads_ready;

static void *thread_main(void *arg)
{
    MK_SCOPE();
    int *v = mk_t_new(int, 1000);

    for (int i = 0; i < 1000; i++)
        v[i] = i;
    *(mk_stack_t **)arg = mk_tstack();
    /* Stay alive until every thread has looked: a dead thread's stack is freed and
     * its address may be reused. */
    pthread_barrier_wait(&threads_ready);
    return (void *)(intptr_t)(v[999] == 999);
}

static void test_thread_stacks(void)
{
    pthread_t t[4];
    mk_stack_t *seen[4];
    void *ok;

    pthread_barrier_init(&threads_ready, NULL, 4);
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, thread_main, &seen[i]);
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], &ok);
        CHECK(ok == (void *)1);
    }
    pthread_barrier_destroy(&threads_ready);
    for (int i = 0; i < 4; i++)
        for (int k = i + 1; k < 4; k++)
            CHECK(seen[i] != seen[k]);
}

/* ---- broken contracts abort with file and line ---- */

static void child_unbalanced_scope(void)
{
    mk_stack_t *st = mk_stack_create();
    {
        MK_STACK_SCOPE(st);
        mk_stack_push(st); /* never popped: the scope exit must catch it */
    }
}

static void child_pop_empty(void)
{
    mk_stack_t *st = mk_stack_create();

    mk_stack_pop(st);
}

static void child_alloc_no_frame(void)
{
    mk_stack_t *st = mk_stack_create();

    mk_stack_alloc(st, 8);
}

/* An emptied stack keeps a chunk current (idle); it must not take blocks. */
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
/* Out of memory in mk_t_memdup: the message names this file, the caller's,
 * not stack.c (1 TiB under a 1 GiB address-space limit cannot be had). */
static void child_memdup_oom(void)
{
    struct rlimit lim = {1u << 30, 1u << 30};
    setrlimit(RLIMIT_AS, &lim);
    static const char src[1];
    MK_SCOPE();
    mk_t_memdup(src, (size_t)1 << 40);
}
#endif

static void child_alloc_idle(void)
{
    mk_stack_t *st = mk_stack_create();

    mk_stack_push(st);
    mk_stack_alloc(st, 8);
    mk_stack_pop(st);
    mk_stack_alloc(st, 8);
}

static void child_alloc_sealed(void)
{
    mk_stack_t *st = mk_stack_create();

    mk_stack_push(st);
    mk_stack_seal(st);
    mk_stack_alloc(st, 8);
}

static void child_realloc_foreign_frame(void)
{
    mk_stack_t *st = mk_stack_create();
    char *outer;

    mk_stack_push(st);
    outer = mk_stack_alloc(st, 8);
    mk_stack_push(st);
    mk_stack_realloc(st, outer, 8, 16);
}

static void child_bad_alignment(void)
{
    mk_stack_t *st = mk_stack_create();

    mk_stack_push(st);
    mk_stack_alloc_aligned(st, 8, 24);
}

static void test_contract_aborts(void)
{
    CHECK_ABORTS(child_unbalanced_scope, "unbalanced pop: frame pushed at");
    CHECK_ABORTS(child_unbalanced_scope, "test_stack.c:");
    CHECK_ABORTS(child_pop_empty, "no frame is open");
    CHECK_ABORTS(child_alloc_no_frame, "no frame is open on this stack");
    CHECK_ABORTS(child_alloc_idle, "no frame is open on this stack");
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    /* (a sanitizer's shadow memory cannot live under an address-space limit) */
    CHECK_ABORTS(child_memdup_oom, "on the thread stack at " __FILE__ ":");
#endif
    CHECK_ABORTS(child_alloc_sealed, "is sealed");
    CHECK_ABORTS(child_realloc_foreign_frame, "not from the");
    CHECK_ABORTS(child_bad_alignment, "not a power of two");
}

static void test_seal_then_inner_scope(void)
{
    mk_stack_t *st = mk_stack_create();

    mk_stack_push(st);
    mk_stack_seal(st);
    {
        MK_STACK_SCOPE(st); /* a callee opens its own scope: allowed */
        CHECK(mk_stack_alloc(st, 32) != NULL);
    }
    mk_stack_pop(st);
    mk_stack_destroy(st);
}

#ifdef TEST_ASAN
static void child_use_after_pop(void)
{
    mk_stack_t *st = mk_stack_create();
    volatile char *p;

    mk_stack_push(st);
    p = mk_stack_alloc(st, 64);
    mk_stack_pop(st);
    p[0] = 1; /* ASan must report this */
}

static void child_padding_overflow(void)
{
    mk_stack_t *st = mk_stack_create();
    volatile char *p;

    mk_stack_push(st);
    p = mk_stack_alloc(st, 13);
    mk_stack_alloc(st, 64);
    p[13] = 1; /* one past the block, in the padding */
}

static void test_asan_reports(void)
{
    if (bypass_mode()) {
        CHECK_ABORTS(child_use_after_pop, "heap-use-after-free");
        CHECK_ABORTS(child_padding_overflow, "heap-buffer-overflow");
    } else {
        CHECK_ABORTS(child_use_after_pop, "use-after-poison");
        /* A byte past the block in its own 8-byte granule: ASan calls it
         * "unknown-crash" (partially addressable), any other granule "use-after-poison".
         */
        CHECK_ABORTS(child_padding_overflow, "AddressSanitizer");
        CHECK_ABORTS(child_padding_overflow, "child_padding_overflow");
    }
}
#endif

/* A stack popped to empty keeps its chunk current for the next push (in plain
 * mode), but it is a spare for the statistics and for trim. */
static void test_idle_chunk(void)
{
    if (bypass_mode()) {
        printf("test_idle_chunk: skipped in bypass mode (no chunks to keep)\n");
        return;
    }
    mk_stack_t *st = mk_stack_create();
    mk_stack_stats_t s1, s2;

    for (int round = 0; round < 3; round++) {
        mk_stack_push(st);
        CHECK(mk_stack_alloc(st, 100) != NULL);
        mk_stack_pop(st);
        mk_stack_stats(st, &s1);
        CHECK_EQ(s1.chunks, 0);
        CHECK_EQ(s1.frames, 0);
        CHECK_EQ(s1.used_bytes, 0);
        CHECK(s1.mapped_bytes > 0 && s1.spare_bytes == s1.mapped_bytes);
    }
    /* a frame that outgrows the kept chunk, then back: the first time the
     * retention policy gives it back (a burst), the second time (within its
     * period: a loop) one chunk is kept */
    for (int round = 0; round < 2; round++) {
        mk_stack_push(st);
        CHECK(mk_stack_alloc(st, 4u << 20) != NULL);
        mk_stack_pop(st);
        mk_stack_stats(st, &s2);
        if (round == 0)
            CHECK(s2.mapped_bytes <= (1u << 20));
    }
    CHECK(s2.spare_bytes == s2.mapped_bytes && s2.chunks == 0);
    CHECK(s2.mapped_bytes < (8u << 20)); /* the large chunk alone, as before */
    mk_stack_set_retain(st, 0);          /* keeps one: the largest */
    mk_stack_stats(st, &s2);
    CHECK(s2.mapped_bytes >= (4u << 20) && s2.spare_bytes == s2.mapped_bytes);
    mk_stack_trim(st);
    mk_stack_stats(st, &s2);
    CHECK_EQ(s2.mapped_bytes, 0);
    CHECK_EQ(s2.spare_bytes, 0);
    /* and it works from there, and is destroyed cleanly while idle */
    mk_stack_push(st);
    CHECK(mk_stack_alloc(st, 100) != NULL);
    mk_stack_pop(st);
    mk_stack_destroy(st);
}

int main(void)
{
    test_push_pop_basics();
    test_idle_chunk();
    test_typed_alignment();
    test_bump_edges();
    test_zero_and_overflow();
    test_realloc();
    test_large_and_many_chunks();
    test_cursor();
    test_spare_and_retain();
    test_nested_frames();
    test_scopes();
    test_thread_stacks();
    test_seal_then_inner_scope();
    test_contract_aborts();
#ifdef TEST_ASAN
    test_asan_reports();
#else
    printf("test_asan_reports: skipped (not an AddressSanitizer build; make "
           "test-sanitize runs it)\n");
#endif
    return check_report("test_stack");
}
