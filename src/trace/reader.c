/*
 * reader.c - the .mkt reader: records, event decoding, and the time-ordered
 * merge of the threads' event streams. See format.h for the layout.
 */
#define _GNU_SOURCE
#include "reader.h"

#include <zstd.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const kind_names[MK_K_COUNT] = {
    [MK_K_NONE] = "none",
    [MK_K_MALLOC] = "malloc",
    [MK_K_CALLOC] = "calloc",
    [MK_K_REALLOC] = "realloc",
    [MK_K_REALLOCARRAY] = "reallocarray",
    [MK_K_FREE] = "free",
    [MK_K_POSIX_MEMALIGN] = "posix_memalign",
    [MK_K_ALIGNED_ALLOC] = "aligned_alloc",
    [MK_K_MEMALIGN] = "memalign",
    [MK_K_VALLOC] = "valloc",
    [MK_K_PVALLOC] = "pvalloc",
    [MK_K_STRDUP] = "strdup",
    [MK_K_STRNDUP] = "strndup",
    [MK_K_WCSDUP] = "wcsdup",
    [MK_K_NEW] = "new",
    [MK_K_NEW_ARRAY] = "new[]",
    [MK_K_NEW_ALIGNED] = "new(align)",
    [MK_K_NEW_ARRAY_ALIGNED] = "new[](align)",
    [MK_K_DELETE] = "delete",
    [MK_K_DELETE_ARRAY] = "delete[]",
    [MK_K_MMAP] = "mmap",
    [MK_K_MUNMAP] = "munmap",
    [MK_K_MREMAP] = "mremap",
    [MK_K_BRK] = "brk",
};

const char *mk_kind_name(unsigned kind)
{
    return kind < MK_K_COUNT ? kind_names[kind] : "unknown";
}

