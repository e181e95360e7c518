/*
 * mallopt.h - the MEMKIT_MALLOPT setting language: "name=value[,name=value...]"
 * with glibc's mallopt(3) parameters by their tunable names, e.g.
 * "mmap_threshold=33554432,trim_threshold=-1". The tracer applies it at
 * start-up (for settings GLIBC_TUNABLES does not cover, or older glibcs);
 * `memkit trace --mallopt` checks it before running anything. Header-only and
 * malloc-free, because the tracer parses it inside the traced program.
 */
#ifndef MEMKIT_TRACE_MALLOPT_H
#define MEMKIT_TRACE_MALLOPT_H

#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MK_MALLOPT_MAX 16

typedef struct mk_mallopt {
    const char *name; /* as in GLIBC_TUNABLES' glibc.malloc.<name> */
    int param;        /* the M_* constant */
    int value;
} mk_mallopt;

static const mk_mallopt mk_mallopt_names[] = {
    {"mmap_threshold", M_MMAP_THRESHOLD, 0},
    {"trim_threshold", M_TRIM_THRESHOLD, 0},
    {"top_pad", M_TOP_PAD, 0},
    {"mmap_max", M_MMAP_MAX, 0},
    {"arena_max", M_ARENA_MAX, 0},
    {"arena_test", M_ARENA_TEST, 0},
    {"perturb", M_PERTURB, 0},
    {"mxfast", M_MXFAST, 0},
};

/* Parses spec into out[0..MK_MALLOPT_MAX-1]; returns how many, or -1 with a
 * one-line reason in err. */
static inline int mk_mallopt_parse(const char *spec, mk_mallopt *out, char *err,
                                   size_t len)
{
    int n = 0;

    while (*spec) {
        size_t name_len = strcspn(spec, "=,");
        const mk_mallopt *known = NULL;
        char *end;

        for (size_t i = 0; i < sizeof mk_mallopt_names / sizeof mk_mallopt_names[0]; i++)
            if (strlen(mk_mallopt_names[i].name) == name_len &&
                strncmp(mk_mallopt_names[i].name, spec, name_len) == 0)
                known = &mk_mallopt_names[i];
        if (!known) {
            snprintf(err, len,
                     "unknown mallopt setting '%.*s' (known: mmap_threshold, "
                     "trim_threshold, top_pad, mmap_max, arena_max, arena_test, perturb, "
                     "mxfast)",
                     (int)name_len, spec);
            return -1;
        }
        if (spec[name_len] != '=') {
            snprintf(err, len, "mallopt setting %s has no =VALUE", known->name);
            return -1;
        }
        errno = 0;
        long v = strtol(spec + name_len + 1, &end, 0);
        if (errno || end == spec + name_len + 1 || (*end && *end != ',') || v < INT_MIN ||
            v > INT_MAX) {
            snprintf(
                err, len, "mallopt setting %s wants an int (mallopt's type), not '%.*s'",
                known->name, (int)strcspn(spec + name_len + 1, ","), spec + name_len + 1);
            return -1;
        }
        if (n == MK_MALLOPT_MAX) {
            snprintf(err, len, "more than %d mallopt settings", MK_MALLOPT_MAX);
            return -1;
        }
        out[n] = *known;
        out[n++].value = (int)v;
        spec = *end ? end + 1 : end;
    }
    return n;
}

#endif /* MEMKIT_TRACE_MALLOPT_H */
