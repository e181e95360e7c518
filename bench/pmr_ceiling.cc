/*
 * pmr_ceiling.cc - how fast pmr-vector and pmr-map could be with any allocator:
 * the ceilings the local buffers/C++ issue's bars are measured against.
 *
 * Each workload of bench/pmr.cc runs here under the default allocator, under
 * memkit's resource, and under two references no allocator can beat:
 *
 *   pmr-vector  std::pmr::monotonic_buffer_resource over a pre-faulted buffer
 *               (allocation is a pointer bump, deallocation nothing, no page
 *               faults), and std::vector with reserve() (no growth at all);
 *   pmr-map     the same monotonic resource (it never reuses a node), and
 *               std::unordered_map with reserve() (no rehashing).
 *
 * Usage: memkit-pmr-ceiling [VECTORS [MAP_OPS [ROUNDS]]] (defaults 100, 20000000,
 * 5). Prints seconds per round (median [min-max]) and the median ratio to the
 * default allocator, interleaving the variants in every round so that a noisy
 * machine slows them alike.
 */
#include <memkit/pmr.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory_resource>
#include <unordered_map>
#include <vector>

namespace
{

constexpr std::uint64_t vector_len = 1000000; /* as in bench/pmr.cc */
constexpr std::size_t arena_bytes = std::size_t{64} << 20;

double now()
{
    using clock = std::chrono::steady_clock;
    return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

template <class Vector> unsigned fill(Vector &v, std::uint64_t seed)
{
    for (std::uint64_t i = 0; i < vector_len; i++)
        v.push_back(static_cast<int>(seed + i));
    __asm__ volatile("" : : "r"(v.data()) : "memory");
    return static_cast<unsigned>(v[vector_len / 2]);
}

/* bench/pmr.cc's churn: erase key k if present, else insert it. */
template <class Map> std::size_t churn(Map &m, std::uint64_t ops)
{
    std::uint32_t x = 12345;
    for (std::uint64_t i = 0; i < ops; i++) {
        x = x * 1103515245u + 12345u;
        int k = static_cast<int>((x >> 8) & 0xffff);
        if (m.erase(k) == 0)
            m.emplace(k, static_cast<int>(i));
    }
    return m.size();
}

/* The variants of one workload: a name and one timed run. */
struct variant {
    const char *name;
    double (*run)(std::uint64_t n, char *arena);
    std::vector<double> secs;
};

unsigned sink;

double vec_default(std::uint64_t vectors, char *)
{
    double t0 = now();
    for (std::uint64_t k = 0; k < vectors; k++) {
        std::vector<int> v;
        sink += fill(v, k);
    }
    return now() - t0;
}

double vec_stack(std::uint64_t vectors, char *)
{
    double t0 = now();
    for (std::uint64_t k = 0; k < vectors; k++) {
        memkit::stack_resource frame;
        std::pmr::vector<int> v(&frame);
        sink += fill(v, k);
    }
    return now() - t0;
}

double vec_monotonic(std::uint64_t vectors, char *arena)
{
    double t0 = now();
    for (std::uint64_t k = 0; k < vectors; k++) {
        std::pmr::monotonic_buffer_resource mono(arena, arena_bytes,
                                                 std::pmr::null_memory_resource());
        std::pmr::vector<int> v(&mono);
        sink += fill(v, k);
    }
    return now() - t0;
}

double vec_reserved(std::uint64_t vectors, char *)
{
    double t0 = now();
    for (std::uint64_t k = 0; k < vectors; k++) {
        std::vector<int> v;
        v.reserve(vector_len);
        sink += fill(v, k);
    }
    return now() - t0;
}

double map_default(std::uint64_t ops, char *)
{
    double t0 = now();
    std::unordered_map<int, int> m;
    sink += static_cast<unsigned>(churn(m, ops));
    return now() - t0;
}

double map_pool(std::uint64_t ops, char *)
{
    double t0 = now();
    memkit::pool_resource pool;
    std::pmr::unordered_map<int, int> m(&pool);
    sink += static_cast<unsigned>(churn(m, ops));
    return now() - t0;
}

/* Never reuses a node: the arena would not hold MAP_OPS nodes, so this one
 * takes its chunks from new/delete (a few large allocations). */
double map_monotonic(std::uint64_t ops, char *)
{
    double t0 = now();
    std::pmr::monotonic_buffer_resource mono;
    std::pmr::unordered_map<int, int> m(&mono);
    sink += static_cast<unsigned>(churn(m, ops));
    return now() - t0;
}

double map_reserved(std::uint64_t ops, char *)
{
    double t0 = now();
    std::unordered_map<int, int> m;
    m.reserve(65536);
    sink += static_cast<unsigned>(churn(m, ops));
    return now() - t0;
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
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
        auto mm = std::minmax_element(vs[i].secs.begin(), vs[i].secs.end());
        std::printf("  %-44s %7.3f s [%.3f-%.3f]  %5.2fx\n", vs[i].name,
                    median(vs[i].secs), *mm.first, *mm.second, median(ratio));
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
                     "memkit-pmr-ceiling: '%s' is not a positive number\n"
                     "usage: memkit-pmr-ceiling [VECTORS [MAP_OPS [ROUNDS]]]\n",
                     argv[i]);
        std::exit(2);
    }
    return v;
}

} // namespace

int main(int argc, char **argv)
{
    std::uint64_t vectors = arg(argc, argv, 1, 100), ops = arg(argc, argv, 2, 20000000);
    int rounds = static_cast<int>(std::min<std::uint64_t>(arg(argc, argv, 3, 5), 100));
    /* A vector of 1M ints takes 8 MiB over its growths: the arena holds that. */
    char *arena = static_cast<char *>(std::malloc(arena_bytes));

    if (!arena) {
        std::fprintf(stderr, "memkit-pmr-ceiling: out of memory\n");
        return 1;
    }
    for (std::size_t i = 0; i < arena_bytes; i += 4096)
        arena[i] = 0; /* fault it in once, outside the timing */
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
    std::printf("pmr ceilings: %d rounds, median seconds [min-max], median ratio to "
                "the default\n",
                rounds);
    compare("pmr-vector: vectors of 1,000,000 push_backs", vec, 4, vectors, rounds,
            arena);
    compare("pmr-map: unordered_map<int,int> insert/erase churn", map, 4, ops, rounds,
            arena);
    std::free(arena);
    __asm__ volatile("" : : "r"(sink)); /* keeps the work observable */
    return 0;
}