static void damage(mk_trace_t *tr, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void damage(mk_trace_t *tr, const char *fmt, ...)
{
    va_list ap;
    if (tr->damage[0])
        return; /* the first fault is the one to report */
    va_start(ap, fmt);
    vsnprintf(tr->damage, sizeof tr->damage, fmt, ap);
    va_end(ap);
}

static void *heap_zalloc(size_t n)
{
    return calloc(1, n);
}

static void heap_release(void *p, size_t n)
{
    (void)n;
    free(p);
}

mk_kv_table_t mk_kv_heap_table(void)
{
    return (mk_kv_table_t){.alloc = heap_zalloc, .release = heap_release};
}

bool mk_grow(void **buf, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    size_t n = *cap ? *cap : 16;
    while (n < need)
        n *= 2;
    void *p = realloc(*buf, n * elem);
    if (!p)
        return false;
    memset((char *)p + *cap * elem, 0, (n - *cap) * elem);
    *buf = p;
    *cap = n;
    return true;
}

/* Copies a length-prefixed string into a fixed buffer, NUL-terminated. */
static void get_str(mk_cursor_t *c, char *out, size_t cap)
{
    uint64_t n;
    const uint8_t *s = mk_get_bytes(c, &n);
    if (!s) {
        out[0] = 0;
        return;
    }
    if (n >= cap)
        n = cap - 1;
    memcpy(out, s, n);
    out[n] = 0;
}

static bool parse_header(mk_trace_t *tr, const uint8_t *raw, size_t len)
{
    mk_cursor_t c = {raw, raw + len, 0};
    mk_trace_header_t *h = &tr->header;

    h->version = mk_get_u32(&c);
    h->flags = mk_get_u32(&c);
    h->depth = mk_get_u32(&c);
    h->pid = mk_get_u32(&c);
    h->ppid = mk_get_u32(&c);
    h->start_realtime_ns = mk_get_u64(&c);
    h->start_mono_ns = mk_get_u64(&c);
    h->start_tick = mk_get_u64(&c);
    get_str(&c, h->run_id, sizeof h->run_id);
    get_str(&c, h->exe, sizeof h->exe);
    uint64_t n;
    const uint8_t *cmd = mk_get_bytes(&c, &n);
    /* The arguments come NUL-separated, as in /proc/self/cmdline. */
    while (n && cmd[n - 1] == 0)
        n--;
    if (n >= sizeof h->cmdline)
        n = sizeof h->cmdline - 1;
    for (uint64_t i = 0; cmd && i < n; i++)
        h->cmdline[i] = cmd[i] ? (char)cmd[i] : ' ';
    h->cmdline[n] = 0;
    return !c.err;
}

mk_trace_t *mk_trace_open_named(const char *path, const char *name, char *err,
                                size_t errlen)
{
    char magic[MK_TRACE_MAGIC_LEN];
    struct stat st;
    unsigned type;
    const uint8_t *raw;
    size_t len;
    mk_trace_t *tr = calloc(1, sizeof *tr);

    if (!tr) {
        snprintf(err, errlen, "%s: out of memory", name);
        return NULL;
    }
    snprintf(tr->path, sizeof tr->path, "%s", name);
    tr->f = fopen(path, "rb");
    if (!tr->f) {
        snprintf(err, errlen, "cannot open trace '%s': %s", name, strerror(errno));
        goto fail;
    }
    if (fstat(fileno(tr->f), &st) == 0)
        tr->file_size = (uint64_t)st.st_size;
    if (fread(magic, 1, sizeof magic, tr->f) != sizeof magic ||
        memcmp(magic, MK_TRACE_MAGIC, sizeof magic) != 0) {
        snprintf(err, errlen, "'%s' is not a memkit trace (no MKTRACE magic)", name);
        goto fail;
    }
    tr->offset = MK_TRACE_MAGIC_LEN;
    tr->dctx = ZSTD_createDCtx();
    if (!tr->dctx) {
        snprintf(err, errlen, "%s: out of memory", name);
        goto fail;
    }
    if (mk_trace_next(tr, &type, &raw, &len) != 1 || type != MK_REC_HEADER ||
        !parse_header(tr, raw, len)) {
        snprintf(err, errlen, "'%s' has no readable header%s%s", name,
                 tr->damage[0] ? ": " : "", tr->damage);
        goto fail;
    }
    /* Until the anchors say better: exact for clock ticks, a typical TSC else. */
    tr->ns_per_tick =
        tr->header.flags & MK_TF_TSC ? (1 << MK_TICK_SHIFT) / 2.5 : (1 << MK_TICK_SHIFT);
    if (tr->header.version < 1 || tr->header.version > MK_TRACE_VERSION) {
        snprintf(err, errlen,
                 "'%s' is trace format version %u; this memkit reads versions 1 to %u",
                 name, tr->header.version, MK_TRACE_VERSION);
        goto fail;
    }
    return tr;
fail:
    mk_trace_close(tr);
    return NULL;
}

mk_trace_t *mk_trace_open(const char *path, char *err, size_t errlen)
{
    return mk_trace_open_named(path, path, err, errlen);
}

void mk_trace_close(mk_trace_t *tr)
{
    if (!tr)
        return;
    if (tr->f)
        fclose(tr->f);
    for (size_t i = 0; i < tr->nmodules; i++)
        free(tr->modules[i].path);
    free(tr->modules);
    for (size_t i = 0; i < tr->stacks_cap; i++)
        free(tr->stacks[i].frames);
    free(tr->stacks);
    free(tr->summary.sites);
    for (size_t i = 0; i < tr->nparts; i++)
        free(tr->parts[i].sites);
    free(tr->parts);
    ZSTD_freeDCtx(tr->dctx);
    free(tr->raw);
    free(tr->stored);
    free(tr);
}

/* Reads and checks the head of the record at offset. */
static int read_head(mk_trace_t *tr, uint64_t offset, mk_record_head_t *h)
{
    uint8_t head[MK_RECORD_HEAD_LEN];
    mk_cursor_t c = {head, head + sizeof head, 0};

    if (fseeko(tr->f, (off_t)offset, SEEK_SET) != 0)
        return 0;
    size_t got = fread(head, 1, sizeof head, tr->f);
    if (got == 0)
        return 0; /* the clean end */
    if (got < sizeof head) {
        damage(tr, "cut short inside the record at offset %" PRIu64, offset);
        return 0;
    }
    uint32_t sync = mk_get_u32(&c);
    h->offset = offset;
    h->type = mk_get_u32(&c);
    h->stored = mk_get_u32(&c);
    h->raw = mk_get_u32(&c);
    h->thread = mk_get_u32(&c);
    (void)mk_get_u32(&c);
    h->anchor_ns = mk_get_u64(&c);
    h->anchor_tick = mk_get_u64(&c);
    if (sync != MK_RECORD_SYNC) {
        damage(tr, "corrupt at offset %" PRIu64 " (no record starts there)", offset);
        return 0;
    }
    if (h->raw > MK_RECORD_MAX_RAW || h->stored > ZSTD_compressBound(MK_RECORD_MAX_RAW)) {
        damage(tr, "corrupt record at offset %" PRIu64 " (impossible length)", offset);
        return 0;
    }
    if (offset + sizeof head + h->stored > tr->file_size) {
        damage(tr,
               "cut short inside the record at offset %" PRIu64 " (%" PRIu64
               " of %u bytes present)",
               offset, tr->file_size - offset - sizeof head, h->stored);
        return 0;
    }
    return 1;
}

int mk_trace_next_head(mk_trace_t *tr, mk_record_head_t *h)
{
    if (tr->damage[0] || !read_head(tr, tr->offset, h))
        return 0;
    tr->offset = h->offset + MK_RECORD_HEAD_LEN + h->stored;
    return 1;
}

int mk_trace_record_at(mk_trace_t *tr, uint64_t offset, unsigned *type,
                       const uint8_t **raw, size_t *len)
{
    mk_record_head_t h;

    if (!read_head(tr, offset, &h))
        return 0;
    if (!mk_grow((void **)&tr->stored, &tr->stored_cap, h.stored + 1, 1) ||
        !mk_grow((void **)&tr->raw, &tr->raw_cap, h.raw + 1, 1)) {
        damage(tr, "out of memory reading the record at offset %" PRIu64, offset);
        return 0;
    }
    if (fread(tr->stored, 1, h.stored, tr->f) != h.stored) {
        damage(tr, "cut short inside the record at offset %" PRIu64, offset);
        return 0;
    }
    size_t n = ZSTD_decompressDCtx(tr->dctx, tr->raw, h.raw, tr->stored, h.stored);
    if (ZSTD_isError(n) || n != h.raw) {
        damage(tr, "corrupt record at offset %" PRIu64 " (%s)", offset,
               ZSTD_isError(n) ? ZSTD_getErrorName(n) : "wrong length");
        return 0;
    }
    *type = h.type;
    *raw = tr->raw;
    *len = h.raw;
    tr->offset = offset + MK_RECORD_HEAD_LEN + h.stored;
    return 1;
}

int mk_trace_next(mk_trace_t *tr, unsigned *type, const uint8_t **raw, size_t *len)
{
    if (tr->damage[0])
        return 0;
    return mk_trace_record_at(tr, tr->offset, type, raw, len);
}

static bool absorb_modules(mk_trace_t *tr, mk_cursor_t *c)
{
    uint64_t n = mk_get_varint(c);
    for (uint64_t i = 0; i < n && !c->err; i++) {
        mk_module_t m = {0};
        uint64_t path_len, id_len;
        m.base = mk_get_u64(c);
        const uint8_t *path = mk_get_bytes(c, &path_len);
        const uint8_t *id = mk_get_bytes(c, &id_len);
        uint64_t nseg = mk_get_varint(c);
        m.lo = UINT64_MAX;
        for (uint64_t s = 0; s < nseg && !c->err; s++) {
            uint64_t vaddr = mk_get_varint(c), memsz = mk_get_varint(c);
            if (m.base + vaddr < m.lo)
                m.lo = m.base + vaddr;
            if (m.base + vaddr + memsz > m.hi)
                m.hi = m.base + vaddr + memsz;
        }
        if (c->err || id_len > sizeof m.build_id)
            return false;
        if (!mk_grow((void **)&tr->modules, &tr->modules_cap, tr->nmodules + 1, sizeof m))
            return false;
        m.path = strndup((const char *)path, path_len);
        memcpy(m.build_id, id, id_len);
        m.build_id_len = id_len;
        tr->modules[tr->nmodules++] = m;
    }
    return !c->err;
}

static bool absorb_notes(mk_trace_t *tr, mk_cursor_t *c)
{
    uint64_t flags = mk_get_varint(c), len;
    const uint8_t *by = mk_get_bytes(c, &len);
    if (c->err || flags > 0x3f)
        return false;
    tr->shadowed = (unsigned)flags;
    if (len >= sizeof tr->shadowed_by)
        len = sizeof tr->shadowed_by - 1;
    memcpy(tr->shadowed_by, by, len);
    tr->shadowed_by[len] = 0;
    return true;
}

static bool absorb_end(mk_trace_t *tr, mk_cursor_t *c)
{
    mk_trace_end_t *e = &tr->end;
    uint64_t *fields[] = {
        &e->reason,      &e->events_written, &e->events_lost, &e->threads,
        &e->maxrss_kb,   &e->minflt,         &e->majflt,      &e->utime_us,
        &e->stime_us,    &e->rchar,          &e->wchar,       &e->read_bytes,
        &e->write_bytes, &e->duration_ns,    &e->end_tick,    &e->trace_bytes};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        *fields[i] = mk_get_varint(c);
    e->present = !c->err;
    /* optional, appended later: a count, then glibc's view of its heap (a
     * reader takes the fields it knows and skips the rest) */
    if (!c->err && c->p < c->end) {
        uint64_t *view[] = {&e->glibc_arena, &e->glibc_in_use, &e->glibc_free,
                            &e->glibc_mmapped, &e->heap_rss};
        uint64_t n = mk_get_varint(c);
        for (uint64_t i = 0; i < n && !c->err; i++) {
            uint64_t v = mk_get_varint(c);
            if (i < sizeof view / sizeof view[0])
                *view[i] = v;
        }
        e->has_heap_view = !c->err && n >= sizeof view / sizeof view[0];
    }
    return !c->err;
}

/* SUMMARY and SUMMARY_PART alike: varint nkinds, then nkinds calls and
 * nkinds bytes; kinds this reader does not know are skipped. */
static bool get_kind_totals(mk_cursor_t *c, uint64_t counts[MK_K_COUNT],
                            uint64_t bytes[MK_K_COUNT])
{
    uint64_t nkinds = mk_get_varint(c);
    if (c->err || nkinds > 255)
        return false;
    for (int pass = 0; pass < 2; pass++)
        for (uint64_t k = 0; k < nkinds; k++) {
            uint64_t v = mk_get_varint(c);
            if (k < MK_K_COUNT)
                (pass ? bytes : counts)[k] = v;
        }
    return !c->err;
}

/* And their sites: varint n, then n x (u64 pc, varint calls, varint bytes),
 * into a new array; NULL if malformed or out of memory. */
static mk_summary_site_t *get_sites(mk_cursor_t *c, size_t *nsites)
{
    uint64_t n = mk_get_varint(c);
    if (c->err || n > (uint64_t)(c->end - c->p) / 10) /* 10: a site's least bytes */
        return NULL;
    mk_summary_site_t *sites = calloc(n ? n : 1, sizeof *sites);
    if (!sites)
        return NULL;
    for (uint64_t i = 0; i < n && !c->err; i++) {
        sites[i].pc = mk_get_u64(c);
        sites[i].calls = mk_get_varint(c);
        sites[i].bytes = mk_get_varint(c);
    }
    if (c->err) {
        free(sites);
        return NULL;
    }
    *nsites = (size_t)n;
    return sites;
}

static bool absorb_summary(mk_trace_t *tr, mk_cursor_t *c)
{
    mk_trace_summary_t *s = &tr->summary;
    if (!get_kind_totals(c, s->counts, s->bytes))
        return false;
    s->peak_bytes = mk_get_varint(c);
    s->peak_blocks = mk_get_varint(c);
    s->live_blocks = mk_get_varint(c);
    s->live_bytes = mk_get_varint(c);
    s->frees_live = mk_get_varint(c);
    mk_summary_site_t *sites = get_sites(c, &s->nsites);
    if (!sites)
        return false;
    free(s->sites);
    s->sites = sites;
    s->present = true;
    return true;
}

/* A SUMMARY_PART: replaces the same state's earlier part. */
static bool absorb_part(mk_trace_t *tr, mk_cursor_t *c)
{
    mk_summary_part_t p = {.id = mk_get_varint(c), .at_ns = mk_get_varint(c)};
    if (!get_kind_totals(c, p.counts, p.bytes))
        return false;
    p.frees_unseen = mk_get_varint(c);
    p.live_bytes = mk_unzigzag(mk_get_varint(c));
    p.live_blocks = mk_unzigzag(mk_get_varint(c));
    p.peak_bytes = mk_get_varint(c);
    p.peak_blocks = mk_get_varint(c);
    p.sites = get_sites(c, &p.nsites);
    if (!p.sites)
        return false;
    size_t i = 0;
    while (i < tr->nparts && tr->parts[i].id != p.id)
        i++;
    if (i == tr->nparts) {
        if (!mk_grow((void **)&tr->parts, &tr->parts_cap, i + 1, sizeof *tr->parts)) {
            free(p.sites);
            return false;
        }
        tr->nparts++;
    } else {
        free(tr->parts[i].sites);
    }
    tr->parts[i] = p;
    return true;
}

static int by_site_pc(const void *a, const void *b)
{
    const mk_summary_site_t *x = a, *y = b;
    return (x->pc > y->pc) - (x->pc < y->pc);
}

bool mk_trace_summary_from_parts(mk_trace_t *tr)
{
    mk_trace_summary_t *s = &tr->summary;
    if (s->present || !tr->nparts)
        return true;
    size_t n = 0;
    for (size_t i = 0; i < tr->nparts; i++)
        n += tr->parts[i].nsites;
    mk_summary_site_t *sites = calloc(n ? n : 1, sizeof *sites);
    if (!sites)
        return false;
    uint64_t frees_unseen = 0;
    int64_t live_bytes = 0, live_blocks = 0;
    n = 0;
    for (size_t i = 0; i < tr->nparts; i++) {
        const mk_summary_part_t *p = &tr->parts[i];
        for (int k = 0; k < MK_K_COUNT; k++) {
            s->counts[k] += p->counts[k];
            s->bytes[k] += p->bytes[k];
        }
        for (size_t j = 0; j < p->nsites; j++) {
            unsigned kind = (unsigned)(p->sites[j].pc >> MK_SITE_KIND_SHIFT);
            if (kind < MK_K_COUNT) {
                s->counts[kind] += p->sites[j].calls;
                s->bytes[kind] += p->sites[j].bytes;
            }
            sites[n] = p->sites[j];
            sites[n++].pc &= (1ull << MK_SITE_KIND_SHIFT) - 1;
        }
        frees_unseen += p->frees_unseen;
        live_bytes += p->live_bytes;
        live_blocks += p->live_blocks;
        s->peak_bytes = p->peak_bytes > s->peak_bytes ? p->peak_bytes : s->peak_bytes;
        s->peak_blocks =
            p->peak_blocks > s->peak_blocks ? p->peak_blocks : s->peak_blocks;
        s->parts_at_ns = p->at_ns > s->parts_at_ns ? p->at_ns : s->parts_at_ns;
    }
    /* One site per calling instruction, whatever it called and which thread. */
    qsort(sites, n, sizeof *sites, by_site_pc);
    size_t m = 0;
    for (size_t j = 0; j < n; j++) {
        if (m && sites[m - 1].pc == sites[j].pc) {
            sites[m - 1].calls += sites[j].calls;
            sites[m - 1].bytes += sites[j].bytes;
        } else {
            sites[m++] = sites[j];
        }
    }
    s->live_bytes = live_bytes > 0 ? (uint64_t)live_bytes : 0;
    s->live_blocks = live_blocks > 0 ? (uint64_t)live_blocks : 0;
    /* Parts written at different times: the peak is at least what they hold. */
    s->peak_bytes = s->live_bytes > s->peak_bytes ? s->live_bytes : s->peak_bytes;
    s->peak_blocks = s->live_blocks > s->peak_blocks ? s->live_blocks : s->peak_blocks;
    s->frees_live =
        s->counts[MK_K_FREE] > frees_unseen ? s->counts[MK_K_FREE] - frees_unseen : 0;
    free(s->sites);
    s->sites = sites;
    s->nsites = m;
    s->from_parts = s->present = true;
    return true;
}

bool mk_trace_absorb(mk_trace_t *tr, unsigned type, const uint8_t *raw, size_t len)
{
    mk_cursor_t c = {raw, raw + len, 0};
    bool ok = true;

    switch (type) {
    case MK_REC_MODULES:
        ok = absorb_modules(tr, &c);
        break;
    case MK_REC_END:
        ok = absorb_end(tr, &c);
        break;
    case MK_REC_SUMMARY:
        ok = absorb_summary(tr, &c);
        break;
    case MK_REC_SUMMARY_PART:
        ok = absorb_part(tr, &c);
        break;
    case MK_REC_NOTES:
        ok = absorb_notes(tr, &c);
        break;
    default:
        break; /* unknown record types from newer writers are skipped */
    }
    if (!ok)
        damage(tr, "malformed record (type %u) before offset %" PRIu64, type, tr->offset);
    return ok;
}

/* The largest stack id a reader accepts. The tracer's intern table has 2^20
 * slots, so its ids stay far below; a damaged id above it must not make the
 * reader allocate a table of its size (2^28 ids were 4 GiB, found by
 * fuzz_events). */
#define MAX_STACK_ID (1u << 24)

static bool define_stack(mk_trace_t *tr, mk_cursor_t *c)
{
    uint64_t id = mk_get_varint(c), depth = mk_get_varint(c);
    if (c->err || id == 0 || id > MAX_STACK_ID || depth > 1024)
        return false;
    if (!mk_grow((void **)&tr->stacks, &tr->stacks_cap, id + 1, sizeof *tr->stacks))
        return false;
    uint64_t *frames = malloc((depth ? depth : 1) * sizeof *frames), prev = 0;
    if (!frames)
        return false;
    for (uint64_t i = 0; i < depth; i++) {
        prev += (uint64_t)mk_unzigzag(mk_get_varint(c));
        frames[i] = prev;
    }
    if (c->err) {
        free(frames);
        return false;
    }
    free(tr->stacks[id].frames); /* a redefinition (forked child) is identical */
    tr->stacks[id].frames = frames;
    tr->stacks[id].depth = (uint32_t)depth;
    return true;
}

static void *index_alloc(size_t n)
{
    return malloc(n);
}

static void index_release(void *p, size_t n)
{
    (void)n;
    free(p);
}

uint64_t mk_trace_tick_ns(const mk_trace_t *tr, uint64_t tick)
{
    /* One mapping for the whole trace, from the start's tick: per-record
     * anchors would each carry their own error (a thread preempted between
     * reading the TSC and the clock) and misorder threads. */
    if (tick <= tr->header.start_tick)
        return 0;
    double ns = (double)(tick - tr->header.start_tick) * tr->ns_per_tick;
    /* A damaged trace's tick or slope can put ns outside uint64_t (or make
     * it NaN): converting that is undefined, so it saturates. */
    if (!(ns >= 0))
        return 0;
    return ns >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)ns;
}

