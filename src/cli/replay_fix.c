/*
 * replay_fix.c - the child's side of a what-if: the calls of the stacks a
 * finding names served by the finding's fix (replay.h, MK_RFIX_*), timed
 * as the heap's calls are, so a fix's own cost is in what it saves.
 *
 * Each thread has its own instance of each fix (a pool, a stack, a FIFO, a
 * reused block), as a program gives each thread its own. A slot remembers
 * which instance holds its block; the heap serves whatever a fix cannot:
 * a size beyond its item, a second live block where it holds one, and
 * another thread's block (left where it is, as a free into another
 * thread's pool is not something a fix does).
 */
#define _GNU_SOURCE
#include "replay.h"

#include "../trace/tsc.h"

#include <memkit/fifo.h>
#include <memkit/pool.h>
#include <memkit/stack.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* What a slot's block came from: 0 the heap, else its instance + 1, and
 * the thread whose instance it is. */
typedef struct aux {
    uint16_t inst1;
    uint16_t owner;
} aux_t;

typedef struct desc {
    uint8_t kind;
    uint64_t size;
} desc_t;

struct mk_rfix {
    uint16_t *map; /* stack id -> entry + 1 (0: no fix) */
    mk_replay_fix *fixes;
    size_t nfixes;
    desc_t *inst; /* per instance */
    uint32_t ninst;
    aux_t *aux; /* per slot */
    uint32_t nslots;
};

typedef struct inst {
    mk_pool_t *pool;
    mk_stack_t *stack;
    mk_fifo_t *fifo;
    void *block; /* HOIST, LOCAL */
    bool live;
    uint64_t blocks, bytes; /* FRAME: the open frame's live blocks, bytes taken */
} inst_t;

struct mk_rfix_thread {
    mk_rfix *fx;
    int thread;
    uint64_t empty;
    uint64_t removed; /* heap calls its fixes took */
    inst_t *inst;
};

