/*
 * ceiling.cc - how fast local-array, pmr-vector and pmr-map could be with any
 * allocator: the ceilings the local buffers/C++ issue's bars are measured against.
 *
 * Each workload (bench/local_array.c, bench/pmr.cc) runs here under the default
 * allocator, under memkit's answer, and under references no allocator can beat:
 *
 *   local-array a plain array of 1,000 entries on the stack (no allocation ever);
 *   pmr-vector  std::pmr::monotonic_buffer_resource over a pre-faulted buffer
 *               (allocation is a pointer bump, deallocation nothing, no page
 *               faults), and std::vector with reserve() (no growth at all);
 *   pmr-map     the same monotonic resource (it never reuses a node), and
 *               std::unordered_map with reserve() (no rehashing).
 *
 * Usage: memkit-ceiling [CALLS [VECTORS [MAP_OPS [ROUNDS]]]] (defaults
 * 20000000, 100, 20000000, 5). Prints seconds per round (median [min-max]) and
 * the median ratio to the default allocator, interleaving the variants in every
 * round so that a noisy machine slows them alike. The loops are the workloads'
 * own (local_array.h, pmr_kernels.hpp).
 */
extern "C" {
#include "../src/cli/cli.h" /* mk_stat_of: the medians memkit bench prints */
#include "workload.h"       /* mk_bench_now */
}
#include "local_array.h"
#include "pmr_kernels.hpp"

#include <memkit/localbuf.h>
#include <memkit/pmr.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory_resource>
#include <unordered_map>
#include <vector>

namespace
{

using memkit_bench::churn;
using memkit_bench::fill;
using memkit_bench::vector_len;

constexpr std::size_t arena_bytes = std::size_t{64} << 20;

/* The variants of one workload: a name and one timed run. */
struct variant {
    const char *name;
    double (*run)(std::uint64_t n, char *arena);
    std::vector<double> secs;
};

unsigned sink;

__attribute__((noinline)) unsigned call_malloc(unsigned n, unsigned seed)
{
    auto *e = static_cast<poll_entry *>(std::malloc(n * sizeof(poll_entry)));
    if (!e)
        std::abort();
    unsigned r = use_entries(e, n, seed);
    std::free(e);
    return r;
}

__attribute__((noinline)) unsigned call_localbuf(unsigned n, unsigned seed)
{
    MK_LOCALBUF(buf, INLINE_ENTRIES * sizeof(poll_entry));
    auto *e = mk_localbuf_array(&buf, poll_entry, n);
    if (!e)
        std::abort();
    return use_entries(e, n, seed);
}

__attribute__((noinline)) unsigned call_array(unsigned n, unsigned seed)
{
    poll_entry e[BIG_ENTRIES];
    return use_entries(e, n, seed);
}

template <unsigned (*call)(unsigned, unsigned)> double calls(std::uint64_t n, char *)
{
    double t0 = mk_bench_now();
    for (std::uint64_t i = 0; i < n; i++)
        sink += call(entries_for(i), static_cast<unsigned>(i));
    return mk_bench_now() - t0;
}

double vec_default(std::uint64_t vectors, char *)
{
    double t0 = mk_bench_now();
    for (std::uint64_t k = 0; k < vectors; k++) {
        std::vector<int> v;
        sink += fill(v, k);
    }
    return mk_bench_now() - t0;
}

double vec_stack(std::uint64_t vectors, char *)
{
    double t0 = mk_bench_now();
    for (std::uint64_t k = 0; k < vectors; k++) {
        memkit::stack_resource frame;
        std::pmr::vector<int> v(&frame);
        sink += fill(v, k);
    }
    return mk_bench_now() - t0;
}

double vec_monotonic(std::uint64_t vectors, char *arena)
{
    double t0 = mk_bench_now();
    for (std::uint64_t k = 0; k < vectors; k++) {
        std::pmr::monotonic_buffer_resource mono(arena, arena_bytes,
                                                 std::pmr::null_memory_resource());
        std::pmr::vector<int> v(&mono);
        sink += fill(v, k);
    }
    return mk_bench_now() - t0;
}

double vec_reserved(std::uint64_t vectors, char *)
{
    double t0 = mk_bench_now();
    for (std::uint64_t k = 0; k < vectors; k++) {
        std::vector<int> v;
        v.reserve(vector_len);
        sink += fill(v, k);
    }
    return mk_bench_now() - t0;
}

double map_default(std::uint64_t ops, char *)
{
    double t0 = mk_bench_now();
    std::unordered_map<int, int> m;
    churn(m, ops);
    sink += static_cast<unsigned>(m.size());
    return mk_bench_now() - t0;
}

double map_pool(std::uint64_t ops, char *)
{
    double t0 = mk_bench_now();
    memkit::pool_resource pool;
    std::pmr::unordered_map<int, int> m(&pool);
    churn(m, ops);
    sink += static_cast<unsigned>(m.size());
    return mk_bench_now() - t0;
}

/* Never reuses a node: the arena would not hold MAP_OPS nodes, so this one
 * takes its chunks from new/delete (a few large allocations). */
double map_monotonic(std::uint64_t ops, char *)
{
    double t0 = mk_bench_now();
    std::pmr::monotonic_buffer_resource mono;
    std::pmr::unordered_map<int, int> m(&mono);
    churn(m, ops);
    sink += static_cast<unsigned>(m.size());
    return mk_bench_now() - t0;
}

double map_reserved(std::uint64_t ops, char *)
{
    double t0 = mk_bench_now();
    std::unordered_map<int, int> m;
    m.reserve(65536);
    churn(m, ops);
    sink += static_cast<unsigned>(m.size());
    return mk_bench_now() - t0;
}

/* Runs every variant once per round, starting with a different one each round,
 * then prints the table. */
void compare(const char *title, variant *vs, int nv, std::uint64_t n, int rounds,
             char *arena)
{
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < nv; i++) {
            variant &v = vs[(i + r) % nv];
            v.secs.push_back(v.run(n, arena));
        }
    std::printf("%s\n", title);
    for (int i = 0; i < nv; i++) {
        std::vector<double> ratio;
        for (int r = 0; r < rounds; r++)
            ratio.push_back(vs[0].secs[static_cast<std::size_t>(r)] /
                            vs[i].secs[static_cast<std::size_t>(r)]);
        mk_stat secs = mk_stat_of(vs[i].secs.data(), rounds);
        std::printf("  %-44s %7.3f s [%.3f-%.3f]  %5.2fx\n", vs[i].name, secs.median,
                    secs.min, secs.max, mk_stat_of(ratio.data(), rounds).median);
    }
}