void mk_decoder_init(mk_decoder_t *d, mk_addr_state_t *scratch)
{
    memset(d, 0, sizeof *d);
    d->addr = scratch;
    d->live.alloc = index_alloc;
    d->live.release = index_release;
}

void mk_decoder_free(mk_decoder_t *d)
{
    mk_index_free(&d->live);
}

/* The per-record state of the address fields (format.h, "Addresses"). */
typedef mk_addr_state_t addr_state_t;

static uint64_t get_split(mk_cursor_t *st, int lo)
{
    if (st[lo].p >= st[lo].end) {
        st[lo].err = 1;
        return 0;
    }
    uint64_t low = *st[lo].p++;
    return low | mk_get_varint(&st[lo + 1]) << 8;
}

static uint64_t get_raw_addr(mk_cursor_t *c, addr_state_t *a)
{
    a->prev += (uint64_t)mk_unzigzag(mk_get_varint(c));
    return a->prev;
}

static void note_free(addr_state_t *a, uint64_t addr, const mk_decoder_t *d, int64_t idx)
{
    if (idx >= 0)
        mk_reuse_free(&a->reuse, d->live.cls[idx], addr);
}

/* A FREEREF field: the address, and its live index (or -1). */
static uint64_t get_freeref(mk_cursor_t *st, addr_state_t *a, const mk_decoder_t *d,
                            int64_t *idx)
{
    uint64_t code = get_split(st, MK_S_FREEREF_LO);
    *idx = -1;
    if (code == 0)
        return 0;
    if (code == 1)
        return get_raw_addr(&st[MK_S_ADDR], a);
    if (code - 2 >= d->live.n) {
        st[MK_S_FREEREF_LO].err = 1;
        return 0;
    }
    *idx = (int64_t)(code - 2);
    return a->prev = d->live.addr[code - 2];
}

