/*
 * hooks_cxx.c - C++ operator new and delete, every variant, by their mangled
 * names. Each forwards to the next definition (libstdc++'s or libc++'s), so
 * new_handler loops and std::bad_alloc behave exactly as without memkit; the
 * malloc inside is unrecorded because the hook's in_hook flag is set. This
 * file is built with -fexceptions: a throwing new unwinds through the hook,
 * and the cleanup below leaves the hook (clears the flag) on the way.
 */
#define _GNU_SOURCE
#include "record.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef void *(*new_fn)(size_t);
typedef void *(*new_nt_fn)(size_t, const void *);
typedef void *(*new_al_fn)(size_t, size_t);
typedef void *(*new_al_nt_fn)(size_t, size_t, const void *);
typedef void (*del_fn)(void *);
typedef void (*del_sz_fn)(void *, size_t);
typedef void (*del_nt_fn)(void *, const void *);
typedef void (*del_al_fn)(void *, size_t);
typedef void (*del_sz_al_fn)(void *, size_t, size_t);
typedef void (*del_al_nt_fn)(void *, size_t, const void *);

/* The next definition of a C++ operator (libstdc++ may be loaded later than
 * we are, by dlopen). One that nothing defines cannot have been called. */
static void *cxx_next(void *f)
{
    if (MK_LIKELY(f != NULL))
        return f;
    static const char msg[] = "memkit: no C++ runtime found for an operator new/delete\n";
    ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)w;
    abort();
}

#define CXX_NEXT(type, name) ((type)cxx_next(NEXT(void *, name)))

static void leave_cleanup(mk_thread_t **t)
{
    if (*t)
        mk_leave(*t);
}

#define SCOPED_ENTER() mk_thread_t *t __attribute__((cleanup(leave_cleanup))) = mk_enter()
#define STRIP(...)     __VA_ARGS__ /* STRIP (a, b) is a, b: to extend a parameter list */

/* ---- new ----
 *
 * As malloc and free (hooks.c): --summary-only's body and the general one
 * apart, behind a one-test dispatch. Both run the next operator inside the
 * hook, so the malloc inside it goes straight through unrecorded. */

