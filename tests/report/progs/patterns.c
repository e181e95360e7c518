/*
 * patterns.c - one allocation pattern per run, for the findings tests:
 * `patterns KIND` runs the pattern whose finding is KIND, at a site in a
 * function named after it, a known number of times. `patterns none` shows no
 * pattern at all (the control). Built -O0 -fno-builtin so every call stays.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDS 1000

static void *must(void *p)
{
    if (!p)
        abort();
    return p;
}

/* A small deterministic generator: the same run every time. */
static unsigned rng = 12345;
static unsigned next_random(void)
{
    rng = rng * 1103515245u + 12345u;
    return rng >> 8;
}

/* 1000 frames of 8 blocks, released youngest first: 8000 LIFO frees. */
__attribute__((noinline)) static void *lifo_site(size_t n)
{
    return must(malloc(n));
}

static void lifo(void)
{
    void *frame[8];
    for (int r = 0; r < ROUNDS; r++) {
        for (int i = 0; i < 8; i++)
            frame[i] = lifo_site(40 + (size_t)i * 8);
        for (int i = 8; i-- > 0;)
            free(frame[i]);
    }
}

/* A queue 16 deep: each round adds one and releases the oldest. */
__attribute__((noinline)) static void *fifo_site(size_t n)
{
    return must(malloc(n));
}

static void fifo(void)
{
    void *q[16];
    for (int i = 0; i < 16; i++)
        q[i] = fifo_site(64 + (size_t)i);
    for (int r = 0; r < 10 * ROUNDS; r++) {
        free(q[r % 16]);
        q[r % 16] = fifo_site(64 + (size_t)(r % 7));
    }
    for (int r = 10 * ROUNDS; r < 10 * ROUNDS + 16; r++)
        free(q[r % 16]);
}

/* A scratch buffer of varying size, freed before anything else is
 * allocated: 1000 temporaries. */
__attribute__((noinline)) static char *temporary_site(size_t n)
{
    return must(malloc(n));
}

static void temporary(void)
{
    for (int r = 0; r < ROUNDS; r++) {
        char *buf = temporary_site(100 + (size_t)(r % 50));
        memset(buf, 'x', 100);
        free(buf);
    }
}

/* The same 256 bytes every round, one at a time, with other work between
 * the allocation and the free: hoist it out of the loop. */
__attribute__((noinline)) static char *hoist_site(void)
{
    return must(malloc(256));
}

static void hoist(void)
{
    for (int r = 0; r < ROUNDS; r++) {
        char *buf = hoist_site();
        char *other = must(malloc(64 + (size_t)(r % 100))); /* another site */
        memset(buf, 0, 256);
        free(buf);
        free(other);
    }
}

/* 64 slots of 48 bytes, replaced in random order: fixed-size churn. */
__attribute__((noinline)) static void *pool_site(void)
{
    return must(malloc(48));
}

static void pool(void)
{
    void *slot[64];
    for (int i = 0; i < 64; i++)
        slot[i] = pool_site();
    for (int r = 0; r < 4 * ROUNDS; r++) {
        unsigned i = next_random() % 64;
        free(slot[i]);
        slot[i] = pool_site();
    }
    for (int i = 0; i < 64; i++)
        free(slot[(i * 37) % 64]);
}

/* One allocation site reached through three callers, each churning 64
 * slots of 40 bytes of its own (n x ROUNDS replacements, at a line of
 * their own): one fix, an mk_pool of 40 bytes at merged_site, from three
 * stacks. And
 * merged_apart, the same churn at a site of its own: a fix of its own. */
__attribute__((noinline)) static void *merged_site(void)
{
    return must(malloc(40));
}

__attribute__((noinline)) static void *merged_apart(void)
{
    return must(malloc(40));
}

__attribute__((noinline)) static void churn_from(void *(*site)(void), int rounds)
{
    void *slot[64];
    for (int i = 0; i < 64; i++)
        slot[i] = site();
    for (int r = 0; r < rounds; r++) {
        unsigned i = next_random() % 64;
        free(slot[i]);
        slot[i] = site();
    }
    for (int i = 0; i < 64; i++)
        free(slot[(i * 37) % 64]);
}

