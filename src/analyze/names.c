/*
 * names.c - stack ids to symbolized frames, cached; source locations of a
 * log as one-frame stacks. Strings are interned: each distinct name is
 * stored once and compared by pointer afterwards.
 */
#define _GNU_SOURCE
#include "names.h"

#include "../trace/kv_table.h"
#include "symbolize.h"

#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct interned {
    char *s;
    size_t len;
    uint64_t hash;
    uint32_t id; /* for a log's locations: the stack id */
} interned_t;

/* A stack's frames. A trace's stacks hold them as frames. A merged
 * stack (mk_names_add_stack) holds ids into the table of distinct frames,
 * 4 bytes a frame instead of 40: a run's report keeps every stack of every
 * process, and shows a few; frames is made from ids when one is shown. */
typedef struct stack_names {
    mk_frame_t *frames;
    uint32_t *ids; /* a merged stack's, else NULL */
    uint32_t depth;
    bool resolved;
} stack_names_t;

struct mk_names {
    const mk_trace_t *tr; /* NULL for a log */
    mk_symbolizer_t *sym;
    bool sym_tried;
    interned_t *strings; /* open addressing, cap a power of two */
    size_t nstrings, strings_cap;
    mk_kv_table_t pcs; /* return address -> a = index into pc_frames */
    mk_frame_t *pc_frames;
    size_t npc, pc_cap;
    stack_names_t *stacks; /* dense, found by id through stack_index */
    size_t nstacks, stacks_cap;
    mk_kv_table_t stack_index; /* id + 1 -> a = index */
    uint32_t next_location;
    /* The processes of one run share their symbolization: shared (another
     * names object: the merged report's) keeps the frames of each (module
     * file, offset) any of them resolved, in its pc_frames, found through
     * its module_pcs. One libc is then read once for a whole build, not
     * once per process. */
    mk_names_t *shared;
    mk_kv_table_t module_pcs; /* hash of (path, offset) -> a = index, b = count */
    mk_kv_table_t stack_keys; /* a merged stack's ids_key -> a = its id */
    mk_frame_t *distinct;     /* every distinct frame of the merged stacks */
    size_t ndistinct, distinct_cap;
    mk_kv_table_t frame_keys; /* frame_key -> a = its index in distinct */
    /* Strings adopted from one other names object (mk_names_add_stack's
     * from), by their address there: each of its strings is one copy, so
     * a string met again is an address looked up, not a string hashed and
     * compared. Emptied when the stacks come from another object. */
    uint64_t serial;       /* this object's, unique in the process */
    uint64_t adopted_from; /* the serial whose strings `adopted` holds */
    mk_kv_table_t adopted; /* address there -> a = the string here */
};

static _Atomic uint64_t next_serial = 1;

static bool strings_grow(mk_names_t *n)
{
    size_t cap = n->strings_cap ? n->strings_cap * 2 : 256;
    interned_t *t = calloc(cap, sizeof *t);
    if (!t)
        return false;
    for (size_t i = 0; i < n->strings_cap; i++) {
        if (!n->strings[i].s)
            continue;
        size_t j = n->strings[i].hash & (cap - 1);
        while (t[j].s)
            j = (j + 1) & (cap - 1);
        t[j] = n->strings[i];
    }
    free(n->strings);
    n->strings = t;
    n->strings_cap = cap;
    return true;
}

/* The one stored copy of s[0..len); NULL when memory ran out. */
static interned_t *intern(mk_names_t *n, const char *s, size_t len)
{
    if ((n->nstrings + 1) * 2 > n->strings_cap && !strings_grow(n))
        return NULL;
    uint64_t h = mk_hash_bytes(s, len);
    size_t i = h & (n->strings_cap - 1);
    for (; n->strings[i].s; i = (i + 1) & (n->strings_cap - 1))
        if (n->strings[i].hash == h && n->strings[i].len == len &&
            memcmp(n->strings[i].s, s, len) == 0)
            return &n->strings[i];
    char *copy = malloc(len + 1);
    if (!copy)
        return NULL;
    memcpy(copy, s, len);
    copy[len] = 0;
    n->strings[i] = (interned_t){copy, len, h, 0};
    n->nstrings++;
    return &n->strings[i];
}

