/*
 * memkit/allocators.hpp - libmemkit as C++ allocators, without std::pmr (C++17,
 * header-only).
 *
 * std::pmr pays a virtual call per allocation and per deallocation, and
 * libstdc++'s pmr containers grow more slowly than the std ones (they relocate
 * element by element). These allocators are plain templates: the container
 * inlines memkit's fast path.
 *
 *     {
 *         memkit::frame f;                                   // a frame of mk_tstack()
 *         std::vector<int, memkit::frame_allocator<int>> v(f); // bump allocation
 *     }                                                      // popped: all gone at once
 *
 *     memkit::pool_set nodes;                                // a pool per node size
 *     std::map<int, int, std::less<int>,
 *              memkit::pool_allocator<std::pair<const int, int>>> m(nodes);
 *
 *     memkit::fifo queue;                                    // blocks freed in order
 *     std::list<job, memkit::fifo_allocator<job>> jobs(queue);
 *
 * The arenas (frame, pool_set, fifo) own memkit's allocators and outlive the
 * containers that use them; an allocator is a pointer to its arena. So:
 *   - allocators compare equal exactly when they use the same arena;
 *   - rebinding (a node type from an element type) keeps the arena;
 *   - moving or swapping containers moves or swaps their allocators with their
 *     memory (propagate_on_container_move_assignment and _swap are true), so a
 *     move never copies and a swap never mixes arenas; copy assignment keeps
 *     the target's arena (its elements are copied into it), and a copy
 *     constructed container uses the source's arena.
 * Like the C allocators beneath them, arenas are single-threaded. Exhaustion
 * throws std::bad_alloc.
 *
 * Misuse is checked where it can be: a frame_allocator allocating while a
 * newer frame is open on its stack aborts (the block would die with that
 * frame). In debug mode (arenas built with debug = true, the default when
 * NDEBUG is not defined), a deallocation into the wrong pool or FIFO aborts
 * with a message instead of corrupting it; in release mode it is undefined.
 */
#ifndef MEMKIT_ALLOCATORS_HPP
#define MEMKIT_ALLOCATORS_HPP

/* C++17 is required (std::align_val_t, std::pmr, inline variables): one
 * clear error, the rest of the header skipped, rather than a page of them.
 * MSVC reports its standard in _MSVC_LANG. */
#if (defined(_MSVC_LANG) ? _MSVC_LANG : __cplusplus) < 201703L
#error "memkit/allocators.hpp needs C++17 or later (-std=c++17)"
#else

#include <memkit/memkit.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <type_traits>

namespace memkit
{

#ifdef NDEBUG
inline constexpr bool debug_default = false;
#else
inline constexpr bool debug_default = true;
#endif

namespace detail
{
[[noreturn]] inline void die(const char *msg)
{
    std::fprintf(stderr, "memkit: %s\n", msg);
    std::abort();
}
} // namespace detail

/* ------------------------------------------------------------------------ */
/* arenas                                                                    */

/* A frame of an mk_stack (the thread's by default), pushed at construction and
 * popped at destruction, recorded at the caller's file and line. */
class frame
{
  public:
    explicit frame(mk_stack_t *st = mk_tstack(), const char *file = __builtin_FILE(),
                   int line = __builtin_LINE())
        : st_(st), frame_(mk_stack_push_at(st, file, line))
    {
    }
    ~frame()
    {
        mk_stack_pop_frame(frame_);
    }
    frame(const frame &) = delete;
    frame &operator=(const frame &) = delete;

    void *allocate(std::size_t bytes, std::size_t align)
    {
        if (st_->frame != frame_) /* mk_stack allocates in the innermost frame */
            detail::die("memkit::frame: allocation while a newer frame is open on its "
                        "stack (the block would be freed by that frame's pop)");
        void *p = mk_stack_alloc_aligned(st_, bytes, align);
        if (!p)
            throw std::bad_alloc();
        return p;
    }
    /* Nothing: the frame's pop releases every block at once. */
    void deallocate(void *, std::size_t, std::size_t) noexcept {}
    mk_stack_t *stack() const noexcept
    {
        return st_;
    }

