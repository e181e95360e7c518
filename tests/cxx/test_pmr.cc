/*
 * test_pmr.cc - memkit's std::pmr resources under real containers: vector,
 * string and unordered_map over each resource, checked against the same
 * containers on the default allocator; the stack resource releasing
 * everything at once and refusing to allocate under a newer frame; the pool
 * resource pooling node sizes and forwarding the rest upstream; the scope
 * guard keeping the stack's LIFO check; memkit::allocator under non-pmr
 * containers. Built with ASan+UBSan by make test-sanitize.
 */
#include "../unit/check.h"

#include <memkit/pmr.hpp>

#include <list>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace
{

/* An upstream resource that counts what reaches it. */
class counting_resource : public std::pmr::memory_resource
{
  public:
    long allocs = 0, frees = 0;
    std::size_t live_bytes = 0;

  protected:
    void *do_allocate(std::size_t n, std::size_t a) override
    {
        allocs++;
        live_bytes += n;
        return std::pmr::new_delete_resource()->allocate(n, a);
    }
    void do_deallocate(void *p, std::size_t n, std::size_t a) override
    {
        frees++;
        live_bytes -= n;
        std::pmr::new_delete_resource()->deallocate(p, n, a);
    }
    bool do_is_equal(const std::pmr::memory_resource &o) const noexcept override
    {
        return this == &o;
    }
};

/* The same operations on a pmr container over r and on a std one. */
void exercise(std::pmr::memory_resource *r, const char *name)
{
    unsigned long long rng = test_seed();
    int bad = 0;

    std::pmr::vector<int> v(r);
    std::vector<int> vm;
    for (int i = 0; i < 20000; i++) {
        v.push_back(i * 3);
        vm.push_back(i * 3);
    }
    v.resize(7000);
    vm.resize(7000);
    v.shrink_to_fit();
    bad += !std::equal(v.begin(), v.end(), vm.begin(), vm.end());

    std::pmr::string s(r);
    std::string sm;
    for (int i = 0; i < 2000; i++) {
        std::string piece =
            "piece " + std::to_string(i) + " of a string too long for SSO ";
        s += piece.c_str();
        sm += piece;
    }
    bad += std::string(s.c_str()) != sm;

    std::pmr::unordered_map<int, int> m(r);
    std::unordered_map<int, int> mm;
    for (int i = 0; i < 100000; i++) {
        int k = (int)(rng_next(&rng) % 5000), op = (int)(rng_next(&rng) % 3);
        if (op < 2) {
            m[k] = i;
            mm[k] = i;
        } else {
            bad += m.erase(k) != mm.erase(k);
        }
    }
    bad += m.size() != mm.size();
    for (const auto &kv : mm) {
        auto it = m.find(kv.first);
        bad += it == m.end() || it->second != kv.second;
    }
    if (bad)
        fprintf(stderr, "%s: %d mismatches\n", name, bad);
    CHECK_EQ(bad, 0);
}

void stack_resource_case()
{
    mk_stack_stats_t before, after;
    mk_stack_stats(mk_tstack(), &before);
    {
        memkit::stack_resource frame;
        exercise(&frame, "stack_resource");
        mk_stack_stats_t inside;
        mk_stack_stats(mk_tstack(), &inside);
        CHECK(inside.used_bytes > before.used_bytes + (1 << 20)); /* monotonic */
        CHECK_EQ(inside.frames, before.frames + 1);
    }
    mk_stack_stats(mk_tstack(), &after);
    CHECK_EQ(after.used_bytes, before.used_bytes);
    CHECK_EQ(after.frames, before.frames);

    /* its own stack, and nested resources used innermost-first */
    mk_stack_t *st = mk_stack_create();
    {
        memkit::stack_resource outer(st);
        std::pmr::vector<int> a({1, 2, 3}, &outer);
        {
            memkit::stack_resource inner(st);
            std::pmr::vector<int> b({4, 5}, &inner);
            CHECK(b[1] == 5);
        }
        a.push_back(4); /* the inner frame is gone: outer is innermost again */
        CHECK(a.size() == 4 && a[3] == 4);
    }
    mk_stack_destroy(st);
}

void outer_allocates_under_inner()
{
    memkit::stack_resource outer;
    std::pmr::vector<int> a(&outer);
    memkit::stack_scope inner; /* a newer frame on the same stack */
    a.resize(100);             /* would land in the inner frame: refused */
}

void scope_popped_out_of_order()
{
    mk_stack_t *st = mk_tstack();
    memkit::stack_scope outer(st);
    mk_stack_push(st); /* never popped: leaving `outer` must be refused */
}

void scope_case()
{
    mk_stack_stats_t s0, s1;
    mk_stack_stats(mk_tstack(), &s0);
    {
        memkit::stack_scope scope;
        CHECK(mk_t_alloc(100) != nullptr);
        mk_stack_stats(mk_tstack(), &s1);
        CHECK_EQ(s1.frames, s0.frames + 1);
    }
    mk_stack_stats(mk_tstack(), &s1);
    CHECK_EQ(s1.frames, s0.frames);
    CHECK_EQ(s1.used_bytes, s0.used_bytes);
}

void pool_resource_case()
{
    counting_resource up;
    {
        memkit::pool_resource pool(&up);
        exercise(&pool, "pool_resource");
    }
    CHECK_EQ(up.allocs, up.frees); /* upstream got back all it gave */
    CHECK_EQ(up.live_bytes, 0u);

    /* node sizes stay in the pools: after the first insertions, node churn
     * reaches upstream only for bucket arrays */
    counting_resource up2;
    memkit::pool_resource pool(&up2);
    std::pmr::unordered_map<int, int> m(&pool);
    m.reserve(1000); /* one bucket array, from upstream (larger than 256 bytes) */
    long before = up2.allocs;
    for (int round = 0; round < 100; round++) {
        for (int i = 0; i < 500; i++)
            m[i] = i;
        for (int i = 0; i < 500; i++)
            m.erase(i);
    }
    CHECK_EQ(up2.allocs, before); /* 100,000 node allocations, none upstream */

    /* exactly one pooled size */
    counting_resource up3;
    {
        memkit::pool_resource only32(32, &up3);
        void *a = only32.allocate(32, 8), *b = only32.allocate(48, 8);
        CHECK_EQ(up3.allocs, 1); /* the 48-byte block */
        only32.deallocate(a, 32, 8);
        only32.deallocate(b, 48, 8);
        CHECK_EQ(up3.frees, 1);
        /* over-aligned requests are not the pool's */
        void *c = only32.allocate(32, 64);
        CHECK(((uintptr_t)c & 63) == 0);
        CHECK_EQ(up3.allocs, 2);
        only32.deallocate(c, 32, 64);
    }
}

void fifo_and_tlsf_case()
{
    {
        memkit::fifo_resource fifo;
        exercise(&fifo, "fifo_resource");
        mk_fifo_stats_t st;
        mk_fifo_stats(fifo.fifo(), &st);
        CHECK_EQ(st.live_blocks, 0u);
    }
    {
        memkit::tlsf_resource tlsf;
        exercise(&tlsf, "tlsf_resource");
        char why[200];
        CHECK(mk_tlsf_check(tlsf.tlsf(), why, sizeof why));
        mk_tlsf_stats_t st;
        mk_tlsf_stats(tlsf.tlsf(), &st);
        CHECK_EQ(st.used_blocks, 0u);
        void *p = tlsf.allocate(100, 256); /* over-aligned */
        CHECK(((uintptr_t)p & 255) == 0);
        tlsf.deallocate(p, 100, 256);
    }
    memkit::tlsf_resource a, b;
    CHECK(a.is_equal(a) && !a.is_equal(b));
}

void allocator_case()
{
    memkit::pool_resource pool;
    std::vector<int, memkit::allocator<int>> v(&pool);
    for (int i = 0; i < 1000; i++)
        v.push_back(i);
    CHECK(v.size() == 1000 && v[999] == 999);
    std::list<std::string, memkit::allocator<std::string>> l(&pool);
    for (int i = 0; i < 1000; i++)
        l.push_back(std::to_string(i));
    CHECK(l.size() == 1000 && l.back() == "999");
    std::map<int, int, std::less<int>, memkit::allocator<std::pair<const int, int>>> m{
        memkit::allocator<std::pair<const int, int>>(&pool)};
    for (int i = 0; i < 1000; i++)
        m[i] = -i;
    CHECK(m.size() == 1000 && m[500] == -500);
    memkit::allocator<int> x(&pool);
    memkit::allocator<long> y(x);
    memkit::pool_resource other;
    CHECK(x == y && x != memkit::allocator<int>(&other));
}

} // namespace

int main()
{
    stack_resource_case();
    scope_case();
    CHECK_ABORTS(outer_allocates_under_inner, "allocation while a newer frame is open");
    /* the frame is named by the line that made the scope: this file */
    CHECK_ABORTS(scope_popped_out_of_order, "unbalanced pop: frame pushed at");
    CHECK_ABORTS(scope_popped_out_of_order, "test_pmr.cc:"); /* the scope's own line */
    pool_resource_case();
    fifo_and_tlsf_case();
    allocator_case();
    return check_report("test_pmr");
}
