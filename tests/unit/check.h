/*
 * check.h - the unit tests' harness: CHECK macros that count and report failures,
 * and a helper that runs a function in a child process and captures its stderr and
 * exit status (for the tests that assert an abort and its message).
 */
#ifndef MEMKIT_TESTS_CHECK_H
#define MEMKIT_TESTS_CHECK_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../xorshift.h" /* the model tests' random numbers */

static int check_failures, check_passes;

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (cond) {                                                                      \
            check_passes++;                                                              \
        } else {                                                                         \
            check_failures++;                                                            \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);     \
        }                                                                                \
    } while (0)

/* CHECK, and a message of its own (printf's format) for what the condition
 * does not say: the input that failed. */
#define CHECK_MSG(cond, ...)                                                             \
    do {                                                                                 \
        if (cond) {                                                                      \
            check_passes++;                                                              \
        } else {                                                                         \
            check_failures++;                                                            \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);     \
            fprintf(stderr, __VA_ARGS__);                                                \
            fputc('\n', stderr);                                                         \
        }                                                                                \
    } while (0)

#define CHECK_EQ(a, b)                                                                   \
    do {                                                                                 \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);                  \
        if (check_a_ == check_b_) {                                                      \
            check_passes++;                                                              \
        } else {                                                                         \
            check_failures++;                                                            \
            fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %lld, %s == %lld\n",          \
                    __FILE__, __LINE__, #a, check_a_, #b, check_b_);                     \
        }                                                                                \
    } while (0)

/* Runs `fn` in a child with stderr captured. Returns the wait status. */
static inline int run_child(void (*fn)(void), char *err, size_t errlen)
{
    int fds[2], status;
    size_t used = 0;
    ssize_t n;
    pid_t pid;

    fflush(NULL);
    if (pipe(fds) != 0)
        abort();
    pid = fork();
    if (pid == 0) {
        dup2(fds[1], STDERR_FILENO);
        close(fds[0]);
        fn();
        _exit(0);
    }
    close(fds[1]);
    while (used + 1 < errlen && (n = read(fds[0], err + used, errlen - 1 - used)) > 0)
        used += (size_t)n;
    err[used] = '\0';
    close(fds[0]);
    waitpid(pid, &status, 0);
    return status;
}

/* Asserts that fn aborts (SIGABRT, or an ASan/UBSan error exit) with `needle` in its
 * stderr. */
#define CHECK_ABORTS(fn, needle)                                                         \
    do {                                                                                 \
        char check_err_[8192];                                                           \
        int check_st_ = run_child((fn), check_err_, sizeof check_err_);                  \
        CHECK(!(WIFEXITED(check_st_) && WEXITSTATUS(check_st_) == 0));                   \
        if (!strstr(check_err_, (needle))) {                                             \
            check_failures++;                                                            \
            fprintf(stderr, "%s:%d: expected \"%s\" in the child's stderr, got:\n%s\n",  \
                    __FILE__, __LINE__, (needle), check_err_);                           \
        }                                                                                \
    } while (0)

static inline int check_report(const char *name)
{
    printf("%s: %d checks passed, %d failed\n", name, check_passes, check_failures);
    return check_failures ? 1 : 0;
}

/* xorshift64*: deterministic randomness for the model-based tests. */
static inline unsigned long long rng_next(unsigned long long *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

/* The seed: MEMKIT_TEST_SEED if set (to replay a failure), else fixed. */
static inline unsigned long long test_seed_or(unsigned long long fixed)
{
    const char *s = getenv("MEMKIT_TEST_SEED");

    return s ? strtoull(s, NULL, 0) : fixed;
}

static inline unsigned long long test_seed(void)
{
    return test_seed_or(0x9e3779b97f4a7c15ull);
}

/* A randomized test's length: MEMKIT_TEST_STEPS if set, else fixed. */
static inline int test_steps(int fixed)
{
    const char *s = getenv("MEMKIT_TEST_STEPS");

    return s ? atoi(s) : fixed;
}

/* True when the library under test runs in MEMKIT_BYPASS mode. */
static inline bool bypass_mode(void)
{
    const char *v = getenv("MEMKIT_BYPASS");

    return v && *v && strcmp(v, "0") != 0;
}

#if defined(__SANITIZE_ADDRESS__)
#define TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_ASAN 1
#endif
#endif

#endif /* MEMKIT_TESTS_CHECK_H */
