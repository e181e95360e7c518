/*
 * memkit/small_vector.hpp - memkit::small_vector<T, N>: a vector whose first N
 * elements live inside the object (on the stack, for a local), with storage
 * from a std::pmr::memory_resource only beyond N (C++17, header-only).
 *
 *     memkit::small_vector<pollfd, 8> fds;                 // 8 inline
 *     memkit::small_vector<int, 16> ids(&frame_resource);  // beyond 16: from a frame
 *
 * The local buffer optimization of the C++ book's allocation chapter, with the
 * fallback pluggable: the default resource (new/delete), or any of memkit's
 * (memkit/pmr.hpp). Moving a small_vector that spilled steals its block;
 * moving one that did not moves its elements. Growth doubles; iterators and
 * references are invalidated by growth as std::vector's are. emplace_back of
 * an element of the same vector is safe.
 */
#ifndef MEMKIT_SMALL_VECTOR_HPP
#define MEMKIT_SMALL_VECTOR_HPP

/* C++17 is required (std::pmr, std::launder, std::destroy): one
 * clear error, the rest of the header skipped, rather than a page of them.
 * MSVC reports its standard in _MSVC_LANG. */
#if (defined(_MSVC_LANG) ? _MSVC_LANG : __cplusplus) < 201703L
#error "memkit/small_vector.hpp needs C++17 or later (-std=c++17)"
#else

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <memory_resource>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace memkit
{

template <class T, std::size_t N> class small_vector
{
    static_assert(N > 0, "small_vector needs room for at least one element inline");

  public:
    using value_type = T;
    using size_type = std::size_t;
    using reference = T &;
    using const_reference = const T &;
    using iterator = T *;
    using const_iterator = const T *;

    explicit small_vector(
        std::pmr::memory_resource *r = std::pmr::get_default_resource()) noexcept
        : data_(inline_data()), r_(r)
    {
    }
    small_vector(std::initializer_list<T> init,
                 std::pmr::memory_resource *r = std::pmr::get_default_resource())
        : small_vector(r)
    {
        reserve(init.size());
        for (const T &x : init)
            push_back(x);
    }
    small_vector(const small_vector &o) : small_vector(o.r_)
    {
        reserve(o.size_);
        for (const T &x : o)
            push_back(x);
    }
    small_vector(small_vector &&o) noexcept(std::is_nothrow_move_constructible_v<T>)
        : small_vector(o.r_)
    {
        take(std::move(o));
    }
    small_vector &operator=(const small_vector &o)
    {
        if (this != &o) {
            clear();
            reserve(o.size_);
            for (const T &x : o)
                push_back(x);
        }
        return *this;
    }
    small_vector &
    operator=(small_vector &&o) noexcept(std::is_nothrow_move_constructible_v<T>)
    {
        if (this != &o) {
            clear();
            release();
            take(std::move(o));
        }
        return *this;
    }
    ~small_vector()
    {
        clear();
        release();
    }

    /* ---- access ---- */
    T *data() noexcept
    {
        return data_;
    }
    const T *data() const noexcept
    {
        return data_;
    }
    size_type size() const noexcept
    {
        return size_;
    }
    size_type capacity() const noexcept
    {
        return cap_;
    }
    bool empty() const noexcept
    {
        return size_ == 0;
    }
    /* True while the elements live in the object itself. */
    bool is_inline() const noexcept
    {
        return data_ == inline_data();
    }
    std::pmr::memory_resource *resource() const noexcept
    {
        return r_;
    }

    T &operator[](size_type i) noexcept
    {
        return data_[i];
    }
    const T &operator[](size_type i) const noexcept
    {
        return data_[i];
    }
    T &at(size_type i)
    {
        if (i >= size_)
            throw std::out_of_range("memkit::small_vector::at");
        return data_[i];
    }
    T &front() noexcept
    {
        return data_[0];
    }
    T &back() noexcept
    {
        return data_[size_ - 1];
    }
    iterator begin() noexcept
    {
        return data_;
    }
    iterator end() noexcept
    {
        return data_ + size_;
    }
    const_iterator begin() const noexcept
    {
        return data_;
    }
    const_iterator end() const noexcept
    {
        return data_ + size_;
    }

    /* ---- modifiers ---- */
    template <class... Args> T &emplace_back(Args &&...args)
    {
        if (size_ == cap_)
            return grow_and_emplace(std::forward<Args>(args)...);
        T *p = ::new (static_cast<void *>(data_ + size_)) T(std::forward<Args>(args)...);
        size_++;
        return *p;
    }
    void push_back(const T &x)
    {
        emplace_back(x);
    }
    void push_back(T &&x)
    {
        emplace_back(std::move(x));
    }
    void pop_back() noexcept
    {
        data_[--size_].~T();
    }
    void clear() noexcept
    {
        std::destroy(data_, data_ + size_);
        size_ = 0;
    }
    void reserve(size_type n)
    {
        if (n <= cap_)
            return;
        T *fresh = allocate(n);
        try {
            relocate(fresh, n);
        } catch (...) {
            r_->deallocate(fresh, n * sizeof(T), alignof(T));
            throw;
        }
    }
    void resize(size_type n)
    {
        if (n < size_) {
            std::destroy(data_ + n, data_ + size_);
            size_ = n;
            return;
        }
        reserve(n);
        while (size_ < n)
            emplace_back();
    }

  private:
    T *inline_data() noexcept
    {
        return std::launder(reinterpret_cast<T *>(inline_));
    }
    const T *inline_data() const noexcept
    {
        return std::launder(reinterpret_cast<const T *>(inline_));
    }

    T *allocate(size_type n)
    {
        if (n > std::size_t(-1) / sizeof(T))
            throw std::bad_array_new_length();
        return static_cast<T *>(r_->allocate(n * sizeof(T), alignof(T)));
    }

    /* Gives back the heap block, if any, and returns to the inline storage. */
    void release() noexcept
    {
        if (!is_inline())
            r_->deallocate(data_, cap_ * sizeof(T), alignof(T));
        data_ = inline_data();
        cap_ = N;
    }

    /* Moves the elements into fresh storage of n elements (move if it cannot
     * throw, else copy, so a throwing copy leaves the vector as it was; the
     * caller then still owns `fresh`). */
    void relocate(T *fresh, size_type n)
    {
        if constexpr (std::is_nothrow_move_constructible_v<T>)
            std::uninitialized_move(data_, data_ + size_, fresh);
        else
            std::uninitialized_copy(data_, data_ + size_, fresh);
        std::destroy(data_, data_ + size_);
        if (!is_inline())
            r_->deallocate(data_, cap_ * sizeof(T), alignof(T));
        data_ = fresh;
        cap_ = n;
    }

    /* The new element is built in the new storage before the old elements move,
     * so args may refer to one of them. */
    template <class... Args> T &grow_and_emplace(Args &&...args)
    {
        size_type n = std::max<size_type>(cap_ * 2, size_ + 1);
        T *fresh = allocate(n);
        T *p;
        try {
            p = ::new (static_cast<void *>(fresh + size_)) T(std::forward<Args>(args)...);
        } catch (...) {
            r_->deallocate(fresh, n * sizeof(T), alignof(T));
            throw;
        }
        try {
            relocate(fresh, n);
        } catch (...) {
            p->~T();
            r_->deallocate(fresh, n * sizeof(T), alignof(T));
            throw;
        }
        size_++;
        return *p;
    }

    /* Takes o's elements: its block if it spilled (same resource), else moves
     * them one by one. o is left empty and inline. */
    void take(small_vector &&o)
    {
        if (!o.is_inline() && o.r_->is_equal(*r_)) {
            data_ = o.data_;
            cap_ = o.cap_;
            size_ = o.size_;
            o.data_ = o.inline_data();
            o.cap_ = N;
            o.size_ = 0;
            return;
        }
        reserve(o.size_);
        for (T &x : o)
            emplace_back(std::move(x));
        o.clear();
        o.release();
    }

    T *data_;
    size_type size_ = 0, cap_ = N;
    std::pmr::memory_resource *r_;
    alignas(T) unsigned char inline_[N * sizeof(T)];
};

} // namespace memkit

#endif /* C++17 */
#endif /* MEMKIT_SMALL_VECTOR_HPP */
