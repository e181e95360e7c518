/*
 * reader.c - the .mkt reader's framing: open a trace, read its header, find
 * and decompress its records (format.h). What the records hold is read by
 * meta.c (modules, notes, end, summaries) and decode.c (events).
 */
#define _GNU_SOURCE
#include "reader.h"
#include "reader_internal.h"

#include <zstd.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

void mk_trace_damage(mk_trace_t *tr, const char *fmt, ...)
{
    va_list ap;
    if (tr->damage[0])
        return; /* the first fault is the one to report */
    va_start(ap, fmt);
    vsnprintf(tr->damage, sizeof tr->damage, fmt, ap);
    va_end(ap);
}

#define MK_TABLE_MAP_MIN (1u << 20)

static size_t page_round(size_t n)
{
    return (n + 4095) & ~(size_t)4095;
}

/* Which memory a table has follows from its size alone (below
 * MK_TABLE_MAP_MIN the C heap, from it a mapping), so callers pass sizes,
 * never a kind. */
void *mk_table_resize(void *p, size_t old_bytes, size_t new_bytes)
{
    bool was_mapped = p && old_bytes >= MK_TABLE_MAP_MIN;
    if (new_bytes < MK_TABLE_MAP_MIN) {
        if (!was_mapped)
            return realloc(p, new_bytes ? new_bytes : 1);
        void *q = malloc(new_bytes ? new_bytes : 1); /* a mapping shrunk to the heap */
        if (q) {
            memcpy(q, p, new_bytes);
            munmap(p, page_round(old_bytes));
        }
        return q;
    }
    void *q;
    if (was_mapped) { /* the pages move with the mapping, its huge-page advice too */
        q = mremap(p, page_round(old_bytes), page_round(new_bytes), MREMAP_MAYMOVE);
    } else { /* the heap's block (or nothing) into a first mapping */
        q = mmap(NULL, page_round(new_bytes), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (q != MAP_FAILED)
            madvise(q, page_round(new_bytes), MADV_HUGEPAGE);
        if (q != MAP_FAILED && p) {
            memcpy(q, p, old_bytes < new_bytes ? old_bytes : new_bytes);
            free(p);
        }
    }
    return q == MAP_FAILED ? NULL : q;
}

void *mk_table_zalloc(size_t n)
{
    if (n < MK_TABLE_MAP_MIN)
        return calloc(1, n ? n : 1);
    return mk_table_resize(NULL, 0, n);
}

void mk_table_free(void *p, size_t bytes)
{
    if (p && bytes >= MK_TABLE_MAP_MIN)
        munmap(p, page_round(bytes));
    else
        free(p);
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

void mk_trace_get_str(mk_cursor_t *c, char *out, size_t cap)
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
    mk_trace_get_str(&c, h->run_id, sizeof h->run_id);
    mk_trace_get_str(&c, h->exe, sizeof h->exe);
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
    free(tr->sampling.snapshots);
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
        mk_trace_damage(tr, "cut short inside the record at offset %" PRIu64, offset);
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
        mk_trace_damage(tr, "corrupt at offset %" PRIu64 " (no record starts there)",
                        offset);
        return 0;
    }
    if (h->raw > MK_RECORD_MAX_RAW || h->stored > ZSTD_compressBound(MK_RECORD_MAX_RAW)) {
        mk_trace_damage(tr, "corrupt record at offset %" PRIu64 " (impossible length)",
                        offset);
        return 0;
    }
    if (offset + sizeof head + h->stored > tr->file_size) {
        mk_trace_damage(tr,
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
        mk_trace_damage(tr, "out of memory reading the record at offset %" PRIu64,
                        offset);
        return 0;
    }
    if (fread(tr->stored, 1, h.stored, tr->f) != h.stored) {
        mk_trace_damage(tr, "cut short inside the record at offset %" PRIu64, offset);
        return 0;
    }
    size_t n = ZSTD_decompressDCtx(tr->dctx, tr->raw, h.raw, tr->stored, h.stored);
    if (ZSTD_isError(n) || n != h.raw) {
        mk_trace_damage(tr, "corrupt record at offset %" PRIu64 " (%s)", offset,
                        ZSTD_isError(n) ? ZSTD_getErrorName(n) : "wrong length");
        return 0;
    }
    *type = h.type;
    *raw = tr->raw;
    *len = h.raw;
    tr->offset = offset + MK_RECORD_HEAD_LEN + h.stored;
    return 1;
}

void mk_trace_drop_buffers(mk_trace_t *tr)
{
    free(tr->raw);
    free(tr->stored);
    tr->raw = tr->stored = NULL;
    tr->raw_cap = tr->stored_cap = 0;
}

int mk_trace_next(mk_trace_t *tr, unsigned *type, const uint8_t **raw, size_t *len)
{
    if (tr->damage[0])
        return 0;
    return mk_trace_record_at(tr, tr->offset, type, raw, len);
}