__attribute__((noinline)) static void merged_a(void)
{
    churn_from(merged_site, 3 * ROUNDS);
}

__attribute__((noinline)) static void merged_b(void)
{
    churn_from(merged_site, 2 * ROUNDS);
}

__attribute__((noinline)) static void merged_c(void)
{
    churn_from(merged_site, ROUNDS);
}

static void merged(void)
{
    merged_a();
    merged_b();
    merged_c();
    churn_from(merged_apart, ROUNDS);
}

/* Many calls at one site and a few at each of five others, all freed at
 * once: the five hold under 0.1% of every weight (the page folds them). */
__attribute__((noinline)) static void *folded_big(void)
{
    return must(malloc(64));
}

#define FOLDED_SMALL(n)                                                                  \
    __attribute__((noinline)) static void folded_small_##n(void)                         \
    {                                                                                    \
        for (int i = 0; i < 3; i++)                                                      \
            free(must(malloc(16)));                                                      \
    }
FOLDED_SMALL(1)
FOLDED_SMALL(2)
FOLDED_SMALL(3)
FOLDED_SMALL(4)
FOLDED_SMALL(5)

static void folded(void)
{
    folded_small_1();
    folded_small_2();
    folded_small_3();
    folded_small_4();
    folded_small_5();
    for (int i = 0; i < 20 * ROUNDS; i++)
        free(folded_big());
}

/* The pool finding's boundary (it fires when at least half of one size's
 * blocks are freed): 1000 blocks of 48 bytes, `pool_share_freed` of them
 * freed in a shuffled order, the rest kept to the end. */
static int pool_share_freed;

__attribute__((noinline)) static void *pool_share_site(void)
{
    return must(malloc(48));
}

static void pool_share(void)
{
    enum { N = ROUNDS };
    static void *b[N];
    for (int i = 0; i < N; i++)
        b[i] = pool_share_site();
    for (int i = N - 1; i > 0; i--) {
        int j = (int)(next_random() % (unsigned)(i + 1));
        void *t = b[i];
        b[i] = b[j];
        b[j] = t;
    }
    for (int i = 0; i < pool_share_freed; i++)
        free(b[i]);
}

static void pool_half(void) /* 500 of 1000: the finding */
{
    pool_share_freed = ROUNDS / 2;
    pool_share();
}

static void pool_under(void) /* 499 of 1000: none */
{
    pool_share_freed = ROUNDS / 2 - 1;
    pool_share();
}

static void pool_fifth(void) /* 200 of 1000: none */
{
    pool_share_freed = ROUNDS / 5;
    pool_share();
}

/* Frees 1000 kept blocks in a shuffled order. */
static void free_shuffled(void **b, int n)
{
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(next_random() % (unsigned)(i + 1));
        void *t = b[i];
        b[i] = b[j];
        b[j] = t;
    }
    for (int i = 0; i < n; i++)
        free(b[i]);
}

/* The temporary finding's boundary (half of a site's blocks freed before
 * the thread's next allocation): 1000 blocks of 40-89 bytes, the odd ones
 * freed at once (the last one among them), `temp_skip` of those kept
 * instead, the rest freed at the end in a shuffled order. */
static int temp_skip;

__attribute__((noinline)) static void *temp_share_site(size_t n)
{
    return must(malloc(n));
}

static void temp_share(void)
{
    static void *kept[ROUNDS];
    int n = 0;
    for (int i = 0; i < ROUNDS; i++) {
        void *p = temp_share_site(40 + (size_t)(i % 50));
        if (i % 2 && i >= 2 * temp_skip)
            free(p); /* before the next allocation: a temporary */
        else
            kept[n++] = p;
    }
    free_shuffled(kept, n);
}

static void temp_half(void) /* 500 of 1000: the finding */
{
    temp_share();
}

static void temp_under(void) /* 499 of 1000: none */
{
    temp_skip = 1;
    temp_share();
}

/* The tiny finding's boundary (half of a site's requests under 32 bytes):
 * 1000 blocks, `tiny_n` of them 8 bytes and the rest 64, all kept, then
 * freed in a shuffled order. */
static int tiny_n;

