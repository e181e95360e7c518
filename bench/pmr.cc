/*
 * pmr.cc - the C++ workloads of `memkit bench`: standard containers over the
 * default allocator (glibc, jemalloc, ... : operator new is malloc) against
 * the same containers over memkit's std::pmr resources (memkit/pmr.hpp).
 *
 *   pmr-vector  the local buffer chapter's loop: short-lived vectors that each
 *               take 1,000,000 ints by push_back (21 growths, to 4 MiB);
 *               mk_stack: a stack_resource per vector (its frame pushed and
 *               popped), mk_tlsf: one tlsf_resource per round.
 *   pmr-map     insert/erase churn of an unordered_map<int, int> around 32,768
 *               live keys; mk_pool: a pool_resource (a pool per node size),
 *               mk_tlsf: a tlsf_resource.
 *
 * Both rate columns are operations per second (push_backs, or inserts plus
 * erases); the whole loop is timed.
 */
extern "C" {
#include "workload.h"
}

#include "pmr_kernels.hpp"

#include <memkit/pmr.hpp>

#include <cstdio>
#include <unordered_map>
#include <vector>

namespace
{

using memkit_bench::churn;
using memkit_bench::fill;
using memkit_bench::vector_len;

double vector_round(mk_bench_api api, std::uint64_t vectors, unsigned &sink)
{
    double t0 = mk_bench_now();
    if (api == MK_API_MK_STACK) {
        for (std::uint64_t k = 0; k < vectors; k++) {
            memkit::stack_resource frame;
            std::pmr::vector<int> v(&frame);
            sink += fill(v, k);
        }
    } else if (api == MK_API_MK_TLSF) {
        memkit::tlsf_resource tlsf;
        for (std::uint64_t k = 0; k < vectors; k++) {
            std::pmr::vector<int> v(&tlsf);
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
    return api == MK_API_MALLOC || api == MK_API_MK_STACK || api == MK_API_MK_TLSF;
}

int vector_run(mk_bench_api api, std::uint64_t scale, int rounds, mk_bench_round *out)
{
    return memkit_bench::vector_rounds(scale, rounds, out,
                                       [api](std::uint64_t vectors, unsigned &sink) {
                                           return vector_round(api, vectors, sink);
                                       });
}

/* The churn on m, timed from t0 (tearing the map down is not part of it). */
template <class Map>
double timed_churn(Map &m, std::uint64_t ops, double t0, std::size_t &size)
{
    churn(m, ops);
    double t = mk_bench_now() - t0;
    size += m.size();
    return t;
}

double map_round(mk_bench_api api, std::uint64_t ops, std::size_t &size)
{
    double t0 = mk_bench_now(); /* a resource's creation counts, as a map's would */
    if (api == MK_API_MK_POOL) {
        memkit::pool_resource pool;
        std::pmr::unordered_map<int, int> m(&pool);
        return timed_churn(m, ops, t0, size);
    }
    if (api == MK_API_MK_TLSF) {
        memkit::tlsf_resource tlsf;
        std::pmr::unordered_map<int, int> m(&tlsf);
        return timed_churn(m, ops, t0, size);
    }
    std::unordered_map<int, int> m;
    return timed_churn(m, ops, t0, size);
}

bool map_supports(mk_bench_api api)
{
    return api == MK_API_MALLOC || api == MK_API_MK_POOL || api == MK_API_MK_TLSF;
}

int map_run(mk_bench_api api, std::uint64_t scale, int rounds, mk_bench_round *out)
{
    std::size_t size = 0;

    for (int r = 0; r < rounds; r++) {
        double t = map_round(api, scale, size);
        out[r] = mk_bench_round{};
        out[r].allocs = out[r].frees = scale;
        out[r].alloc_s = out[r].free_s = t;
    }
    __asm__ volatile("" : : "r"(size));
    return 0;
}

} // namespace

extern "C" {
extern const mk_workload mk_workload_pmr_vector;
extern const mk_workload mk_workload_pmr_map;

const mk_workload mk_workload_pmr_vector = {
    "pmr-vector",
    "short-lived std::vector<int>s of 1,000,000 push_backs each: default allocator vs "
    "std::pmr resources; rates are push_backs/s",
    100000000,
    2000000,
    "push_backs",
    5,
    vector_supports,
    vector_run,
    nullptr,
};

const mk_workload mk_workload_pmr_map = {
    "pmr-map",
    "unordered_map<int, int> insert/erase churn around 32,768 keys: default allocator vs "
    "std::pmr resources; rates are operations/s",
    20000000,
    200000,
    "operations",
    5,
    map_supports,
    map_run,
    nullptr,
};
}
