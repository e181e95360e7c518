// cxx.cc - every operator new/delete variant a known number of times:
// new 3 (plain 2, nothrow 1), new[] 2, aligned new 1, aligned new[] 1;
// delete 3 (one sized), delete[] 2, aligned deletes 2. One std::bad_alloc
// thrown by a huge new is caught (not counted: the call never returns),
// after the new_handler installed for it ran once: exit status 1 otherwise.
#include <cstdlib>
#include <new>

static int handler_calls;

// Called by operator new when malloc fails; without a handler the next
// failure throws std::bad_alloc.
static void give_up()
{
    handler_calls++;
    std::set_new_handler(nullptr);
}

struct alignas(64) Wide {
    char bytes[64];
};

int main()
{
    int *a = new int(1);
    long *b = new long(2);
    char *c = new (std::nothrow) char[1]; // nothrow new[]: counted as new[]
    int *arr = new int[10];
    Wide *w = new Wide;
    Wide *wa = new Wide[2];
    int *n = new (std::nothrow) int(3);
    delete a;
    ::operator delete(b, sizeof *b); // sized delete
    delete n;
    delete[] c;
    delete[] arr;
    delete w;
    delete[] wa;
    std::set_new_handler(give_up);
    try {
        volatile std::size_t huge = static_cast<std::size_t>(-1) / 2;
        char *never = new char[huge];
        never[0] = 0;
    } catch (const std::bad_alloc &) {
    }
    return handler_calls == 1 ? 0 : 1;
}