__attribute__((noinline)) static void *tiny_share_site(size_t n)
{
    return must(malloc(n));
}

static void tiny_share(void)
{
    static void *b[ROUNDS];
    for (int i = 0; i < ROUNDS; i++)
        b[i] = tiny_share_site(i < tiny_n ? 8 : 64);
    free_shuffled(b, ROUNDS);
}

static void tiny_half(void) /* 500 of 1000: the finding */
{
    tiny_n = ROUNDS / 2;
    tiny_share();
}

static void tiny_under(void) /* 499 of 1000: none */
{
    tiny_n = ROUNDS / 2 - 1;
    tiny_share();
}

/* The LIFO and FIFO findings' boundary (90% of the judged frees release
 * the youngest, or the oldest, live block of the site): 1000 batches of 10
 * blocks, each freed youngest first (LIFO) or oldest first (FIFO), with
 * `order_swaps` neighbouring frees swapped in all (at most 4 a batch), each
 * of which takes one such free away. 10,000 frees: 1000 swaps leave 9000,
 * the boundary; 1001 leave one fewer. */
static int order_swaps;

__attribute__((noinline)) static void *order_share_site(size_t n)
{
    return must(malloc(n));
}

static void order_share(bool youngest_first)
{
    int swaps = order_swaps;
    for (int r = 0; r < ROUNDS; r++) {
        void *b[10];
        int order[10];
        for (int i = 0; i < 10; i++) {
            b[i] = order_share_site(40 + (size_t)i * 8);
            order[i] = youngest_first ? 9 - i : i;
        }
        /* swap frees 0 and 1, 2 and 3, ...: the second of each pair is then
         * neither the youngest nor the oldest when it goes first */
        for (int k = 0; k < 8 && swaps > 0; k += 2, swaps--) {
            int t = order[k];
            order[k] = order[k + 1];
            order[k + 1] = t;
        }
        for (int i = 0; i < 10; i++)
            free(b[order[i]]);
    }
}

static void lifo_at(void) /* 9000 of 10,000 youngest: the finding */
{
    order_swaps = ROUNDS;
    order_share(true);
}

static void lifo_under(void) /* 8999: none */
{
    order_swaps = ROUNDS + 1;
    order_share(true);
}

static void fifo_at(void) /* 9000 of 10,000 oldest: the finding */
{
    order_swaps = ROUNDS;
    order_share(false);
}

static void fifo_under(void) /* 8999: none */
{
    order_swaps = ROUNDS + 1;
    order_share(false);
}

/* The order findings judge a site only when 80% of its frees are of blocks
 * in its order window (the newest 256 live). 100 batches of 10 freed
 * youngest first (1000 judged frees), then one batch of 256 + `forgotten`
 * freed youngest first: its 256 newest are judged, the rest are not. 1256
 * judged of 1570 frees is 80% (forgotten 314); of 1571 it is not. */
static int forgotten;

__attribute__((noinline)) static void *window_share_site(size_t n)
{
    return must(malloc(n));
}

static void window_share(void)
{
    static void *b[256 + 400];
    for (int r = 0; r <= 100; r++) { /* one call of the site: one stack */
        int n = r < 100 ? 10 : 256 + forgotten;
        for (int i = 0; i < n; i++)
            b[i] = window_share_site(40 + (size_t)(i % 50));
        for (int i = n; i-- > 0;)
            free(b[i]);
    }
}

static void window_at(void) /* a LIFO finding of 1256 */
{
    forgotten = 314;
    window_share();
}

static void window_under(void) /* not judged: none */
{
    forgotten = 315;
    window_share();
}

/* The hoist finding's boundary: 1000 blocks of 256 bytes, one alive at a
 * time (hoist_at); one round where two are alive (hoist_two: a LIFO site
 * instead, its last round freed youngest first); one block of another size
 * (hoist_sizes: nothing). Each pattern here calls its site from one place:
 * two calls are two stacks, two sites. Another site's block lives across each, so none
 * is a temporary. */
static int hoist_variant; /* 0: at, 1: two alive once, 2: one size differs */

__attribute__((noinline)) static char *hoist_share_site(size_t n)
{
    return must(malloc(n));
}