/* What decoding a record keeps besides its cursors: the format version,
 * version 2's TIME pair being given out, whether the next code of NEWADDR
 * (version 2) or CACHED (version 3) is in the high nibble of its byte, and
 * the next HIT bit. */
typedef struct record_state {
    uint32_t version;
    uint64_t zeros, d;   /* the pair: zeros left, then d */
    bool pair_pending;   /* a pair is read and its d not yet given */
    bool high_nibble[2]; /* [0] NEWADDR, [1] CACHED */
    unsigned hit_bit;    /* of HIT's current byte, 0-7 */
} record_state_t;

/* Ticks since the previous event (format.h, TIME). */
static uint64_t get_ticks(mk_cursor_t *time, record_state_t *rs)
{
    if (rs->version == 1)
        return mk_get_varint(time);
    if (!rs->pair_pending) {
        rs->zeros = mk_get_varint(time);
        rs->d = mk_get_varint(time);
        rs->pair_pending = true;
    }
    if (rs->zeros) {
        rs->zeros--;
        return 0;
    }
    rs->pair_pending = false;
    return rs->d;
}

/* The stream a new address's code is in: CACHED after a missed guess
 * (version 3), else NEWADDR. */
static int code_stream(bool after_guess)
{
    return after_guess ? MK_S_CACHED : MK_S_NEWADDR;
}

