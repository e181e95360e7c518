/*
 * oncpu.c - each thread's cpu-clock samples: the event and its ring, the
 * records counted by class, the totals for the END record (oncpu.h says
 * what is measured and why this way).
 */
#define _GNU_SOURCE
#include "oncpu.h"

#include "elf_sym.h"
#include "thread.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

const struct perf_event_mmap_page mk_oncpu_idle;

/* The states' slots (oncpu.h): one per state, by state id, in a region a
 * forked child sees zeroed. A state beyond them is not sampled. */
#define MK_ONCPU_SLOTS 4096
static uintptr_t *slots;
static const uintptr_t no_slot; /* 0: the idle page */

/* The run's choice: whether it samples at start-up (mk_oncpu_init), and
 * what the kernel allows at the first ring (decide): a process that never
 * allocates (a shell's /bin/true) pays nothing. */
enum { STATE_OFF, STATE_USER, STATE_KERNEL, STATE_UNTRIED, STATE_DECIDING };
static struct {
    atomic_uint state;            /* STATE_*: the END's 0 off, 1 user, 2 kernel too */
    int refused;                  /* the errno of the event the kernel refused, or 0 */
    size_t page;                  /* the system's page size */
    atomic_uint rings;            /* threads that had a ring */
    uint64_t period;              /* ns of a thread's CPU time per sample */
    uintptr_t alloc_lo, alloc_hi; /* the allocator's code (by address) */
} oncpu;

static size_t ring_bytes(void)
{
    return (1 + MK_ONCPU_DATA_PAGES) * oncpu.page;
}

/* The calling thread's cpu-clock event, user time only or with the
 * kernel's; its descriptor, or -1 with errno set. */
static int open_event(bool kernel)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_CPU_CLOCK;
    a.sample_period = oncpu.period;
    a.sample_type = PERF_SAMPLE_IP;
    a.exclude_kernel = !kernel;
    a.exclude_hv = 1;
    return (int)mk_syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

/* The ring of a new event of the calling thread, or NULL. The descriptor is
 * closed at once: the mapping holds the event, so the program sees no
 * descriptor of ours, and munmap ends it. */
