/*
 * memkit/pmr.hpp - libmemkit under C++ containers (C++17, header-only).
 *
 * std::pmr::memory_resource adapters, so a container takes memkit's allocators
 * with one constructor argument:
 *
 *     {
 *         memkit::stack_resource frame;                  // a frame of mk_tstack()
 *         std::pmr::vector<int> v(&frame);                // bump allocation
 *         std::pmr::string s("a longer string than SSO", &frame);
 *     }                                                   // all of it gone at once
 *
 *     memkit::pool_resource nodes;                        // a pool per node size
 *     std::pmr::unordered_map<int, int> m(&nodes);
 *
 *   stack_resource  a frame of an mk_stack (the thread's, or yours), pushed at
 *                   construction and popped at destruction: monotonic, deallocate
 *                   does nothing, everything is released by the pop. Allocating
 *                   while a newer frame is open on that stack aborts with a
 *                   message (the block would die with the newer frame).
 *   pool_resource   mk_pool for small fixed sizes: each distinct size up to
 *                   max_block (default 256 bytes) gets a pool, up to 8 sizes; other
 *                   requests go upstream. Node containers (map, set, list,
 *                   unordered_*) allocate one size over and over: that is the case.
 *   fifo_resource   mk_fifo: for blocks freed in about the order allocated (queues).
 *   tlsf_resource   mk_tlsf: general purpose, bounded time per call.
 *
 * All of them are single-threaded like the allocators under them, and compare
 * equal only to themselves. On exhaustion they throw std::bad_alloc.
 *
 * memkit::allocator<T> is a minimal std-compatible allocator over any
 * memory_resource (given at construction), for containers that take an
 * allocator type instead of using std::pmr.
 * memkit::stack_scope is an RAII frame (MK_SCOPE for C++), with the stack's
 * unbalanced-pop check intact.
 */
#ifndef MEMKIT_PMR_HPP
#define MEMKIT_PMR_HPP

/* C++17 is required (std::pmr, and allocators.hpp): one
 * clear error, the rest of the header skipped, rather than a page of them.
 * MSVC reports its standard in _MSVC_LANG. */
#if (defined(_MSVC_LANG) ? _MSVC_LANG : __cplusplus) < 201703L
#error "memkit/pmr.hpp needs C++17 or later (-std=c++17)"
#else

#include <memkit/allocators.hpp>
#include <memkit/memkit.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <memory_resource>
#include <new>

namespace memkit
{

/* ------------------------------------------------------------------------ */

/* Pushes a frame on a stack (the thread's by default) and pops it when it goes
 * out of scope; the frame is recorded at the caller's file and line. */
class stack_scope
{
  public:
    explicit stack_scope(mk_stack_t *st = mk_tstack(),
                         const char *file = __builtin_FILE(), int line = __builtin_LINE())
        : frame_(mk_stack_push_at(st, file, line))
    {
    }
    ~stack_scope()
    {
        mk_stack_pop_frame(frame_);
    }
    stack_scope(const stack_scope &) = delete;
    stack_scope &operator=(const stack_scope &) = delete;

  private:
    mk_stack_frame_t *frame_;
};

/* ------------------------------------------------------------------------ */

namespace detail
{
/* What every memkit resource shares: it owns its allocator, so it is neither
 * copied nor equal to any resource but itself. */
class unique_resource : public std::pmr::memory_resource
{
  public:
    unique_resource() = default;
    unique_resource(const unique_resource &) = delete;
    unique_resource &operator=(const unique_resource &) = delete;

  protected:
    bool do_is_equal(const std::pmr::memory_resource &other) const noexcept override
    {
        return this == &other;
    }
};
} // namespace detail

class stack_resource : public detail::unique_resource
{
  public:
    explicit stack_resource(mk_stack_t *st = mk_tstack(),
                            const char *file = __builtin_FILE(),
                            int line = __builtin_LINE())
        : frame_(st, file, line)
    {
    }

    mk_stack_t *stack() const noexcept
    {
        return frame_.stack();
    }

  protected:
    /* frame aborts if a newer frame is open on the stack (the block would die
     * with it) */
    void *do_allocate(std::size_t bytes, std::size_t align) override
    {
        return frame_.allocate(bytes, align);
    }
    void do_deallocate(void *, std::size_t, std::size_t) override {}

  private:
    memkit::frame frame_;
};

/* ------------------------------------------------------------------------ */

class pool_resource : public detail::unique_resource
{
  public:
    static constexpr int max_sizes = pool_set::max_sizes;