/* The nibble a packed code stream's next code starts with; c must not be
 * at its end. */
static unsigned code_nibble(const mk_cursor_t *c, const record_state_t *rs, bool cached)
{
    return rs->high_nibble[cached] ? *c->p >> 4 : *c->p & 15;
}

/* Whether a code stream holds a varint per code (format.h): NEWADDR in
 * versions 1 and 3; else two codes per byte. */
static bool code_varints(const record_state_t *rs, bool cached)
{
    return rs->version == 1 || (rs->version >= 3 && !cached);
}

/* The next code of NEWADDR or CACHED. */
static uint64_t get_code(mk_cursor_t *st, record_state_t *rs, bool cached)
{
    mk_cursor_t *s = &st[code_stream(cached)];
    if (code_varints(rs, cached))
        return mk_get_varint(s);
    if (s->p >= s->end) {
        s->err = 1;
        return 0;
    }
    unsigned nibble = code_nibble(s, rs, cached);
    if (rs->high_nibble[cached])
        s->p++; /* both nibbles taken */
    rs->high_nibble[cached] = !rs->high_nibble[cached];
    return nibble < 15 ? nibble : 15 + mk_get_varint(&st[MK_S_NEWADDR_HI]);
}

/* The next HIT bit (version 3); at the stream's end, an error. */
static unsigned get_hit(mk_cursor_t *st, record_state_t *rs)
{
    mk_cursor_t *s = &st[MK_S_HIT];
    if (s->p >= s->end) {
        s->err = 1;
        return 0;
    }
    unsigned bit = *s->p >> rs->hit_bit & 1;
    if (++rs->hit_bit == 8) {
        rs->hit_bit = 0;
        s->p++;
    }
    return bit;
}

