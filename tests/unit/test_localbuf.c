/*
 * test_localbuf.c - local buffers and the C small vector: the inline case
 * makes no heap allocation, the fallback is freed on every way out of the
 * block (end, early return, break, goto), contents survive growth, errors
 * leave the buffer usable, the frame fallback uses no malloc and enforces its
 * frame; then a randomized run of the small vector against a plain array.
 *
 * malloc, realloc and free are counted by linking with --wrap (the test's and
 * libmemkit's own calls; libc's internal ones are not ours to count), which
 * works the same under ASan and Valgrind.
 */
#include "check.h"

#include <memkit/localbuf.h>
#include <memkit/smallvec.h>
#include <memkit/stack.h>

#include <stdint.h>

/* volatile: the compiler assumes malloc leaves our globals alone */
static volatile long mallocs, frees;

void *__real_malloc(size_t n);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);

void *__wrap_malloc(size_t n)
{
    mallocs++;
    return __real_malloc(n);
}
void *__wrap_realloc(void *p, size_t n)
{
    if (!p)
        mallocs++;
    return __real_realloc(p, n);
}
void __wrap_free(void *p)
{
    frees += p != NULL;
    __real_free(p);
}

/* ---- inline ---- */

static void inline_case(void)
{
    long m0 = mallocs;
    MK_LOCALBUF(b, 64);

    unsigned char *p = mk_localbuf_get(&b, 64);
    CHECK(p == b_mk_inline);
    CHECK((uintptr_t)p % MK_MALLOC_ALIGN == 0);
    memset(p, 0xab, 64);
    int *ints = mk_localbuf_array(&b, int, 16);
    CHECK((void *)ints == (void *)b_mk_inline);
    for (int i = 0; i < 8; i++)
        CHECK(mk_localbuf_append(&b, "12345678", 8) != NULL);
    CHECK_EQ(mk_localbuf_len(&b), 64);
    CHECK(mk_localbuf_is_inline(&b));
    CHECK_EQ(mallocs, m0); /* zero heap allocations */
}

/* ---- fallback, and every way out of the block ---- */

static int early_return(size_t n, int leave_early)
{
    MK_LOCALBUF(b, 32);
    char *p = mk_localbuf_get(&b, n);

    if (!p)
        return -1;
    memset(p, 'x', n);
    if (leave_early)
        return 1; /* the cleanup frees the fallback here too */
    return p[n - 1] == 'x' ? 0 : 2;
}

static void fallback_case(void)
{
    long m0 = mallocs, f0 = frees;

    CHECK_EQ(early_return(1000, 0), 0);
    CHECK_EQ(mallocs - m0, 1);
    CHECK_EQ(frees - f0, 1);
    CHECK_EQ(early_return(1000, 1), 1);
    CHECK_EQ(mallocs - m0, 2);
    CHECK_EQ(frees - f0, 2);
    CHECK_EQ(early_return(16, 1), 1); /* fits: nothing to free */
    CHECK_EQ(mallocs - m0, 2);

    /* break and continue out of a loop body that declares a buffer */
    for (int i = 0; i < 10; i++) {
        MK_LOCALBUF(b, 16);
        CHECK(mk_localbuf_get(&b, 100 + (size_t)i) != NULL);
        if (i % 2)
            continue;
        if (i == 6)
            break;
    }
    CHECK_EQ(mallocs - m0, 9); /* i = 0..6 */
    CHECK_EQ(frees - f0, 9);

    /* goto out of a nested block */
    {
        MK_LOCALBUF(b, 8);
        if (mk_localbuf_get(&b, 4096))
            goto out;
        CHECK(0);
    }
out:
    CHECK_EQ(mallocs - m0, frees - f0);
}

/* ---- growth keeps contents; get does not ---- */

