/*
 * memkit/common.h - definitions shared by every libmemkit header.
 *
 * libmemkit is the "fix" half of memkit: special-purpose allocators that replace
 * malloc where a trace shows a pattern malloc handles badly. Every public name is
 * prefixed mk_ (functions, types) or MK_ (macros). Names with a double underscore
 * (mk__, MK__) are internal even when they appear in a header.
 */
#ifndef MEMKIT_COMMON_H
#define MEMKIT_COMMON_H

#include <stddef.h>
#include <stdint.h>

#define MK_VERSION_MAJOR  0
#define MK_VERSION_MINOR  1
#define MK_VERSION_PATCH  0
#define MK_VERSION_STRING "0.1.0"

#ifdef __cplusplus
/* In C++ a struct tag and a function of the same name (mk_pool_stats) trip
 * -Wshadow in the user's build; the C API keeps C's names. */
#define MK__EXTERN_C_BEGIN                                                               \
    _Pragma("GCC diagnostic push")                                                       \
        _Pragma("GCC diagnostic ignored \"-Wshadow\"") extern "C"                        \
    {
#define MK__EXTERN_C_END                                                                 \
    }                                                                                    \
    _Pragma("GCC diagnostic pop")
#else
#define MK__EXTERN_C_BEGIN
#define MK__EXTERN_C_END
#endif

/* Symbols exported from the shared library (built with -fvisibility=hidden). */
#define MK_API __attribute__((visibility("default")))

#define MK_LIKELY(x)   __builtin_expect(!!(x), 1)
#define MK_UNLIKELY(x) __builtin_expect(!!(x), 0)

#define MK__CAT2(a, b) a##b
#define MK__CAT(a, b)  MK__CAT2(a, b)
/* A name unique within one source line, for variables declared by scope macros. */
#define MK__UNIQ(prefix) MK__CAT(prefix, __LINE__)

/* The alignment malloc guarantees; the default for untyped allocations. */
#define MK_MALLOC_ALIGN 16

/* A type's alignment and a compile-time check, in C11 and in C++ alike
 * (g++ knows neither _Alignof nor _Static_assert in C++). */
#ifdef __cplusplus
#define MK_ALIGNOF(type)            alignof(type)
#define MK_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define MK_ALIGNOF(type)            _Alignof(type)
#define MK_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

MK__EXTERN_C_BEGIN

/* Version of the library actually linked, e.g. "0.1.0". */
MK_API const char *mk_version(void);

MK__EXTERN_C_END

#endif /* MEMKIT_COMMON_H */