static void *open_ring(bool kernel, int fd)
{
    if (fd < 0)
        fd = open_event(kernel);
    if (fd < 0)
        return NULL;
    void *ring =
        mk_sys_mmap(NULL, ring_bytes(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int saved = errno;
    mk_sys_close(fd);
    errno = saved;
    return ring == MAP_FAILED ? NULL : ring;
}

uint64_t mk_oncpu_period_ns(void)
{
    return oncpu.period;
}

/* The allocator's code: the real malloc's object where it is an
 * allocator's alone (it defines no fopen: jemalloc, tcmalloc, mimalloc),
 * else the span of the real functions between their neighbours (glibc's
 * malloc.c; a program's own allocator). */
static void find_allocator(void)
{
    const void *all[] = {(const void *)mk_real.malloc,
                         (const void *)mk_real.free,
                         (const void *)mk_real.calloc,
                         (const void *)mk_real.realloc,
                         (const void *)mk_real.memalign,
                         (const void *)mk_real.posix_memalign,
                         (const void *)mk_real.valloc,
                         (const void *)mk_real.pvalloc,
                         (const void *)mk_real.malloc_usable_size};
    const void *fns[sizeof all / sizeof *all];
    int n = 0;
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if (all[i])
            fns[n++] = all[i];
    mk_elf_sym_t s;
    if (n == 0 || mk_elf_symbol_at(fns[0], "fopen", &s) == MK_ELF_NO_OBJECT)
        return;
    bool alone = s.sym == NULL && s.path[0] != 0;
    uintptr_t lo, hi;
    if (alone ? mk_elf_segment_of(fns[0], &lo, &hi) : mk_elf_bracket(fns, n, &lo, &hi)) {
        oncpu.alloc_lo = lo;
        oncpu.alloc_hi = hi;
    }
}

void mk_oncpu_init(void)
{
    oncpu.page = (size_t)sysconf(_SC_PAGESIZE);
    oncpu.period = mk_mode_sampled() ? MK_ONCPU_SAMPLED_PERIOD_NS : MK_ONCPU_PERIOD_NS;
    /* runtime.c decides whether; the first ring, what the kernel allows */
    atomic_store(&oncpu.state, mk_st.cfg.cpu_samples ? STATE_UNTRIED : STATE_OFF);
}

/* At the first ring, by the one thread that takes it to decide: the
 * allocator's code, the slots, and the event the kernel allows; that
 * event's descriptor, for the deciding thread's own ring (or -1). */
static int decide(void)
{
    int saved = errno;
    find_allocator();
    size_t bytes = MK_ONCPU_SLOTS * sizeof *slots;
    void *m = mk_sys_mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED || mk_syscall(SYS_madvise, m, bytes, MADV_WIPEONFORK) != 0) {
        oncpu.refused = errno; /* a kernel before 4.14: no safe place for rings */
        if (m != MAP_FAILED)
            mk_sys_munmap(m, bytes);
        atomic_store(&oncpu.state, STATE_OFF);
        errno = saved;
        return -1;
    }
    slots = m;
    /* The kernel's time inside a call (page faults, brk, mmap) is the
     * allocator's too: asked for first, user time alone where the kernel
     * keeps its own from us (perf_event_paranoid 2). */
    unsigned allowed = STATE_OFF;
    int fd = -1;
    for (unsigned state = STATE_KERNEL; state >= STATE_USER && fd < 0; state--) {
        fd = open_event(state == STATE_KERNEL);
        allowed = fd >= 0 ? state : STATE_OFF;
        oncpu.refused = fd >= 0 ? 0 : errno;
    }
    atomic_store(&oncpu.state, allowed); /* the waiting threads go on */
    errno = saved;
    return fd;
}

void mk_oncpu_thread_start(mk_oncpu_thread_t *o, uint32_t state_id)
{
    o->slot = &no_slot;
    o->seen = 0;
    unsigned state = atomic_load(&oncpu.state);
    if (state == STATE_OFF || state_id == 0 || state_id > MK_ONCPU_SLOTS)
        return; /* not sampled: counted in the END's threads */
    int fd = -1;
    if (state == STATE_UNTRIED &&
        atomic_compare_exchange_strong(&oncpu.state, &state, STATE_DECIDING))
        fd = decide();
    while ((state = atomic_load(&oncpu.state)) >= STATE_UNTRIED)
        __builtin_ia32_pause(); /* another thread decides: a few system calls */
    if (state == STATE_OFF)
        return;
    int saved = errno;
    void *ring = open_ring(state == STATE_KERNEL, fd);
    errno = saved;
    if (!ring)
        return;
    uintptr_t *slot = &slots[state_id - 1];
    *slot = (uintptr_t)ring - (uintptr_t)&mk_oncpu_idle;
    o->slot = slot;
    o->seen = __atomic_load_n(&mk_oncpu_page(o)->data_head, __ATOMIC_ACQUIRE);
    atomic_fetch_add_explicit(&oncpu.rings, 1, memory_order_relaxed);
}

/* A sample's address, as the tracer's, the allocator's or the program's. */
static unsigned class_of(uint64_t ip)
{
    if (mk_in_tracer((const void *)(uintptr_t)ip))
        return MK_ONCPU_TRACER;
    return ip - oncpu.alloc_lo < oncpu.alloc_hi - oncpu.alloc_lo ? MK_ONCPU_ALLOC
                                                                 : MK_ONCPU_PROGRAM;
}

void mk_oncpu_take(mk_oncpu_thread_t *o, uint64_t head, unsigned cls)
{
    const struct perf_event_mmap_page *page = mk_oncpu_page(o);
    if (page == &mk_oncpu_idle) { /* a forked child's wiped slot */
        o->seen = head;
        return;
    }
    const uint8_t *data = (const uint8_t *)page + oncpu.page;
    size_t size = MK_ONCPU_DATA_PAGES * oncpu.page; /* a power of two */
    uint64_t at = o->seen;
    while (head - at >= sizeof(struct perf_event_header)) {
        /* A record may wrap around the ring's end: copied out in pieces. */
        uint8_t rec[64];
        struct perf_event_header h;
        for (size_t i = 0; i < sizeof h; i++)
            ((uint8_t *)&h)[i] = data[(at + i) & (size - 1)];
        if (h.size < sizeof h || h.size > head - at)
            break; /* never seen: the rest is counted lost */
        size_t n = h.size < sizeof rec ? h.size : sizeof rec;
        for (size_t i = 0; i < n; i++)
            rec[i] = data[(at + i) & (size - 1)];
        uint64_t v;
        if (h.type == PERF_RECORD_SAMPLE && n >= sizeof h + 8) {
            memcpy(&v, rec + sizeof h, 8);
            o->n[cls == MK_ONCPU_BY_ADDRESS ? class_of(v) : cls]++;
        } else if (h.type == PERF_RECORD_LOST && n >= sizeof h + 16) {
            memcpy(&v, rec + sizeof h + 8, 8); /* after the event's id */
            o->n[MK_ONCPU_LOST] += v;
        }
        at += h.size;
    }
    o->seen = head;
    /* The kernel writes no further than data_tail: the records are read. */
    __atomic_store_n(&((struct perf_event_mmap_page *)(uintptr_t)page)->data_tail, head,
                     __ATOMIC_RELEASE);
}

void mk_oncpu_thread_end(mk_oncpu_thread_t *o)
{
    const struct perf_event_mmap_page *page = mk_oncpu_page(o);
    if (page == &mk_oncpu_idle)
        return;
    mk_oncpu_mark(o, MK_ONCPU_BY_ADDRESS);
    *(uintptr_t *)(uintptr_t)o->slot = 0;
    o->slot = &no_slot;
    o->seen = 0;
    mk_sys_munmap((void *)(uintptr_t)page, ring_bytes());
}

void mk_oncpu_after_fork_child(mk_oncpu_thread_t *o, uint32_t state_id, bool mine)
{
    /* The parent's rings are not in this process, and the slots read 0; a
     * thread of the parent that was deciding is not here to finish. */
    unsigned deciding = STATE_DECIDING;
    atomic_compare_exchange_strong(&oncpu.state, &deciding, STATE_UNTRIED);
    o->slot = &no_slot;
    o->seen = 0;
    memset(o->n, 0, sizeof o->n);
    if (mine) {
        atomic_store_explicit(&oncpu.rings, 0, memory_order_relaxed);
        mk_oncpu_thread_start(o, state_id);
    }
}

/* The samples of every state, by class; the caller's own up to now. */
static void totals(uint64_t n[MK_ONCPU_CLASSES])
{
    memset(n, 0, MK_ONCPU_CLASSES * sizeof *n);
    for (mk_thread_t *t = (mk_thread_t *)atomic_load(&mk_st.threads); t; t = t->next) {
        if (t == mk_self)
            mk_oncpu_mark(&t->oncpu, MK_ONCPU_BY_ADDRESS); /* up to now */
        for (int c = 0; c < MK_ONCPU_CLASSES; c++)
            n[c] += t->oncpu.n[c];
    }
}

void mk_oncpu_end_fields(uint64_t out[MK_ONCPU_END_FIELDS])
{
    uint64_t n[MK_ONCPU_CLASSES];
    totals(n);
    unsigned state = atomic_load(&oncpu.state);
    out[0] = state >= STATE_UNTRIED ? STATE_OFF : state;
    out[1] = (uint64_t)oncpu.refused;
    out[2] = oncpu.period;
    out[3] = atomic_load_explicit(&oncpu.rings, memory_order_relaxed);
    for (int c = 0; c < MK_ONCPU_CLASSES; c++)
        out[4 + c] = n[c];
}
