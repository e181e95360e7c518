/*
 * report_pprof.c - the report as a pprof profile (profile.proto, gzipped):
 * what `go tool pprof`, Pyroscope, Parca and the other engines that keep a
 * fleet's profiles read. One sample per site (a stack row of the report,
 * filters applied), valued in the report's own figures: allocations and
 * bytes allocated, blocks and bytes live at the end, and the allocator's
 * measured time where the trace has it. A sampled trace's values are its
 * estimates, as pprof's own sampled heap profiles carry them.
 *
 * The encoding is written here: protobuf's wire format is varints and
 * length-prefixed fields (https://protobuf.dev/programming-guides/encoding/),
 * and a profile needs five message types of it.
 */
#define _GNU_SOURCE
#include "report.h"

#include "../trace/kv_table.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* ---- a growable byte buffer and the wire format ---- */

typedef struct buf {
    uint8_t *p;
    size_t n, cap;
    bool oom;
} buf_t;

static void put(buf_t *b, const void *data, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n)
            cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
}

static void put_varint(buf_t *b, uint64_t v)
{
    uint8_t tmp[10];
    size_t n = 0;
    do {
        tmp[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    put(b, tmp, n);
}

enum { WIRE_VARINT = 0, WIRE_LEN = 2 };

/* A varint field; zero is proto3's default and is left out. */
static void field_int(buf_t *b, unsigned field, uint64_t v)
{
    if (!v)
        return;
    put_varint(b, (uint64_t)field << 3 | WIRE_VARINT);
    put_varint(b, v);
}

static void field_bytes(buf_t *b, unsigned field, const void *data, size_t n)
{
    put_varint(b, (uint64_t)field << 3 | WIRE_LEN);
    put_varint(b, n);
    put(b, data, n);
}

/* A message field: the message built in m, then appended (m is emptied). */
static void field_msg(buf_t *b, unsigned field, buf_t *m)
{
    field_bytes(b, field, m->p, m->n);
    b->oom |= m->oom;
    m->n = 0;
}

/* A packed repeated varint field. */
static void field_packed(buf_t *b, unsigned field, const uint64_t *v, size_t n,
                         buf_t *tmp)
{
    for (size_t i = 0; i < n; i++)
        put_varint(tmp, v[i]);
    field_msg(b, field, tmp);
}

/* ---- interning: strings, functions, locations, mappings ---- */

/* profile.proto's field numbers */
enum {
    P_SAMPLE_TYPE = 1,
    P_SAMPLE,
    P_MAPPING,
    P_LOCATION,
    P_FUNCTION,
    P_STRING_TABLE,
    P_DURATION_NANOS = 10,
    P_PERIOD_TYPE,
    P_PERIOD,
    P_COMMENT,
    P_DEFAULT_SAMPLE_TYPE
};

typedef struct pprof {
    mk_report_t *r;
    buf_t out;             /* the Profile message */
    buf_t tmp, tmp2;       /* sub-messages being built */
    mk_kv_table_t strings; /* hash -> a: index + 1 */
    char **string_of;      /* by index, for hash collisions */
    size_t nstrings, strings_cap;
    mk_kv_table_t functions; /* (name, file) -> a: id */
    mk_kv_table_t locations; /* (mapping, address, function, line) -> a: id */
    mk_kv_table_t mappings;  /* the module's name -> a: id */
    uint64_t nfunctions, nlocations, nmappings;
    uint64_t *bases; /* by mapping id: its module's load bias (0: unknown) */
    size_t bases_cap;
    buf_t functions_out, locations_out, mappings_out;
} pprof_t;

/* Index of s in the string table, added on first use (0 is ""). */
static uint64_t str(pprof_t *pp, const char *s)
{
    if (!s || !*s)
        return 0;
    uint64_t h = mk_hash_bytes(s, strlen(s)) | 1;
    for (;; h = (h + 0x9e3779b97f4a7c15ull) | 1) { /* a collision: the next key */
        bool fresh;
        mk_kv_t *e = mk_kv_put(&pp->strings, h, &fresh);
        if (!e) {
            pp->out.oom = true;
            return 0;
        }
        if (!fresh) {
            if (strcmp(pp->string_of[e->a - 1], s) == 0)
                return e->a - 1;
            continue;
        }
        if (!mk_grow((void **)&pp->string_of, &pp->strings_cap, pp->nstrings + 1,
                     sizeof *pp->string_of) ||
            !(pp->string_of[pp->nstrings] = strdup(s))) {
            mk_kv_remove(&pp->strings, e);
            pp->out.oom = true;
            return 0;
        }
        e->a = ++pp->nstrings; /* index + 1 */
        return e->a - 1;
    }
}

/* A table of ids keyed by h1, a hash of several fields, and h2, the same
 * fields packed as far as they fit (string indices, ids): a collision of h1
 * is told apart by h2, kept in the kv's b. */
static uint64_t intern(mk_kv_table_t *t, uint64_t h1, uint64_t h2, uint64_t *next,
                       bool *fresh_out, bool *oom)
{
    for (uint64_t h = h1 | 1;; h = (h + 0x9e3779b97f4a7c15ull) | 1) {
        bool fresh;
        mk_kv_t *e = mk_kv_put(t, h, &fresh);
        if (!e) {
            *oom = true;
            return 0;
        }
        if (fresh) {
            e->a = ++*next;
            e->b = h2;
            *fresh_out = true;
            return e->a;
        }
        if (e->b == h2) {
            *fresh_out = false;
            return e->a;
        }
    }
}

static uint64_t hash2(uint64_t a, uint64_t b)
{
    return mk_hash_bytes(&(uint64_t[2]){a, b}, 16);
}

/* The mapping of a frame's module (0: none, a log's file:line frames), and
 * its load bias into *base; the trace's module map is searched once per
 * module. */
static uint64_t mapping_of(pprof_t *pp, const mk_frame_t *f, uint64_t *base)
{
    *base = 0;
    if (!f->module)
        return 0;
    bool fresh;
    uint64_t name = str(pp, f->module);
    uint64_t id =
        intern(&pp->mappings, hash2(name, 1), name, &pp->nmappings, &fresh, &pp->out.oom);
    if (!id)
        return 0;
    if (!fresh) {
        *base = pp->bases[id];
        return id;
    }
    if (!mk_grow((void **)&pp->bases, &pp->bases_cap, id + 1, sizeof *pp->bases)) {
        pp->out.oom = true;
        return 0;
    }
    const mk_module_t *m = NULL;
    const mk_trace_t *tr = pp->r->tr;
    for (size_t i = 0; tr && i < tr->nmodules && !m; i++)
        if (tr->modules[i].name && strcmp(tr->modules[i].name, f->module) == 0)
            m = &tr->modules[i];
    *base = pp->bases[id] = m ? m->base : 0;
    buf_t *b = &pp->tmp;
    field_int(b, 1, id);
    if (m) {
        char hex[129];
        for (size_t i = 0; i < m->build_id_len && i < 64; i++)
            snprintf(hex + 2 * i, 3, "%02x", m->build_id[i]);
        hex[2 * (m->build_id_len < 64 ? m->build_id_len : 64)] = '\0';
        field_int(b, 2, m->lo);                                 /* memory_start */
        field_int(b, 3, m->hi);                                 /* memory_limit */
        field_int(b, 4, m->lo > m->base ? m->lo - m->base : 0); /* file_offset */
        field_int(b, 5, m->path ? str(pp, m->path) : name);     /* filename */
        field_int(b, 6, str(pp, hex));                          /* build_id */
    } else {
        field_int(b, 5, name);
    }
    field_int(b, 7, 1); /* has_functions */
    field_int(b, 8, 1); /* has_filenames */
    field_int(b, 9, 1); /* has_line_numbers */
    field_msg(&pp->mappings_out, P_MAPPING, b);
    return id;
}

static uint64_t function_of(pprof_t *pp, const mk_frame_t *f, const char *name)
{
    bool fresh;
    uint64_t n = str(pp, name), file = str(pp, f->file);
    uint64_t id = intern(&pp->functions, hash2(n, file), n << 32 | file, &pp->nfunctions,
                         &fresh, &pp->out.oom);
    if (!fresh || !id)
        return id;
    buf_t *b = &pp->tmp;
    field_int(b, 1, id);
    field_int(b, 2, n); /* name */
    field_int(b, 3, n); /* system_name */
    field_int(b, 4, file);
    field_msg(&pp->functions_out, P_FUNCTION, b);
    return id;
}

/* A frame's location: its mapping, address and one line. */
static uint64_t location_of(pprof_t *pp, const mk_frame_t *f)
{
    char label[1024];
    /* a frame without a function is named as the report names it */
    const char *name = f->function ? f->function : mk_frame_label(f, label, sizeof label);
    uint64_t base, mapping = mapping_of(pp, f, &base);
    uint64_t address = f->module ? base + f->offset : 0;
    uint64_t fn = function_of(pp, f, name);
    uint64_t h1 = hash2(hash2(mapping, address), hash2(fn, (uint64_t)f->line));
    uint64_t h2 = fn << 32 | (uint32_t)f->line;
    bool fresh;
    uint64_t id = intern(&pp->locations, h1, h2, &pp->nlocations, &fresh, &pp->out.oom);
    if (!fresh || !id)
        return id;
    buf_t *b = &pp->tmp, *line = &pp->tmp2;
    field_int(b, 1, id);
    field_int(b, 2, mapping);
    field_int(b, 3, address);
    field_int(line, 1, fn);
    field_int(line, 2, f->line > 0 ? (uint64_t)f->line : 0);
    field_msg(b, 4, line);
    field_msg(&pp->locations_out, P_LOCATION, b);
    return id;
}

/* ---- the profile ---- */

static void value_type(pprof_t *pp, unsigned field, const char *type, const char *unit)
{
    field_int(&pp->tmp, 1, str(pp, type));
    field_int(&pp->tmp, 2, str(pp, unit));
    field_msg(&pp->out, field, &pp->tmp);
}

static uint64_t round_ns(double ns)
{
    return ns > 0 ? (uint64_t)(ns + 0.5) : 0;
}

static bool gzip_out(const buf_t *b, FILE *out)
{
    z_stream z = {0};
    uint8_t chunk[65536];
    if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
                     Z_DEFAULT_STRATEGY) != Z_OK)
        return false;
    z.next_in = b->p;
    z.avail_in = (uInt)b->n;
    int rc;
    do {
        z.next_out = chunk;
        z.avail_out = sizeof chunk;
        rc = deflate(&z, Z_FINISH);
        if (rc == Z_STREAM_ERROR)
            break;
        fwrite(chunk, 1, sizeof chunk - z.avail_out, out);
    } while (rc != Z_STREAM_END);
    deflateEnd(&z);
    return rc == Z_STREAM_END && !ferror(out);
}