static const char *intern_str(mk_names_t *n, const char *s)
{
    if (!s)
        return NULL;
    interned_t *e = intern(n, s, strlen(s));
    return e ? e->s : NULL;
}

mk_names_t *mk_names_new(void)
{
    mk_names_t *n = calloc(1, sizeof *n);
    if (n) {
        n->pcs = mk_kv_heap_table();
        n->stack_index = mk_kv_heap_table();
        n->module_pcs = mk_kv_heap_table();
        n->stack_keys = mk_kv_heap_table();
        n->adopted = mk_kv_heap_table();
        n->serial = atomic_fetch_add(&next_serial, 1);
        n->frame_keys = mk_kv_heap_table();
    }
    return n;
}

void mk_names_share(mk_names_t *n, mk_names_t *shared)
{
    n->shared = shared;
}

mk_names_t *mk_names_for_trace(const mk_trace_t *tr, bool symbols)
{
    mk_names_t *n = mk_names_new();
    if (n) {
        n->tr = tr;
        n->sym_tried = !symbols; /* never make a symbolizer */
    }
    return n;
}

/* The module holding pc, from the map alone: the newest snapshot wins. */
static void module_of(const mk_trace_t *tr, uint64_t pc, mk_symbol_t *s)
{
    const mk_module_t *m = mk_trace_module_at(tr, pc);
    if (m) {
        s->module = m->name;
        s->offset = pc - m->base;
    }
}

void mk_names_free(mk_names_t *n)
{
    if (!n)
        return;
    mk_symbolizer_free(n->sym);
    for (size_t i = 0; i < n->strings_cap; i++)
        free(n->strings[i].s);
    free(n->strings);
    free(n->pcs.slots);
    free(n->pc_frames);
    for (size_t i = 0; i < n->nstacks; i++) {
        free(n->stacks[i].frames);
        free(n->stacks[i].ids);
    }
    free(n->stacks);
    free(n->stack_index.slots);
    free(n->module_pcs.slots);
    free(n->stack_keys.slots);
    free(n->distinct);
    free(n->frame_keys.slots);
    free(n->adopted.slots);
    free(n);
}

/* The entry of a stack id, or NULL when there is none and !create (or
 * memory ran out). */
static stack_names_t *stack_slot(mk_names_t *n, uint32_t id, bool create)
{
    bool fresh = false;
    mk_kv_t *e = create ? mk_kv_put(&n->stack_index, (uint64_t)id + 1, &fresh)
                        : mk_kv_find(&n->stack_index, (uint64_t)id + 1);
    if (!e)
        return NULL;
    if (fresh) {
        if (!mk_grow((void **)&n->stacks, &n->stacks_cap, n->nstacks + 1,
                     sizeof *n->stacks)) {
            mk_kv_remove(&n->stack_index, e);
            return NULL;
        }
        e->a = n->nstacks++;
    }
    return &n->stacks[e->a];
}

uint32_t mk_names_add_location(mk_names_t *n, const char *file, size_t file_len, int line)
{
    char key[4200];
    if (file_len > 4096)
        file_len = 4096;
    int kl = snprintf(key, sizeof key, "%.*s:%d", (int)file_len, file, line);
    /* The file first: its string stays put when the table grows, while the
     * key's entry is only valid until the next intern(). */
    interned_t *fe = intern(n, file, file_len);
    const char *fs = fe ? fe->s : NULL;
    interned_t *e = fs ? intern(n, key, (size_t)kl) : NULL;
    if (!e || e->id)
        return e ? e->id : 0;
    stack_names_t *s = stack_slot(n, n->next_location + 1, true);
    mk_frame_t *f = s ? calloc(1, sizeof *f) : NULL;
    if (!f)
        return 0;
    e->id = ++n->next_location;
    *f = (mk_frame_t){.file = fs, .line = line};
    *s = (stack_names_t){.frames = f, .depth = 1, .resolved = true};
    return e->id;
}

static mk_frame_t frame_of(mk_names_t *n, const mk_symbol_t *s)
{
    return (mk_frame_t){
        .function = intern_str(n, s->function),
        .file = intern_str(n, s->file),
        .line = s->line,
        .module = intern_str(n, s->module),
        .offset = s->offset,
    };
}

