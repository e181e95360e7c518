/*
 * tlsf_malloc.c - libmemkit-tlsf.so: mk_tlsf as a program's malloc, through
 * LD_PRELOAD, so that memkit tune and memkit replay can set TLSF's bounded
 * calls beside glibc's and the drop-ins' on the program's own calls.
 *
 * One heap for the process, grown by mapping regions (MK_TLSF_GROW). Its
 * calls are serialized by a mutex of this file's while the process has more
 * than one thread (glibc's __libc_single_threaded says when), so a single-
 * threaded program pays no lock; a fork holds the lock across, so the
 * child never inherits it taken. The heap is made on the first call in
 * memory mapped here, so nothing here calls malloc.
 */
#define _GNU_SOURCE
#include <memkit/tlsf.h>

#include <errno.h>
#include <malloc.h> /* the prototypes of what this file defines */
#include <stdlib.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/single_threaded.h>
#include <unistd.h>

#define API __attribute__((visibility("default")))

static mk_tlsf_t *heap;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void fork_prepare(void)
{
    pthread_mutex_lock(&lock);
}

static void fork_parent(void)
{
    pthread_mutex_unlock(&lock);
}

static void fork_child(void)
{
    pthread_mutex_init(&lock, NULL);
}

/* The first region, mapped here: mk_tlsf_create would take the heap's own
 * state from malloc, which is this. Later regions are mapped by the heap
 * (MK_TLSF_GROW). */
#define FIRST_REGION (4u << 20)

static void make_heap(void)
{
    void *mem = mmap(NULL, FIRST_REGION, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return;
    heap = mk_tlsf_create_in(mem, FIRST_REGION, MK_TLSF_GROW);
    if (heap)
        pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* The heap, locked unless the process has one thread; NULL when it could
 * not be made (errno ENOMEM). */
static mk_tlsf_t *enter(bool *locked)
{
    if (__builtin_expect(heap == NULL, 0)) {
        pthread_once(&once, make_heap);
        if (!heap) {
            errno = ENOMEM;
            *locked = false;
            return NULL;
        }
    }
    *locked = !__libc_single_threaded;
    if (*locked)
        pthread_mutex_lock(&lock);
    return heap;
}

static void leave(bool locked)
{
    if (locked)
        pthread_mutex_unlock(&lock);
}

API void *malloc(size_t size)
{
    bool locked;
    mk_tlsf_t *t = enter(&locked);
    void *p = t ? mk_tlsf_malloc(t, size) : NULL;
    leave(locked);
    return p;
}

API void free(void *p)
{
    bool locked;
    if (!p)
        return;
    mk_tlsf_t *t = enter(&locked);
    if (t)
        mk_tlsf_free(t, p);
    leave(locked);
}

API void *calloc(size_t n, size_t size)
{
    bool locked;
    mk_tlsf_t *t = enter(&locked);
    void *p = t ? mk_tlsf_calloc(t, n, size) : NULL;
    leave(locked);
    return p;
}

API void *realloc(void *p, size_t size)
{
    bool locked;
    mk_tlsf_t *t = enter(&locked);
    void *q = t ? mk_tlsf_realloc(t, p, size) : NULL;
    leave(locked);
    return q;
}

API void *reallocarray(void *p, size_t n, size_t size)
{
    size_t bytes;
    if (__builtin_mul_overflow(n, size, &bytes)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, bytes);
}

API void *memalign(size_t align, size_t size)
{
    bool locked;
    if (align == 0 || (align & (align - 1))) {
        errno = EINVAL;
        return NULL;
    }
    mk_tlsf_t *t = enter(&locked);
    void *p = t ? mk_tlsf_memalign(t, align, size) : NULL;
    leave(locked);
    return p;
}

API int posix_memalign(void **out, size_t align, size_t size)
{
    if (align < sizeof(void *) || (align & (align - 1)))
        return EINVAL;
    void *p = memalign(align, size);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

API void *aligned_alloc(size_t align, size_t size)
{
    return memalign(align, size);
}

API void *valloc(size_t size)
{
    return memalign((size_t)sysconf(_SC_PAGESIZE), size);
}

API void *pvalloc(size_t size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (size > SIZE_MAX - page) {
        errno = ENOMEM;
        return NULL;
    }
    return memalign(page, (size + page - 1) & ~(page - 1));
}

API size_t malloc_usable_size(void *p)
{
    bool locked;
    if (!p)
        return 0;
    mk_tlsf_t *t = enter(&locked);
    size_t n = t ? mk_tlsf_usable_size(t, p) : 0;
    leave(locked);
    return n;
}