static void *map_bytes(size_t n)
{
    void *p = mmap(NULL, n ? n : 1, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

mk_rfix *mk_rfix_load(const char *path, uint32_t nsites, uint32_t nslots, char *why,
                      size_t whylen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    mk_rfix *fx = map_bytes(sizeof *fx);

    if (fd < 0 || fstat(fd, &sb) != 0 || !fx || sb.st_size % sizeof(mk_replay_fix)) {
        snprintf(why, whylen, "cannot read the fixes %s: %s", path,
                 fd < 0 ? strerror(errno) : "not a fix file");
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    fx->nfixes = (size_t)sb.st_size / sizeof(mk_replay_fix);
    fx->fixes = map_bytes((size_t)sb.st_size);
    fx->map = map_bytes(sizeof *fx->map * nsites);
    fx->aux = map_bytes(sizeof *fx->aux * (nslots ? nslots : 1));
    fx->nslots = nslots;
    if (!fx->fixes || !fx->map || !fx->aux ||
        pread(fd, fx->fixes, (size_t)sb.st_size, 0) != sb.st_size) {
        snprintf(why, whylen, "cannot read the fixes %s", path);
        close(fd);
        return NULL;
    }
    close(fd);
    for (size_t i = 0; i < fx->nfixes; i++)
        if ((uint32_t)fx->fixes[i].inst + 1 > fx->ninst)
            fx->ninst = (uint32_t)fx->fixes[i].inst + 1;
    if (!(fx->inst = map_bytes(sizeof *fx->inst * (fx->ninst ? fx->ninst : 1)))) {
        snprintf(why, whylen, "out of memory for the fixes of %s", path);
        return NULL;
    }
    for (size_t i = 0; i < fx->nfixes; i++) {
        const mk_replay_fix *e = &fx->fixes[i];
        if (e->site >= nsites || e->kind < MK_RFIX_POOL || e->kind > MK_RFIX_INSIDE ||
            i >= UINT16_MAX) {
            snprintf(why, whylen, "a fix out of range in %s", path);
            return NULL;
        }
        fx->map[e->site] = (uint16_t)(i + 1);
        /* an instance serves all its stacks: the largest size any of them
         * needs (the findings together grow a pair's first stack's) */
        desc_t *d = &fx->inst[e->inst];
        d->kind = e->kind;
        if (e->size > d->size)
            d->size = e->size;
    }
    return fx;
}

mk_rfix_thread *mk_rfix_thread_new(mk_rfix *fx, int thread, uint64_t empty_ticks)
{
    mk_rfix_thread *t = map_bytes(sizeof *t);

    if (!t || !(t->inst = map_bytes(sizeof *t->inst * (fx->ninst ? fx->ninst : 1))))
        return NULL;
    t->fx = fx;
    t->thread = thread;
    t->empty = empty_ticks;
    return t;
}

static inline uint64_t since(const mk_rfix_thread *t, uint64_t t0)
{
    uint64_t d = mk_fenced_end() - t0;
    return d > t->empty ? d - t->empty : 0;
}

/* A new block of size bytes (align: 0 for malloc's) from instance k, or
 * NULL when it cannot serve it. The instance is made on first use, and its
 * making is timed: a program pays for its pool too. */
static void *fix_alloc(mk_rfix_thread *t, uint32_t k, uint64_t size, size_t align)
{
    const desc_t *d = &t->fx->inst[k];
    inst_t *in = &t->inst[k];

    switch (d->kind) {
    case MK_RFIX_POOL:
        if (size > d->size || align > 16)
            return NULL;
        if (!in->pool &&
            !(in->pool = mk_pool_create(&(mk_pool_config_t){.item_size = d->size})))
            return NULL;
        return mk_pool_alloc(in->pool);
    case MK_RFIX_HOIST:
    case MK_RFIX_LOCAL:
        if (in->live || size > d->size || align > 16)
            return NULL;
        if (!in->block) {
            in->block = d->kind == MK_RFIX_HOIST ? malloc(d->size) : map_bytes(d->size);
            if (!in->block)
                return NULL;
        }
        in->live = true;
        return in->block;
    case MK_RFIX_FRAME: {
        /* a frame opens with the first live block and is popped with the
         * last one freed, as a scope around the site's work does; within
         * its budget (`size`), else the heap */
        if (in->bytes + size > d->size)
            return NULL;
        if (!in->stack && !(in->stack = mk_stack_create()))
            return NULL;
        if (!in->blocks)
            mk_stack_push(in->stack);
        void *p = align ? mk_stack_alloc_aligned(in->stack, size, align)
                        : mk_stack_alloc(in->stack, size);
        if (!p) {
            if (!in->blocks)
                mk_stack_pop(in->stack);
            return NULL;
        }
        in->blocks++;
        in->bytes += size;
        return p;
    }
    case MK_RFIX_FIFO:
        if (!in->fifo && !(in->fifo = mk_fifo_create(NULL)))
            return NULL;
        return align > MK_FIFO_GRAIN ? mk_fifo_alloc_aligned(in->fifo, size, align)
                                     : mk_fifo_alloc(in->fifo, size);
    }
    return NULL;
}

/* The block p of instance k given back. */
static void fix_free(mk_rfix_thread *t, uint32_t k, void *p)
{
    inst_t *in = &t->inst[k];

    switch (t->fx->inst[k].kind) {
    case MK_RFIX_POOL:
        mk_pool_free(in->pool, p);
        break;
    case MK_RFIX_HOIST:
    case MK_RFIX_LOCAL:
        in->live = false;
        break;
    case MK_RFIX_FRAME:
        if (--in->blocks == 0) {
            mk_stack_pop(in->stack);
            in->bytes = 0;
        }
        break;
    case MK_RFIX_FIFO:
        mk_fifo_free(in->fifo, p);
        break;
    }
}

static void *heap_alloc(const mk_replay_op *op, uint64_t size)
{
    void *p = NULL;

    switch (op->kind) {
    case MK_ROP_CALLOC:
        return calloc(1, size);
    case MK_ROP_ALIGNED:
        return posix_memalign(&p, (size_t)1 << op->align_log2, size) == 0 ? p : NULL;
    default:
        return malloc(size);
    }
}

int mk_rfix_call(mk_rfix_thread *t, const mk_replay_op *op, uint64_t size, void **pp,
                 uint64_t *touch, uint64_t *ticks, char *why, size_t whylen)
{
    mk_rfix *fx = t->fx;
    aux_t *a = &fx->aux[op->slot];
    uint64_t t0;

    *touch = 0;
    if (op->kind == MK_ROP_FREE || op->kind == MK_ROP_REALLOC) {
        if (!a->inst1)
            return 0; /* a heap block: the heap's call */
        uint32_t k = a->inst1 - 1u;
        bool mine = a->owner == t->thread, inside = fx->inst[k].kind == MK_RFIX_INSIDE;
        void *p = NULL;
        a->inst1 = 0;
        t0 = mk_fenced_begin();
        if (op->kind == MK_ROP_REALLOC && !(p = malloc(size)) && size) {
            snprintf(why, whylen, "the allocator failed a call of %llu bytes",
                     (unsigned long long)size);
            return -1;
        }
        if (mine && !inside)
            fix_free(t, k, *pp);
        *ticks = since(t, t0);
        t->removed += op->kind == MK_ROP_FREE;
        *pp = p;
        *touch = p ? size : 0;
        return op->kind == MK_ROP_REALLOC ? 2 : 1; /* a realloc became a malloc */
    }
    uint16_t e = fx->map[op->site];
    if (!e)
        return 0;
    const mk_replay_fix *f = &fx->fixes[e - 1];
    size_t align = op->kind == MK_ROP_ALIGNED ? (size_t)1 << op->align_log2 : 0;
    void *p = NULL;
    if (f->kind == MK_RFIX_INSIDE) { /* no call: the bytes are the first block's */
        *a = (aux_t){.inst1 = (uint16_t)(f->inst + 1), .owner = (uint16_t)t->thread};
        *pp = NULL;
        *ticks = 0;
        t->removed++;
        return 1;
    }
    size += f->extra; /* the pair's second block inside */
    t0 = mk_fenced_begin();
    if (f->kind != MK_RFIX_JOINED) {
        p = fix_alloc(t, f->inst, size, align);
        if (p && op->kind == MK_ROP_CALLOC)
            memset(p, 0, size);
    }
    if (!p) { /* beyond what the fix serves: the heap's call, as traced */
        if (!f->extra) {
            *ticks = since(t, t0);
            return 0;
        }
        p = heap_alloc(op, size); /* a heap block holding the pair */
        *ticks = since(t, t0);
        if (!p) {
            snprintf(why, whylen, "the allocator failed a call of %llu bytes",
                     (unsigned long long)size);
            return -1;
        }
        *pp = p;
        *touch = size;
        return 2; /* a heap block, freed by the heap's call */
    }
    *ticks = since(t, t0);
    *a = (aux_t){.inst1 = (uint16_t)(f->inst + 1), .owner = (uint16_t)t->thread};
    *pp = p;
    *touch = size;
    t->removed++;
    return 1;
}

uint64_t mk_rfix_removed(const mk_rfix_thread *t)
{
    return t->removed;
}

bool mk_rfix_heap_block(const mk_rfix *fx, uint32_t slot)
{
    return !fx || slot >= fx->nslots || !fx->aux[slot].inst1;
}

void mk_rfix_thread_release(mk_rfix_thread *t)
{
    for (uint32_t k = 0; t && k < t->fx->ninst; k++) {
        inst_t *in = &t->inst[k];
        if (in->pool)
            mk_pool_destroy(in->pool);
        if (in->stack)
            mk_stack_destroy(in->stack);
        if (in->fifo)
            mk_fifo_destroy(in->fifo);
        if (in->block && t->fx->inst[k].kind == MK_RFIX_HOIST)
            free(in->block);
        *in = (inst_t){0};
    }
}
