// cxxplugin_lib.cc - the C++ library cxxplugin.c loads with RTLD_LOCAL.
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
    wide *w = new wide();
    sum += 1 + w->bytes[0];
    delete w;
    return sum;
}