static void hoist_share(void)
{
    for (int r = 0; r < ROUNDS; r++) {
        bool last = r == ROUNDS - 1;
        char *buf[2] = {NULL, NULL};
        for (int k = 0; k < (hoist_variant == 1 && last ? 2 : 1); k++) /* one stack */
            buf[k] = hoist_share_site(hoist_variant == 2 && last ? 257 : 256);
        char *other = must(malloc(64 + (size_t)(r % 100)));
        memset(buf[0], 0, 256);
        free(buf[1]);
        free(buf[0]);
        free(other);
    }
}

static void hoist_at(void)
{
    hoist_share();
}

static void hoist_two(void)
{
    hoist_variant = 1;
    hoist_share();
}

static void hoist_sizes(void)
{
    hoist_variant = 2;
    hoist_share();
}

/* The paired finding's boundary (80% of the rarer site's calls): 1000
 * rounds of a node and its payload, allocated one after the other with a
 * third block after them, freed payload first, then the node, then the
 * third. In `pair_broken` rounds a block allocated at the start is freed
 * between payload and node, so those two are not freed together. 800
 * pairs of 1000 is the boundary; 799 is not. */
static int pair_broken;

__attribute__((noinline)) static void *pair_node_site(void)
{
    return must(malloc(24));
}

__attribute__((noinline)) static void *pair_payload_site(size_t n)
{
    return must(malloc(n));
}

static void pair_share(void)
{
    static void *early[ROUNDS];
    for (int i = 0; i < pair_broken; i++)
        early[i] = must(malloc(200 + (size_t)i % 7));
    for (int r = 0; r < ROUNDS; r++) {
        void *node = pair_node_site();
        void *payload = pair_payload_site(40 + (size_t)(r % 50));
        void *third = must(malloc(100 + (size_t)(r % 3)));
        free(payload);
        if (r < pair_broken)
            free(early[r]);
        free(node);
        free(third);
    }
}

static void paired_at(void)
{
    pair_broken = ROUNDS / 5;
    pair_share();
}

static void paired_under(void)
{
    pair_broken = ROUNDS / 5 + 1;
    pair_share();
}

/* The realloc_chain finding's boundary (half of the grows grow a block
 * realloc grew before): 1000 rounds of a block grown once (a grow) and, in
 * `chained` rounds, once more (a grow and a step). All chained: 1000 steps
 * of 2000 grows; 999 of 1999 is under. */
static int chained;

__attribute__((noinline)) static char *realloc_share_site(char *p, size_t n)
{
    return must(realloc(p, n));
}

static void realloc_share(void)
{
    for (int r = 0; r < ROUNDS; r++) {
        char *buf = must(malloc(40));
        for (int k = 0; k < (r < chained ? 2 : 1); k++) /* one call: one stack */
            buf = realloc_share_site(buf, 80 + 40 * (size_t)k);
        free(buf);
    }
}

static void realloc_at(void)
{
    chained = ROUNDS;
    realloc_share();
}

static void realloc_under(void)
{
    chained = ROUNDS - 1;
    realloc_share();
}

/* The floor on a site's calls (100, opts.min_count): `floor_n` blocks of
 * 48 bytes, all kept, then freed in a shuffled order, a pool site. */
static int floor_n;

__attribute__((noinline)) static void *floor_site(void)
{
    return must(malloc(48));
}

static void floor_share(void)
{
    static void *b[ROUNDS];
    for (int i = 0; i < floor_n; i++)
        b[i] = floor_site();
    free_shuffled(b, floor_n);
}

static void floor_at(void)
{
    floor_n = 100;
    floor_share();
}

static void floor_under(void)
{
    floor_n = 99;
    floor_share();
}

/* Findings ranked by the time they save, not by the calls: 1000 small
 * temporaries (a fast path each) and 100 temporaries of 64 MiB, which glibc
 * maps and unmaps every time (above the 32 MiB its mmap threshold rises to
 * at most): microseconds a call. */
__attribute__((noinline)) static char *many_cheap_site(size_t n)
{
    return must(malloc(n));
}

__attribute__((noinline)) static char *few_costly_site(size_t n)
{
    return must(malloc(n));
}