bool mk_render_pprof(mk_report_t *r, FILE *out)
{
    pprof_t pp = {.r = r,
                  .strings = mk_kv_heap_table(),
                  .functions = mk_kv_heap_table(),
                  .locations = mk_kv_heap_table(),
                  .mappings = mk_kv_heap_table()};
    const mk_profile_t *p = &r->prof;
    bool timed = p->site_times;
    /* "" is the string table's first entry (profile.proto) */
    if (!mk_grow((void **)&pp.string_of, &pp.strings_cap, 1, sizeof *pp.string_of) ||
        !(pp.string_of[0] = strdup("")))
        return false;
    pp.nstrings = 1; /* str() never looks "" up: it is 0 */
    value_type(&pp, P_SAMPLE_TYPE, "alloc_objects", "count");
    value_type(&pp, P_SAMPLE_TYPE, "alloc_space", "bytes");
    value_type(&pp, P_SAMPLE_TYPE, "inuse_objects", "count");
    value_type(&pp, P_SAMPLE_TYPE, "inuse_space", "bytes");
    if (timed)
        value_type(&pp, P_SAMPLE_TYPE, "alloc_time", "nanoseconds");
    /* the traced program's own module first: pprof takes the first mapping
     * for the main binary */
    if (r->tr && r->tr->nmodules && r->tr->modules[0].name) {
        uint64_t base;
        mapping_of(&pp, &(mk_frame_t){.module = r->tr->modules[0].name}, &base);
    }
    uint64_t *locs = NULL;
    size_t locs_cap = 0;
    for (size_t i = 0; i < r->nsites && !pp.out.oom; i++) {
        const mk_stack_agg_t *a = r->sites[i].agg;
        uint32_t depth;
        const mk_frame_t *f = mk_names_stack(r->names, r->sites[i].stack, &depth);
        if (!mk_grow((void **)&locs, &locs_cap, depth ? depth : 1, sizeof *locs)) {
            pp.out.oom = true;
            break;
        }
        for (uint32_t k = 0; k < depth; k++) /* the leaf first, as pprof wants */
            locs[k] = location_of(&pp, &f[k]);
        uint64_t v[5] = {a->calls, a->bytes, a->leaked_blocks, a->leaked_bytes,
                         round_ns(a->alloc_ns)};
        buf_t s = {0};
        field_packed(&s, 1, locs, depth, &pp.tmp); /* location_id */
        for (int k = 0; k < 5 - !timed; k++)       /* value: every one, 0 too */
            put_varint(&pp.tmp, v[k]);
        field_msg(&s, 2, &pp.tmp);
        field_msg(&pp.out, P_SAMPLE, &s);
        free(s.p);
    }
    free(locs);
    put(&pp.out, pp.mappings_out.p, pp.mappings_out.n);
    put(&pp.out, pp.locations_out.p, pp.locations_out.n);
    put(&pp.out, pp.functions_out.p, pp.functions_out.n);
    /* the period: one event; the duration: the traced run's */
    value_type(&pp, P_PERIOD_TYPE, "space", "bytes");
    field_int(&pp.out, P_PERIOD, 1);
    if (r->duration_s > 0)
        field_int(&pp.out, P_DURATION_NANOS, (uint64_t)(r->duration_s * 1e9));
    field_int(&pp.out, P_COMMENT,
              str(&pp, p->sampled ? "memkit: a sampled trace; values are estimates"
                                  : "memkit: every allocation call of the trace"));
    field_int(&pp.out, P_DEFAULT_SAMPLE_TYPE,
              str(&pp, timed ? "alloc_time" : "alloc_space"));
    for (size_t i = 0; i < pp.nstrings; i++) /* the table last: every name is in */
        field_bytes(&pp.out, P_STRING_TABLE, pp.string_of[i], strlen(pp.string_of[i]));
    bool ok = !pp.out.oom && !pp.mappings_out.oom && !pp.locations_out.oom &&
              !pp.functions_out.oom && gzip_out(&pp.out, out);
    for (size_t i = 0; i < pp.nstrings; i++)
        free(pp.string_of[i]);
    free(pp.string_of);
    free(pp.bases);
    free(pp.out.p);
    free(pp.tmp.p);
    free(pp.tmp2.p);
    free(pp.mappings_out.p);
    free(pp.locations_out.p);
    free(pp.functions_out.p);
    free(pp.strings.slots);
    free(pp.functions.slots);
    free(pp.locations.slots);
    free(pp.mappings.slots);
    return ok;
}
