/*
 * hook.h - what an interposed function is made of: its export, the next
 * definition of its symbol, its caller, and for the hooks that have a body
 * per path (malloc, free, every operator new and delete) the one dispatch
 * on the process's mk_path_t. Included by every file that interposes a
 * function; the event path those hooks record through is record.h's.
 */
#ifndef MEMKIT_PRELOAD_HOOK_H
#define MEMKIT_PRELOAD_HOOK_H

#include "base.h"

#define MK_EXPORT __attribute__((visibility("default")))

/* The next definition of a symbol, looked up once per call site (after
 * that, one load: no call). */
#define NEXT(type, name)                                                                 \
    ({                                                                                   \
        static void *slot_;                                                              \
        void *next_ = __atomic_load_n(&slot_, __ATOMIC_ACQUIRE);                         \
        (type)(MK_LIKELY(next_ != NULL) ? next_ : mk_next_symbol(&slot_, name));         \
    })

#define CALLER() ((uintptr_t)__builtin_return_address(0))

/* The fast bodies start on a 64-byte boundary, so that where the linker
 * puts them does not move their speed (fetch works in 64-byte blocks), and
 * omit the frame pointer the rest of the library keeps for profilers:
 * stacks come from DWARF tables, never from frame pointers. The figures are
 * in docs/PERFORMANCE-LOG.md. */
#ifdef __clang__ /* no per-function optimize attribute (the fuzz build) */
#define MK_HOT_ALIGN __attribute__((aligned(64)))
#else
#define MK_HOT_ALIGN __attribute__((aligned(64), optimize("omit-frame-pointer")))
#endif

/* The one dispatch on the mode: a hook `name` with a body per path,
 * general_NAME, summary_NAME and sample_NAME, runs the process's. Apart,
 * a fast body does not pay for the general one's slow branches (thread
 * states, stack capture, flushing), which make the compiler save six
 * registers on every call. An expression (void for void bodies), so that
 * a hook returns it or states it. */
#define MK_DISPATCH(name, ...)                                                           \
    (MK_LIKELY(mk_st.path == MK_PATH_SAMPLE)    ? sample_##name(__VA_ARGS__)             \
     : MK_LIKELY(mk_st.path == MK_PATH_SUMMARY) ? summary_##name(__VA_ARGS__)            \
                                                : general_##name(__VA_ARGS__))

#endif /* MEMKIT_PRELOAD_HOOK_H */
