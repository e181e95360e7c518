// cxxownmalloc.cc - a C++ program with its own malloc family: the standard
// library's operator new must reach the program's malloc, traced or not
// (memkit's new hook may only call malloc itself when malloc is its own).
// 100 new/delete pairs, each block checked to come from the program's
// arena; "cxxownmalloc: done" and status 0, or status 1.
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <sys/mman.h>

static const std::size_t arena_size = 64u << 20;
static char *arena, *next_free;

// A bump allocator: a 16-byte header holding the size; free does nothing.
extern "C" void *malloc(std::size_t n)
{
    if (!arena) {
        arena = static_cast<char *>(mmap(nullptr, arena_size, PROT_READ | PROT_WRITE,
                                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        next_free = arena;
    }
    n = (n + 15) & ~static_cast<std::size_t>(15);
    if (arena == MAP_FAILED ||
        static_cast<std::size_t>(arena + arena_size - next_free) < n + 16)
        return nullptr;
    char *p = next_free + 16;
    std::memcpy(next_free, &n, sizeof n);
    next_free += n + 16;
    return p;
}

extern "C" void free(void *p)
{
    (void)p;
}

extern "C" void *calloc(std::size_t n, std::size_t size)
{
    return malloc(n * size); // the arena is fresh memory: already zero
}

extern "C" void *realloc(void *p, std::size_t n)
{
    char *q = static_cast<char *>(malloc(n));
    if (p && q) {
        std::size_t old;
        std::memcpy(&old, static_cast<char *>(p) - 16, sizeof old);
        std::memcpy(q, p, old < n ? old : n);
    }
    return q;
}

static bool ours(const void *p)
{
    return arena && static_cast<const char *>(p) >= arena &&
           static_cast<const char *>(p) < arena + arena_size;
}

int main()
{
    for (int i = 0; i < 100; i++) {
        int *a = new int(i);
        long *b = new long[4];
        if (!ours(a) || !ours(b)) {
            std::printf("cxxownmalloc: new did not use the program's malloc\n");
            return 1;
        }
        delete a;
        delete[] b;
    }
    std::printf("cxxownmalloc: done\n");
    return 0;
}
