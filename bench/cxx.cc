/*
 * cxx.cc - the C++ container workloads of `memkit bench`: standard containers
 * with their default allocator (operator new is malloc: glibc, or a drop-in
 * preloaded) against the same containers with memkit's allocators
 * (memkit/allocators.hpp: no std::pmr, no virtual call).
 *
 *   cxx-vector  100 short-lived std::vector<int>s of 1,000,000 push_backs each,
 *               no reserve (21 growths each, to 4 MiB); mk_stack: a frame per
 *               vector and a frame_allocator.
 *   cxx-map     insert/erase churn around 32,768 live keys (of 65,536): first
 *               std::unordered_map<int, int>, then std::map<int, int>, the same
 *               operations; mk_pool: a pool_set and a pool_allocator. The first
 *               rate column is the unordered_map's operations/s, the second the
 *               std::map's.
 *   cxx-string  short-lived std::strings past the small-string buffer (24-200
 *               characters: built, appended to, compared, dropped), 1,000 alive
 *               at a time; mk_stack: a frame per batch of 1,000 and a
 *               frame_allocator; mk_fifo: a fifo_allocator, strings dropped in
 *               the order made.
 *
 * bump-ceiling, in cxx-vector and cxx-map: the same containers with an
 * allocator that costs nothing, a pointer bumped through memory faulted in
 * before the clock starts, never reused (for cxx-vector, from the start again
 * for each vector, as a frame would): what is left is the containers' own
 * work, the limit any allocator can approach.
 *
 * Rates are operations per second (push_backs, map operations, strings); each
 * round is timed whole, its arena's creation included.
 */
extern "C" {
#include "workload.h"
}

#include "pmr_kernels.hpp"

#include <memkit/allocators.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <new>
#include <sys/mman.h>
#include <string>
#include <unordered_map>
#include <vector>

namespace
{

using memkit_bench::churn;
using memkit_bench::fill;
using memkit_bench::vector_len;

/* ---- the ceiling: allocation that costs nothing ---- */

/* Memory faulted in before any clock starts; bump_reset() starts it over. */
struct bump_arena {
    char *base = nullptr, *next = nullptr, *end = nullptr;
};
bump_arena ceiling_arena;

bool bump_map(std::size_t bytes)
{
    void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED)
        return false;
    ceiling_arena.base = ceiling_arena.next = static_cast<char *>(p);
    ceiling_arena.end = ceiling_arena.base + bytes;
    return true;
}

void bump_unmap()
{
    munmap(ceiling_arena.base,
           static_cast<std::size_t>(ceiling_arena.end - ceiling_arena.base));
    ceiling_arena = bump_arena{};
}

void bump_reset()
{
    ceiling_arena.next = ceiling_arena.base;
}

/* A stateless allocator over ceiling_arena: a bump, no free. */
template <class T> struct bump_allocator {
    using value_type = T;
    bump_allocator() = default;
    template <class U> bump_allocator(const bump_allocator<U> &) noexcept {}
    T *allocate(std::size_t n)
    {
        std::size_t bytes = (n * sizeof(T) + 15) & ~std::size_t{15};
        if (bytes > static_cast<std::size_t>(ceiling_arena.end - ceiling_arena.next))
            throw std::bad_alloc(); /* the arena is sized for the workload */
        T *p = reinterpret_cast<T *>(ceiling_arena.next);
        ceiling_arena.next += bytes;
        return p;
    }
    void deallocate(T *, std::size_t) noexcept {}
    template <class U> bool operator==(const bump_allocator<U> &) const noexcept
    {
        return true;
    }
    template <class U> bool operator!=(const bump_allocator<U> &) const noexcept
    {
        return false;
    }
};

/* ---- cxx-vector ---- */

