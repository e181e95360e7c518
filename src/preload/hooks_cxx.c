/*
 * hooks_cxx.c - C++ operator new and delete, every variant, by their mangled
 * names. Each forwards to the next definition (libstdc++'s or libc++'s), so
 * new_handler loops and std::bad_alloc behave exactly as without memkit; the
 * malloc inside is unrecorded because the hook's in_hook flag is set. The
 * plain operators call the real malloc or free themselves when that is all
 * the next definition would do (below). This
 * file is built with -fexceptions: a throwing new unwinds through the hook,
 * and the cleanup below leaves the hook (clears the flag) on the way.
 */
#define _GNU_SOURCE
#include "elf_sym.h"
#include "modules.h"
#include "record.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* ---- finding the real operators ----
 *
 * The next definition is usually libstdc++'s, found by dlsym(RTLD_NEXT). A C
 * program that dlopens a C++ library with RTLD_LOCAL (binutils' LTO plugin,
 * Python extensions) has libstdc++ only in that library's local scope: its
 * calls still bind to our operators (we are in the global scope), but
 * RTLD_NEXT finds nothing. Then each loaded object is asked in its own scope,
 * and the object that defines the operator is pinned (RTLD_NODELETE): the
 * pointer we keep must outlive a dlclose of the plugin. When nothing defines
 * it, the hook falls back to malloc/free semantics rather than abort a
 * program that runs fine untraced. */

#define CXX_MAX_OBJECTS 1024

struct cxx_objects {
    const char *names[CXX_MAX_OBJECTS];
    int n;
};

static int collect_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct cxx_objects *o = arg;
    /* the main program's scope is the global one, where only we are found */
    if (info->dlpi_name && info->dlpi_name[0] && o->n < CXX_MAX_OBJECTS)
        o->names[o->n++] = info->dlpi_name;
    return 0;
}

/* The operator `name` as some loaded object's own scope resolves it, with
 * its defining object pinned; NULL when no object has one. */
