/*
 * test_small_vector.cc - memkit::small_vector: no allocation up to N, one
 * per growth beyond, every element constructed once and destroyed once
 * (counted), moves that steal or move element by element, copies, self
 * emplace, exceptions leaving the vector as it was, and a randomized run
 * against std::vector. Built with ASan+UBSan by make test-sanitize.
 */
#include "../unit/check.h"

#include <memkit/pmr.hpp>
#include <memkit/small_vector.hpp>

#include <string>
#include <vector>

namespace
{

class counting_resource : public std::pmr::memory_resource
{
  public:
    long allocs = 0, frees = 0;

  protected:
    void *do_allocate(std::size_t n, std::size_t a) override
    {
        allocs++;
        return std::pmr::new_delete_resource()->allocate(n, a);
    }
    void do_deallocate(void *p, std::size_t n, std::size_t a) override
    {
        frees++;
        std::pmr::new_delete_resource()->deallocate(p, n, a);
    }
    bool do_is_equal(const std::pmr::memory_resource &o) const noexcept override
    {
        return this == &o;
    }
};

/* Counts live objects; its copy constructor can be told to throw. */
struct tracked {
    static long live;
    static int copies_before_throw;
    std::string s;
    explicit tracked(int i) : s("value number " + std::to_string(i) + " (no SSO here)")
    {
        live++;
    }
    tracked(const tracked &o) : s(o.s)
    {
        if (copies_before_throw == 0)
            throw std::runtime_error("copy refused");
        copies_before_throw--;
        live++;
    }
    tracked(tracked &&o) noexcept : s(std::move(o.s))
    {
        live++;
    }
    tracked &operator=(const tracked &) = default;
    ~tracked()
    {
        live--;
    }
};
long tracked::live = 0;
int tracked::copies_before_throw = -1;

/* Like tracked, but moving may throw: small_vector must copy on growth. */
struct copy_only {
    tracked t;
    explicit copy_only(int i) : t(i) {}
    copy_only(const copy_only &o) : t(o.t) {}
};

void inline_and_growth()
{
    counting_resource r;
    {
        memkit::small_vector<int, 8> v(&r);
        for (int i = 0; i < 8; i++)
            v.push_back(i);
        CHECK(v.is_inline() && v.size() == 8 && v.capacity() == 8);
        CHECK_EQ(r.allocs, 0);
        v.push_back(8);
        CHECK(!v.is_inline() && v.capacity() == 16);
        CHECK_EQ(r.allocs, 1);
        for (int i = 9; i < 1000; i++)
            v.push_back(i);
        CHECK_EQ(r.allocs, 7); /* 16, 32, ..., 1024 */
        CHECK_EQ(r.frees, 6);
        int bad = 0;
        for (int i = 0; i < 1000; i++)
            bad += v[(std::size_t)i] != i;
        CHECK_EQ(bad, 0);
        CHECK_EQ(v.at(999), 999);
        bool threw = false;
        try {
            v.at(1000);
        } catch (const std::out_of_range &) {
            threw = true;
        }
        CHECK(threw);
        v.resize(3);
        CHECK(v.size() == 3 && v.back() == 2);
        v.resize(5);
        CHECK(v.size() == 5 && v[4] == 0);
    }
    CHECK_EQ(r.allocs, r.frees);
}

void lifetimes()
{
    counting_resource r;
    {
        memkit::small_vector<tracked, 4> v(&r);
        for (int i = 0; i < 100; i++)
            v.emplace_back(i);
        CHECK_EQ(tracked::live, 100);
        for (int i = 0; i < 50; i++)
            v.pop_back();
        CHECK_EQ(tracked::live, 50);
        /* emplace of one of its own elements while growing */
        memkit::small_vector<tracked, 2> w(&r);
        w.emplace_back(7);
        w.emplace_back(8);
        w.push_back(w[0]); /* the reference must survive the growth */
        CHECK(w.size() == 3 && w[2].s == w[0].s);

        /* copies, moves */
        memkit::small_vector<tracked, 4> c(v);
        CHECK(c.size() == 50 && c[49].s == v[49].s);
        long allocs = r.allocs;
        memkit::small_vector<tracked, 4> m(std::move(c)); /* spilled: steals */
        CHECK(m.size() == 50 && c.size() == 0 && c.is_inline());
        CHECK_EQ(r.allocs, allocs);
        memkit::small_vector<tracked, 4> small(&r);
        small.emplace_back(1);
        memkit::small_vector<tracked, 4> ms(std::move(small)); /* inline: moves */
        CHECK(ms.size() == 1 && ms.is_inline() && small.empty());
        m = ms;
        CHECK(m.size() == 1 && m[0].s == ms[0].s);
        m = std::move(v);
        CHECK(m.size() == 50 && v.empty());
    }
    CHECK_EQ(tracked::live, 0);
    CHECK_EQ(r.allocs, r.frees);
}

void exceptions()
{
    counting_resource r;
    {
        memkit::small_vector<copy_only, 2> v(&r);
        v.emplace_back(1);
        v.emplace_back(2);
        tracked::copies_before_throw = 1; /* growth copies 2: the second throws */
        bool threw = false;
        try {
            v.emplace_back(3);
        } catch (const std::runtime_error &) {
            threw = true;
        }
        tracked::copies_before_throw = -1;
        CHECK(threw);
        CHECK(v.size() == 2 && v.is_inline()); /* as it was */
        CHECK(v[1].t.s.find("number 2") != std::string::npos);
    }
    CHECK_EQ(tracked::live, 0);
    CHECK_EQ(r.allocs, r.frees);
}

void over_a_memkit_resource()
{
    memkit::stack_resource frame;
    memkit::small_vector<std::pmr::string, 4> v(&frame);
    for (int i = 0; i < 100; i++)
        v.emplace_back("string " + std::to_string(i) + " long enough to leave SSO",
                       &frame);
    CHECK(v.size() == 100 && v[57] == "string 57 long enough to leave SSO");
}

void random_against_std_vector()
{
    unsigned long long rng = test_seed();
    int steps = getenv("MEMKIT_TEST_STEPS") ? atoi(getenv("MEMKIT_TEST_STEPS")) : 100000;
    memkit::small_vector<long, 16> v;
    std::vector<long> model;
    int bad = 0;

    for (int s = 0; s < steps; s++) {
        unsigned op = (unsigned)(rng_next(&rng) % 100);
        long x = (long)rng_next(&rng);
        if (op < 50) {
            v.push_back(x);
            model.push_back(x);
        } else if (op < 90) {
            if (!model.empty()) {
                bad += v.back() != model.back();
                v.pop_back();
                model.pop_back();
            }
        } else if (op < 95) {
            std::size_t n = (std::size_t)(x & 0xff);
            v.resize(n);
            model.resize(n);
        } else if (op < 99) {
            v.reserve((std::size_t)(x & 0xfff));
        } else {
            v.clear();
            model.clear();
        }
        bad += v.size() != model.size();
    }
    bad += !std::equal(v.begin(), v.end(), model.begin(), model.end());
    CHECK_EQ(bad, 0);
}

} // namespace

int main()
{
    inline_and_growth();
    lifetimes();
    exceptions();
    over_a_memkit_resource();
    random_against_std_vector();
    return check_report("test_small_vector");
}
