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
MK_HIDDEN void mk_stacks_flush_cache(void);

#endif /* MEMKIT_PRELOAD_STACKS_H */