/* Another names object's frame, its strings interned in n. */
static mk_frame_t adopt_frame(mk_names_t *n, const mk_frame_t *f)
{
    mk_symbol_t s = {f->function, f->file, f->line, f->module, f->offset};
    return frame_of(n, &s);
}

/* A string of the names object n->adopted_from, interned in n. Only
 * mk_names_add_stack adopts through the memo: it alone empties it when its
 * strings' owner changes. */
static const char *adopt_str_memo(mk_names_t *n, const char *s)
{
    bool fresh;
    if (!s)
        return NULL;
    mk_kv_t *e = mk_kv_put(&n->adopted, (uintptr_t)s, &fresh);
    if (e && !fresh)
        return (const char *)(uintptr_t)e->a;
    const char *own = intern_str(n, s);
    if (e && own)
        e->a = (uintptr_t)own;
    else if (e)
        mk_kv_remove(&n->adopted, e);
    return own;
}

/* adopt_frame for a frame of n->adopted_from. */
static mk_frame_t adopt_frame_memo(mk_names_t *n, const mk_frame_t *f)
{
    return (mk_frame_t){
        .function = adopt_str_memo(n, f->function),
        .file = adopt_str_memo(n, f->file),
        .line = f->line,
        .module = adopt_str_memo(n, f->module),
        .offset = f->offset,
    };
}

/* A frame's hash: its strings are n's own (interned: one pointer per
 * distinct string), so equal frames are equal words. As the report names
 * frames (!exact), the offset counts only where the function is unknown. */
static uint64_t frame_hash(const mk_frame_t *f, bool exact)
{
    uint64_t w[5] = {(uintptr_t)f->function, (uintptr_t)f->file,
                     (uint64_t)(uint32_t)f->line, (uintptr_t)f->module,
                     exact || !f->function ? f->offset : 0};
    uint64_t h = 0xcbf29ce484222325ull;
    for (int k = 0; k < 5; k++)
        h = (h ^ w[k]) * 0x100000001b3ull;
    return h;
}

/* Do a and b name the same frame (the offset only where the function is
 * unknown)? */
static bool same_name(const mk_frame_t *a, const mk_frame_t *b)
{
    return a->function == b->function && a->file == b->file && a->line == b->line &&
           a->module == b->module && (a->function || a->offset == b->offset);
}

/* The id of frame f (its strings n's own) among the distinct frames, equal
 * in every field, made on first sight; UINT32_MAX when memory ran out. salt
 * moves a key whose hash another frame took. */
static uint32_t frame_id(mk_names_t *n, const mk_frame_t *f)
{
    for (uint64_t salt = 0;; salt++) {
        bool fresh;
        uint64_t key = (frame_hash(f, true) ^ (salt * 0x9e3779b97f4a7c15ull)) | 1;
        mk_kv_t *e = mk_kv_put(&n->frame_keys, key, &fresh);
        if (!e)
            return UINT32_MAX;
        if (!fresh) {
            const mk_frame_t *d = &n->distinct[e->a];
            if (same_name(d, f) && d->offset == f->offset)
                return (uint32_t)e->a;
            continue; /* another frame's hash: the next salt */
        }
        if (n->ndistinct >= UINT32_MAX - 1 ||
            !mk_grow((void **)&n->distinct, &n->distinct_cap, n->ndistinct + 1,
                     sizeof *n->distinct)) {
            mk_kv_remove(&n->frame_keys, e);
            return UINT32_MAX;
        }
        n->distinct[n->ndistinct] = *f;
        e->a = n->ndistinct;
        return (uint32_t)n->ndistinct++;
    }
}

/* A merged stack's key: its frames as the report names them, so stacks
 * that name the same frames are one stack (the first keeps its offsets). */
static uint64_t ids_key(const mk_names_t *n, const uint32_t *ids, uint32_t depth,
                        uint64_t salt)
{
    uint64_t h = 0xcbf29ce484222325ull ^ (salt << 32) ^ depth;
    for (uint32_t i = 0; i < depth; i++)
        h = (h ^ frame_hash(&n->distinct[ids[i]], false)) * 0x100000001b3ull;
    return h | 1; /* 0 is the table's empty slot */
}

