/* cxxplugin.c LIB - a C program (no libstdc++ of its own) that loads a C++
 * library with RTLD_LOCAL, as binutils load their LTO plugin: libstdc++ is
 * then only in the library's local scope. It calls the library, unloads it,
 * loads it again and calls it again. Per call: 10 new/delete and 10
 * new[]/delete[] pairs, a new[] that throws bad_alloc (caught in the
 * library), and one aligned new/delete. */
#include <dlfcn.h>
#include <stdio.h>

static int call_plugin(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "cxxplugin: %s\n", dlerror());
        return 1;
    }
    int (*work)(int) = (int (*)(int))dlsym(h, "plugin_work");
    if (!work || work(10) != 10 * 4 + 1) {
        fprintf(stderr, "cxxplugin: plugin_work failed\n");
        return 1;
    }
    dlclose(h);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    if (call_plugin(argv[1]) || call_plugin(argv[1]))
        return 1;
    puts("cxxplugin: done");
    return 0;
}