static void *cxx_find_in_scopes(const char *name)
{
    static struct cxx_objects objs; /* under the loader's lock: one scan at a time */
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    void *found = NULL;

    pthread_mutex_lock(&lock);
    objs.n = 0;
    dl_iterate_phdr(collect_object, &objs);
    for (int i = 0; i < objs.n && !found; i++) {
        void *h = dlopen(objs.names[i], RTLD_LAZY | RTLD_NOLOAD);
        if (!h)
            continue;
        void *f = dlsym(h, name);
        Dl_info at;
        if (f && !mk_in_tracer(f) && dladdr(f, &at) && at.dli_fname) {
            void *pin = dlopen(at.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
            if (pin) {
                found = f;
                dlclose(pin);
            }
        }
        dlclose(h);
    }
    pthread_mutex_unlock(&lock);
    return found;
}

/* The real operator for a hook's call site: RTLD_NEXT, then the loaded
 * objects' own scopes (cached in *slot once found); NULL when none exists. */
static __attribute__((noinline)) void *cxx_next_slow(void **slot, const char *name)
{
    void *f = mk_next_symbol(slot, name);
    if (f)
        return f;
    mk_guard++; /* dlopen and dlsym allocate */
    f = cxx_find_in_scopes(name);
    mk_guard--;
    if (f)
        __atomic_store_n(slot, f, __ATOMIC_RELEASE);
    else
        mk_warn_once("memkit: no loaded object defines %s; memkit serves it with "
                     "malloc/free",
                     name);
    return f;
}

#define CXX_NEXT(type, name)                                                             \
    ({                                                                                   \
        static void *slot_;                                                              \
        void *next_ = __atomic_load_n(&slot_, __ATOMIC_ACQUIRE);                         \
        (type)(MK_LIKELY(next_ != NULL) ? next_ : cxx_next_slow(&slot_, name));          \
    })

/* The operator itself, or its malloc/free stand-in when nothing defines it
 * (a throwing new that cannot get memory then aborts: no runtime, no throw). */
#define CXX_REAL(type, name, stand_in)                                                   \
    ({                                                                                   \
        type real_ = CXX_NEXT(type, name);                                               \
        MK_LIKELY(real_ != NULL) ? real_ : (type)stand_in;                               \
    })

static void *stand_in_new(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (!p)
        abort();
    return p;
}

static void *stand_in_new_nt(size_t size, const void *nt)
{
    (void)nt;
    return malloc(size ? size : 1);
}

static void *stand_in_new_al_nt(size_t size, size_t al, const void *nt)
{
    (void)nt;
    void *p = NULL;
    return posix_memalign(&p, al < sizeof(void *) ? sizeof(void *) : al, size ? size : 1)
               ? NULL
               : p;
}

static void *stand_in_new_al(size_t size, size_t al)
{
    void *p = stand_in_new_al_nt(size, al, NULL);
    if (!p)
        abort();
    return p;
}

static void stand_in_del(void *p)
{
    free(p);
}

static void stand_in_del_x(void *p, size_t x)
{
    (void)x;
    free(p);
}

static void stand_in_del_xy(void *p, size_t x, size_t y)
{
    (void)x, (void)y;
    free(p);
}

static void stand_in_del_nt(void *p, const void *nt)
{
    (void)nt;
    free(p);
}

static void stand_in_del_al_nt(void *p, size_t al, const void *nt)
{
    (void)al, (void)nt;
    free(p);
}

/* ---- the standard library's plain operators ----
 *
 * libstdc++'s and libc++'s plain operator new is malloc in a new_handler
 * loop, and their plain, sized and array deletes are free. Forwarded, a
 * traced new/delete pair costs four more interposed calls: the operator,
 * our malloc nested in it, and for a sized delete the plain delete it calls
 * and our free nested in that (twice an untraced new/delete loop's time).
 * So where the next operator is one of theirs and the program's malloc and
 * free are ours, a hook calls the real malloc or free itself: the same
 * allocator the operator would reach. A failed malloc still goes to the
 * operator, for its new_handler loop and its bad_alloc. */

enum { CXX_UNKNOWN = 0, CXX_DIRECT = 1, CXX_FORWARD = -1 };

/* Is `real`, the next definition of operator `name`, the standard
 * library's, with malloc and free ours (not the program's: shadowed.c)?
 * Asked once per operator (*state caches the answer). */
static __attribute__((noinline)) bool cxx_direct_slow(int8_t *state, void *real,
                                                      const char *name)
{
    mk_elf_sym_t at;
    int8_t v = CXX_FORWARD;
    if (real && !mk_shadowed_malloc() &&
        mk_elf_symbol_at(real, name, &at) == MK_ELF_FOUND) {
        const char *base = strrchr(at.path, '/');
        base = base ? base + 1 : at.path;
        if (strncmp(base, "libstdc++.so", 12) == 0 || strncmp(base, "libc++.so", 9) == 0)
            v = CXX_DIRECT;
    }
    __atomic_store_n(state, v, __ATOMIC_RELAXED);
    return v == CXX_DIRECT;
}

/* May the hook of operator `name`, whose next definition is `real`, call
 * malloc or free itself? `state` is the operator's own (CXX_DIRECT_STATE):
 * its three ways (general, summary, sample) share one answer. */
#define CXX_DIRECT_OK(state, real, name)                                                 \
    ({                                                                                   \
        int8_t d_ = __atomic_load_n(&(state), __ATOMIC_RELAXED);                         \
        MK_LIKELY(d_ == CXX_DIRECT) ||                                                   \
            (d_ == CXX_UNKNOWN && cxx_direct_slow(&(state), (void *)(real), name));      \
    })

/* The operator's answer, unknown until asked; FORWARD from the start for
 * the operators that are more than malloc or free (aligned, nothrow). */
#define CXX_DIRECT_STATE(plain, sym)                                                     \
    static int8_t direct##sym = (plain) ? CXX_UNKNOWN : CXX_FORWARD

/* What the standard library's plain operators do, minus the new_handler
 * loop (a failed malloc is retried by the operator itself). The bootstrap
 * heap's blocks (base.h) are never freed, as in our free. */
#define CXX_MALLOC(size) mk_real.malloc((size) ? (size) : 1)
#define CXX_FREE(p)                                                                      \
    do {                                                                                 \
        if (MK_LIKELY(!mk_is_boot(p)))                                                   \
            mk_real.free(p);                                                             \
    } while (0)

static void leave_cleanup(mk_thread_t **t)
{
    if (*t)
        mk_leave(*t);
}

#define SCOPED_ENTER() mk_thread_t *t __attribute__((cleanup(leave_cleanup))) = mk_enter()

/* --sample's new and delete (as malloc and free in hooks.c): an unsampled
 * call is counted and runs the real operator with only the thread's in_hook
 * flag set, so that the malloc or free inside it passes unrecorded. It
 * touches nothing the flusher reads, so it skips mk_enter's handshake. */
static inline void sample_nest(mk_thread_t *t)
{
    atomic_store_explicit(&t->in_hook, 1, memory_order_relaxed);
}

static void sample_unnest(mk_thread_t **t)
{
    atomic_store_explicit(&(*t)->in_hook, 0, memory_order_relaxed);
}
#define STRIP(...) __VA_ARGS__ /* STRIP (a, b) is a, b: to extend a parameter list */

/* ---- new ----
 *
 * As malloc and free (hooks.c): --summary-only's body and the general one
 * apart, behind a one-test dispatch. Both run the next operator inside the
 * hook, so the malloc inside it goes straight through unrecorded. */

#define NEW_HOOK(plain, sym, kind, params, fn_type, args, stand_in)                      \
    CXX_DIRECT_STATE(plain, sym);                                                        \
    static __attribute__((noinline)) void *general##sym(uintptr_t ra, STRIP params)      \
    {                                                                                    \
        fn_type next = CXX_REAL(fn_type, #sym, stand_in);                                \
        SCOPED_ENTER();                                                                  \
        void *p = t && CXX_DIRECT_OK(direct##sym, next, #sym) ? CXX_MALLOC(size) : NULL; \
        if (!p)                                                                          \
            p = next args; /* may throw: the cleanup leaves */                           \
        if (t)                                                                           \
            record_alloc(t, kind, size, ALIGN_ARG, p, ra);                               \
        return p;                                                                        \
    }                                                                                    \
    static __attribute__((noinline)) void *summary##sym(uintptr_t ra, STRIP params)      \
    {                                                                                    \
        fn_type real = CXX_REAL(fn_type, #sym, stand_in);                                \
        if (mk_nested())                                                                 \
            return real args; /* nested */                                               \
        mk_thread_t *t __attribute__((cleanup(leave_cleanup))) = mk_summary_enter();     \
        if (MK_UNLIKELY(!t))                                                             \
            return general##sym(ra, STRIP args);                                         \
        void *p = CXX_DIRECT_OK(direct##sym, real, #sym) ? CXX_MALLOC(size) : NULL;      \
        if (!p)                                                                          \
            p = real args; /* may throw: uncounted, as in a trace */                     \
        mk_summary_alloc(t, kind, size, (uintptr_t)p, ra);                               \
        return p;                                                                        \
    }                                                                                    \
    static __attribute__((noinline)) void *sample##sym(uintptr_t ra, STRIP params)       \
    {                                                                                    \
        mk_thread_t *t = mk_self;                                                        \
        /* no state, nested, or to be sampled (mk_sample_due's test, before              \
         * the budget is touched): the general way */                                    \
        if (MK_UNLIKELY(!t || mk_nested() || mk_sample_next(t, size)))                   \
            return general##sym(ra, STRIP args);                                         \
        t->counts[kind]++;                                                               \
        t->bytes[kind] += size;                                                          \
        t->sample_left -= (int64_t)size;                                                 \
        fn_type real = CXX_REAL(fn_type, #sym, stand_in);                                \
        if (CXX_DIRECT_OK(direct##sym, real, #sym)) {                                    \
            void *p = CXX_MALLOC(size);                                                  \
            if (MK_LIKELY(p != NULL))                                                    \
                return p;                                                                \
        }                                                                                \
        sample_nest(t);                                                                  \
        mk_thread_t *nested __attribute__((cleanup(sample_unnest))) = t; /* may throw */ \
        (void)nested; /* read by its cleanup only, which clang does not count */         \
        return real args;                                                                \
    }                                                                                    \
    MK_EXPORT void *sym params;                                                          \
    MK_EXPORT void *sym params                                                           \
    {                                                                                    \
        if (MK_LIKELY(mk_st.summary_fast))                                               \
            return summary##sym(CALLER(), STRIP args);                                   \
        if (MK_LIKELY(mk_st.sample_fast))                                                \
            return sample##sym(CALLER(), STRIP args);                                    \
        return general##sym(CALLER(), STRIP args);                                       \
    }

#define ALIGN_ARG 0
NEW_HOOK(1, _Znwm, MK_K_NEW, (size_t size), new_fn, (size), stand_in_new)
NEW_HOOK(1, _Znam, MK_K_NEW_ARRAY, (size_t size), new_fn, (size), stand_in_new)
NEW_HOOK(0, _ZnwmRKSt9nothrow_t, MK_K_NEW, (size_t size, const void *nt), new_nt_fn,
         (size, nt), stand_in_new_nt)
NEW_HOOK(0, _ZnamRKSt9nothrow_t, MK_K_NEW_ARRAY, (size_t size, const void *nt), new_nt_fn,
         (size, nt), stand_in_new_nt)
#undef ALIGN_ARG
#define ALIGN_ARG al
NEW_HOOK(0, _ZnwmSt11align_val_t, MK_K_NEW_ALIGNED, (size_t size, size_t al), new_al_fn,
         (size, al), stand_in_new_al)
NEW_HOOK(0, _ZnamSt11align_val_t, MK_K_NEW_ARRAY_ALIGNED, (size_t size, size_t al),
         new_al_fn, (size, al), stand_in_new_al)
NEW_HOOK(0, _ZnwmSt11align_val_tRKSt9nothrow_t, MK_K_NEW_ALIGNED,
         (size_t size, size_t al, const void *nt), new_al_nt_fn, (size, al, nt),
         stand_in_new_al_nt)
NEW_HOOK(0, _ZnamSt11align_val_tRKSt9nothrow_t, MK_K_NEW_ARRAY_ALIGNED,
         (size_t size, size_t al, const void *nt), new_al_nt_fn, (size, al, nt),
         stand_in_new_al_nt)
#undef ALIGN_ARG

/* ---- delete ---- */

#define DELETE_HOOK(plain, sym, kind, params, fn_type, args, stand_in)                   \
    CXX_DIRECT_STATE(plain, sym);                                                        \
    static __attribute__((noinline)) void general##sym params                            \
    {                                                                                    \
        fn_type next = CXX_REAL(fn_type, #sym, stand_in);                                \
        SCOPED_ENTER();                                                                  \
        if (t)                                                                           \
            record_free(t, kind, p);                                                     \
        if (t && CXX_DIRECT_OK(direct##sym, next, #sym))                                 \
            CXX_FREE(p);                                                                 \
        else                                                                             \
            next args;                                                                   \
    }                                                                                    \
    static __attribute__((noinline)) void summary##sym params                            \
    {                                                                                    \
        fn_type real = CXX_REAL(fn_type, #sym, stand_in);                                \
        if (mk_nested()) {                                                               \
            real args; /* nested */                                                      \
            return;                                                                      \
        }                                                                                \
        mk_thread_t *t = mk_summary_enter();                                             \
        if (MK_UNLIKELY(!t)) {                                                           \
            general##sym args;                                                           \
            return;                                                                      \
        }                                                                                \
        mk_summary_free(t, kind, (uintptr_t)p);                                          \
        if (CXX_DIRECT_OK(direct##sym, real, #sym))                                      \
            CXX_FREE(p);                                                                 \
        else                                                                             \
            real args; /* in the hook: its free goes straight through */                 \
        mk_leave(t);                                                                     \
    }                                                                                    \
    static __attribute__((noinline)) void sample##sym params                             \
    {                                                                                    \
        mk_thread_t *t = mk_self;                                                        \
        /* no state, nested, or a block the filter may know: the general way             \
         * (which counts it and records it if it was sampled) */                         \
        if (MK_UNLIKELY(!t || mk_nested() || mk_sampled_maybe((uintptr_t)p))) {          \
            general##sym args;                                                           \
            return;                                                                      \
        }                                                                                \
        t->counts[kind]++;                                                               \
        fn_type real = CXX_REAL(fn_type, #sym, stand_in);                                \
        if (CXX_DIRECT_OK(direct##sym, real, #sym)) {                                    \
            CXX_FREE(p);                                                                 \
            return;                                                                      \
        }                                                                                \
        sample_nest(t);                                                                  \
        real args;                                                                       \
        sample_unnest(&t);                                                               \
    }                                                                                    \
    MK_EXPORT void sym params;                                                           \
    MK_EXPORT void sym params                                                            \
    {                                                                                    \
        if (MK_LIKELY(mk_st.summary_fast))                                               \
            summary##sym args;                                                           \
        else if (MK_LIKELY(mk_st.sample_fast))                                           \
            sample##sym args;                                                            \
        else                                                                             \
            general##sym args;                                                           \
    }

DELETE_HOOK(1, _ZdlPv, MK_K_DELETE, (void *p), del_fn, (p), stand_in_del)
DELETE_HOOK(1, _ZdaPv, MK_K_DELETE_ARRAY, (void *p), del_fn, (p), stand_in_del)
DELETE_HOOK(1, _ZdlPvm, MK_K_DELETE, (void *p, size_t n), del_sz_fn, (p, n),
            stand_in_del_x)
DELETE_HOOK(1, _ZdaPvm, MK_K_DELETE_ARRAY, (void *p, size_t n), del_sz_fn, (p, n),
            stand_in_del_x)
DELETE_HOOK(0, _ZdlPvRKSt9nothrow_t, MK_K_DELETE, (void *p, const void *nt), del_nt_fn,
            (p, nt), stand_in_del_nt)
DELETE_HOOK(0, _ZdaPvRKSt9nothrow_t, MK_K_DELETE_ARRAY, (void *p, const void *nt),
            del_nt_fn, (p, nt), stand_in_del_nt)
DELETE_HOOK(0, _ZdlPvSt11align_val_t, MK_K_DELETE, (void *p, size_t al), del_al_fn,
            (p, al), stand_in_del_x)
DELETE_HOOK(0, _ZdaPvSt11align_val_t, MK_K_DELETE_ARRAY, (void *p, size_t al), del_al_fn,
            (p, al), stand_in_del_x)
DELETE_HOOK(0, _ZdlPvmSt11align_val_t, MK_K_DELETE, (void *p, size_t n, size_t al),
            del_sz_al_fn, (p, n, al), stand_in_del_xy)
DELETE_HOOK(0, _ZdaPvmSt11align_val_t, MK_K_DELETE_ARRAY, (void *p, size_t n, size_t al),
            del_sz_al_fn, (p, n, al), stand_in_del_xy)
DELETE_HOOK(0, _ZdlPvSt11align_val_tRKSt9nothrow_t, MK_K_DELETE,
            (void *p, size_t al, const void *nt), del_al_nt_fn, (p, al, nt),
            stand_in_del_al_nt)
DELETE_HOOK(0, _ZdaPvSt11align_val_tRKSt9nothrow_t, MK_K_DELETE_ARRAY,
            (void *p, size_t al, const void *nt), del_al_nt_fn, (p, al, nt),
            stand_in_del_al_nt)