static void growth_case(void)
{
    long m0 = mallocs, f0 = frees;
    {
        MK_LOCALBUF(b, 64);
        for (int i = 0; i < 5000; i++) {
            unsigned char c = (unsigned char)(i * 7);
            CHECK(mk_localbuf_append(&b, &c, 1) != NULL);
        }
        const unsigned char *d = mk_localbuf_data(&b);
        int bad = 0;
        for (int i = 0; i < 5000; i++)
            bad += d[i] != (unsigned char)(i * 7);
        CHECK_EQ(bad, 0);
        CHECK_EQ(mk_localbuf_len(&b), 5000);
        /* doubling: 64 -> 128 -> ... -> 8192 is one malloc, then reallocs */
        CHECK_EQ(mallocs - m0, 1);
        CHECK(mk_localbuf_capacity(&b) >= 5000 && mk_localbuf_capacity(&b) <= 8192);

        /* get forgets the contents and does not shrink */
        size_t cap = mk_localbuf_capacity(&b);
        CHECK(mk_localbuf_get(&b, 10) == mk_localbuf_data(&b));
        CHECK_EQ(mk_localbuf_len(&b), 0);
        CHECK_EQ(mk_localbuf_capacity(&b), cap);

        /* reserve keeps the bytes in use */
        mk_localbuf_append(&b, "abc", 3);
        char *r = mk_localbuf_reserve(&b, 100000);
        CHECK(r && memcmp(r, "abc", 3) == 0 && mk_localbuf_len(&b) == 3);

        /* release returns it to its inline storage, empty; it can be used again */
        mk_localbuf_release(&b);
        CHECK(mk_localbuf_is_inline(&b) && mk_localbuf_len(&b) == 0);
        CHECK_EQ(frees - f0, 1);
        CHECK(mk_localbuf_get(&b, 200) != NULL);
    }
    CHECK_EQ(mallocs - m0, frees - f0);
}

/* ---- errors leave the buffer as it was ---- */

