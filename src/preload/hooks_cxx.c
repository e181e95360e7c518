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
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* ---- the operators, as data ----
 *
 * Every operator is a cxx_op_t: its mangled name, the next definition once
 * found, the stand-in that serves it when nothing defines it, and whether
 * its hook may call malloc or free itself (below). Its parameters come in
 * one of a few shapes; a hook passes them on normalized (size, alignment,
 * nothrow tag; for delete also the size given) and cxx_call_* calls the
 * real operator with the shape's own list. The shape is a constant in each
 * generated body, so the switch folds away. */

typedef struct cxx_op {
    const char *name;
    void *next;     /* the next definition, once found (cxx_real) */
    void *stand_in; /* its malloc/free stand-in, of the same shape */
    int8_t direct;  /* CXX_UNKNOWN, CXX_DIRECT or CXX_FORWARD (below) */
} cxx_op_t;

enum { NEW_S, NEW_S_NT, NEW_S_AL, NEW_S_AL_NT };
enum { DEL_P, DEL_P_N, DEL_P_NT, DEL_P_AL, DEL_P_N_AL, DEL_P_AL_NT };

typedef void *(*new_fn)(size_t);
typedef void *(*new_nt_fn)(size_t, const void *);
typedef void *(*new_al_fn)(size_t, size_t);
typedef void *(*new_al_nt_fn)(size_t, size_t, const void *);
typedef void (*del_fn)(void *);
typedef void (*del_x_fn)(void *, size_t);
typedef void (*del_nt_fn)(void *, const void *);
typedef void (*del_xy_fn)(void *, size_t, size_t);
typedef void (*del_al_nt_fn)(void *, size_t, const void *);

static inline __attribute__((always_inline)) void *
cxx_call_new(void *fn, int shape, size_t size, size_t al, const void *nt)
{
    switch (shape) {
    case NEW_S:
        return ((new_fn)fn)(size);
    case NEW_S_NT:
        return ((new_nt_fn)fn)(size, nt);
    case NEW_S_AL:
        return ((new_al_fn)fn)(size, al);
    default:
        return ((new_al_nt_fn)fn)(size, al, nt);
    }
}

static inline __attribute__((always_inline)) void
cxx_call_delete(void *fn, int shape, void *p, size_t n, size_t al, const void *nt)
{
    switch (shape) {
    case DEL_P:
        ((del_fn)fn)(p);
        break;
    case DEL_P_N:
        ((del_x_fn)fn)(p, n);
        break;
    case DEL_P_NT:
        ((del_nt_fn)fn)(p, nt);
        break;
    case DEL_P_AL:
        ((del_x_fn)fn)(p, al);
        break;
    case DEL_P_N_AL:
        ((del_xy_fn)fn)(p, n, al);
        break;
    default:
        ((del_al_nt_fn)fn)(p, al, nt);
        break;
    }
}

/* The real operator: RTLD_NEXT, then the loaded objects' own scopes (kept
 * once found); NULL when none exists. */
static __attribute__((noinline)) void *cxx_next_slow(cxx_op_t *op)
{
    void *f = mk_next_symbol(&op->next, op->name);
    if (f)
        return f;
    mk_guard++; /* dlopen and dlsym allocate */
    f = cxx_find_in_scopes(op->name);
    mk_guard--;
    if (f)
        __atomic_store_n(&op->next, f, __ATOMIC_RELEASE);
    else
        mk_warn_once("memkit: no loaded object defines %s; memkit serves it with "
                     "malloc/free",
                     op->name);
    return f;
}

/* The operator itself, or its malloc/free stand-in when nothing defines it
 * (a throwing new that cannot get memory then aborts: no runtime, no throw). */
static inline __attribute__((always_inline)) void *cxx_real(cxx_op_t *op)
{
    void *f = __atomic_load_n(&op->next, __ATOMIC_ACQUIRE);
    if (MK_UNLIKELY(f == NULL))
        f = cxx_next_slow(op);
    return MK_LIKELY(f != NULL) ? f : op->stand_in;
}

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

/* Is `real`, the next definition of op, the standard library's, with
 * malloc and free ours (not the program's: shadowed.c)? Asked once per
 * operator (op->direct caches the answer). */