double vector_round(mk_bench_api api, std::uint64_t vectors, unsigned &sink)
{
    double t0 = mk_bench_now();
    if (api == MK_API_MK_STACK) {
        /* The thread's stack keeps its chunks between frames, as malloc keeps
         * its heap (bench/list.c says why; --default-policy measures without). */
        if (!std::getenv("MEMKIT_BENCH_DEFAULT_POLICY"))
            mk_stack_set_retain(mk_tstack(), SIZE_MAX);
        for (std::uint64_t k = 0; k < vectors; k++) {
            memkit::frame f;
            std::vector<int, memkit::frame_allocator<int>> v(f);
            sink += fill(v, k);
        }
    } else if (api == MK_API_BUMP_CEILING) {
        for (std::uint64_t k = 0; k < vectors; k++) {
            bump_reset();
            std::vector<int, bump_allocator<int>> v;
            sink += fill(v, k);
        }
    } else {
        for (std::uint64_t k = 0; k < vectors; k++) {
            std::vector<int> v;
            sink += fill(v, k);
        }
    }
    return mk_bench_now() - t0;
}

bool vector_supports(mk_bench_api api)
{
    return api == MK_API_MALLOC || api == MK_API_MK_STACK || api == MK_API_BUMP_CEILING;
}

int vector_run(mk_bench_api api, std::uint64_t scale, int rounds, mk_bench_round *out)
{
    /* one vector's growth buffers: 1 + 2 + ... + 2^20 ints, under 8 MiB */
    if (api == MK_API_BUMP_CEILING && !bump_map(std::size_t{16} << 20))
        return -1;
    int rc = memkit_bench::vector_rounds(scale, rounds, out,
                                         [api](std::uint64_t vectors, unsigned &sink) {
                                             return vector_round(api, vectors, sink);
                                         });
    if (api == MK_API_BUMP_CEILING)
        bump_unmap();
    return rc;
}

/* ---- cxx-map ---- */

using pair_t = std::pair<const int, int>;

template <class Map> double timed_churn(Map &m, std::uint64_t ops, double t0)
{
    churn(m, ops);
    double t = mk_bench_now() - t0;
    __asm__ volatile("" : : "r"(m.size()));
    return t;
}

double umap_round(mk_bench_api api, std::uint64_t ops)
{
    double t0 = mk_bench_now();
    if (api == MK_API_MK_POOL) {
        memkit::pool_set nodes(256, false);
        std::unordered_map<int, int, std::hash<int>, std::equal_to<int>,
                           memkit::pool_allocator<pair_t>>
            m(0, std::hash<int>(), std::equal_to<int>(), nodes);
        return timed_churn(m, ops, t0);
    }
    if (api == MK_API_BUMP_CEILING) {
        std::unordered_map<int, int, std::hash<int>, std::equal_to<int>,
                           bump_allocator<pair_t>>
            m;
        return timed_churn(m, ops, t0);
    }
    std::unordered_map<int, int> m;
    return timed_churn(m, ops, t0);
}

double tree_round(mk_bench_api api, std::uint64_t ops)
{
    double t0 = mk_bench_now();
    if (api == MK_API_MK_POOL) {
        memkit::pool_set nodes(256, false);
        std::map<int, int, std::less<int>, memkit::pool_allocator<pair_t>> m(nodes);
        return timed_churn(m, ops, t0);
    }
    if (api == MK_API_BUMP_CEILING) {
        std::map<int, int, std::less<int>, bump_allocator<pair_t>> m;
        return timed_churn(m, ops, t0);
    }
    std::map<int, int> m;
    return timed_churn(m, ops, t0);
}

bool map_supports(mk_bench_api api)
{
    return api == MK_API_MALLOC || api == MK_API_MK_POOL || api == MK_API_BUMP_CEILING;
}

int map_run(mk_bench_api api, std::uint64_t scale, int rounds, mk_bench_round *out)
{
    /* Every insert a new node (at most one an operation, 48 bytes for
     * std::map's), and the hash table's bucket arrays (under 4 MiB in all). */
    std::size_t arena = static_cast<std::size_t>(scale) * 48 + (std::size_t{8} << 20);
    if (api == MK_API_BUMP_CEILING && !bump_map(arena))
        return -1;
    for (int r = 0; r < rounds; r++) {
        out[r] = mk_bench_round{};
        out[r].allocs = out[r].frees = scale;
        bump_reset();
        out[r].alloc_s = umap_round(api, scale);
        bump_reset();
        out[r].free_s = tree_round(api, scale);
    }
    if (api == MK_API_BUMP_CEILING)
        bump_unmap();
    return 0;
}

/* ---- cxx-string ---- */

constexpr std::uint64_t batch = 1000;

/* One string's work: past the small buffer, appended to (one growth, often),
 * compared with the previous one. */
