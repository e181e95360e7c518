/*
 * whatif_fixes.c - two loops, each written twice: as a program first
 * writes it and with a finding's fix applied, the allocator being the only
 * change, so that tracing both measures what the fix saves and a what-if
 * on the first one's trace predicts it (bench/replay/whatif.sh).
 *
 *   memkit-whatif-fixes nodes-malloc|nodes-pool|requests-malloc|requests-scope [N]
 *
 * nodes: lists of fixed-size nodes built, walked and freed in a shuffled
 * order (neither LIFO nor FIFO: a pool's pattern). requests: each request
 * takes a few blocks of mixed sizes and frees them at its end, youngest
 * first (a frame's pattern).
 */
#include <memkit/memkit.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIST 64

typedef struct node {
    struct node *next;
    uint64_t key, value[4];
} node_t;

static uint64_t rng = 88172645463325252ull;

static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static uint64_t nodes(long n, mk_pool_t *pool)
{
    node_t *all[LIST];
    uint64_t sum = 0;

    for (long it = 0; it < n; it++) {
        node_t *head = NULL;
        for (int i = 0; i < LIST; i++) {
            node_t *x = pool ? mk_pool_alloc(pool) : malloc(sizeof *x);
            if (!x)
                abort();
            x->key = next_rand();
            x->value[0] = x->key * 3;
            x->next = head;
            head = all[i] = x;
        }
        for (node_t *x = head; x; x = x->next)
            sum += x->key ^ x->value[0];
        for (int i = LIST - 1; i > 0; i--) { /* free in a shuffled order */
            int j = (int)(next_rand() % (uint64_t)(i + 1));
            node_t *t = all[i];
            all[i] = all[j];
            all[j] = t;
        }
        for (int i = 0; i < LIST; i++)
            if (pool)
                mk_pool_free(pool, all[i]);
            else
                free(all[i]);
    }
    return sum;
}

static const size_t request_sizes[] = {48, 200, 24, 1024, 96, 640, 16, 320};
#define PARTS (sizeof request_sizes / sizeof *request_sizes)

static uint64_t requests(long n, bool scope)
{
    uint64_t sum = 0;

    for (long it = 0; it < n; it++) {
        MK_SCOPE();
        char *part[PARTS];
        for (size_t i = 0; i < PARTS; i++) {
            size_t size = request_sizes[(i + (size_t)it) % PARTS];
            part[i] = scope ? mk_t_alloc(size) : malloc(size);
            if (!part[i])
                abort();
            memset(part[i], (int)i, 16);
            sum += (uint64_t)(unsigned char)part[i][7] + size;
        }
        if (!scope)
            for (size_t i = PARTS; i-- > 0;) /* youngest first */
                free(part[i]);
    }
    return sum;
}

int main(int argc, char **argv)
{
    long n = argc > 2 ? atol(argv[2]) : 20000;
    uint64_t sum;

    if (argc < 2 || n <= 0) {
        fprintf(stderr, "usage: memkit-whatif-fixes "
                        "nodes-malloc|nodes-pool|requests-malloc|requests-scope [N]\n");
        return 2;
    }
    if (strcmp(argv[1], "nodes-malloc") == 0) {
        sum = nodes(n, NULL);
    } else if (strcmp(argv[1], "nodes-pool") == 0) {
        mk_pool_t *pool =
            mk_pool_create(&(mk_pool_config_t){.item_size = sizeof(node_t)});
        if (!pool)
            return 1;
        sum = nodes(n, pool);
        mk_pool_destroy(pool);
    } else if (strcmp(argv[1], "requests-malloc") == 0) {
        sum = requests(n, false);
    } else if (strcmp(argv[1], "requests-scope") == 0) {
        sum = requests(n, true);
    } else {
        fprintf(stderr, "memkit-whatif-fixes: unknown loop '%s'\n", argv[1]);
        return 2;
    }
    printf("%s: %ld rounds, checksum %llu\n", argv[1], n, (unsigned long long)sum);
    return 0;
}