static __attribute__((noinline)) bool cxx_direct_slow(cxx_op_t *op, void *real)
{
    mk_elf_sym_t at;
    int8_t v = CXX_FORWARD;
    if (real && !mk_shadowed_malloc() &&
        mk_elf_symbol_at(real, op->name, &at) == MK_ELF_FOUND) {
        const char *base = strrchr(at.path, '/');
        base = base ? base + 1 : at.path;
        if (strncmp(base, "libstdc++.so", 12) == 0 || strncmp(base, "libc++.so", 9) == 0)
            v = CXX_DIRECT;
    }
    __atomic_store_n(&op->direct, v, __ATOMIC_RELAXED);
    return v == CXX_DIRECT;
}

/* May op's hook, whose next definition is `real`, call malloc or free
 * itself? The operators that are more than malloc or free (aligned,
 * nothrow) start as CXX_FORWARD. */
static inline __attribute__((always_inline)) bool cxx_direct(cxx_op_t *op, void *real)
{
    int8_t d = __atomic_load_n(&op->direct, __ATOMIC_RELAXED);
    return MK_LIKELY(d == CXX_DIRECT) || (d == CXX_UNKNOWN && cxx_direct_slow(op, real));
}

/* What the standard library's plain operators do, minus the new_handler
 * loop (a failed malloc is retried by the operator itself). The bootstrap
 * heap's blocks (base.h) are never freed, as in our free. */
static inline void *cxx_malloc(size_t size)
{
    return mk_real.malloc(size ? size : 1);
}

static inline void cxx_free(void *p)
{
    if (MK_LIKELY(!mk_is_boot(p)))
        mk_real.free(p);
}

/* What a new hook does for the block: malloc it itself where the next
 * operator would only malloc it (the operator still runs when malloc fails,
 * for its new_handler and bad_alloc), else call the operator. */
static inline __attribute__((always_inline)) void *
cxx_malloc_or_new(cxx_op_t *op, void *next, int shape, size_t size, size_t al,
                  const void *nt)
{
    void *p = cxx_direct(op, next) ? cxx_malloc(size) : NULL;
    return p ? p : cxx_call_new(next, shape, size, al, nt); /* may throw */
}

/* What a delete hook does with the block: free it itself where the next
 * operator would only free it, else call the operator. */
static inline __attribute__((always_inline)) void
cxx_free_or_delete(cxx_op_t *op, void *next, int shape, void *p, size_t n, size_t al,
                   const void *nt)
{
    if (cxx_direct(op, next))
        cxx_free(p);
    else
        cxx_call_delete(next, shape, p, n, al, nt);
}

/* The cleanups below make this file's frames need the unwinder's C
 * personality routine and _Unwind_Resume, both libgcc_s's. They are defined
 * here, forwarding to the unwinder's own, so that the tracer needs no
 * libgcc_s: loading it cost every process 0.1-0.3 ms, C programs that never
 * throw among them. Both are called only with an exception in flight, so an
 * unwinder is loaded: the program's (the global scope's), else libgcc_s in
 * the local scope of the C++ library that threw. */
struct _Unwind_Exception; /* <unwind.h> would declare them visible */
struct _Unwind_Context;
typedef void (*unwind_resume_fn)(struct _Unwind_Exception *);
typedef int (*personality_fn)(int, int, uint64_t, struct _Unwind_Exception *,
                              struct _Unwind_Context *);
MK_HIDDEN __attribute__((noreturn)) void _Unwind_Resume(struct _Unwind_Exception *e);
MK_HIDDEN int __gcc_personality_v0(int version, int actions, uint64_t exception_class,
                                   struct _Unwind_Exception *e,
                                   struct _Unwind_Context *context);

/* The unwinder's function `name` (libgcc's symbol version `version`),
 * found on the first call and kept in *slot (racing first calls agree). */
static void *unwinder_function(void *_Atomic *slot, const char *name, const char *version)
{
    void *f = atomic_load_explicit(slot, memory_order_relaxed), *h;

    if (f)
        return f;
    f = dlvsym(RTLD_DEFAULT, name, version);
    if (!f) /* an unwinder without libgcc's versions (LLVM's libunwind) */
        f = dlsym(RTLD_DEFAULT, name);
    if (!f && (h = mk_own_dlopen("libgcc_s.so.1", RTLD_LAZY | RTLD_NOLOAD)))
        f = dlvsym(h, name, version); /* the handle stays: libgcc_s is in use */
    if (!f)
        abort(); /* an exception, and no unwinder: cannot happen */
    atomic_store_explicit(slot, f, memory_order_relaxed);
    return f;
}

void _Unwind_Resume(struct _Unwind_Exception *e)
{
    static void *_Atomic real;

    ((unwind_resume_fn)unwinder_function(&real, "_Unwind_Resume", "GCC_3.0"))(e);
    __builtin_unreachable();
}

