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

static void damage(mk_trace_t *tr, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void damage(mk_trace_t *tr, const char *fmt, ...)
{
    va_list ap;
    if (tr->damage[0])
        return; /* the first fault is the one to report */
    va_start(ap, fmt);
    vsnprintf(tr->damage, sizeof tr->damage, fmt, ap);
    va_end(ap);
}

static bool grow(void **buf, size_t *cap, size_t need, size_t elem)
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

mk_trace_t *mk_trace_open(const char *path, char *err, size_t errlen)
{
    char magic[MK_TRACE_MAGIC_LEN];
    struct stat st;
    unsigned type;
    const uint8_t *raw;
    size_t len;
    mk_trace_t *tr = calloc(1, sizeof *tr);

    if (!tr) {
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    snprintf(tr->path, sizeof tr->path, "%s", path);
    tr->f = fopen(path, "rb");
    if (!tr->f) {
        snprintf(err, errlen, "cannot open trace '%s': %s", path, strerror(errno));
        goto fail;
    }
    if (fstat(fileno(tr->f), &st) == 0)
        tr->file_size = (uint64_t)st.st_size;
    if (fread(magic, 1, sizeof magic, tr->f) != sizeof magic ||
        memcmp(magic, MK_TRACE_MAGIC, sizeof magic) != 0) {
        snprintf(err, errlen, "'%s' is not a memkit trace (no MKTRACE magic)", path);
        goto fail;
    }
    tr->offset = MK_TRACE_MAGIC_LEN;
    tr->dctx = ZSTD_createDCtx();
    if (!tr->dctx) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto fail;
    }
    if (mk_trace_next(tr, &type, &raw, &len) != 1 || type != MK_REC_HEADER ||
        !parse_header(tr, raw, len)) {
        snprintf(err, errlen, "'%s' has no readable header%s%s", path, tr->damage[0] ? ": " : "",
                 tr->damage);
        goto fail;
    }
    /* Until the anchors say better: exact for clock ticks, a typical TSC else. */
    tr->ns_per_tick = tr->header.flags & MK_TF_TSC ? 1024 / 2.5 : 1024;
    if (tr->header.version != MK_TRACE_VERSION) {
        snprintf(err, errlen, "'%s' is trace format version %u; this memkit reads version %u",
                 path, tr->header.version, MK_TRACE_VERSION);
        goto fail;
    }
    return tr;
fail:
    mk_trace_close(tr);
    return NULL;
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
    ZSTD_freeDCtx(tr->dctx);
    free(tr->raw);
    free(tr->stored);
    free(tr);
}

int mk_trace_record_at(mk_trace_t *tr, uint64_t offset, unsigned *type, const uint8_t **raw,
                       size_t *len)
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
    uint32_t sync = mk_get_u32(&c), t = mk_get_u32(&c);
    uint32_t stored = mk_get_u32(&c), rawlen = mk_get_u32(&c);
    if (sync != MK_RECORD_SYNC) {
        damage(tr, "corrupt at offset %" PRIu64 " (no record starts there)", offset);
        return 0;
    }
    if (rawlen > MK_RECORD_MAX_RAW || stored > ZSTD_compressBound(MK_RECORD_MAX_RAW)) {
        damage(tr, "corrupt record at offset %" PRIu64 " (impossible length)", offset);
        return 0;
    }
    if (offset + sizeof head + stored > tr->file_size) {
        damage(tr, "cut short inside the record at offset %" PRIu64 " (%" PRIu64
                   " of %u bytes present)",
               offset, tr->file_size - offset - sizeof head, stored);
        return 0;
    }
    if (!grow((void **)&tr->stored, &tr->stored_cap, stored + 1, 1) ||
        !grow((void **)&tr->raw, &tr->raw_cap, rawlen + 1, 1)) {
        damage(tr, "out of memory reading the record at offset %" PRIu64, offset);
        return 0;
    }
    if (fread(tr->stored, 1, stored, tr->f) != stored) {
        damage(tr, "cut short inside the record at offset %" PRIu64, offset);
        return 0;
    }
    size_t n = ZSTD_decompressDCtx(tr->dctx, tr->raw, rawlen, tr->stored, stored);
    if (ZSTD_isError(n) || n != rawlen) {
        damage(tr, "corrupt record at offset %" PRIu64 " (%s)", offset,
               ZSTD_isError(n) ? ZSTD_getErrorName(n) : "wrong length");
        return 0;
    }
    *type = t;
    *raw = tr->raw;
    *len = rawlen;
    tr->offset = offset + sizeof head + stored;
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
        if (!grow((void **)&tr->modules, &tr->modules_cap, tr->nmodules + 1, sizeof m))
            return false;
        m.path = strndup((const char *)path, path_len);
        memcpy(m.build_id, id, id_len);
        m.build_id_len = id_len;
        tr->modules[tr->nmodules++] = m;
    }
    return !c->err;
}

static bool absorb_end(mk_trace_t *tr, mk_cursor_t *c)
{
    mk_trace_end_t *e = &tr->end;
    uint64_t *fields[] = {&e->reason,   &e->events_written, &e->events_lost, &e->threads,
                          &e->maxrss_kb, &e->minflt,        &e->majflt,      &e->utime_us,
                          &e->stime_us, &e->rchar,          &e->wchar,       &e->read_bytes,
                          &e->write_bytes, &e->duration_ns, &e->end_tick, &e->trace_bytes};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        *fields[i] = mk_get_varint(c);
    e->present = !c->err;
    return !c->err;
}

