/*
 * pmr_kernels.hpp - the loops of the pmr-vector and pmr-map workloads, shared
 * by `memkit bench` (pmr.cc) and memkit-ceiling (ceiling.cc), so both time the
 * same work.
 */
#ifndef MEMKIT_BENCH_PMR_KERNELS_HPP
#define MEMKIT_BENCH_PMR_KERNELS_HPP

extern "C" {
#include "workload.h"
}

#include <cstdint>

namespace memkit_bench
{

constexpr std::uint64_t vector_len = 1000000;

/* Builds one short-lived vector; the asm keeps its contents observable. */
template <class Vector> inline unsigned fill(Vector &v, std::uint64_t seed)
{
    for (std::uint64_t i = 0; i < vector_len; i++)
        v.push_back(static_cast<int>(seed + i));
    __asm__ volatile("" : : "r"(v.data()) : "memory");
    return static_cast<unsigned>(v[vector_len / 2]);
}

/* The vector workloads' rounds: round(vectors, sink) builds that many vectors
 * and returns its seconds; both rate columns are push_backs per second. */
template <class Round>
inline int vector_rounds(std::uint64_t scale, int rounds, mk_bench_round *out,
                         Round round)
{
    std::uint64_t vectors = scale / vector_len ? scale / vector_len : 1;
    unsigned sink = 0;
    for (int r = 0; r < rounds; r++) {
        double t = round(vectors, sink);
        out[r] = mk_bench_round{};
        out[r].allocs = out[r].frees = vectors * vector_len;
        out[r].alloc_s = out[r].free_s = t;
    }
    __asm__ volatile("" : : "r"(sink));
    return 0;
}

/* One op: erase key k if present, else insert it; keys in [0, 65536) from a
 * fixed sequence, so the live set hovers around half of them. */
template <class Map> inline void churn(Map &m, std::uint64_t ops)
{
    std::uint32_t x = 12345;
    for (std::uint64_t i = 0; i < ops; i++) {
        x = x * 1103515245u + 12345u;
        int k = static_cast<int>((x >> 8) & 0xffff);
        if (m.erase(k) == 0)
            m.emplace(k, static_cast<int>(i));
    }
}

} // namespace memkit_bench

#endif /* MEMKIT_BENCH_PMR_KERNELS_HPP */
