/*
 * test_reuse_cache.c - format 3's cache in front of the reuse model's rings
 * (src/trace/reuse.h), checked against a simple model under random frees,
 * allocations and record resets, over few enough addresses that they are
 * freed again and again and stale entries are common:
 *   - a free goes to its class's cache while that holds fewer than
 *     MK_REUSE_CACHE, else, for a class up to MK_REUSE_FAST, to the front of
 *     its overflow (which keeps the newest MK_REUSE_FAST_DEPTH);
 *   - the guess is the cache's newest; the candidates are the cache newest
 *     first, then the ring, the first MK_REUSE_DEPTH of them; an address's
 *     position is its first; mk_reuse_locate and mk_reuse_candidate are
 *     each other's inverse (what the writer names, the reader finds);
 *   - claiming a block takes it off its ring, cuts the cache below it (all
 *     of it if it is not there), and with an empty cache, claiming the
 *     overflow's newest moves the next ones into the cache, reversed.
 */
#define _GNU_SOURCE
#include "../../src/trace/reuse.h"
#include "check.h"

#include <stdint.h>
#include <stdlib.h>

#define ADDRS 400
static const unsigned classes[] = {2, 5, MK_REUSE_FAST, MK_REUSE_FAST + 1, 40};
#define NCLASSES (sizeof classes / sizeof classes[0])

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_random(void)
{
    return xorshift64(&rng);
}

/* The model, per class: the ring newest first, the cache newest last, the
 * overflow newest first. */
typedef struct model_class {
    uint64_t ring[MK_REUSE_DEPTH];
    unsigned nring;
    uint64_t cache[MK_REUSE_CACHE];
    unsigned ncache;
    uint64_t fast[MK_REUSE_FAST_DEPTH];
    unsigned nfast;
} model_class_t;

static model_class_t model[NCLASSES];

static void model_free(model_class_t *m, unsigned c, uint64_t addr)
{
    memmove(&m->ring[1], &m->ring[0], (MK_REUSE_DEPTH - 1) * sizeof(uint64_t));
    m->ring[0] = addr;
    if (m->nring < MK_REUSE_DEPTH)
        m->nring++;
    if (m->ncache < MK_REUSE_CACHE) {
        m->cache[m->ncache++] = addr;
    } else if (c <= MK_REUSE_FAST) {
        memmove(&m->fast[1], &m->fast[0], (MK_REUSE_FAST_DEPTH - 1) * sizeof(uint64_t));
        m->fast[0] = addr;
        if (m->nfast < MK_REUSE_FAST_DEPTH)
            m->nfast++;
    }
}

static int model_in_cache(const model_class_t *m, uint64_t addr)
{
    for (int k = (int)m->ncache - 1; k >= 0; k--)
        if (m->cache[k] == addr)
            return k;
    return -1;
}

/* The candidates, as the format defines them. */
static unsigned model_candidates(const model_class_t *m, uint64_t *out)
{
    unsigned n = 0;
    for (int k = (int)m->ncache - 1; k >= 0; k--)
        out[n++] = m->cache[k];
    for (unsigned j = 0; j < m->nring && n < MK_REUSE_DEPTH; j++)
        out[n++] = m->ring[j];
    return n < MK_REUSE_DEPTH ? n : MK_REUSE_DEPTH;
}

static void model_claim(model_class_t *m, unsigned c, uint64_t addr)
{
    for (unsigned j = 0; j < m->nring; j++)
        if (m->ring[j] == addr) {
            memmove(&m->ring[j], &m->ring[j + 1], (m->nring - 1 - j) * sizeof(uint64_t));
            m->nring--;
            break;
        }
    if (m->ncache) {
        int k = model_in_cache(m, addr);
        m->ncache = k >= 0 ? (unsigned)k : 0;
    } else if (c <= MK_REUSE_FAST && m->nfast && m->fast[0] == addr) {
        unsigned moved = 1;
        while (m->ncache < MK_REUSE_CACHE && moved < m->nfast)
            m->cache[m->ncache++] = m->fast[moved++];
        memmove(&m->fast[0], &m->fast[moved], (m->nfast - moved) * sizeof(uint64_t));
        m->nfast -= moved;
    }
}

