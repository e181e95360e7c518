/*
 * pmr_kernels.hpp - the loops of the pmr-vector and pmr-map workloads, shared
 * by `memkit bench` (pmr.cc) and memkit-ceiling (ceiling.cc), so both time the
 * same work.
 */
#ifndef MEMKIT_BENCH_PMR_KERNELS_HPP
#define MEMKIT_BENCH_PMR_KERNELS_HPP

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