int __gcc_personality_v0(int version, int actions, uint64_t exception_class,
                         struct _Unwind_Exception *e, struct _Unwind_Context *context)
{
    static void *_Atomic real;

    return ((personality_fn)unwinder_function(&real, "__gcc_personality_v0",
                                              "GCC_3.3.1"))(version, actions,
                                                            exception_class, e, context);
}

static void leave_cleanup(mk_thread_t **t)
{
    if (*t)
        mk_leave(*t);
}

static void leave_unsampled_cleanup(mk_thread_t **t)
{
    if (*t)
        mk_leave_unsampled(*t);
}

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

/* ---- new: the three bodies ----
 *
 * As malloc's (hooks.c), behind the one dispatch. Each runs the next
 * operator inside the hook, so the malloc inside it goes straight through
 * unrecorded; a throwing one unwinds through the hook, and the cleanup
 * leaves it on the way. `general` is the operator's own general body, for
 * the calls a fast body cannot serve. */

typedef void *(*new_body_fn)(uintptr_t ra, size_t size, size_t al, const void *nt);

static inline __attribute__((always_inline)) void *new_general(cxx_op_t *op, int shape,
                                                               unsigned kind,
                                                               uintptr_t ra, size_t size,
                                                               size_t al, const void *nt)
{
    void *next = cxx_real(op);
    mk_thread_t *t __attribute__((cleanup(leave_cleanup))) = mk_enter();
    if (!t)
        return cxx_call_new(next, shape, size, al, nt); /* may throw */
    mk_span_t span;
    void *p;
    TIMED_CALL(t, span, read_size(size),
               p = cxx_malloc_or_new(op, next, shape, size, al, nt));
    record_alloc(t, kind, size, al, p, ra, span);
    return p;
}

static inline __attribute__((always_inline)) void *
new_summary(cxx_op_t *op, int shape, unsigned kind, new_body_fn general, uintptr_t ra,
            size_t size, size_t al, const void *nt)
{
    void *real = cxx_real(op);
    if (mk_nested())
        return cxx_call_new(real, shape, size, al, nt);
    mk_thread_t *t __attribute__((cleanup(leave_unsampled_cleanup))) = mk_summary_enter();
    if (MK_UNLIKELY(!t))
        return general(ra, size, al, nt);
    void *p = cxx_malloc_or_new(op, real, shape, size, al, nt); /* a throw: uncounted */
    mk_summary_alloc(t, kind, size, (uintptr_t)p, ra);
    return p;
}

static inline __attribute__((always_inline)) void *
new_sample(cxx_op_t *op, int shape, unsigned kind, new_body_fn general, uintptr_t ra,
           size_t size, size_t al, const void *nt)
{
    mk_thread_t *t = mk_sample_fast_alloc(size);
    if (MK_UNLIKELY(!t))
        return general(ra, size, al, nt);
    t->counts[kind]++;
    t->bytes[kind] += size;
    void *real = cxx_real(op);
    if (cxx_direct(op, real)) {
        void *p = cxx_malloc(size);
        if (MK_LIKELY(p != NULL))
            return p;
    }
    sample_nest(t);
    mk_thread_t *nested __attribute__((cleanup(sample_unnest))) = t; /* may throw */
    (void)nested; /* read by its cleanup only, which clang does not count */
    return cxx_call_new(real, shape, size, al, nt);
}

/* ---- delete: the three bodies ---- */

typedef void (*delete_body_fn)(uintptr_t ra, void *p, size_t n, size_t al,
                               const void *nt);

static inline __attribute__((always_inline)) void
delete_general(cxx_op_t *op, int shape, unsigned kind, uintptr_t ra, void *p, size_t n,
               size_t al, const void *nt)
{
    void *next = cxx_real(op);
    mk_thread_t *t __attribute__((cleanup(leave_cleanup))) = mk_enter();
    if (!t) {
        cxx_call_delete(next, shape, p, n, al, nt);
        return;
    }
    if (!record_free_begin(t, kind, p)) {
        cxx_free_or_delete(op, next, shape, p, n, al, nt);
        return;
    }
    mk_index_slot_t *s = mk_writer_free_slot(&t->w, (uintptr_t)p);
    unsigned read = mk_st.timing ? read_delete(p, s, n) : READ_NO;
    if (MK_UNLIKELY(read || mk_writer_cost_due(&t->w))) { /* as general_free */
        mk_span_t span;
        TIMED_CALL(t, span, read, cxx_free_or_delete(op, next, shape, p, n, al, nt));
        record_free_end(t, kind, p, ra, span, s);
        return;
    }
    /* before the real delete: a reuse of p is later in time */
    record_free_end(t, kind, p, 0, MK_NO_SPAN, s);
    MK_ONCPU_CALL(t, cxx_free_or_delete(op, next, shape, p, n, al, nt));
}