static bool same_names(const mk_names_t *n, const uint32_t *a, const uint32_t *b,
                       uint32_t depth)
{
    for (uint32_t i = 0; i < depth; i++)
        if (a[i] != b[i] && !same_name(&n->distinct[a[i]], &n->distinct[b[i]]))
            return false;
    return true;
}

uint32_t mk_names_add_stack(mk_names_t *n, const mk_names_t *from,
                            const mk_frame_t *frames, uint32_t depth)
{
    if (from->serial != n->adopted_from) { /* another object's addresses */
        mk_kv_release(&n->adopted);
        n->adopted_from = from->serial;
    }
    uint32_t *ids = malloc((depth ? depth : 1) * sizeof *ids);
    if (!ids)
        return 0;
    for (uint32_t i = 0; i < depth; i++) {
        mk_frame_t own = adopt_frame_memo(n, &frames[i]);
        if ((ids[i] = frame_id(n, &own)) == UINT32_MAX) {
            free(ids);
            return 0;
        }
    }
    for (uint64_t salt = 0;; salt++) {
        bool fresh;
        mk_kv_t *e = mk_kv_put(&n->stack_keys, ids_key(n, ids, depth, salt), &fresh);
        if (!e)
            break;
        if (!fresh) {
            const stack_names_t *s = stack_slot(n, (uint32_t)e->a, false);
            if (s && s->depth == depth && same_names(n, s->ids, ids, depth)) {
                free(ids);
                return (uint32_t)e->a;
            }
            continue; /* another stack's hash: the next salt */
        }
        uint32_t id = n->next_location + 1;
        stack_names_t *s = stack_slot(n, id, true);
        if (!s) {
            mk_kv_remove(&n->stack_keys, e);
            break;
        }
        *s = (stack_names_t){.ids = ids, .depth = depth, .resolved = true};
        e->a = id; /* stack_slot grew another table: e still stands */
        n->next_location = id;
        return id;
    }
    free(ids);
    return 0;
}

void mk_names_drop_stack(mk_names_t *n, uint32_t stack)
{
    stack_names_t *s = stack_slot(n, stack, false);
    if (!s)
        return;
    free(s->frames);
    free(s->ids);
    *s = (stack_names_t){NULL, NULL, 0, false};
}

/* Inlined functions at one address, at most (deeper chains are cut). */
#define MK_INLINE_MAX 16

/* The key of a return address in the shared table: its module file and
 * offset, the same in every process of a run. */
static uint64_t module_pc_key(const mk_module_t *m, uint64_t pc)
{
    return (mk_hash_bytes(m->path, strlen(m->path)) ^
            (pc - m->base) * 0x9e3779b97f4a7c15ull) |
           1;
}

/* Copies k frames from another names object's pc_frames into n's, their
 * strings interned in n; returns where they start, or SIZE_MAX. */
static size_t adopt_frames(mk_names_t *n, const mk_frame_t *from, uint32_t k)
{
    if (!mk_grow((void **)&n->pc_frames, &n->pc_cap, n->npc + k, sizeof *n->pc_frames))
        return SIZE_MAX;
    size_t at = n->npc;
    for (uint32_t i = 0; i < k; i++)
        n->pc_frames[at + i] = adopt_frame(n, &from[i]);
    n->npc += k;
    return at;
}

/* A return address's key in n->pcs: pc + 1, as 0 marks an empty slot; the
 * one address that wraps, all ones (a damaged trace's: no code lies there),
 * shares address 0's. */
static uint64_t pc_key(uint64_t pc)
{
    return pc + 1 ? pc + 1 : 1;
}

/* The frames of a return address (itself and what was inlined there),
 * symbolized once: *count frames from the returned index of pc_frames. */
