/*
 * countalloc.c - a counting preload written apart from memkit, for the
 * independent count (tests/trace/countcheck.sh): every allocating call of
 * the malloc family and every free of a non-NULL pointer that reaches it,
 * counted with atomics, printed at exit to COUNTALLOC_OUT (or stderr).
 * C++'s operator new and strdup reach it as the one malloc each makes.
 * With COUNTALLOC_OUT, the counts also live in COUNTALLOC_OUT.live (three
 * native 64-bit numbers: calls, frees, and the calls made by the program's
 * own code, its executable's), a shared mapping the constructor makes: a
 * process that ends without running destructors (a Go program's own
 * exit_group) leaves its counts there. The third is the one to compare
 * with a tracer's in the same run: a tracer's own calls (glibc's
 * pthread_getattr_np allocates) come from libraries, never the program.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* [0] allocation calls, [1] frees, [2] calls from the program's code:
 * here until the constructor maps them */
static atomic_ulong early[3];
static atomic_ulong *counts = early;
#define allocs (counts[0])
#define frees  (counts[1])

/* The program's executable segment (from the constructor on). */
static uintptr_t prog_lo, prog_hi;

static void count_call(const void *caller)
{
    atomic_fetch_add(&allocs, 1);
    if ((uintptr_t)caller >= prog_lo && (uintptr_t)caller < prog_hi)
        atomic_fetch_add(&counts[2], 1);
}

/* dlsym allocates: what it asks for before the real calloc is known comes
 * from a static buffer and is never freed. */
static _Thread_local int resolving;
static char boot[4096];
static size_t boot_used;

static void *boot_alloc(size_t n)
{
    void *p = boot + boot_used;
    boot_used += (n + 15) & ~(size_t)15;
    return boot_used <= sizeof boot ? p : NULL;
}

#define RESOLVE(type, var, name)                                                         \
    do {                                                                                 \
        if (!var) {                                                                      \
            resolving = 1;                                                               \
            var = (type)dlsym(RTLD_NEXT, name);                                          \
            resolving = 0;                                                               \
        }                                                                                \
    } while (0)

void *malloc(size_t n)
{
    static void *(*next)(size_t);
    if (!next && resolving)
        return boot_alloc(n);
    RESOLVE(void *(*)(size_t), next, "malloc");
    count_call(__builtin_return_address(0));
    return next(n);
}

void *calloc(size_t a, size_t b)
{
    static void *(*next)(size_t, size_t);
    if (!next && resolving)
        return boot_alloc(a * b); /* zeroed: static */
    RESOLVE(void *(*)(size_t, size_t), next, "calloc");
    count_call(__builtin_return_address(0));
    return next(a, b);
}

void *realloc(void *p, size_t n)
{
    static void *(*next)(void *, size_t);
    RESOLVE(void *(*)(void *, size_t), next, "realloc");
    count_call(__builtin_return_address(0));
    return next(p, n);
}

void free(void *p)
{
    static void (*next)(void *);
    if ((char *)p >= boot && (char *)p < boot + sizeof boot)
        return;
    RESOLVE(void (*)(void *), next, "free");
    if (p)
        atomic_fetch_add(&frees, 1);
    next(p);
}

int posix_memalign(void **r, size_t a, size_t n)
{
    static int (*next)(void **, size_t, size_t);
    RESOLVE(int (*)(void **, size_t, size_t), next, "posix_memalign");
    count_call(__builtin_return_address(0));
    return next(r, a, n);
}

void *aligned_alloc(size_t a, size_t n)
{
    static void *(*next)(size_t, size_t);
    RESOLVE(void *(*)(size_t, size_t), next, "aligned_alloc");
    count_call(__builtin_return_address(0));
    return next(a, n);
}

void *memalign(size_t a, size_t n)
{
    static void *(*next)(size_t, size_t);
    RESOLVE(void *(*)(size_t, size_t), next, "memalign");
    count_call(__builtin_return_address(0));
    return next(a, n);
}

static int program_text(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && !prog_lo) {
            prog_hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
            prog_lo = info->dlpi_addr + ph->p_vaddr;
        }
    }
    return 1; /* the first object is the program */
}

__attribute__((constructor)) static void map_counts(void)
{
    dl_iterate_phdr(program_text, NULL);
    const char *to = getenv("COUNTALLOC_OUT");
    char path[4096];
    if (!to || snprintf(path, sizeof path, "%s.live", to) >= (int)sizeof path)
        return;
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    void *m = ftruncate(fd, sizeof early) == 0
                  ? mmap(NULL, sizeof early, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                  : MAP_FAILED;
    close(fd);
    if (m == MAP_FAILED)
        return;
    atomic_ulong *shared = m;
    atomic_store(&shared[0], atomic_load(&early[0]));
    atomic_store(&shared[1], atomic_load(&early[1]));
    atomic_store(&shared[2], atomic_load(&early[2]));
    counts = shared; /* one thread yet: no call falls between */
}

__attribute__((destructor)) static void report(void)
{
    char b[128];
    int k =
        snprintf(b, sizeof b, "countalloc: %lu allocation calls, %lu frees\n",
                 (unsigned long)atomic_load(&allocs), (unsigned long)atomic_load(&frees));
    const char *to = getenv("COUNTALLOC_OUT"); /* programs may close stderr first */
    int fd = to ? open(to, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : 2;
    if (fd >= 0 && write(fd, b, (size_t)k) < 0)
        fd = -1;
    if (to && fd >= 0)
        close(fd);
}
