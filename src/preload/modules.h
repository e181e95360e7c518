/*
 * modules.h - what the trace needs to name addresses: the module map
 * (modules.c), written at start and after dlopen/dlclose, and which
 * allocation functions the program defines ahead of the tracer's
 * (shadowed.c), written as a NOTES record after the modules.
 */
#ifndef MEMKIT_PRELOAD_MODULES_H
#define MEMKIT_PRELOAD_MODULES_H

#include "base.h"

MK_HIDDEN void mk_modules_write(void);
MK_HIDDEN void mk_modules_after_fork_child(void);
MK_HIDDEN void mk_shadowed_find(void);
MK_HIDDEN void mk_shadowed_write(void);
/* Does the program define malloc or free ahead of the tracer's? (Known
 * from mk_shadowed_find on, which runs before tracing starts.) */
MK_HIDDEN bool mk_shadowed_malloc(void);

#endif /* MEMKIT_PRELOAD_MODULES_H */