  private:
    mk_stack_t *st_;
    mk_stack_frame_t *frame_;
};

/* A pool per block size up to max_block (256 bytes by default), up to 8 sizes:
 * what node containers allocate, one node at a time. Larger or more requests,
 * arrays (a hash table's buckets) and over-aligned ones go to operator new
 * (pool_resource sends them upstream instead, through pool_of). */
class pool_set
{
  public:
    static constexpr int max_sizes = 8;

    explicit pool_set(std::size_t max_block = 256, bool debug = debug_default)
        : max_block_(max_block), debug_(debug)
    {
    }
    ~pool_set()
    {
        for (int i = 0; i < n_; i++)
            mk_pool_destroy(slot_[i].pool);
    }
    pool_set(const pool_set &) = delete;
    pool_set &operator=(const pool_set &) = delete;

    void *allocate(std::size_t bytes, std::size_t align)
    {
        if (mk_pool_t *pool = pool_of(bytes, align, true)) {
            void *p = mk_pool_alloc(pool);
            if (!p)
                throw std::bad_alloc();
            return p;
        }
        return ::operator new(bytes, std::align_val_t(align));
    }
    /* The same size and alignment as the allocation: the same decision. */
    void deallocate(void *p, std::size_t bytes, std::size_t align) noexcept
    {
        if (mk_pool_t *pool = pool_of(bytes, align, false))
            mk_pool_free(pool, p);
        else
            ::operator delete(p, std::align_val_t(align));
    }

    /* The pool of this size; made on first use when `create`. NULL: not pooled.
     * The last size found is checked first: a container uses one node size. */
    mk_pool_t *pool_of(std::size_t bytes, std::size_t align, bool create)
    {
        if (MK_LIKELY(n_ && slot_[last_].size == bytes) && align <= MK_MALLOC_ALIGN)
            return slot_[last_].pool;
        if (bytes == 0 || bytes > max_block_ || align > MK_MALLOC_ALIGN)
            return nullptr;
        for (int i = 0; i < n_; i++)
            if (slot_[i].size == bytes) {
                last_ = i;
                return slot_[i].pool;
            }
        if (!create || n_ == max_sizes)
            return nullptr;
        mk_pool_config_t cfg{};
        cfg.item_size = bytes;
        cfg.align = MK_MALLOC_ALIGN;
        cfg.flags = debug_ ? MK_POOL_DEBUG : 0;
        mk_pool_t *pool = mk_pool_create(&cfg);
        if (!pool)
            throw std::bad_alloc();
        last_ = n_;
        slot_[n_++] = slot{bytes, pool};
        return pool;
    }

  private:
    struct slot {
        std::size_t size;
        mk_pool_t *pool;
    };

    std::size_t max_block_;
    bool debug_;
    slot slot_[max_sizes];
    int n_ = 0, last_ = 0;
};

/* An mk_fifo: for blocks freed in about the order they were allocated. */
class fifo
{
  public:
    explicit fifo(bool debug = debug_default) : fifo(debug_config(debug)) {}
    /* config as mk_fifo_create's (NULL: the defaults). */
    explicit fifo(const mk_fifo_config_t *config) : fifo_(mk_fifo_create(config))
    {
        if (!fifo_)
            throw std::bad_alloc();
    }
    ~fifo()
    {
        mk_fifo_destroy(fifo_);
    }
    fifo(const fifo &) = delete;
    fifo &operator=(const fifo &) = delete;

    void *allocate(std::size_t bytes, std::size_t align)
    {
        /* every FIFO block is 8-aligned already; smaller requests ask for that */
        void *p = mk_fifo_alloc_aligned(fifo_, bytes,
                                        align < MK_FIFO_GRAIN ? MK_FIFO_GRAIN : align);
        if (!p)
            throw std::bad_alloc();
        return p;
    }
    void deallocate(void *p, std::size_t, std::size_t) noexcept
    {
        mk_fifo_free(fifo_, p);
    }
    mk_fifo_t *get() const noexcept
    {
        return fifo_;
    }

