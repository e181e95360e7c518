// An external C++17 program using an installed libmemkit's C++ adapters and a
// local buffer. Prints "ok".
#include <memkit/pmr.hpp>
#include <memkit/small_vector.hpp>

#include <cstdio>
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
    memkit::small_vector<int, 4> v;
    for (int i = 0; i < 10; i++)
        v.push_back(i);
    ok &= v.size() == 10 && !v.is_inline();
    MK_LOCALBUF(buf, 64);
    ok &= mk_localbuf_append(&buf, "abc", 3) != nullptr && mk_localbuf_is_inline(&buf);
    std::puts(ok ? "ok" : "FAILED");
    return !ok;
}