static uint64_t address(unsigned i)
{
    return 0x7f0000001000ull + 32ull * i;
}

int main(void)
{
    static mk_reuse_t r; /* zeroed, as the tracer's mmap'd one */
    const char *steps_env = getenv("MEMKIT_TEST_STEPS");
    long steps = steps_env ? atol(steps_env) : 2000000;
    uint64_t guessed = 0, named = 0, missed = 0, refills = 0;

    mk_reuse_reset(&r);
    for (long s = 0; s < steps; s++) {
        uint64_t x = next_random(), cand[MK_REUSE_DEPTH];
        unsigned ci = (unsigned)(x >> 8) % NCLASSES, c = classes[ci];
        model_class_t *m = &model[ci];
        unsigned op = (unsigned)(x % 100);
        if (op < 50) {
            uint64_t addr = address((unsigned)(x >> 16) % ADDRS);
            mk_reuse_free(&r, c, addr);
            model_free(m, c, addr);
            continue;
        }
        if (op == 99 && (x >> 40) % 32 == 0) { /* a new record */
            mk_reuse_reset(&r);
            memset(model, 0, sizeof model);
            continue;
        }
        /* An allocation of class c: the guess, another candidate, or any. */
        unsigned n = model_candidates(m, cand), pick = (unsigned)(x >> 32) % 4;
        uint64_t addr = pick < 2 && m->ncache ? m->cache[m->ncache - 1]
                        : pick == 2 && n      ? cand[(x >> 40) % n]
                                              : address((unsigned)(x >> 16) % ADDRS);
        CHECK_EQ(mk_reuse_cached(&r, c), m->ncache);
        if (m->ncache)
            CHECK_EQ(mk_reuse_guess(&r, c), m->cache[m->ncache - 1]);
        unsigned ring_j, pos = mk_reuse_locate(&r, c, addr, &ring_j),
                         want = MK_REUSE_MISS;
        for (unsigned k = 0; k < n; k++)
            if (cand[k] == addr) {
                want = k;
                break;
            }
        CHECK_EQ(pos, want);
        uint64_t got = 0;
        if (pos < MK_REUSE_MISS) {
            CHECK(mk_reuse_candidate(&r, c, pos, &got) && got == addr);
        }
        for (unsigned k = 0; k < n; k++) /* every candidate, as a reader finds it */
            CHECK(mk_reuse_candidate(&r, c, k, &got) && got == cand[k]);
        if (n < MK_REUSE_DEPTH)
            CHECK(!mk_reuse_candidate(&r, c, n, &got));
        guessed += m->ncache && addr == m->cache[m->ncache - 1];
        named += pos < MK_REUSE_MISS;
        missed += pos == MK_REUSE_MISS;
        refills += !m->ncache && m->nfast > 1 && m->fast[0] == addr;
        /* The writer passes what locate found in the ring, the reader not:
         * alternately, the same model either way. */
        CHECK(ring_j == MK_REUSE_UNKNOWN || ring_j == mk_reuse_find(&r, c, addr));
        mk_reuse_claim(&r, c, addr, s % 2 ? ring_j : MK_REUSE_UNKNOWN);
        model_claim(m, c, addr);
    }
    /* Every path taken. */
    CHECK(guessed > 0 && named > guessed && missed > 0 && refills > 0);
    printf("test_reuse_cache: %d checks passed, %d failed (%llu guessed, %llu named, "
           "%llu missed, %llu refills)\n",
           check_passes, check_failures, (unsigned long long)guessed,
           (unsigned long long)named, (unsigned long long)missed,
           (unsigned long long)refills);
    return check_failures ? 1 : 0;
}
