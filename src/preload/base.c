/*
 * base.c - the tracer's leaf (base.h): its state, the bootstrap heap for the
 * allocations dlsym makes before the real malloc is known, symbol lookup
 * and messages.
 */
#define _GNU_SOURCE
#include "base.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

mk_real_fns_t mk_real;
mk_state_t mk_st = {.fd = -1};
__thread mk_tls_t mk_tls __attribute__((tls_model("initial-exec")));

/* ---- the bootstrap heap: dlsym may allocate before malloc is resolved ---- */

_Alignas(16) uint8_t mk_boot_heap[MK_BOOT_HEAP_SIZE];
static atomic_size_t boot_used;

void *mk_boot_alloc(size_t n)
{
    size_t need = (n + 16 + 15) & ~(size_t)15;
    size_t at = atomic_fetch_add(&boot_used, need);
    if (n > sizeof mk_boot_heap || at + need > sizeof mk_boot_heap)
        return NULL;
    memcpy(mk_boot_heap + at, &n, sizeof n); /* size kept for realloc */
    return mk_boot_heap + at + 16;
}

void *mk_next_symbol(void **slot, const char *name)
{
    void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (MK_LIKELY(f != NULL))
        return f;
    mk_guard++; /* dlsym may allocate */
    f = dlsym(RTLD_NEXT, name);
    mk_guard--;
    __atomic_store_n(slot, f, __ATOMIC_RELEASE);
    return f;
}

void *mk_own_dlopen(const char *file, int mode)
{
    static void *slot;
    void *(*real)(const char *, int) =
        (void *(*)(const char *, int))mk_next_symbol(&slot, "dlopen");

    return real ? real(file, mode) : NULL;
}

/* The tracer's own image, from its ELF header to the end of its bss: the
 * linker defines both ends in every link, and the hidden references bind
 * to this object's. (dladdr on the address would walk the dynamic symbols
 * of the object holding it: cc1's 28,401, in every gcc run.) */
extern const char __ehdr_start[] MK_HIDDEN;
extern const char _end[] MK_HIDDEN;

bool mk_in_tracer(const void *p)
{
    return (uintptr_t)p - (uintptr_t)__ehdr_start < (uintptr_t)(_end - __ehdr_start);
}

/* ---- messages ----
 *
 * memkit's messages go to the stderr the program started with, or nowhere: a
 * program that closed fd 2 and opened a data file there must not find our
 * line in its data. The file fd 2 was at start-up is remembered by identity
 * (no descriptor is kept for it: the program sees none of ours it did not
 * see untraced), and a message is written only while fd 2 is still it. */

static struct {
    bool open; /* fd 2 was open at start-up */
    dev_t dev;
    ino_t ino;
} start_stderr;

const char *mk_exe_path(size_t *len)
{
    static char exe[PATH_MAX];
    static ssize_t known = -1; /* the length once read (racing readers agree) */
    ssize_t n = __atomic_load_n(&known, __ATOMIC_ACQUIRE);
    if (n < 0) {
        n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        n = n > 0 ? n : 0;
        exe[n] = 0;
        __atomic_store_n(&known, n, __ATOMIC_RELEASE);
    }
    *len = (size_t)n;
    return exe;
}

void mk_stderr_remember(void)
{
    struct stat st;
    start_stderr.open = fstat(STDERR_FILENO, &st) == 0;
    start_stderr.dev = st.st_dev;
    start_stderr.ino = st.st_ino;
}

void mk_stderr_write(const char *msg, size_t n)
{
    struct stat st;
    if (!start_stderr.open || fstat(STDERR_FILENO, &st) != 0 ||
        st.st_dev != start_stderr.dev || st.st_ino != start_stderr.ino)
        return; /* fd 2 is something else now: say nothing */
    ssize_t w = write(STDERR_FILENO, msg, n);
    (void)w; /* nowhere left to report a failed report */
}

void mk_warn_once(const char *fmt, ...)
{
    static atomic_int said;
    char msg[512];
    va_list ap;

    if (atomic_exchange(&said, 1))
        return;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof msg - 2)
        n = sizeof msg - 2;
    msg[n++] = '\n';
    /* Shielded: write() is a cancellation point, malloc is not; and a stderr
     * whose reader is gone must not kill the program with SIGPIPE. */
    mk_shield_t shield;
    mk_shield(&shield);
    sigset_t pending_before;
    sigpending(&pending_before);
    errno = 0;
    mk_stderr_write(msg, (size_t)n);
    if (errno == EPIPE)
        mk_take_back(SIGPIPE, &pending_before);
    mk_unshield(&shield);
}
