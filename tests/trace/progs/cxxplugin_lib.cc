// cxxplugin_lib.cc - the C++ library cxxplugin.c loads with RTLD_LOCAL.
#include <cstddef>
#include <new>

struct alignas(64) wide {
    char bytes[64];
};

extern "C" int plugin_work(int n);

extern "C" int plugin_work(int n)
{
    int sum = 0;
    for (int i = 0; i < n; i++) {
        int *one = new int(4);
        int *four = new int[4]();
        sum += *one + four[0];
        delete one;
        delete[] four;
    }
    // A new that throws through the tracer's hook (its cleanup's unwinding
    // is forwarded to this library's libgcc_s, in its local scope): the
    // exception arrives here, and what comes after is counted as before.
    volatile size_t huge = static_cast<size_t>(1) << 62;
    try {
        char *p = new char[huge];
        delete[] p;
        return -1;
    } catch (const std::bad_alloc &) {
    }
    wide *w = new wide();
    sum += 1 + w->bytes[0];
    delete w;
    return sum;
}