/* Whether class cls's next new address (not a realloc's) starts with a HIT
 * bit: version 3 and a guess in the model. */
static bool has_guess(const addr_state_t *a, const record_state_t *rs, unsigned cls)
{
    return rs->version >= 3 && mk_reuse_cached(&a->reuse, cls);
}

/* Whether the next NEWADDR code is not 0 (a realloc's new block is not
 * NULL, and its old one was freed), without taking it. A realloc's new
 * address is always a NEWADDR code (format.h). At the stream's end,
 * get_code will say so. */
static bool next_code_nonzero(const mk_cursor_t *st, const record_state_t *rs)
{
    mk_cursor_t peek = st[MK_S_NEWADDR];
    if (code_varints(rs, false))
        return mk_get_varint(&peek) != 0;
    return peek.p < peek.end && code_nibble(&peek, rs, false) != 0;
}

/* NEWADDR code 2+MK_REUSE_MISS: a free d frees back, d in RECENT. */
static uint64_t get_recent_addr(mk_cursor_t *st, addr_state_t *a)
{
    uint64_t d = mk_get_varint(&st[MK_S_RECENT]) + 1;
    if (d > mk_reuse_recent_count(&a->reuse)) {
        st[MK_S_RECENT].err = 1;
        return 0;
    }
    return a->prev = mk_reuse_recent(&a->reuse, (uint32_t)d);
}

