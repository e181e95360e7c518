/*
 * stacks.h - call stacks captured in a hook's frame and interned in a table
 * shared by all threads (stacks.c).
 */
#ifndef MEMKIT_PRELOAD_STACKS_H
#define MEMKIT_PRELOAD_STACKS_H

#include "thread.h"

/* Id of a captured stack (0: none or table full). Writes the definition into
 * t's record the first time this file sees the stack. */
MK_HIDDEN uint32_t mk_stack_intern(mk_thread_t *t, uintptr_t *frames, int depth);
/* The id of the calling hook's caller's stack; ra and fp are the hook's
 * return and frame addresses. */
MK_HIDDEN uint32_t mk_stack_id(mk_thread_t *t, uintptr_t ra, uintptr_t fp);
MK_HIDDEN void mk_stacks_init(void);
/* A thread state is (re)claimed by a new thread. */
MK_HIDDEN void mk_stacks_thread_start(mk_thread_t *t);
/* mk_stacks_init on first use, once: --sample unwinds only its samples, and
 * a short process that takes none should not pay for libunwind's start-up.
 * True when stacks can be captured: false while another thread is starting
 * them (the caller records no stack rather than wait: see stacks.c). */
MK_HIDDEN bool mk_stacks_init_once(void);
extern atomic_int mk_stacks_state MK_HIDDEN; /* 0 not yet, 1 under way, 2 ready */

static inline bool mk_stacks_ready(void)
{
    if (MK_LIKELY(atomic_load_explicit(&mk_stacks_state, memory_order_acquire) == 2))
        return true;
    return mk_stacks_init_once();
}
MK_HIDDEN void mk_stacks_flush_cache(void);
/* Is pc in libunwind's code? (Its signal masking inside a capture is
 * skipped: signals.c.) */
MK_HIDDEN bool mk_unwinder_calls(uintptr_t pc);
/* In a forked child, before its first capture. */
MK_HIDDEN void mk_stacks_after_fork_child(void);
/* Set once the program registers an unwind table at run time (stacks.c). */
extern atomic_bool mk_frames_registered MK_HIDDEN;

#endif /* MEMKIT_PRELOAD_STACKS_H */
