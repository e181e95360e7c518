/*
 * test_fifo.c - unit tests of mk_fifo: configuration, packing and alignment,
 * chunk recycling (spares and munmap), the current chunk starting over, large
 * blocks, realloc in place and by moving, statistics, and the debug-mode aborts.
 */
#include "check.h"

#include <memkit/fifo.h>

#include <errno.h>
#include <stdint.h>

#define KIB ((size_t)1 << 10)

static void test_config_errors(void)
{
    errno = 0;
    CHECK(mk_fifo_create(&(mk_fifo_config_t){.chunk_size = 5000}) == NULL);
    CHECK_EQ(errno, EINVAL);
    CHECK(mk_fifo_create(&(mk_fifo_config_t){.chunk_size = 32 * KIB}) == NULL);
    CHECK(mk_fifo_create(&(mk_fifo_config_t){.flags = 1u << 7}) == NULL);
    mk_fifo_t *f = mk_fifo_create(NULL);
    CHECK(f != NULL);
    mk_fifo_destroy(f);
    mk_fifo_destroy(NULL); /* ignored */
}

static void test_packing_and_alignment(void)
{
    mk_fifo_t *f = mk_fifo_create(NULL);
    mk_fifo_stats_t s;

    /* 8-byte objects pack 8 bytes apart; mk_fifo_alloc aligns like malloc. */
    uint64_t *a = mk_fifo_new(f, uint64_t, 1), *b = mk_fifo_new(f, uint64_t, 1);
    CHECK_EQ((char *)b - (char *)a, 8);
    char *c = mk_fifo_alloc(f, 3);
    CHECK_EQ((uintptr_t)c % 16, 0);
    char *d = mk_fifo_alloc_aligned(f, 100, 256);
    CHECK_EQ((uintptr_t)d % 256, 0);
    /* Zero bytes: a unique pointer all the same. */
    void *z1 = mk_fifo_alloc(f, 0), *z2 = mk_fifo_alloc(f, 0);
    CHECK(z1 && z2 && z1 != z2);
    /* n * size overflowing is ENOMEM, not a short block. */
    errno = 0;
    CHECK(mk_fifo_new(f, uint64_t, SIZE_MAX / 4) == NULL);
    CHECK_EQ(errno, ENOMEM);
    CHECK(mk_fifo_alloc(f, SIZE_MAX - 3) == NULL);
    mk_fifo_stats(f, &s);
    CHECK_EQ(s.live_blocks, 6);
    CHECK_EQ(s.chunks, 1);
    mk_fifo_free(f, NULL); /* ignored */
    mk_fifo_destroy(f);
}

/* Fills chunks with 1 KiB blocks and frees them oldest first: each chunk is
 * recycled when its last block goes, and kept as a spare (1 MiB is under the
 * retention policy's floor); mk_fifo_trim returns them. */
static void test_recycling(void)
{
    enum { N = 1000 };
    mk_fifo_t *f = mk_fifo_create(&(mk_fifo_config_t){.chunk_size = 64 * KIB});
    static void *blocks[N];
    mk_fifo_stats_t s;

    for (int i = 0; i < N; i++) {
        blocks[i] = mk_fifo_alloc(f, KIB);
        CHECK(blocks[i] != NULL);
        CHECK_EQ(((uintptr_t)blocks[i] & ~(64 * KIB - 1)),
                 ((uintptr_t)blocks[i] + KIB - 1) & ~(64 * KIB - 1));
    }
    mk_fifo_stats(f, &s);
    CHECK(s.chunks >= N / 64 && s.chunks <= N / 62 + 1);
    CHECK_EQ(s.live_blocks, N);
    CHECK_EQ(s.peak_chunks, s.chunks);
    size_t full = s.chunks;
    for (int i = 0; i < N; i++)
        mk_fifo_free(f, blocks[i]);
    mk_fifo_stats(f, &s);
    CHECK_EQ(s.live_blocks, 0);
    /* The current chunk stays; the others are spares. */
    CHECK_EQ(s.chunks, full);
    CHECK_EQ(s.spare_chunks, full - 1);
    CHECK_EQ(s.mapped_bytes, full * 64 * KIB);
    /* Allocating again fills the current chunk's rest, then takes spares: no
     * new chunk. */
    for (int i = 0; i < 200; i++)
        blocks[i] = mk_fifo_alloc(f, KIB);
    mk_fifo_stats(f, &s);
    CHECK_EQ(s.chunks, full);
    size_t in_use = s.chunks - s.spare_chunks; /* 200 blocks, 63 a chunk */
    CHECK(in_use >= 4 && in_use <= 5);
    CHECK_EQ(s.peak_chunks, full);
    /* Trim returns every spare, never a chunk with live blocks. */
    mk_fifo_trim(f);
    mk_fifo_stats(f, &s);
    CHECK_EQ(s.spare_chunks, 0);
    CHECK_EQ(s.chunks, in_use);
    CHECK_EQ(s.live_blocks, 200);
    for (int i = 0; i < 200; i++)
        mk_fifo_free(f, blocks[i]);
    mk_fifo_trim(f);
    mk_fifo_stats(f, &s);
    CHECK_EQ(s.chunks, 1); /* the current chunk */
    mk_fifo_destroy(f);

    /* max_spare_chunks = SIZE_MAX keeps every chunk. */
    f = mk_fifo_create(
        &(mk_fifo_config_t){.chunk_size = 64 * KIB, .max_spare_chunks = SIZE_MAX});
    for (int i = 0; i < N; i++)
        blocks[i] = mk_fifo_alloc(f, KIB);
    for (int i = N - 1; i >= 0; i--) /* newest first: any order works */
        mk_fifo_free(f, blocks[i]);
    mk_fifo_stats(f, &s);
    CHECK_EQ(s.chunks, full);
    CHECK_EQ(s.spare_chunks, full - 1);
    mk_fifo_destroy(f);
}