static bool absorb_summary(mk_trace_t *tr, mk_cursor_t *c)
{
    mk_trace_summary_t *s = &tr->summary;
    uint64_t nkinds = mk_get_varint(c);
    if (nkinds > 255)
        return false;
    for (uint64_t k = 0; k < nkinds; k++) {
        uint64_t v = mk_get_varint(c);
        if (k < MK_K_COUNT)
            s->counts[k] = v;
    }
    for (uint64_t k = 0; k < nkinds; k++) {
        uint64_t v = mk_get_varint(c);
        if (k < MK_K_COUNT)
            s->bytes[k] = v;
    }
    s->peak_bytes = mk_get_varint(c);
    s->peak_blocks = mk_get_varint(c);
    s->live_blocks = mk_get_varint(c);
    s->live_bytes = mk_get_varint(c);
    uint64_t n = mk_get_varint(c);
    if (c->err || n > (uint64_t)(c->end - c->p) / 10)
        return false;
    free(s->sites);
    s->sites = calloc(n ? n : 1, sizeof *s->sites);
    if (!s->sites)
        return false;
    for (s->nsites = 0; s->nsites < n && !c->err; s->nsites++) {
        s->sites[s->nsites].pc = mk_get_u64(c);
        s->sites[s->nsites].calls = mk_get_varint(c);
        s->sites[s->nsites].bytes = mk_get_varint(c);
    }
    s->present = !c->err;
    return !c->err;
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
    default:
        break; /* unknown record types from newer writers are skipped */
    }
    if (!ok)
        damage(tr, "malformed record (type %u) before offset %" PRIu64, type, tr->offset);
    return ok;
}

static bool define_stack(mk_trace_t *tr, mk_cursor_t *c)
{
    uint64_t id = mk_get_varint(c), depth = mk_get_varint(c);
    if (c->err || id == 0 || id > (1u << 28) || depth > 1024)
        return false;
    if (!grow((void **)&tr->stacks, &tr->stacks_cap, id + 1, sizeof *tr->stacks))
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

bool mk_trace_decode_events(mk_trace_t *tr, const uint8_t *raw, size_t len, mk_event_fn fn,
                            void *ctx)
{
    mk_cursor_t c = {raw, raw + len, 0};
    mk_event_t ev = {0};
    uint64_t prev_addr = 0, ring[MK_ADDR_RING];
    unsigned ring_n = 0;

    ev.thread = (uint32_t)mk_get_varint(&c);
    (void)mk_get_varint(&c); /* tid */
    uint64_t anchor_ns = mk_get_u64(&c), anchor_tick = mk_get_u64(&c), tick = anchor_tick;
    while (!c.err && c.p < c.end) {
        unsigned tag = *c.p++;
        if (tag == MK_ITEM_STACK) {
            if (!define_stack(tr, &c))
                c.err = 1;
            continue;
        }
        enum mk_kind_class cls = mk_kind_class(tag);
        if (cls == MK_CLASS_NONE) {
            c.err = 1;
            break;
        }
        ev.kind = (uint8_t)tag;
        tick += mk_get_varint(&c);
        ev.time = anchor_ns + (uint64_t)((double)(tick - anchor_tick) * tr->ns_per_tick);
        ev.size = ev.align = ev.old_addr = 0;
        ev.stack = 0;
        switch (cls) {
        case MK_CLASS_ALLOC:
            ev.size = mk_get_varint(&c);
            if (mk_kind_has_align(tag))
                ev.align = mk_get_varint(&c);
            uint64_t code = mk_get_varint(&c);
            if (code < MK_ADDR_RING) { /* one of the recent frees */
                if (code >= ring_n) {
                    c.err = 1;
                    break;
                }
                ev.addr = prev_addr = ring[code];
                memmove(ring + code, ring + code + 1, (ring_n - code - 1) * sizeof ring[0]);
                ring_n--;
            } else {
                ev.addr = prev_addr += (uint64_t)mk_unzigzag(code - MK_ADDR_RING);
            }
            ev.stack = (uint32_t)mk_get_varint(&c);
            break;
        case MK_CLASS_FREE:
            ev.addr = prev_addr += (uint64_t)mk_unzigzag(mk_get_varint(&c));
            if (ev.addr) {
                unsigned n = ring_n < MK_ADDR_RING ? ring_n++ : MK_ADDR_RING - 1;
                memmove(ring + 1, ring, n * sizeof ring[0]);
                ring[0] = ev.addr;
            }
            break;
        case MK_CLASS_REALLOC:
            ev.size = mk_get_varint(&c);
            ev.old_addr = prev_addr += (uint64_t)mk_unzigzag(mk_get_varint(&c));
            ev.addr = prev_addr += (uint64_t)mk_unzigzag(mk_get_varint(&c));
            ev.stack = (uint32_t)mk_get_varint(&c);
            break;
        case MK_CLASS_SYSMAP:
            ev.size = mk_get_varint(&c);
            ev.addr = prev_addr += (uint64_t)mk_unzigzag(mk_get_varint(&c));
            if (tag == MK_K_MREMAP)
                ev.old_addr = prev_addr += (uint64_t)mk_unzigzag(mk_get_varint(&c));
            break;
        default:
            break;
        }
        if (c.err)
            break;
        tr->events_read++;
        if (!fn(ctx, &ev))
            return true;
    }
    if (c.err)
        damage(tr, "malformed events in the record ending at offset %" PRIu64, tr->offset);
    return !c.err;
}

const mk_module_t *mk_trace_module_of(const mk_trace_t *tr, uint64_t addr)
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