static size_t frames_of_pc(mk_names_t *n, uint64_t pc, uint32_t *count)
{
    mk_kv_t *c = mk_kv_find(&n->pcs, pc_key(pc));
    if (c) {
        *count = (uint32_t)c->b;
        return c->a;
    }
    const mk_module_t *m = n->shared && n->tr ? mk_trace_module_at(n->tr, pc) : NULL;
    uint64_t key = m ? module_pc_key(m, pc) : 0;
    const mk_kv_t *hit = m ? mk_kv_find(&n->shared->module_pcs, key) : NULL;
    if (hit) { /* another process of the run resolved it */
        bool fresh;
        size_t at = adopt_frames(n, &n->shared->pc_frames[hit->a], (uint32_t)hit->b);
        if (at == SIZE_MAX || !(c = mk_kv_put(&n->pcs, pc_key(pc), &fresh))) {
            *count = 0;
            return 0;
        }
        c->a = at;
        c->b = hit->b;
        *count = (uint32_t)hit->b;
        return at;
    }
    if (!n->sym_tried) {
        n->sym = mk_symbolizer_new(n->tr);
        n->sym_tried = true;
    }
    mk_symbol_t s[MK_INLINE_MAX];
    int k = mk_symbolize_inline(n->sym, pc, s, MK_INLINE_MAX);
    if (!n->sym)
        module_of(n->tr, pc, &s[0]);
    bool fresh;
    if (!mk_grow((void **)&n->pc_frames, &n->pc_cap, n->npc + (size_t)k,
                 sizeof *n->pc_frames) ||
        !(c = mk_kv_put(&n->pcs, pc_key(pc), &fresh))) {
        *count = 0;
        return 0;
    }
    for (int i = 0; i < k; i++)
        n->pc_frames[n->npc + (size_t)i] = frame_of(n, &s[i]);
    c->a = n->npc;
    c->b = (uint64_t)k;
    n->npc += (size_t)k;
    *count = (uint32_t)k;
    if (m) { /* for the other processes of the run */
        bool added;
        size_t at = adopt_frames(n->shared, &n->pc_frames[c->a], (uint32_t)k);
        mk_kv_t *e =
            at != SIZE_MAX ? mk_kv_put(&n->shared->module_pcs, key, &added) : NULL;
        if (e) {
            e->a = at;
            e->b = (uint64_t)k;
        }
    }
    return c->a;
}

/* The return addresses of a stack of the trace: *pcs (pointing at *one for
 * a --summary-only trace's site, whose stack is its calling instruction);
 * returns how many, 0 for an unknown stack. */
static uint32_t stack_pcs(const mk_trace_t *tr, uint32_t stack, const uint64_t **pcs,
                          uint64_t *one)
{
    if (tr->summary.present && !(tr->header.flags & MK_TF_SITE_STACKS)) {
        *one = stack - 1 < tr->summary.nsites ? tr->summary.sites[stack - 1].pc : 0;
        *pcs = one;
        return *one != 0;
    }
    const mk_stack_def_t *def = mk_trace_stack(tr, stack);
    *pcs = def ? def->frames : NULL;
    return def ? def->depth : 0;
}

const mk_frame_t *mk_names_stack(mk_names_t *n, uint32_t stack, uint32_t *depth)
{
    static const mk_frame_t none[1];
    *depth = 0;
    stack_names_t *s = stack_slot(n, stack, false);
    if (s && s->resolved && s->ids && !s->frames && s->depth) {
        s->frames = malloc(s->depth * sizeof *s->frames); /* shown: made now */
        for (uint32_t i = 0; s->frames && i < s->depth; i++)
            s->frames[i] = n->distinct[s->ids[i]];
    }
    if (s && s->resolved) {
        *depth = s->frames ? s->depth : 0;
        return s->frames ? s->frames : none;
    }
    if (!n->tr || !stack || !(s = stack_slot(n, stack, true)))
        return none;
    uint64_t one_pc;
    const uint64_t *pcs;
    uint32_t d = stack_pcs(n->tr, stack, &pcs, &one_pc);
    s->resolved = true;
    if (!d)
        return none;
    /* Each return address gives one frame, or more where calls were inlined
     * into it; count first, then copy. */
    uint32_t total = 0;
    for (uint32_t i = 0; i < d; i++) {
        uint32_t k;
        frames_of_pc(n, pcs[i], &k);
        total += k;
    }
    s->frames = malloc((total ? total : 1) * sizeof *s->frames);
    if (!s->frames)
        return none;
    uint32_t used = 0;
    for (uint32_t i = 0; i < d; i++) {
        uint32_t k;
        size_t at = frames_of_pc(n, pcs[i], &k);
        for (uint32_t j = 0; j < k && used < total; j++)
            s->frames[used++] = n->pc_frames[at + j];
    }
    s->depth = used;
    *depth = used;
    return s->frames;
}