template <class String>
inline unsigned make_string(String &s, std::uint64_t i, const String *prev)
{
    static const char text[] = "memkit: how much does malloc cost my program, where, "
                               "and what do I do about it? A string long enough to "
                               "leave the small-string buffer of every standard "
                               "library behind, most of the time.";
    std::size_t len = 24 + (i * 37) % 120;
    s.assign(text, len);
    s.append(text + (i % 40), 8 + i % 32);
    return static_cast<unsigned>(s.size()) + (prev && s == *prev);
}

double string_round(mk_bench_api api, std::uint64_t n, unsigned &sink)
{
    double t0 = mk_bench_now();
    if (api == MK_API_MK_STACK) {
        using S = std::basic_string<char, std::char_traits<char>,
                                    memkit::frame_allocator<char>>;
        for (std::uint64_t done = 0; done < n; done += batch) {
            memkit::frame f;
            std::vector<S, memkit::frame_allocator<S>> v(f);
            v.reserve(batch);
            for (std::uint64_t i = 0; i < batch; i++) {
                v.emplace_back(memkit::frame_allocator<char>(f));
                sink += make_string(v.back(), done + i, i ? &v[i - 1] : nullptr);
            }
        }
    } else if (api == MK_API_MK_FIFO) {
        using S =
            std::basic_string<char, std::char_traits<char>, memkit::fifo_allocator<char>>;
        memkit::fifo q(false);
        for (std::uint64_t done = 0; done < n; done += batch) {
            std::vector<S, memkit::fifo_allocator<S>> v(q);
            v.reserve(batch);
            for (std::uint64_t i = 0; i < batch; i++) {
                v.emplace_back(memkit::fifo_allocator<char>(q));
                sink += make_string(v.back(), done + i, i ? &v[i - 1] : nullptr);
            }
        }
    } else {
        for (std::uint64_t done = 0; done < n; done += batch) {
            std::vector<std::string> v;
            v.reserve(batch);
            for (std::uint64_t i = 0; i < batch; i++) {
                v.emplace_back();
                sink += make_string(v.back(), done + i, i ? &v[i - 1] : nullptr);
            }
        }
    }
    return mk_bench_now() - t0;
}

bool string_supports(mk_bench_api api)
{
    return api == MK_API_MALLOC || api == MK_API_MK_STACK || api == MK_API_MK_FIFO;
}

int string_run(mk_bench_api api, std::uint64_t scale, int rounds, mk_bench_round *out)
{
    std::uint64_t n = (scale + batch - 1) / batch * batch;
    unsigned sink = 0;
    for (int r = 0; r < rounds; r++) {
        double t = string_round(api, n, sink);
        out[r] = mk_bench_round{};
        out[r].allocs = out[r].frees = n;
        out[r].alloc_s = out[r].free_s = t;
    }
    __asm__ volatile("" : : "r"(sink));
    return 0;
}

} // namespace

extern "C" {
extern const mk_workload mk_workload_cxx_vector;
extern const mk_workload mk_workload_cxx_map;
extern const mk_workload mk_workload_cxx_string;

const mk_workload mk_workload_cxx_vector = {
    "cxx-vector",
    "100 short-lived std::vector<int>s of 1,000,000 push_backs, no reserve: default "
    "allocator vs memkit::frame_allocator; rates are push_backs/s",
    100000000,
    2000000,
    "push_backs",
    5,
    vector_supports,
    vector_run,
    nullptr,
};

const mk_workload mk_workload_cxx_map = {
    "cxx-map",
    "insert/erase churn around 32,768 keys, std::unordered_map then std::map: default "
    "allocator vs memkit::pool_allocator; rates are operations/s (alloc column: "
    "unordered_map, free column: map)",
    20000000,
    200000,
    "operations",
    5,
    map_supports,
    map_run,
    nullptr,
};

const mk_workload mk_workload_cxx_string = {
    "cxx-string",
    "short-lived std::strings of 32-200 chars, 1,000 alive at a time: default allocator "
    "vs memkit::frame_allocator (a frame per 1,000) and fifo_allocator; rates are "
    "strings/s",
    20000000,
    200000,
    "strings",
    5,
    string_supports,
    string_run,
    nullptr,
};
}