std::uint64_t arg(int argc, char **argv, int i, std::uint64_t dflt)
{
    if (argc <= i)
        return dflt;
    char *end;
    unsigned long long v = std::strtoull(argv[i], &end, 10);
    if (*end || v == 0) {
        std::fprintf(stderr,
                     "memkit-ceiling: '%s' is not a positive number\n"
                     "usage: memkit-ceiling [CALLS [VECTORS [MAP_OPS [ROUNDS]]]]\n",
                     argv[i]);
        std::exit(2);
    }
    return v;
}

} // namespace

int main(int argc, char **argv)
{
    std::uint64_t ncalls = arg(argc, argv, 1, 20000000),
                  vectors = arg(argc, argv, 2, 100), ops = arg(argc, argv, 3, 20000000);
    int rounds =
        static_cast<int>(std::min<std::uint64_t>(arg(argc, argv, 4, 5), MK_STAT_MAX));
    /* A vector of 1M ints takes 8 MiB over its growths: the arena holds that. */
    char *arena = static_cast<char *>(std::malloc(arena_bytes));

    if (!arena) {
        std::fprintf(stderr, "memkit-ceiling: out of memory\n");
        return 1;
    }
    for (std::size_t i = 0; i < arena_bytes; i += 4096)
        arena[i] = 0; /* fault it in once, outside the timing */
    variant local[] = {
        {"malloc + free per call", calls<call_malloc>, {}},
        {"MK_LOCALBUF of 8 entries", calls<call_localbuf>, {}},
        {"a 1,000-entry array on the stack", calls<call_array>, {}},
    };
    variant vec[] = {
        {"std::vector<int>, default allocator", vec_default, {}},
        {"std::pmr::vector<int>, memkit::stack_resource", vec_stack, {}},
        {"std::pmr::vector<int>, monotonic, pre-faulted", vec_monotonic, {}},
        {"std::vector<int>, reserve(1M): no growth", vec_reserved, {}},
    };
    variant map[] = {
        {"std::unordered_map<int,int>, default", map_default, {}},
        {"std::pmr::unordered_map, memkit::pool_resource", map_pool, {}},
        {"std::pmr::unordered_map, monotonic (no reuse)", map_monotonic, {}},
        {"std::unordered_map, reserve(65536)", map_reserved, {}},
    };
    std::printf("ceilings: %d rounds, median seconds [min-max], median ratio to "
                "the default\n",
                rounds);
    compare("local-array: a call's array of 1-8 entries, 1,000 once per 1,000 calls",
            local, 3, ncalls, rounds, arena);
    compare("pmr-vector: vectors of 1,000,000 push_backs", vec, 4, vectors, rounds,
            arena);
    compare("pmr-map: unordered_map<int,int> insert/erase churn", map, 4, ops, rounds,
            arena);
    std::free(arena);
    __asm__ volatile("" : : "r"(sink)); /* keeps the work observable */
    return 0;
}
