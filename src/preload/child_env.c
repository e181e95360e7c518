/*
 * child_env.c - the tracer's variables saved at start-up for exec (see
 * child_env.h). Fixed buffers: the tracer never mallocs.
 */
#define _GNU_SOURCE
#include "child_env.h"

#include <stdlib.h>
#include <string.h>

/* Every variable that sets how the tracer traces (runtime.c reads them; the
 * tests' own hooks aside), so that a child exec'd with a rebuilt environment
 * is traced as its parent is: a --sample run's child is sampled, not traced
 * in full. */
static const char *const traced_vars[] = {
    "LD_PRELOAD",
    "MEMKIT_TRACE_PREFIX",
    "MEMKIT_TRACE_RUN",
    "MEMKIT_TRACE_DEPTH",
    "MEMKIT_TRACE_SUMMARY_ONLY",
    "MEMKIT_TRACE_SYSCALLS",
    "MEMKIT_TRACE_TIMES",
    "MEMKIT_MALLOPT",
    "MEMKIT_TRACE_SUMMARY",
    "MEMKIT_TRACE_SAMPLE",
    "MEMKIT_SAMPLE_SEED",
    "MEMKIT_TRACE_SNAPSHOT_NS",
    "MEMKIT_TRACE_SNAPSHOT_SIGNAL",
};
#define N_TRACED_VARS (sizeof traced_vars / sizeof traced_vars[0])
_Static_assert(N_TRACED_VARS == MK_CHILD_ENV_VARS, "child_env.h counts them");

/* Each "NAME=value" (or "") packed one after the other in saved_text, as
 * long as each fits in 4,200 bytes: a slot of its own each would put them
 * on as many pages, a page fault each in every traced process. */
#define SAVED_MAX 4200
static char saved_text[N_TRACED_VARS * SAVED_MAX];
static char *saved_env[N_TRACED_VARS];

void mk_child_env_save(void)
{
    char *at = saved_text;
    for (size_t i = 0; i < N_TRACED_VARS; i++) {
        const char *v = getenv(traced_vars[i]);
        size_t nl = strlen(traced_vars[i]), vl = v ? strlen(v) : 0;
        saved_env[i] = at;
        if (v && nl + vl + 2 <= SAVED_MAX) {
            memcpy(at, traced_vars[i], nl);
            at[nl] = '=';
            memcpy(at + nl + 1, v, vl + 1);
            at += nl + vl + 2;
        } else {
            *at++ = 0;
        }
    }
}

static bool env_has(char *const *envp, const char *name)
{
    size_t n = strlen(name);
    for (; envp && *envp; envp++)
        if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
            return true;
    return false;
}

char *const *mk_child_env(char *const *envp, char **out)
{
    size_t n = 0;
    if (!saved_env[1] || !saved_env[1][0] || env_has(envp, "MEMKIT_TRACE_PREFIX"))
        return envp; /* not started by memkit trace, or the variables are there */
    for (; envp && envp[n]; n++)
        out[n] = envp[n];
    for (size_t i = 0; i < N_TRACED_VARS; i++)
        if (saved_env[i] && saved_env[i][0] && !env_has(envp, traced_vars[i]))
            out[n++] = saved_env[i];
    out[n] = NULL;
    return out;
}

size_t mk_env_count(char *const *envp)
{
    size_t n = 0;
    while (envp && envp[n])
        n++;
    return n;
}