bool mk_names_frame(mk_names_t *n, uint32_t stack, uint32_t index, mk_frame_t *out)
{
    stack_names_t *s = stack_slot(n, stack, false);
    if (s && s->ids) { /* a merged stack: its frames need not be made */
        if (index < s->depth)
            *out = n->distinct[s->ids[index]];
        return index < s->depth;
    }
    if ((s && s->resolved) || !n->tr || !stack) {
        uint32_t depth;
        const mk_frame_t *f = mk_names_stack(n, stack, &depth);
        if (index < depth)
            *out = f[index];
        return index < depth;
    }
    /* Frame index counts inlined frames too: walk the return addresses
     * until the one whose frames hold it. */
    uint64_t one_pc;
    const uint64_t *pcs;
    uint32_t d = stack_pcs(n->tr, stack, &pcs, &one_pc);
    for (uint32_t i = 0; i < d; i++) {
        uint32_t k;
        size_t at = frames_of_pc(n, pcs[i], &k);
        if (index < k) {
            *out = n->pc_frames[at + index]; /* strings interned: they outlive moves */
            return true;
        }
        index -= k;
    }
    return false;
}

bool mk_names_innermost(mk_names_t *n, uint32_t stack, mk_frame_t *out)
{
    return mk_names_frame(n, stack, 0, out);
}

bool mk_frame_known(const mk_frame_t *f)
{
    return f->function || f->file;
}

/* A label built piece by piece, as snprintf would (truncated to cap - 1
 * bytes, always terminated): reports label every site they roll up, and
 * snprintf's format parsing was a fifth of the summary memkit trace prints. */
typedef struct label {
    char *buf;
    size_t cap, len;
} label_t;

static void label_put(label_t *l, const char *s, size_t n)
{
    if (l->len + 1 < l->cap) {
        size_t room = l->cap - 1 - l->len;
        memcpy(l->buf + l->len, s, n < room ? n : room);
    }
    l->len += n;
}

static void label_str(label_t *l, const char *s)
{
    label_put(l, s, strlen(s));
}

static void label_dec(label_t *l, int v)
{
    char digits[12], *p = digits + sizeof digits;
    unsigned u = v < 0 ? 0u - (unsigned)v : (unsigned)v;
    do
        *--p = (char)('0' + u % 10);
    while (u /= 10);
    if (v < 0)
        *--p = '-';
    label_put(l, p, (size_t)(digits + sizeof digits - p));
}

static void label_hex(label_t *l, uint64_t v)
{
    char digits[16], *p = digits + sizeof digits;
    do
        *--p = "0123456789abcdef"[v & 15];
    while (v >>= 4);
    label_put(l, p, (size_t)(digits + sizeof digits - p));
}

static const char *label_end(label_t *l)
{
    if (l->cap)
        l->buf[l->len < l->cap ? l->len : l->cap - 1] = 0;
    return l->buf;
}

const char *mk_frame_label(const mk_frame_t *f, char *buf, size_t cap)
{
    label_t l = {buf, cap, 0};
    if (f->function && f->file) { /* "%s (%s:%d)" */
        label_str(&l, f->function);
        label_put(&l, " (", 2);
        label_str(&l, f->file);
        label_put(&l, ":", 1);
        label_dec(&l, f->line);
        label_put(&l, ")", 1);
    } else if (f->function) { /* "%s (%s)" */
        label_str(&l, f->function);
        label_put(&l, " (", 2);
        label_str(&l, f->module ? f->module : "?");
        label_put(&l, ")", 1);
    } else if (f->file) { /* "%s:%d" */
        label_str(&l, f->file);
        label_put(&l, ":", 1);
        label_dec(&l, f->line);
    } else { /* "%s+0x%" PRIx64, or "0x%" PRIx64 */
        if (f->module) {
            label_str(&l, f->module);
            label_put(&l, "+", 1);
        }
        label_put(&l, "0x", 2);
        label_hex(&l, f->offset);
    }
    return label_end(&l);
}

const char *mk_frame_long(const mk_frame_t *f, char *buf, size_t cap)
{
    if (f->function && f->file)
        snprintf(buf, cap, "%s at %s:%d (%s)", f->function, f->file, f->line,
                 f->module ? f->module : "?");
    else
        mk_frame_label(f, buf, cap);
    return buf;
}