/* The current chunk starts over when it fills up with every block freed. */
/* How many blocks of `size` one 64 KiB chunk holds (the header is larger when
 * the chunk keeps bitmaps: debug mode, ASan). */
static int blocks_per_chunk(size_t size)
{
    mk_fifo_t *f = mk_fifo_create(&(mk_fifo_config_t){.chunk_size = 64 * KIB});
    uintptr_t chunk = (uintptr_t)mk_fifo_alloc(f, size) & ~(uintptr_t)(64 * KIB - 1);
    int n = 1;

    while (((uintptr_t)mk_fifo_alloc(f, size) & ~(uintptr_t)(64 * KIB - 1)) == chunk)
        n++;
    mk_fifo_destroy(f);
    return n;
}

/* The current chunk starts over when it fills up with every block freed. */
static void test_rewind(void)
{
    int n = blocks_per_chunk(2 * KIB);
    mk_fifo_t *f = mk_fifo_create(&(mk_fifo_config_t){.chunk_size = 64 * KIB});
    void *p[64];
    mk_fifo_stats_t s;

    CHECK(n >= 28 && n <= 31);
    for (int i = 0; i < n; i++)
        p[i] = mk_fifo_alloc(f, 2 * KIB);
    for (int i = 0; i < n; i++)
        mk_fifo_free(f, p[i]);
    void *again = mk_fifo_alloc(f, 2 * KIB);
    CHECK(again == p[0]);
    mk_fifo_stats(f, &s);
    CHECK_EQ(s.chunks, 1);
    CHECK_EQ(s.live_blocks, 1);
    mk_fifo_destroy(f);
}

/* A queue that stays short runs in two chunks forever. */
static void test_steady_queue(void)
{
    enum { Q = 100 };
    mk_fifo_t *f = mk_fifo_create(&(mk_fifo_config_t){.chunk_size = 64 * KIB});
    void *q[Q] = {0};
    mk_fifo_stats_t s;

    for (int i = 0; i < 200000; i++) {
        mk_fifo_free(f, q[i % Q]);
        q[i % Q] = mk_fifo_alloc(f, 16 + (size_t)(i * 37 % 500));
        *(char *)q[i % Q] = 1;
    }
    mk_fifo_stats(f, &s);
    CHECK_EQ(s.live_blocks, Q);
    CHECK(s.peak_chunks <= 3);
    mk_fifo_destroy(f);
}

static void test_large_blocks(void)
{
    mk_fifo_t *f = mk_fifo_create(&(mk_fifo_config_t){.chunk_size = 64 * KIB});
    mk_fifo_stats_t s;
    char *small = mk_fifo_alloc(f, 100);
    char *big = mk_fifo_alloc(f, 300 * KIB);

    CHECK(big != NULL);
    memset(big, 0x5a, 300 * KIB);
    char *small2 = mk_fifo_alloc(f, 100);
    CHECK_EQ(small2 - small, 112); /* the current chunk is still current */
    mk_fifo_stats(f, &s);
    CHECK_EQ(s.chunks, 2);
    CHECK(s.mapped_bytes >= 64 * KIB + 300 * KIB);
    mk_fifo_free(f, big); /* its own chunk goes back to the OS, not to the spares */
    mk_fifo_stats(f, &s);
    CHECK_EQ(s.chunks, 1);
    CHECK_EQ(s.spare_chunks, 0);
    CHECK_EQ(s.mapped_bytes, 64 * KIB);
    mk_fifo_destroy(f);
}

