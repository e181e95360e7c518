/*
 * test_allocators.cc - memkit/allocators.hpp under real containers.
 *
 * Model-based: the same random operations run on std::vector, std::basic_string,
 * std::unordered_map, std::map and std::list with memkit's allocators and with the
 * default allocator, and their contents are compared after every step. Then the
 * allocator contract: rebinding keeps the arena, equality is the arena's,
 * moving and swapping carry the allocator with the memory, copy assignment
 * keeps the target's arena; the arenas' own behaviour (a frame releases all at
 * once, a pool_set pools node sizes and sends arrays to operator new); and the
 * misuse cases that abort: a frame allocating under a newer frame, and in
 * debug mode a deallocation into the wrong pool or FIFO. Built with ASan and
 * UBSan by make test-sanitize; run under Valgrind by make test.
 */
#include "../unit/check.h"

#include <memkit/allocators.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace
{

using pair_t = std::pair<const int, int>;

template <class A> using vec_t = std::vector<int, A>;
template <class A> using str_t = std::basic_string<char, std::char_traits<char>, A>;

/* ---- model: the same operations, compared step by step ---- */

/* A container that differs from its model may have written past the memory
 * its allocator gave it, into the arena's own: the test ends here, since
 * what runs after can hang on that arena (an allocator handing out n bytes
 * for n elements once did, until the 45 s timeout). */
[[noreturn]] void model_broke(const char *what)
{
    std::fprintf(stderr, "test_allocators: %s differs from its model; stopping\n", what);
    std::fflush(stderr);
    std::_Exit(1);
}

template <class V> bool same_seq(const V &a, const std::vector<int> &b)
{
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}

template <class Alloc> void vector_model(Alloc alloc, unsigned long long seed)
{
    std::vector<int, Alloc> v(alloc);
    std::vector<int> m;
    for (int step = 0; step < 20000; step++) {
        int x = (int)(rng_next(&seed) % 1000);
        switch (rng_next(&seed) % 6) {
        case 0:
        case 1:
        case 2:
            v.push_back(x);
            m.push_back(x);
            break;
        case 3:
            if (!m.empty()) {
                v.pop_back();
                m.pop_back();
            }
            break;
        case 4: {
            std::size_t at = m.empty() ? 0 : (std::size_t)x % (m.size() + 1);
            v.insert(v.begin() + (long)at, x);
            m.insert(m.begin() + (long)at, x);
            break;
        }
        default:
            v.resize((std::size_t)x % 64 + v.size() / 2);
            m.resize((std::size_t)x % 64 + m.size() / 2);
        }
        if (!same_seq(v, m))
            model_broke("a vector");
    }
    CHECK(same_seq(v, m));
}

template <class Alloc> void string_model(Alloc alloc, unsigned long long seed)
{
    std::basic_string<char, std::char_traits<char>, Alloc> s(alloc);
    std::string m;
    for (int step = 0; step < 20000; step++) {
        char c = (char)('a' + rng_next(&seed) % 26);
        std::size_t n = rng_next(&seed) % 40;
        switch (rng_next(&seed) % 4) {
        case 0:
            s.append(n, c);
            m.append(n, c);
            break;
        case 1:
            if (m.size() > n) {
                s.erase(0, n);
                m.erase(0, n);
            }
            break;
        case 2:
            s.insert(s.size() / 2, n, c);
            m.insert(m.size() / 2, n, c);
            break;
        default:
            if (m.size() > 400) {
                s.resize(n);
                m.resize(n);
            }
        }
        if (s.size() != m.size() || std::string(s.data(), s.size()) != m)
            model_broke("a string");
    }
    CHECK(std::string(s.data(), s.size()) == m);
}

template <class Map, class Model>
void map_model(Map &map, Model &m, unsigned long long seed)
{
    for (int step = 0; step < 30000; step++) {
        int k = (int)(rng_next(&seed) % 2000);
        int v = (int)(rng_next(&seed) % 100000);
        switch (rng_next(&seed) % 4) {
        case 0:
        case 1:
            map[k] = v;
            m[k] = v;
            break;
        case 2:
            CHECK_EQ(map.erase(k), m.erase(k));
            break;
        default: {
            auto it = map.find(k);
            auto jt = m.find(k);
            CHECK((it == map.end()) == (jt == m.end()));
            if (it != map.end() && jt != m.end())
                CHECK_EQ(it->second, jt->second);
        }
        }
    }
    CHECK_EQ(map.size(), m.size());
    for (const auto &kv : m) {
        auto it = map.find(kv.first);
        CHECK(it != map.end() && it->second == kv.second);
    }
}

template <class Alloc> void list_model(Alloc alloc, unsigned long long seed)
{
    std::list<int, Alloc> l(alloc);
    std::list<int> m;
    for (int step = 0; step < 20000; step++) {
        int x = (int)(rng_next(&seed) % 1000);
        switch (rng_next(&seed) % 4) {
        case 0:
            l.push_back(x);
            m.push_back(x);
            break;
        case 1:
            l.push_front(x);
            m.push_front(x);
            break;
        case 2:
            if (!m.empty()) {
                l.pop_front();
                m.pop_front();
            }
            break;
        default:
            l.remove(x);
            m.remove(x);
        }
    }
    CHECK(l.size() == m.size() && std::equal(l.begin(), l.end(), m.begin()));
}

void test_models()
{
    unsigned long long seed = test_seed();
    {
        memkit::frame f;
        vector_model(memkit::frame_allocator<int>(f), seed);
        string_model(memkit::frame_allocator<char>(f), seed + 1);
        list_model(memkit::frame_allocator<int>(f), seed + 2);
    }
    memkit::pool_set nodes;
    vector_model(memkit::pool_allocator<int>(nodes), seed + 3);
    string_model(memkit::pool_allocator<char>(nodes), seed + 4);
    list_model(memkit::pool_allocator<int>(nodes), seed + 5);
    {
        std::unordered_map<int, int, std::hash<int>, std::equal_to<int>,
                           memkit::pool_allocator<pair_t>>
            um(0, std::hash<int>(), std::equal_to<int>(), nodes);
        std::unordered_map<int, int> mu;
        map_model(um, mu, seed + 6);
        std::map<int, int, std::less<int>, memkit::pool_allocator<pair_t>> tm(nodes);
        std::map<int, int> mt;
        map_model(tm, mt, seed + 7);
    }
    memkit::fifo q;
    vector_model(memkit::fifo_allocator<int>(q), seed + 8);
    string_model(memkit::fifo_allocator<char>(q), seed + 9);
    list_model(memkit::fifo_allocator<int>(q), seed + 10);
    std::map<int, int, std::less<int>, memkit::fifo_allocator<pair_t>> fm(q);
    std::map<int, int> mf;
    map_model(fm, mf, seed + 11);
}

/* ---- the allocator contract ---- */

void test_contract()
{
    using traits = std::allocator_traits<memkit::pool_allocator<int>>;
    static_assert(traits::propagate_on_container_move_assignment::value);
    static_assert(traits::propagate_on_container_swap::value);
    static_assert(!traits::propagate_on_container_copy_assignment::value);
    static_assert(!traits::is_always_equal::value);
    static_assert(
        std::is_same_v<traits::rebind_alloc<double>, memkit::pool_allocator<double>>);

    memkit::pool_set a, b;
    memkit::pool_allocator<int> ai(a), bi(b);
    memkit::pool_allocator<double> ad(ai); /* rebound: the same arena */
    CHECK(ad == ai && ai != bi && ad.arena() == &a);

    /* Move assignment carries the allocator with the memory: no copy. */
    vec_t<memkit::pool_allocator<int>> va(ai), vb(bi);
    va.assign(100, 7);
    const int *data = va.data();
    vb = std::move(va);
    CHECK(vb.get_allocator() == ai && vb.data() == data && vb.size() == 100);

    /* Swap swaps the allocators too. */
    vec_t<memkit::pool_allocator<int>> vc(bi);
    vc.assign(3, 1);
    vb.swap(vc);
    CHECK(vb.get_allocator() == bi && vc.get_allocator() == ai && vc.data() == data);

    /* Copy assignment keeps the target's arena; copy construction the source's. */
    vec_t<memkit::pool_allocator<int>> vd(bi);
    vd = vc;
    CHECK(vd.get_allocator() == bi && vd.size() == 100 && vd.data() != vc.data());
    vec_t<memkit::pool_allocator<int>> ve(vc);
    CHECK(ve.get_allocator() == ai);

    /* A frame releases everything at once; deallocate does nothing. */
    mk_stack_t *st = mk_stack_create();
    mk_stack_stats_t s;
    {
        memkit::frame f(st);
        vec_t<memkit::frame_allocator<int>> v(f);
        for (int i = 0; i < 100000; i++)
            v.push_back(i);
        mk_stack_stats(st, &s);
        CHECK(s.used_bytes >= 100000 * sizeof(int) && s.frames == 1);
    }
    mk_stack_stats(st, &s);
    CHECK_EQ(s.used_bytes, 0);
    CHECK_EQ(s.frames, 0);
    mk_stack_destroy(st);

    /* pool_set: node sizes pooled, arrays and large blocks to operator new. */
    memkit::pool_set p;
    void *node = p.allocate(48, 8);
    void *array = p.allocate(100000, 8);
    CHECK(node && array);
    std::memset(array, 1, 100000);
    p.deallocate(node, 48, 8);
    p.deallocate(array, 100000, 8);
}

/* ---- misuse ---- */

void frame_under_newer_frame()
{
    memkit::frame outer;
    vec_t<memkit::frame_allocator<int>> v(outer);
    memkit::frame inner; /* the newer frame: outer's blocks would die with it */
    v.push_back(1);
}

void pool_wrong_arena()
{
    memkit::pool_set a(256, true), b(256, true);
    memkit::pool_allocator<long> aa(a), ba(b);
    long *p = aa.allocate(1);
    (void)ba.allocate(1); /* b has a pool of this size too */
    ba.deallocate(p, 1);  /* into the wrong pool */
}

void fifo_wrong_arena()
{
    memkit::fifo a(true), b(true);
    memkit::fifo_allocator<long> aa(a), ba(b);
    long *p = aa.allocate(4);
    (void)ba.allocate(4);
    ba.deallocate(p, 4);
}

void test_misuse()
{
    CHECK_ABORTS(frame_under_newer_frame, "a newer frame is open");
    CHECK_ABORTS(pool_wrong_arena, "does not belong to this pool");
    CHECK_ABORTS(fifo_wrong_arena, "not a block of this FIFO");
}

} // namespace

int main()
{
    test_models();
    test_contract();
    test_misuse();
    return check_report("test_allocators");
}