static void ranked(void)
{
    for (int r = 0; r < ROUNDS; r++) {
        char *b = many_cheap_site(40 + (size_t)(r % 50));
        b[0] = 1;
        free(b);
        if (r % 10)
            continue;
        b = few_costly_site((64u << 20) + (size_t)(r % 50));
        b[0] = 1;
        free(b);
    }
}

/* 2000 short strings, kept, freed in a shuffled order. */
__attribute__((noinline)) static char *tiny_site(size_t n)
{
    return must(calloc(1, n));
}

static void tiny(void)
{
    enum { N = 2 * ROUNDS };
    static char *s[N];
    for (int i = 0; i < N; i++)
        s[i] = tiny_site(4 + (size_t)(i % 20));
    for (int i = N - 1; i > 0; i--) {
        int j = (int)(next_random() % (unsigned)(i + 1));
        char *t = s[i];
        s[i] = s[j];
        s[j] = t;
    }
    for (int i = 0; i < N; i++)
        free(s[i]);
}

/* A producer thread allocates messages, the main thread frees them. */
enum { MESSAGES = 2 * ROUNDS };
static void *mailbox[MESSAGES];
static int posted;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;

__attribute__((noinline)) static void *cross_thread_site(size_t n)
{
    return must(malloc(n));
}

static void *producer(void *arg)
{
    (void)arg;
    for (int i = 0; i < MESSAGES; i++) {
        void *m = cross_thread_site(32 + (size_t)(i % 64));
        pthread_mutex_lock(&lock);
        mailbox[posted++] = m;
        pthread_cond_signal(&cond);
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

static void cross_thread(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, producer, NULL))
        abort();
    for (int taken = 0; taken < MESSAGES; taken++) {
        pthread_mutex_lock(&lock);
        while (taken >= posted)
            pthread_cond_wait(&cond, &lock);
        void *m = mailbox[taken];
        pthread_mutex_unlock(&lock);
        free(m);
    }
    pthread_join(t, NULL);
}

/* The cross-thread finding's boundary (half of a site's blocks freed by
 * another thread): 1000 blocks of 40-89 bytes, `cross_n` of them freed by
 * a second thread, the rest by this one, each set in a shuffled order. */
static int cross_n;
static void *cross_blocks[ROUNDS];

__attribute__((noinline)) static void *cross_share_site(size_t n)
{
    return must(malloc(n));
}

static void *cross_freer(void *arg)
{
    (void)arg;
    free_shuffled(cross_blocks, cross_n);
    return NULL;
}

static void cross_share(void)
{
    pthread_t t;
    for (int i = 0; i < ROUNDS; i++)
        cross_blocks[i] = cross_share_site(40 + (size_t)(i % 50));
    if (pthread_create(&t, NULL, cross_freer, NULL))
        abort();
    pthread_join(t, NULL);
    free_shuffled(cross_blocks + cross_n, ROUNDS - cross_n);
}

static void cross_half(void) /* 500 of 1000: the finding */
{
    cross_n = ROUNDS / 2;
    cross_share();
}

static void cross_under(void) /* 499 of 1000: none */
{
    cross_n = ROUNDS / 2 - 1;
    cross_share();
}

/* A node and its payload, allocated together, freed together, in random
 * order among 32 live pairs. */
struct node {
    char *payload;
};

__attribute__((noinline)) static struct node *paired_node(void)
{
    return must(malloc(sizeof(struct node)));
}

__attribute__((noinline)) static char *paired_payload(size_t n)
{
    return must(malloc(n));
}

static void paired(void)
{
    struct node *live[32];
    for (int i = 0; i < 32; i++) {
        live[i] = paired_node();
        live[i]->payload = paired_payload(40 + (size_t)i);
    }
    for (int r = 0; r < 2 * ROUNDS; r++) {
        unsigned i = next_random() % 32;
        free(live[i]->payload);
        free(live[i]);
        live[i] = paired_node();
        live[i]->payload = paired_payload(40 + (size_t)(r % 50));
    }
    for (int i = 0; i < 32; i++) {
        free(live[i]->payload);
        free(live[i]);
    }
}