static void test_realloc(void)
{
    mk_fifo_t *f = mk_fifo_create(&(mk_fifo_config_t){.chunk_size = 64 * KIB});
    char *a = mk_fifo_alloc(f, 10), *b = mk_fifo_alloc(f, 10);

    memcpy(a, "abcdefghi", 10);
    memcpy(b, "012345678", 10);
    /* The newest block grows and shrinks in place. */
    char *b2 = mk_fifo_realloc(f, b, 10, 1000);
    CHECK(b2 == b);
    CHECK(strcmp(b2, "012345678") == 0);
    CHECK(mk_fifo_realloc(f, b2, 1000, 20) == b);
    char *c = mk_fifo_alloc(f, 8);
    CHECK_EQ(c - b, 32); /* the shrink gave the room back */
    /* An older block moves, keeping its contents; its old copy is freed. */
    char *a2 = mk_fifo_realloc(f, a, 10, 40);
    CHECK(a2 != a && strcmp(a2, "abcdefghi") == 0);
    /* Shrinking an older block keeps it where it is. */
    CHECK(mk_fifo_realloc(f, b, 20, 5) == b);
    /* The newest block at a chunk's end moves to a new chunk. */
    char *d = mk_fifo_realloc(f, NULL, 0, 100);
    char *d2 = mk_fifo_realloc(f, d, 100, 64 * KIB - 200);
    CHECK(d2 != NULL && d2 != d);
    mk_fifo_stats_t s;
    mk_fifo_stats(f, &s);
    CHECK_EQ(s.live_blocks, 4); /* b, c, a2, d2 */
    mk_fifo_destroy(f);
}

/* ---- debug mode aborts ---- */

static void child_double_free(void)
{
    mk_fifo_t *f = mk_fifo_create(&(mk_fifo_config_t){.flags = MK_FIFO_DEBUG});
    void *p = mk_fifo_alloc(f, 24);

    mk_fifo_alloc(f, 24);
    mk_fifo_free(f, p);
    mk_fifo_free(f, p);
}

static void child_foreign_pointer(void)
{
    mk_fifo_t *f = mk_fifo_create(&(mk_fifo_config_t){.flags = MK_FIFO_DEBUG});
    static char not_ours[64];

    mk_fifo_alloc(f, 24);
    mk_fifo_free(f, not_ours + 8);
}

static void child_other_fifo(void)
{
    mk_fifo_t *a = mk_fifo_create(&(mk_fifo_config_t){.flags = MK_FIFO_DEBUG});
    mk_fifo_t *b = mk_fifo_create(&(mk_fifo_config_t){.flags = MK_FIFO_DEBUG});

    mk_fifo_alloc(b, 8);
    mk_fifo_free(b, mk_fifo_alloc(a, 24));
}

static void child_inside_block(void)
{
    mk_fifo_t *f = mk_fifo_create(&(mk_fifo_config_t){.flags = MK_FIFO_DEBUG});
    char *p = mk_fifo_alloc(f, 64);

    mk_fifo_free(f, p + 16);
}

static void child_realloc_freed(void)
{
    mk_fifo_t *f = mk_fifo_create(&(mk_fifo_config_t){.flags = MK_FIFO_DEBUG});
    char *p = mk_fifo_alloc(f, 64);

    mk_fifo_free(f, p);
    mk_fifo_realloc(f, p, 64, 128);
}

static void test_debug_aborts(void)
{
    CHECK_ABORTS(child_realloc_freed, "mk_fifo_realloc: ");
    CHECK_ABORTS(child_double_free, "is not a live block (freed twice");
    CHECK_ABORTS(child_foreign_pointer, "is not a block of this FIFO");
    CHECK_ABORTS(child_other_fifo, "is not a block of this FIFO");
    CHECK_ABORTS(child_inside_block, "is not a live block");
}

/* Debug mode still counts, recycles and reallocates like the fast paths. */
static void test_debug_mode_works(void)
{
    mk_fifo_t *f = mk_fifo_create(
        &(mk_fifo_config_t){.chunk_size = 64 * KIB, .flags = MK_FIFO_DEBUG});
    void *p[300];
    mk_fifo_stats_t s;

    for (int i = 0; i < 300; i++)
        p[i] = mk_fifo_alloc(f, 500);
    p[299] = mk_fifo_realloc(f, p[299], 500, 900);
    for (int i = 0; i < 300; i++)
        mk_fifo_free(f, p[i]);
    mk_fifo_trim(f);
    mk_fifo_stats(f, &s);
    CHECK_EQ(s.live_blocks, 0);
    CHECK(s.chunks <= 1);
    mk_fifo_destroy(f);
}

#ifdef TEST_ASAN
static void child_use_after_free(void)
{
    mk_fifo_t *f = mk_fifo_create(NULL);
    volatile char *p = mk_fifo_alloc(f, 64);

    mk_fifo_alloc(f, 64);
    mk_fifo_free(f, (void *)p);
    p[20] = 1;
}
#endif

int main(void)
{
    test_config_errors();
    test_packing_and_alignment();
    test_recycling();
    test_rewind();
    test_steady_queue();
    test_large_blocks();
    test_realloc();
    test_debug_aborts();
    test_debug_mode_works();
#ifdef TEST_ASAN
    CHECK_ABORTS(child_use_after_free, "use-after-poison");
#else
    printf("use-after-free poisoning: skipped (not an AddressSanitizer build; make "
           "test-sanitize runs it)\n");
#endif
    return check_report("test_fifo");
}
