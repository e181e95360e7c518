/*
 * random.c SEED - a random mix of allocation calls whose summary the program
 * works out itself, for the tracer's encoding and the report's replay to be
 * checked against: 1,500,000 calls of malloc, calloc, realloc (growing,
 * shrinking, from NULL, to size 0), reallocarray, posix_memalign,
 * aligned_alloc and free, sizes 0 to 4 MiB (mostly under 512 bytes), over up
 * to 20,000 live blocks;
 * what is live at the end leaks. That spans several EVENTS records, with
 * every kind of event at every position in them.
 *
 * Prints the lines memkit's summary must hold exactly (memanalyze's
 * definitions: Reallocs counts realloc and reallocarray, Frees counts frees
 * of live blocks, realloc(p, 0) frees p without counting as a free).
 * Formats with snprintf into a static buffer and write(2): stdio's buffer
 * would be one more malloc.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../xorshift.h"

enum { SLOTS = 20000, CALLS = 1500000 };

static void *block[SLOTS];
static size_t size_of[SLOTS];
static uint64_t rng;
static uint64_t mallocs, callocs, reallocs, frees, aligned, calls;
static uint64_t live_bytes, live_blocks, peak_bytes, peak_blocks;

static uint64_t next_random(void)
{
    return xorshift64(&rng);
}

static size_t random_size(void)
{
    uint64_t r = next_random();
    if (r % 2048 == 1)
        return (size_t)(r >> 16) % (4u << 20); /* large: glibc maps these */
    switch (r % 64) {
    case 0:
        return 0;
    case 1:
    case 2:
        return (size_t)(r >> 16) % 70000; /* around 64 KiB */
    default:
        return (size_t)(r >> 16) % 512;
    }
}

static void became_live(int k, void *p, size_t n)
{
    if (!p)
        abort(); /* no call here may fail: the counts assume success */
    block[k] = p;
    size_of[k] = n;
    live_bytes += n;
    live_blocks++;
    if (live_bytes > peak_bytes)
        peak_bytes = live_bytes;
    if (live_blocks > peak_blocks)
        peak_blocks = live_blocks;
}

static void no_longer_live(int k)
{
    live_bytes -= size_of[k];
    live_blocks--;
    block[k] = NULL;
}

static void one_call(void)
{
    int k = (int)(next_random() % SLOTS);
    uint64_t op = next_random() % 16;
    size_t n = random_size();

    if (block[k] && op < 6) { /* free */
        free(block[k]);
        no_longer_live(k);
        frees++;
        return;
    }
    if (block[k] && op < 10) { /* realloc a live block, sometimes to 0 */
        void *old = block[k];
        size_t want = op == 6 && next_random() % 8 == 0 ? 0 : n;
        no_longer_live(k);
        reallocs++;
        calls++;
        void *p = realloc(old, want);
        if (want == 0 && !p)
            return; /* glibc frees the block and returns NULL */
        became_live(k, p, want);
        return;
    }
    if (block[k]) {
        free(block[k]);
        no_longer_live(k);
        frees++;
    }
    calls++;
    void *p;
    switch (op % 6) {
    case 0:
        p = calloc(1 + n % 64, 8);
        callocs++;
        became_live(k, p, (1 + n % 64) * 8);
        break;
    case 1:
        p = realloc(NULL, n);
        reallocs++;
        became_live(k, p, n);
        break;
    case 2:
        p = reallocarray(NULL, 1 + n % 32, 16);
        reallocs++;
        became_live(k, p, (1 + n % 32) * 16);
        break;
    case 3:
        if (posix_memalign(&p, 64, n) != 0)
            abort();
        aligned++;
        became_live(k, p, n);
        break;
    case 4:
        p = aligned_alloc(32, (n + 31) & ~(size_t)31);
        aligned++;
        became_live(k, p, (n + 31) & ~(size_t)31);
        break;
    default:
        p = malloc(n);
        mallocs++;
        became_live(k, p, n);
        break;
    }
}

int main(int argc, char **argv)
{
    rng = argc > 1 ? strtoull(argv[1], NULL, 10) : 1;
    if (!rng)
        rng = 1;
    for (int i = 0; i < CALLS; i++)
        one_call();

    static char out[1024];
    int len = snprintf(out, sizeof out,
                       "Mallocs: %llu\nCallocs: %llu\nReallocs: %llu\nFrees: %llu\n"
                       "Aligned allocations: %llu\nAllocation calls: %llu\n"
                       "Maximum allocated: %llu\nPeak live blocks: %llu\n"
                       "Leaks at exit: %llu blocks, %llu bytes\n",
                       (unsigned long long)mallocs, (unsigned long long)callocs,
                       (unsigned long long)reallocs, (unsigned long long)frees,
                       (unsigned long long)aligned, (unsigned long long)calls,
                       (unsigned long long)peak_bytes, (unsigned long long)peak_blocks,
                       (unsigned long long)live_blocks, (unsigned long long)live_bytes);
    return write(STDOUT_FILENO, out, (size_t)len) == len ? 0 : 1;
}