/* paired's nodes, and as many again from a second caller without a
 * payload: one pool finding at paired_node from two stacks, one of them
 * also the first of a pair (the what-if's pool then holds the pair). */
__attribute__((noinline)) static void plain_nodes(void)
{
    struct node *live[32];
    for (int i = 0; i < 32; i++)
        live[i] = paired_node();
    for (int r = 0; r < 2 * ROUNDS; r++) {
        unsigned i = next_random() % 32;
        free(live[i]);
        live[i] = paired_node();
    }
    for (int i = 0; i < 32; i++)
        free(live[i]);
}

static void pool_paired(void)
{
    paired();
    plain_nodes();
}

/* A buffer grown 16 bytes at a time, 10 steps, 1000 times. */
__attribute__((noinline)) static char *realloc_chain_site(char *p, size_t n)
{
    return must(realloc(p, n));
}

static void realloc_chain(void)
{
    for (int r = 0; r < ROUNDS; r++) {
        char *buf = NULL;
        for (int k = 1; k <= 10; k++)
            buf = realloc_chain_site(buf, 16 * (size_t)k);
        free(buf);
    }
}

/* The control: blocks of varying sizes over 32 bytes, all kept until the
 * end and freed in a shuffled order. No finding applies. */
__attribute__((noinline)) static void *none_site(size_t n)
{
    return must(malloc(n));
}

static void none(void)
{
    enum { N = 2 * ROUNDS };
    static void *b[N];
    for (int i = 0; i < N; i++)
        b[i] = none_site(40 + (size_t)(next_random() % 400));
    for (int i = N - 1; i > 0; i--) {
        int j = (int)(next_random() % (unsigned)(i + 1));
        void *t = b[i];
        b[i] = b[j];
        b[j] = t;
    }
    for (int i = 0; i < N; i++)
        free(b[i]);
}

/* Not a finding: an allocation inside an inlined function, for the
 * symbolizer's inlined frames (always_inline works at -O0 too). */
static inline __attribute__((always_inline)) void *inlined_alloc(size_t n)
{
    return must(malloc(n));
}

static void inlined(void)
{
    for (int r = 0; r < 10; r++)
        free(inlined_alloc(32 + (size_t)r));
}

static const struct {
    const char *name;
    void (*run)(void);
} patterns[] = {
    {"lifo", lifo},
    {"fifo", fifo},
    {"temporary", temporary},
    {"hoist", hoist},
    {"pool", pool},
    {"merged", merged},
    {"folded", folded},
    {"pool_half", pool_half},
    {"pool_under", pool_under},
    {"pool_fifth", pool_fifth},
    {"temp_half", temp_half},
    {"temp_under", temp_under},
    {"tiny_half", tiny_half},
    {"tiny_under", tiny_under},
    {"cross_half", cross_half},
    {"cross_under", cross_under},
    {"lifo_at", lifo_at},
    {"lifo_under", lifo_under},
    {"fifo_at", fifo_at},
    {"fifo_under", fifo_under},
    {"window_at", window_at},
    {"window_under", window_under},
    {"hoist_at", hoist_at},
    {"hoist_two", hoist_two},
    {"hoist_sizes", hoist_sizes},
    {"paired_at", paired_at},
    {"paired_under", paired_under},
    {"realloc_at", realloc_at},
    {"realloc_under", realloc_under},
    {"floor_at", floor_at},
    {"floor_under", floor_under},
    {"ranked", ranked},
    {"tiny", tiny},
    {"cross_thread", cross_thread},
    {"paired", paired},
    {"pool_paired", pool_paired},
    {"realloc_chain", realloc_chain},
    {"none", none},
    {"inlined", inlined},
};

int main(int argc, char **argv)
{
    for (size_t i = 0; argc == 2 && i < sizeof patterns / sizeof patterns[0]; i++) {
        if (strcmp(argv[1], patterns[i].name) == 0) {
            patterns[i].run();
            return 0;
        }
    }
    fputs("usage: patterns", stderr);
    for (size_t i = 0; i < sizeof patterns / sizeof patterns[0]; i++)
        fprintf(stderr, "%c%s", i ? '|' : ' ', patterns[i].name);
    fputc('\n', stderr);
    return 2;
}
