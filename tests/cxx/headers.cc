// headers.cc - every public header, and every typed macro, in C++: compiled
// by tests/cxx/headers.sh with g++ and clang++ at -std=c++17 and c++20
// (clang++ accepts C11's _Alignof as an extension; g++ does not, so only
// this test notices a header that slips back to it).
#include <memkit/allocators.hpp>
#include <memkit/memkit.h>
#include <memkit/pmr.hpp>
#include <memkit/small_vector.hpp>

#include <cstdio>

struct alignas(32) wide {
    char bytes[32];
};

int main()
{
    int failures = 0;
    mk_stack_t *st = mk_stack_create();
    {
        MK_STACK_SCOPE(st);
        wide *w = mk_stack_new(st, wide, 2);
        int *z = mk_stack_new0(st, int, 4);
        failures += (reinterpret_cast<uintptr_t>(w) % alignof(wide) != 0) + (z[3] != 0);
    }
    {
        /* the stack's cursor and the C++ allocators, in every compiler and mode */
        mk_stack_push(st);
        mk_stack_cursor_t c = mk_stack_cursor_open(st);
        wide *w = mk_stack_cursor_new(&c, wide, 1);
        mk_stack_cursor_close(&c);
        failures += reinterpret_cast<uintptr_t>(w) % alignof(wide) != 0;
        mk_stack_pop(st);
        memkit::frame f(st);
        memkit::frame_allocator<wide> fa(f);
        wide *x = fa.allocate(3);
        failures += reinterpret_cast<uintptr_t>(x) % alignof(wide) != 0;
        fa.deallocate(x, 3);
    }
    mk_stack_destroy(st);
    {
        MK_SCOPE();
        double *d = mk_t_new(double, 3);
        long *l = mk_t_new0(long, 2);
        char *s = mk_t_strdup("x");
        char *f = mk_t_fmt("%d", 7);
        failures += (d == nullptr) + (l[1] != 0) + (s[0] != 'x') + (f[0] != '7');
    }
    mk_fifo_t *fifo = mk_fifo_create(nullptr);
    wide *fw = mk_fifo_new(fifo, wide, 1);
    failures += reinterpret_cast<uintptr_t>(fw) % alignof(wide) != 0;
    mk_fifo_free(fifo, fw);
    mk_fifo_destroy(fifo);
    mk_ring_t *ring = mk_ring_create(nullptr);
    mk_ring_frame_t *frame = mk_ring_open(ring);
    wide *rw = mk_ring_new(ring, wide, 1);
    failures += reinterpret_cast<uintptr_t>(rw) % alignof(wide) != 0;
    mk_ring_seal(ring);
    mk_ring_release(frame);
    mk_ring_destroy(ring);
    {
        MK_SMALLVEC(v, int, 4);
        int *slot = static_cast<int *>(mk_smallvec_push(&v));
        failures += slot == nullptr;
    }
    std::puts(failures ? "failed" : "ok");
    return failures != 0;
}