static unsigned class_of(const record_state_t *rs, uint64_t size)
{
    return rs->version == 1 ? mk_size_class_v1(size) : mk_size_class(size);
}

/* Candidate j of class cls: version 3 counts the cache first and leaves the
 * model's update to mk_reuse_claim (with the block's place in the ring when
 * it came from there: an address repeated in the ring is named by its
 * first); before, the rings alone. */
static bool get_candidate(addr_state_t *a, const record_state_t *rs, unsigned cls,
                          unsigned j, uint64_t *addr, unsigned *ring_j)
{
    if (rs->version >= 3) {
        unsigned nc = mk_reuse_cached(&a->reuse, cls);
        if (j >= nc)
            *ring_j = j - nc;
        return mk_reuse_candidate(&a->reuse, cls, j, addr);
    }
    if (j >= mk_reuse_count(&a->reuse, cls))
        return false;
    *addr = mk_reuse_take(&a->reuse, cls, j);
    return true;
}

/* A new block's address (format.h); may_guess is false for a realloc's. */
static uint64_t get_newaddr(mk_cursor_t *st, addr_state_t *a, mk_decoder_t *d,
                            uint64_t size, record_state_t *rs, bool may_guess)
{
    unsigned cls = class_of(rs, size);
    bool guessed = may_guess && has_guess(a, rs, cls);
    mk_cursor_t *s = &st[code_stream(guessed)];
    uint64_t code, addr;
    unsigned ring_j = MK_REUSE_UNKNOWN;
    if (guessed && get_hit(st, rs)) {
        addr = mk_reuse_guess(&a->reuse, cls);
        goto named;
    }
    code = get_code(st, rs, guessed);
    if (code == 0)
        return 0;
    if (code - 1 < MK_REUSE_MISS) {
        if (!get_candidate(a, rs, cls, (unsigned)(code - 1), &addr, &ring_j)) {
            s->err = 1;
            return 0;
        }
    } else if (code - 1 == MK_REUSE_MISS) {
        addr = get_raw_addr(&st[MK_S_ADDR], a);
    } else if (code - 2 == MK_REUSE_MISS && rs->version > 1) {
        addr = get_recent_addr(st, a);
        if (st[MK_S_RECENT].err)
            return 0;
    } else {
        s->err = 1;
        return 0;
    }
named:
    if (addr == 0) { /* NULL is code 0, never a name: damage */
        s->err = 1;
        return 0;
    }
    a->prev = addr;
    if (rs->version >= 3)
        mk_reuse_claim(&a->reuse, cls, addr, ring_j);
    if (!mk_index_add(&d->live, addr, cls))
        s->err = 1; /* out of memory: stop rather than diverge */
    return addr;
}

