/*
 * child_env.h - the environment that keeps a child traced: the tracer's
 * variables as they were at start-up, added to an exec's environment that
 * lacks them, so that a program that clears or rebuilds its environment
 * before exec still has its child traced.
 */
#ifndef MEMKIT_PRELOAD_CHILD_ENV_H
#define MEMKIT_PRELOAD_CHILD_ENV_H

#include "base.h"

#include <stddef.h>

/* How many variables mk_child_env may add. */
#define MK_CHILD_ENV_VARS 13

/* At start-up: the variables the children must inherit. */
MK_HIDDEN void mk_child_env_save(void);
/* envp, or envp plus the saved variables it lacks in out (room for
 * mk_env_count(envp) + MK_CHILD_ENV_VARS + 1 pointers). */
MK_HIDDEN char *const *mk_child_env(char *const *envp, char **out);
MK_HIDDEN size_t mk_env_count(char *const *envp);

#endif /* MEMKIT_PRELOAD_CHILD_ENV_H */
