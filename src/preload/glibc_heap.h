/*
 * glibc_heap.h - MEMKIT_MALLOPT applied at start-up; glibc's view of its
 * heap at the end (glibc_heap.c).
 */
#ifndef MEMKIT_PRELOAD_GLIBC_HEAP_H
#define MEMKIT_PRELOAD_GLIBC_HEAP_H

#include "base.h"

/* arena, in use, free, mmapped (mallinfo2) and the [heap] mapping's RSS */
#define MK_HEAP_VIEW_FIELDS 5
MK_HIDDEN void mk_glibc_apply_mallopt(void);
MK_HIDDEN void mk_glibc_heap_view(uint64_t v[MK_HEAP_VIEW_FIELDS]);

#endif /* MEMKIT_PRELOAD_GLIBC_HEAP_H */
