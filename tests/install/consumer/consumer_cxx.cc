// An external C++17 program using an installed libmemkit's C++ adapters (pmr
// resources and the plain allocators) and a local buffer. Prints "ok".
#include <memkit/allocators.hpp>
#include <memkit/pmr.hpp>
#include <memkit/small_vector.hpp>

#include <cstdio>
#include <list>
#include <map>
#include <string>
#include <unordered_map>

int main()
{
    bool ok = true;
    {
        memkit::stack_resource frame;
        std::pmr::vector<std::pmr::string> words(&frame);
        for (int i = 0; i < 100; i++)
            words.emplace_back("word number " + std::to_string(i) + ", past SSO");
        ok &= words[42] == "word number 42, past SSO";
    }
    memkit::pool_resource nodes;
    std::pmr::unordered_map<int, int> m(&nodes);
    for (int i = 0; i < 1000; i++)
        m[i] = i * i;
    ok &= m[30] == 900;
    {
        memkit::frame f;
        std::vector<int, memkit::frame_allocator<int>> fv(f);
        for (int i = 0; i < 1000; i++)
            fv.push_back(i);
        ok &= fv[999] == 999;
    }
    memkit::pool_set pools;
    std::map<int, int, std::less<int>, memkit::pool_allocator<std::pair<const int, int>>>
        tree(pools);
    for (int i = 0; i < 1000; i++)
        tree[i] = -i;
    ok &= tree[7] == -7;
    memkit::fifo queue;
    std::list<std::string, memkit::fifo_allocator<std::string>> jobs(queue);
    for (int i = 0; i < 100; i++)
        jobs.push_back("job " + std::to_string(i));
    jobs.pop_front();
    ok &= jobs.front() == "job 1";
    memkit::small_vector<int, 4> v;
    for (int i = 0; i < 10; i++)
        v.push_back(i);
    ok &= v.size() == 10 && !v.is_inline();
    MK_LOCALBUF(buf, 64);
    ok &= mk_localbuf_append(&buf, "abc", 3) != nullptr && mk_localbuf_is_inline(&buf);
    std::puts(ok ? "ok" : "FAILED");
    return !ok;
}