#define NEW_HOOK(sym, kind, params, fn_type, args)                                       \
    static __attribute__((noinline)) void *general##sym(uintptr_t ra, STRIP params)      \
    {                                                                                    \
        fn_type next = CXX_NEXT(fn_type, #sym);                                          \
        SCOPED_ENTER();                                                                  \
        void *p = next args; /* may throw: the cleanup leaves */                         \
        if (t)                                                                           \
            record_alloc(t, kind, size, ALIGN_ARG, p, ra);                               \
        return p;                                                                        \
    }                                                                                    \
    static __attribute__((noinline)) void *summary##sym(uintptr_t ra, STRIP params)      \
    {                                                                                    \
        if (mk_nested())                                                                 \
            return CXX_NEXT(fn_type, #sym) args; /* nested */                            \
        mk_thread_t *t __attribute__((cleanup(leave_cleanup))) = mk_summary_enter();     \
        if (MK_UNLIKELY(!t))                                                             \
            return general##sym(ra, STRIP args);                                         \
        void *p =                                                                        \
            CXX_NEXT(fn_type, #sym) args; /* may throw: uncounted, as in a trace */      \
        mk_summary_alloc(t, kind, size, (uintptr_t)p, ra);                               \
        return p;                                                                        \
    }                                                                                    \
    MK_EXPORT void *sym params;                                                          \
    MK_EXPORT void *sym params                                                           \
    {                                                                                    \
        if (MK_LIKELY(mk_st.summary_fast))                                               \
            return summary##sym(CALLER(), STRIP args);                                   \
        return general##sym(CALLER(), STRIP args);                                       \
    }

#define ALIGN_ARG 0
NEW_HOOK(_Znwm, MK_K_NEW, (size_t size), new_fn, (size))
NEW_HOOK(_Znam, MK_K_NEW_ARRAY, (size_t size), new_fn, (size))
NEW_HOOK(_ZnwmRKSt9nothrow_t, MK_K_NEW, (size_t size, const void *nt), new_nt_fn,
         (size, nt))
NEW_HOOK(_ZnamRKSt9nothrow_t, MK_K_NEW_ARRAY, (size_t size, const void *nt), new_nt_fn,
         (size, nt))
#undef ALIGN_ARG
#define ALIGN_ARG al
NEW_HOOK(_ZnwmSt11align_val_t, MK_K_NEW_ALIGNED, (size_t size, size_t al), new_al_fn,
         (size, al))
NEW_HOOK(_ZnamSt11align_val_t, MK_K_NEW_ARRAY_ALIGNED, (size_t size, size_t al),
         new_al_fn, (size, al))
NEW_HOOK(_ZnwmSt11align_val_tRKSt9nothrow_t, MK_K_NEW_ALIGNED,
         (size_t size, size_t al, const void *nt), new_al_nt_fn, (size, al, nt))
NEW_HOOK(_ZnamSt11align_val_tRKSt9nothrow_t, MK_K_NEW_ARRAY_ALIGNED,
         (size_t size, size_t al, const void *nt), new_al_nt_fn, (size, al, nt))
#undef ALIGN_ARG

/* ---- delete ---- */

#define DELETE_HOOK(sym, kind, params, fn_type, args)                                    \
    static __attribute__((noinline)) void general##sym params                            \
    {                                                                                    \
        fn_type next = CXX_NEXT(fn_type, #sym);                                          \
        SCOPED_ENTER();                                                                  \
        if (t)                                                                           \
            record_free(t, kind, p);                                                     \
        next args;                                                                       \
    }                                                                                    \
    static __attribute__((noinline)) void summary##sym params                            \
    {                                                                                    \
        if (mk_nested()) {                                                               \
            CXX_NEXT(fn_type, #sym) args; /* nested */                                   \
            return;                                                                      \
        }                                                                                \
        mk_thread_t *t = mk_summary_enter();                                             \
        if (MK_UNLIKELY(!t)) {                                                           \
            general##sym args;                                                           \
            return;                                                                      \
        }                                                                                \
        mk_summary_free(t, kind, (uintptr_t)p);                                          \
        CXX_NEXT(fn_type, #sym) args; /* in the hook: its free goes straight through */  \
        mk_leave(t);                                                                     \
    }                                                                                    \
    MK_EXPORT void sym params;                                                           \
    MK_EXPORT void sym params                                                            \
    {                                                                                    \
        if (MK_LIKELY(mk_st.summary_fast))                                               \
            summary##sym args;                                                           \
        else                                                                             \
            general##sym args;                                                           \
    }

DELETE_HOOK(_ZdlPv, MK_K_DELETE, (void *p), del_fn, (p))
DELETE_HOOK(_ZdaPv, MK_K_DELETE_ARRAY, (void *p), del_fn, (p))
DELETE_HOOK(_ZdlPvm, MK_K_DELETE, (void *p, size_t n), del_sz_fn, (p, n))
DELETE_HOOK(_ZdaPvm, MK_K_DELETE_ARRAY, (void *p, size_t n), del_sz_fn, (p, n))
DELETE_HOOK(_ZdlPvRKSt9nothrow_t, MK_K_DELETE, (void *p, const void *nt), del_nt_fn,
            (p, nt))
DELETE_HOOK(_ZdaPvRKSt9nothrow_t, MK_K_DELETE_ARRAY, (void *p, const void *nt), del_nt_fn,
            (p, nt))
DELETE_HOOK(_ZdlPvSt11align_val_t, MK_K_DELETE, (void *p, size_t al), del_al_fn, (p, al))
DELETE_HOOK(_ZdaPvSt11align_val_t, MK_K_DELETE_ARRAY, (void *p, size_t al), del_al_fn,
            (p, al))
DELETE_HOOK(_ZdlPvmSt11align_val_t, MK_K_DELETE, (void *p, size_t n, size_t al),
            del_sz_al_fn, (p, n, al))
DELETE_HOOK(_ZdaPvmSt11align_val_t, MK_K_DELETE_ARRAY, (void *p, size_t n, size_t al),
            del_sz_al_fn, (p, n, al))
DELETE_HOOK(_ZdlPvSt11align_val_tRKSt9nothrow_t, MK_K_DELETE,
            (void *p, size_t al, const void *nt), del_al_nt_fn, (p, al, nt))
DELETE_HOOK(_ZdaPvSt11align_val_tRKSt9nothrow_t, MK_K_DELETE_ARRAY,
            (void *p, size_t al, const void *nt), del_al_nt_fn, (p, al, nt))