    /* Pools for every size up to max_block; others go to upstream. */
    explicit pool_resource(
        std::pmr::memory_resource *upstream = std::pmr::get_default_resource(),
        std::size_t max_block = 256)
        : upstream_(upstream), pools_(max_block, false)
    {
    }
    /* Exactly one pooled size. */
    pool_resource(std::size_t block_size, std::pmr::memory_resource *upstream)
        : upstream_(upstream), pools_(block_size, false), only_(block_size)
    {
    }

    std::pmr::memory_resource *upstream_resource() const noexcept
    {
        return upstream_;
    }

  protected:
    void *do_allocate(std::size_t bytes, std::size_t align) override
    {
        if (mk_pool_t *pool = pool_of(bytes, align, true)) {
            void *p = mk_pool_alloc(pool);
            if (!p)
                throw std::bad_alloc();
            return p;
        }
        return upstream_->allocate(bytes, align);
    }
    void do_deallocate(void *p, std::size_t bytes, std::size_t align) override
    {
        /* the same size and alignment as the allocation: the same decision */
        if (mk_pool_t *pool = pool_of(bytes, align, false))
            mk_pool_free(pool, p);
        else
            upstream_->deallocate(p, bytes, align);
    }

  private:
    mk_pool_t *pool_of(std::size_t bytes, std::size_t align, bool create)
    {
        return only_ && bytes != only_ ? nullptr : pools_.pool_of(bytes, align, create);
    }

    std::pmr::memory_resource *upstream_;
    pool_set pools_;
    std::size_t only_ = 0;
};

/* ------------------------------------------------------------------------ */

class fifo_resource : public detail::unique_resource
{
  public:
    explicit fifo_resource(const mk_fifo_config_t *config = nullptr) : fifo_(config) {}

    mk_fifo_t *fifo() const noexcept
    {
        return fifo_.get();
    }

  protected:
    void *do_allocate(std::size_t bytes, std::size_t align) override
    {
        return fifo_.allocate(bytes, align);
    }
    void do_deallocate(void *p, std::size_t bytes, std::size_t align) override
    {
        fifo_.deallocate(p, bytes, align);
    }

  private:
    memkit::fifo fifo_;
};

/* ------------------------------------------------------------------------ */

class tlsf_resource : public detail::unique_resource
{
  public:
    /* Default: a heap that maps more memory when it runs out. */
    explicit tlsf_resource(const mk_tlsf_config_t *config = nullptr)
    {
        mk_tlsf_config_t grow{};
        grow.flags = MK_TLSF_GROW;
        tlsf_ = mk_tlsf_create(config ? config : &grow);
        if (!tlsf_)
            throw std::bad_alloc();
    }
    ~tlsf_resource() override
    {
        mk_tlsf_destroy(tlsf_);
    }

    mk_tlsf_t *tlsf() const noexcept
    {
        return tlsf_;
    }

  protected:
    void *do_allocate(std::size_t bytes, std::size_t align) override
    {
        void *p = align <= MK_MALLOC_ALIGN ? mk_tlsf_malloc(tlsf_, bytes)
                                           : mk_tlsf_memalign(tlsf_, align, bytes);
        if (!p)
            throw std::bad_alloc();
        return p;
    }
    void do_deallocate(void *p, std::size_t, std::size_t) override
    {
        mk_tlsf_free(tlsf_, p);
    }

  private:
    mk_tlsf_t *tlsf_;
};

/* ------------------------------------------------------------------------ */

/* A std-compatible allocator over a memory_resource, for code whose containers
 * take an allocator type: std::vector<int, memkit::allocator<int>> v(&res). */
template <class T> class allocator
{
  public:
    using value_type = T;

    allocator(std::pmr::memory_resource *r) noexcept
        : r_(r) {} // NOLINT: implicit on purpose
    template <class U>
    allocator(const allocator<U> &other) noexcept : r_(other.resource())
    {
    }

    T *allocate(std::size_t n)
    {
        if (n > std::size_t(-1) / sizeof(T))
            throw std::bad_array_new_length();
        return static_cast<T *>(r_->allocate(n * sizeof(T), alignof(T)));
    }
    void deallocate(T *p, std::size_t n) noexcept
    {
        r_->deallocate(p, n * sizeof(T), alignof(T));
    }
    std::pmr::memory_resource *resource() const noexcept
    {
        return r_;
    }

  private:
    std::pmr::memory_resource *r_;
};

template <class T, class U>
bool operator==(const allocator<T> &a, const allocator<U> &b) noexcept
{
    return a.resource()->is_equal(*b.resource());
}
template <class T, class U>
bool operator!=(const allocator<T> &a, const allocator<U> &b) noexcept
{
    return !(a == b);
}

} // namespace memkit

#endif /* C++17 */
#endif /* MEMKIT_PMR_HPP */