static void error_case(void)
{
    MK_LOCALBUF(b, 32);

    mk_localbuf_append(&b, "keep", 4);
    void *before = mk_localbuf_data(&b);
    errno = 0;
    CHECK(mk_localbuf_reserve(&b, SIZE_MAX) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(mk_localbuf_array(&b, uint64_t, SIZE_MAX / 4) == NULL && errno == ENOMEM);
    CHECK(mk_localbuf_data(&b) == before);
    mk_localbuf_append(&b, "ing", 3);
    errno = 0;
    CHECK(mk_localbuf_append(&b, NULL, SIZE_MAX) == NULL && errno == ENOMEM);
    CHECK(mk_localbuf_len(&b) == 7 && memcmp(mk_localbuf_data(&b), "keeping", 7) == 0);
}

/* ---- the mk_stack frame fallback ---- */

static void frame_case(void)
{
    mk_stack_stats_t before, inside, after;

    mk_stack_stats(mk_tstack(), &before); /* creates the thread's stack: a malloc */
    long m0 = mallocs;
    {
        MK_SCOPE();
        MK_LOCALBUF_FRAME(b, 16);
        CHECK(mk_localbuf_get(&b, 8) == b_mk_inline);
        for (int i = 0; i < 1000; i++)
            CHECK(mk_localbuf_append(&b, &i, sizeof i) != NULL);
        int bad = 0;
        for (int i = 0; i < 1000; i++)
            bad += ((int *)mk_localbuf_data(&b))[i] != i;
        CHECK_EQ(bad, 0);
        CHECK(!mk_localbuf_is_inline(&b));
        mk_stack_stats(mk_tstack(), &inside);
        CHECK(inside.used_bytes >= before.used_bytes + 4000);
    }
    mk_stack_stats(mk_tstack(), &after);
    CHECK_EQ(after.used_bytes, before.used_bytes); /* the frame's pop released it */
    CHECK_EQ(mallocs, m0);                         /* and nothing came from malloc */
}

static void frame_grown_in_inner_scope(void)
{
    MK_SCOPE();
    MK_LOCALBUF_FRAME(b, 16);
    {
        MK_SCOPE();
        mk_localbuf_get(&b, 1000); /* would live in the inner frame: refused */
    }
}

/* ---- the small vector ---- */

typedef struct point {
    double x, y;
} point;

static void smallvec_case(void)
{
    long m0 = mallocs, f0 = frees;
    {
        MK_SMALLVEC(v, point, 4);
        CHECK_EQ(mk_smallvec_len(&v), 0);
        CHECK(mk_smallvec_pop(&v) == NULL);
        for (int i = 0; i < 4; i++)
            CHECK(mk_smallvec_push_value(&v, point, ((point){i, -i})));
        CHECK_EQ(mallocs, m0); /* 4 fit inline */
        CHECK(mk_smallvec_push_value(&v, point, ((point){4, -4})));
        CHECK_EQ(mallocs - m0, 1);
        CHECK_EQ(mk_smallvec_len(&v), 5);
        CHECK(mk_smallvec_data(&v, point)[3].y == -3);
        point *last = mk_smallvec_pop(&v);
        CHECK(last && last->x == 4);
        CHECK(mk_smallvec_at(&v, 4) == NULL && mk_smallvec_at(&v, 3) != NULL);
        CHECK_EQ(mk_smallvec_reserve(&v, 100), 0);
        CHECK(mk_smallvec_capacity(&v) >= 100 && mk_smallvec_len(&v) == 4);
        errno = 0;
        CHECK(mk_smallvec_reserve(&v, SIZE_MAX / 8) == -1 && errno == ENOMEM);
        mk_smallvec_clear(&v);
        CHECK_EQ(mk_smallvec_len(&v), 0);
    }
    CHECK_EQ(mallocs - m0, frees - f0);
}

/* Random pushes, pops, reserves and clears against a plain array. */
static void smallvec_random(void)
{
    unsigned long long rng = test_seed();
    int steps = test_steps(200000);
    static uint32_t model[1 << 16];
    size_t n = 0;
    int bad = 0;
    long m0 = mallocs, f0 = frees;
    {
        MK_SMALLVEC(v, uint32_t, 16);
        for (int s = 0; s < steps; s++) {
            unsigned op = (unsigned)(rng_next(&rng) % 100);
            uint32_t val = (uint32_t)rng_next(&rng);

            if (op < 55 && n < sizeof model / sizeof model[0]) {
                bad += !mk_smallvec_push_value(&v, uint32_t, val);
                model[n++] = val;
            } else if (op < 95) {
                uint32_t *p = mk_smallvec_pop(&v);
                bad += n ? (!p || *p != model[--n]) : p != NULL;
            } else if (op < 99) {
                bad += mk_smallvec_reserve(&v, (size_t)(val % 5000)) != 0;
            } else {
                mk_smallvec_clear(&v);
                n = 0;
            }
            bad += mk_smallvec_len(&v) != n;
            if (n && mk_smallvec_data(&v, uint32_t)[n - 1] != model[n - 1])
                bad++;
        }
        bad += n && memcmp(mk_smallvec_data(&v, uint32_t), model, n * sizeof *model) != 0;
    }
    CHECK_EQ(bad, 0);
    CHECK_EQ(mallocs - m0, frees - f0);
}

int main(void)
{
    /* the counter must see our calls, or the zero-allocation checks mean nothing */
    long m0 = mallocs;
    void *volatile probe = malloc(1); /* volatile: the pair must not be folded away */
    free(probe);
    CHECK_EQ(mallocs - m0, 1);

    inline_case();
    fallback_case();
    growth_case();
    error_case();
    frame_case();
    CHECK_ABORTS(frame_grown_in_inner_scope,
                 "MK_LOCALBUF_FRAME buffer grows while a frame");
    smallvec_case();
    smallvec_random();
    return check_report("test_localbuf");
}