static inline __attribute__((always_inline)) void
delete_summary(cxx_op_t *op, int shape, unsigned kind, delete_body_fn general,
               uintptr_t ra, void *p, size_t n, size_t al, const void *nt)
{
    void *real = cxx_real(op);
    if (mk_nested()) {
        cxx_call_delete(real, shape, p, n, al, nt);
        return;
    }
    mk_thread_t *t = mk_summary_enter();
    if (MK_UNLIKELY(!t)) {
        general(ra, p, n, al, nt);
        return;
    }
    mk_summary_free(t, kind, (uintptr_t)p);
    if (cxx_direct(op, real))
        cxx_free(p);
    else
        cxx_call_delete(real, shape, p, n, al, nt); /* in the hook: its free passes */
    mk_leave_unsampled(t);
}

static inline __attribute__((always_inline)) void
delete_sample(cxx_op_t *op, int shape, unsigned kind, delete_body_fn general,
              uintptr_t ra, void *p, size_t n, size_t al, const void *nt)
{
    mk_thread_t *t = mk_sample_fast_free(p);
    if (MK_UNLIKELY(!t)) {
        general(ra, p, n, al, nt);
        return;
    }
    t->counts[kind]++;
    void *real = cxx_real(op);
    if (cxx_direct(op, real)) {
        cxx_free(p);
        return;
    }
    sample_nest(t);
    cxx_call_delete(real, shape, p, n, al, nt);
    sample_unnest(&t);
}

/* ---- the table ----
 *
 * One row per operator: its mangled name, whether it is a plain one the
 * standard library serves with malloc or free, its kind, its shape, its
 * parameters, them normalized, and its stand-in. Each row generates the
 * operator's three bodies, each a call into the inline path above, and the
 * exported function, the dispatch. */

#define STRIP(...) __VA_ARGS__ /* STRIP (a, b) is a, b */