bool mk_trace_decode_events(mk_trace_t *tr, mk_decoder_t *d, const uint8_t *raw,
                            size_t len, mk_event_fn fn, void *ctx)
{
    mk_cursor_t c = {raw, raw + len, 0}, st[MK_S_COUNT];
    mk_event_t ev = {0};
    addr_state_t *a = d->addr; /* per record: reset below */
    bool cut = false;

    a->prev = 0;
    mk_reuse_reset(&a->reuse);

    ev.thread = (uint32_t)mk_get_varint(&c);
    (void)mk_get_varint(&c); /* tid */
    (void)mk_get_u64(&c);    /* anchor_ns: used for calibration, from the record head */
    uint64_t tick = mk_get_u64(&c);
    record_state_t rs = {.version = tr->header.version};
    int count = rs.version == 1   ? MK_S_COUNT_V1
                : rs.version == 2 ? MK_S_COUNT_V2
                                  : MK_S_COUNT;
    uint64_t nstreams = mk_get_varint(&c), lens[MK_S_COUNT] = {0};
    if (nstreams != (uint64_t)count)
        c.err = 1;
    for (int i = 0; i < count && !c.err; i++)
        lens[i] = mk_get_varint(&c);
    const uint8_t *p = c.p;
    for (int i = 0; i < MK_S_COUNT && !c.err; i++) { /* lens[i] = 0 past count */
        if (lens[i] > (uint64_t)(c.end - p)) {
            c.err = 1;
            break;
        }
        st[i] = (mk_cursor_t){p, p + lens[i], 0};
        p += lens[i];
    }
    mk_cursor_t *tags = &st[MK_S_TAG], *addrs = &st[MK_S_ADDR];
    while (!c.err && tags->p < tags->end) {
        unsigned tag = *tags->p++;
        if (tag == MK_ITEM_STACK) {
            if (!define_stack(tr, &st[MK_S_DEFS]))
                c.err = 1;
            continue;
        }
        enum mk_kind_class cls = mk_kind_class(tag);
        if (cls == MK_CLASS_NONE) {
            c.err = 1;
            break;
        }
        ev.kind = (uint8_t)tag;
        tick += get_ticks(&st[MK_S_TIME], &rs);
        ev.time = mk_trace_tick_ns(tr, tick);
        ev.size = ev.align = ev.old_addr = ev.addr = 0;
        ev.stack = 0;
        int64_t idx;
        switch (cls) {
        case MK_CLASS_ALLOC:
            ev.size = get_split(st, MK_S_SIZE_LO);
            if (mk_kind_has_align(tag))
                ev.align = mk_get_varint(&st[MK_S_SIZE_HI]);
            ev.addr = get_newaddr(st, a, d, ev.size, &rs, true);
            ev.stack = (uint32_t)mk_get_varint(&st[MK_S_STACK]);
            break;
        case MK_CLASS_FREE:
            ev.addr = get_freeref(st, a, d, &idx);
            if (ev.addr)
                note_free(a, ev.addr, d, idx);
            if (idx >= 0)
                mk_index_remove(&d->live, (uint32_t)idx);
            break;
        case MK_CLASS_REALLOC:
            ev.size = get_split(st, MK_S_SIZE_LO);
            ev.old_addr = get_freeref(st, a, d, &idx);
            /* The new address's code decides whether the old block was freed. */
            {
                bool freed = ev.old_addr && (next_code_nonzero(st, &rs) || ev.size == 0);
                if (freed) {
                    note_free(a, ev.old_addr, d, idx);
                    if (idx >= 0)
                        mk_index_remove(&d->live, (uint32_t)idx);
                }
            }
            ev.addr = get_newaddr(st, a, d, ev.size, &rs, false);
            ev.stack = (uint32_t)mk_get_varint(&st[MK_S_STACK]);
            break;
        case MK_CLASS_SYSMAP:
            ev.size = get_split(st, MK_S_SIZE_LO);
            ev.addr = get_raw_addr(addrs, a);
            if (tag == MK_K_MREMAP)
                ev.old_addr = get_raw_addr(addrs, a);
            break;
        default:
            break;
        }
        for (int i = 0; i < MK_S_COUNT; i++)
            c.err |= st[i].err;
        if (c.err) {
            /* A stream ran dry inside the last item: a process that exited
             * inside a hook. The end, not damage. */
            cut = tags->p == tags->end;
            break;
        }
        tr->events_read++;
        if (!fn(ctx, &ev))
            return true;
    }
    if (c.err && !cut)
        damage(tr, "malformed events in the record ending at offset %" PRIu64,
               tr->offset);
    return !c.err || cut;
}

const mk_module_t *mk_trace_module_at(const mk_trace_t *tr, uint64_t addr)
{
    for (size_t i = tr->nmodules; i-- > 0;)
        if (addr >= tr->modules[i].lo && addr < tr->modules[i].hi)
            return &tr->modules[i];
    return NULL;
}

const mk_stack_def_t *mk_trace_stack(const mk_trace_t *tr, uint32_t id)
{
    if (id == 0 || id >= tr->stacks_cap || !tr->stacks[id].frames)
        return NULL;
    return &tr->stacks[id];
}