  private:
    static const mk_fifo_config_t *debug_config(bool debug)
    {
        static const mk_fifo_config_t on = {0, 0, MK_FIFO_DEBUG, 0};
        return debug ? &on : nullptr;
    }

    mk_fifo_t *fifo_;
};

/* ------------------------------------------------------------------------ */
/* allocators                                                                */

namespace detail
{
/* What the three allocators share: a pointer to their arena, the traits, and
 * allocate/deallocate through the arena. Each allocator adds its constructors
 * (the converting one is what rebinding needs). */
template <class T, class Arena> class arena_allocator
{
  public:
    using value_type = T;
    using propagate_on_container_copy_assignment = std::false_type;
    using propagate_on_container_move_assignment = std::true_type;
    using propagate_on_container_swap = std::true_type;
    using is_always_equal = std::false_type;

    T *allocate(std::size_t n)
    {
        if (n > std::size_t(-1) / sizeof(T))
            throw std::bad_array_new_length();
        return static_cast<T *>(a_->allocate(n * sizeof(T), alignof(T)));
    }
    void deallocate(T *p, std::size_t n) noexcept
    {
        a_->deallocate(p, n * sizeof(T), alignof(T));
    }
    Arena *arena() const noexcept
    {
        return a_;
    }

  protected:
    explicit arena_allocator(Arena *a) noexcept : a_(a) {}

    Arena *a_;
};
} // namespace detail

/* From a frame: deallocation does nothing, the frame's pop releases it all. */
template <class T> class frame_allocator : public detail::arena_allocator<T, frame>
{
  public:
    frame_allocator(frame &f) noexcept // NOLINT: implicit on purpose
        : detail::arena_allocator<T, frame>(&f)
    {
    }
    template <class U>
    frame_allocator(const frame_allocator<U> &o) noexcept
        : detail::arena_allocator<T, frame>(o.arena())
    {
    }
};

/* From a pool_set: one node at a time from the pool of its size. */
template <class T> class pool_allocator : public detail::arena_allocator<T, pool_set>
{
  public:
    pool_allocator(pool_set &s) noexcept // NOLINT: implicit on purpose
        : detail::arena_allocator<T, pool_set>(&s)
    {
    }
    template <class U>
    pool_allocator(const pool_allocator<U> &o) noexcept
        : detail::arena_allocator<T, pool_set>(o.arena())
    {
    }
};

/* From a fifo. */
template <class T> class fifo_allocator : public detail::arena_allocator<T, fifo>
{
  public:
    fifo_allocator(fifo &f) noexcept // NOLINT: implicit on purpose
        : detail::arena_allocator<T, fifo>(&f)
    {
    }
    template <class U>
    fifo_allocator(const fifo_allocator<U> &o) noexcept
        : detail::arena_allocator<T, fifo>(o.arena())
    {
    }
};

#define MEMKIT__ALLOCATOR_EQ(A)                                                          \
    template <class T, class U> bool operator==(const A<T> &a, const A<U> &b) noexcept   \
    {                                                                                    \
        return a.arena() == b.arena();                                                   \
    }                                                                                    \
    template <class T, class U> bool operator!=(const A<T> &a, const A<U> &b) noexcept   \
    {                                                                                    \
        return a.arena() != b.arena();                                                   \
    }
MEMKIT__ALLOCATOR_EQ(frame_allocator)
MEMKIT__ALLOCATOR_EQ(pool_allocator)
MEMKIT__ALLOCATOR_EQ(fifo_allocator)
#undef MEMKIT__ALLOCATOR_EQ

} // namespace memkit

#endif /* C++17 */
#endif /* MEMKIT_ALLOCATORS_HPP */