#define NEW_OP(sym, plain, kind, shape, params, normal, stand_in)                        \
    static cxx_op_t op##sym = {#sym, NULL, (void *)stand_in,                             \
                               (plain) ? CXX_UNKNOWN : CXX_FORWARD};                     \
    static __attribute__((noinline)) void *general_##sym(uintptr_t ra, size_t size,      \
                                                         size_t al, const void *nt)      \
    {                                                                                    \
        return new_general(&op##sym, shape, kind, ra, size, al, nt);                     \
    }                                                                                    \
    static __attribute__((noinline)) void *summary_##sym(uintptr_t ra, size_t size,      \
                                                         size_t al, const void *nt)      \
    {                                                                                    \
        return new_summary(&op##sym, shape, kind, general_##sym, ra, size, al, nt);      \
    }                                                                                    \
    static __attribute__((noinline)) void *sample_##sym(uintptr_t ra, size_t size,       \
                                                        size_t al, const void *nt)       \
    {                                                                                    \
        return new_sample(&op##sym, shape, kind, general_##sym, ra, size, al, nt);       \
    }                                                                                    \
    MK_EXPORT void *sym params;                                                          \
    MK_EXPORT void *sym params                                                           \
    {                                                                                    \
        return MK_DISPATCH(sym, CALLER(), STRIP normal);                                 \
    }

#define DELETE_OP(sym, plain, kind, shape, params, normal, stand_in)                     \
    static cxx_op_t op##sym = {#sym, NULL, (void *)stand_in,                             \
                               (plain) ? CXX_UNKNOWN : CXX_FORWARD};                     \
    static __attribute__((noinline)) void general_##sym(uintptr_t ra, void *p, size_t n, \
                                                        size_t al, const void *nt)       \
    {                                                                                    \
        delete_general(&op##sym, shape, kind, ra, p, n, al, nt);                         \
    }                                                                                    \
    static __attribute__((noinline)) void summary_##sym(uintptr_t ra, void *p, size_t n, \
                                                        size_t al, const void *nt)       \
    {                                                                                    \
        delete_summary(&op##sym, shape, kind, general_##sym, ra, p, n, al, nt);          \
    }                                                                                    \
    static __attribute__((noinline)) void sample_##sym(uintptr_t ra, void *p, size_t n,  \
                                                       size_t al, const void *nt)        \
    {                                                                                    \
        delete_sample(&op##sym, shape, kind, general_##sym, ra, p, n, al, nt);           \
    }                                                                                    \
    MK_EXPORT void sym params;                                                           \
    MK_EXPORT void sym params                                                            \
    {                                                                                    \
        MK_DISPATCH(sym, CALLER(), STRIP normal);                                        \
    }

/* clang-format off */
#define NEW_AL (size_t size, size_t al)
#define NT const void *nt
NEW_OP(_Znwm, 1, MK_K_NEW, NEW_S, (size_t size), (size, 0, NULL), stand_in_new)
NEW_OP(_Znam, 1, MK_K_NEW_ARRAY, NEW_S, (size_t size), (size, 0, NULL), stand_in_new)
NEW_OP(_ZnwmRKSt9nothrow_t, 0, MK_K_NEW, NEW_S_NT, (size_t size, NT), (size, 0, nt),
       stand_in_new_nt)
NEW_OP(_ZnamRKSt9nothrow_t, 0, MK_K_NEW_ARRAY, NEW_S_NT, (size_t size, NT), (size, 0, nt),
       stand_in_new_nt)
NEW_OP(_ZnwmSt11align_val_t, 0, MK_K_NEW_ALIGNED, NEW_S_AL, NEW_AL, (size, al, NULL),
       stand_in_new_al)
NEW_OP(_ZnamSt11align_val_t, 0, MK_K_NEW_ARRAY_ALIGNED, NEW_S_AL, NEW_AL,
       (size, al, NULL), stand_in_new_al)
NEW_OP(_ZnwmSt11align_val_tRKSt9nothrow_t, 0, MK_K_NEW_ALIGNED, NEW_S_AL_NT,
       (size_t size, size_t al, NT), (size, al, nt), stand_in_new_al_nt)
NEW_OP(_ZnamSt11align_val_tRKSt9nothrow_t, 0, MK_K_NEW_ARRAY_ALIGNED, NEW_S_AL_NT,
       (size_t size, size_t al, NT), (size, al, nt), stand_in_new_al_nt)

DELETE_OP(_ZdlPv, 1, MK_K_DELETE, DEL_P, (void *p), (p, 0, 0, NULL), stand_in_del)
DELETE_OP(_ZdaPv, 1, MK_K_DELETE_ARRAY, DEL_P, (void *p), (p, 0, 0, NULL), stand_in_del)
DELETE_OP(_ZdlPvm, 1, MK_K_DELETE, DEL_P_N, (void *p, size_t n), (p, n, 0, NULL),
          stand_in_del_x)
DELETE_OP(_ZdaPvm, 1, MK_K_DELETE_ARRAY, DEL_P_N, (void *p, size_t n), (p, n, 0, NULL),
          stand_in_del_x)
DELETE_OP(_ZdlPvRKSt9nothrow_t, 0, MK_K_DELETE, DEL_P_NT, (void *p, NT), (p, 0, 0, nt),
          stand_in_del_nt)
DELETE_OP(_ZdaPvRKSt9nothrow_t, 0, MK_K_DELETE_ARRAY, DEL_P_NT, (void *p, NT),
          (p, 0, 0, nt), stand_in_del_nt)
DELETE_OP(_ZdlPvSt11align_val_t, 0, MK_K_DELETE, DEL_P_AL, (void *p, size_t al),
          (p, 0, al, NULL), stand_in_del_x)
DELETE_OP(_ZdaPvSt11align_val_t, 0, MK_K_DELETE_ARRAY, DEL_P_AL, (void *p, size_t al),
          (p, 0, al, NULL), stand_in_del_x)
DELETE_OP(_ZdlPvmSt11align_val_t, 0, MK_K_DELETE, DEL_P_N_AL,
          (void *p, size_t n, size_t al), (p, n, al, NULL), stand_in_del_xy)
DELETE_OP(_ZdaPvmSt11align_val_t, 0, MK_K_DELETE_ARRAY, DEL_P_N_AL,
          (void *p, size_t n, size_t al), (p, n, al, NULL), stand_in_del_xy)
DELETE_OP(_ZdlPvSt11align_val_tRKSt9nothrow_t, 0, MK_K_DELETE, DEL_P_AL_NT,
          (void *p, size_t al, NT), (p, 0, al, nt), stand_in_del_al_nt)
DELETE_OP(_ZdaPvSt11align_val_tRKSt9nothrow_t, 0, MK_K_DELETE_ARRAY, DEL_P_AL_NT,
          (void *p, size_t al, NT), (p, 0, al, nt), stand_in_del_al_nt)
/* clang-format on */
