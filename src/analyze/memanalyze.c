/*
 * memanalyze.c - `memkit report --memanalyze LOG`: what curl's
 * tests/memanalyze.pl -v prints for a memdebug log, byte for byte, so memkit
 * can stand in for the script. Two dialects: the current script (Sockets,
 * Operations, Total allocated; "there is"; a period after the leftover
 * lines; BT lines ignored) and curl 7.53's (2017).
 *
 * The script's quirks are kept on purpose, since its output is the contract:
 * a realloc marks its old address as holding 0 bytes (a later free of it
 * still counts as a free), a realloc of a freed address adds a byte back
 * (its recorded size is -1), only lines that match its patterns count.
 * Leftovers come out in first-seen order where Perl's hash order is random.
 */
#define _GNU_SOURCE
#include "memdebug.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* A string-keyed table that remembers insertion order. */
typedef struct entry {
    char *key;
    int64_t val;
    char *where; /* "source:line" */
} entry_t;

typedef struct strmap {
    entry_t *e;
    size_t n, cap;
    uint32_t *index; /* open addressing: entry number + 1 */
    size_t icap;
} strmap_t;

static uint64_t hash_span(mk_span_t s)
{
    return mk_hash_bytes(s.p, s.n);
}

static bool map_rehash(strmap_t *m)
{
    size_t icap = m->icap ? m->icap * 2 : 64;
    uint32_t *ix = calloc(icap, sizeof *ix);
    if (!ix)
        return false;
    for (size_t i = 0; i < m->n; i++) {
        mk_span_t k = {m->e[i].key, strlen(m->e[i].key)};
        size_t j = hash_span(k) & (icap - 1);
        while (ix[j])
            j = (j + 1) & (icap - 1);
        ix[j] = (uint32_t)i + 1;
    }
    free(m->index);
    m->index = ix;
    m->icap = icap;
    return true;
}

/* The entry for key; made (val 0, where NULL) when create, else NULL. */
static entry_t *map_get(strmap_t *m, mk_span_t key, bool create)
{
    if (m->icap) {
        for (size_t j = hash_span(key) & (m->icap - 1); m->index[j];
             j = (j + 1) & (m->icap - 1)) {
            entry_t *e = &m->e[m->index[j] - 1];
            if (strlen(e->key) == key.n && memcmp(e->key, key.p, key.n) == 0)
                return e;
        }
    }
    if (!create)
        return NULL;
    if ((m->n + 1) * 2 > m->icap && !map_rehash(m))
        return NULL;
    if (!mk_grow((void **)&m->e, &m->cap, m->n + 1, sizeof *m->e))
        return NULL;
    char *k = strndup(key.p, key.n);
    if (!k)
        return NULL;
    size_t j = hash_span(key) & (m->icap - 1);
    while (m->index[j])
        j = (j + 1) & (m->icap - 1);
    m->e[m->n] = (entry_t){.key = k};
    m->index[j] = (uint32_t)++m->n;
    return &m->e[m->n - 1];
}

static void set_where(entry_t *e, const char *where)
{
    if (!e)
        return;
    free(e->where);
    e->where = strdup(where);
}

static void map_free(strmap_t *m)
{
    for (size_t i = 0; i < m->n; i++) {
        free(m->e[i].key);
        free(m->e[i].where);
    }
    free(m->e);
    free(m->index);
}

typedef struct state {
    FILE *out;
    bool old; /* the 2017 script */
    int64_t mallocs, callocs, reallocs, strdups, wcsdups, sockets, frees;
    int64_t totalmem, maxmem, memsum;
    bool maxmem_set; /* the old script prints "" until a total exceeds 0 */
    strmap_t size_at, fds, fopens, addrinfo;
    int64_t openfile, nfopens, naddrinfos;
    uint64_t lnum;
    char where[4200];
} state_t;

/* Perl's numbers turn into floats past 2^53; memkit's saturate instead of
 * overflowing (only absurd logs get there). */
static void add_to(int64_t *x, int64_t v)
{
    if (__builtin_add_overflow(*x, v, x))
        *x = v < 0 ? INT64_MIN : INT64_MAX;
}

static void sub_from(int64_t *x, int64_t v)
{
    if (__builtin_sub_overflow(*x, v, x))
        *x = v > 0 ? INT64_MIN : INT64_MAX;
}

static void newtotal(state_t *s)
{
    if (s->totalmem > s->maxmem) {
        s->maxmem = s->totalmem;
        s->maxmem_set = true;
    }
}

static int64_t num(mk_span_t sp)
{
    uint64_t v = mk_md_number(sp);
    return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

/* A new block at addr: malloc, calloc, strdup, wcsdup. */
static void block_at(state_t *s, mk_span_t addr, int64_t size, bool warn_twice,
                     bool old_calloc)
{
    entry_t *e = map_get(&s->size_at, addr, true);
    if (!e)
        return;
    if (warn_twice && e->val > 0) {
        if (old_calloc) {
            fprintf(s->out, "Mixed debug compile, rebuild curl now\n");
        } else {
            fprintf(s->out,
                    "Mixed debug compile (%s at line %" PRIu64 "), rebuild curl now\n",
                    s->where, s->lnum);
            fprintf(s->out,
                    "We think %" PRId64 " bytes are already allocated at that memory "
                    "address: %s!\n",
                    e->val, e->key);
        }
    }
    e->val = size;
    set_where(e, s->where);
    add_to(&s->totalmem, size);
    add_to(&s->memsum, size);
    newtotal(s);
}

static void mem_line(state_t *s, const mk_md_line_t *l, const char *line, size_t len)
{
    mk_md_call_t c;
    mk_md_parse_mem(l->call, false, &c);
    switch (c.op) {
    case MK_MD_FREE: {
        if (c.addr_nil)
            break;
        entry_t *e = map_get(&s->size_at, c.addr, false);
        if (!e) {
            fprintf(s->out, "FREE ERROR: No memory allocated: %.*s\n", (int)len, line);
        } else if (e->val == -1) {
            fprintf(s->out, "FREE ERROR: Memory freed twice: %.*s\n", (int)len, line);
            fprintf(s->out, "FREE ERROR: Previously freed at: %s\n",
                    e->where ? e->where : "");
        } else {
            sub_from(&s->totalmem, e->val);
            newtotal(s);
            s->frees++;
            e->val = -1;
            set_where(e, s->where);
        }
        break;
    }
    case MK_MD_MALLOC:
        block_at(s, c.addr, num(c.n1), true, false);
        s->mallocs++;
        break;
    case MK_MD_CALLOC: {
        int64_t a = num(c.n1), b = num(c.n2);
        int64_t size = b && a > INT64_MAX / b ? INT64_MAX : a * b;
        block_at(s, c.addr, size, true, s->old);
        s->callocs++;
        break;
    }
    case MK_MD_REALLOC: {
        /* The current script skips the old address when it is (nil) or "0"
         * (false in Perl); the 2017 one files it under the empty key. */
        mk_span_t old = c.old_nil ? (mk_span_t){"", 0} : c.old_addr;
        bool has_old = !(c.old_nil || (old.n == 1 && old.p[0] == '0'));
        if (has_old || s->old) {
            entry_t *e = map_get(&s->size_at, old, true);
            if (e) {
                sub_from(&s->totalmem, e->val);
                e->val = 0;
                set_where(e, "");
            }
        }
        int64_t size = num(c.n1);
        add_to(&s->totalmem, size);
        add_to(&s->memsum, size);
        entry_t *n = map_get(&s->size_at, c.addr, true);
        if (n) {
            n->val = size;
            set_where(n, s->where);
        }
        newtotal(s);
        s->reallocs++;
        break;
    }
    case MK_MD_STRDUP:
    case MK_MD_WCSDUP:
        block_at(s, c.addr, num(c.n1), false, false);
        if (c.op == MK_MD_STRDUP)
            s->strdups++;
        else
            s->wcsdups++;
        break;
    default:
        fprintf(s->out, "Not recognized input line: %.*s\n", (int)l->call.n, l->call.p);
    }
}

static void fd_open(state_t *s, mk_span_t fd)
{
    entry_t *e = map_get(&s->fds, fd, true);
    if (e) {
        e->val = 1;
        set_where(e, s->where);
    }
    s->openfile++;
}

static void fd_line(state_t *s, const mk_md_line_t *l, const char *line, size_t len)
{
    mk_span_t c[2];
    if (mk_md_match(l->call, "socket() = %d", c, 1)) {
        fd_open(s, c[0]);
        s->sockets++;
    } else if (mk_md_match(l->call, "socketpair() = %d %d", c, 2)) {
        fd_open(s, c[0]);
        fd_open(s, c[1]);
    } else if (mk_md_match(l->call, "accept() = %d", c, 1)) {
        fd_open(s, c[0]);
    } else if (mk_md_match(l->call, "sclose(%d)", c, 1)) {
        entry_t *e = map_get(&s->fds, c[0], false);
        if (!e || e->val != 1) {
            fprintf(s->out, "Close without open: %.*s\n", (int)len, line);
        } else {
            e->val = 0;
            s->openfile--;
        }
    }
}

static void file_line(state_t *s, const mk_md_line_t *l, const char *line, size_t len)
{
    mk_span_t c[1];
    if (mk_md_fopen_result(l->call, c)) {
        if (c[0].n == 5 && c[0].p[0] == '(')
            return;
        entry_t *e = map_get(&s->fopens, c[0], true);
        if (e) {
            e->val = 1;
            set_where(e, s->where);
        }
        s->nfopens++;
    } else if (mk_md_match(l->call, "fclose(0x%x)", c, 1)) {
        entry_t *e = map_get(&s->fopens, c[0], false);
        if (!e || !e->val) {
            fprintf(s->out, "fclose() without fopen(): %.*s\n", (int)len, line);
        } else {
            e->val = 0;
            s->nfopens--;
        }
    }
}

static void addr_line(state_t *s, const mk_md_line_t *l, const char *line, size_t len)
{
    mk_span_t c[1];
    /* Keys: the current script keeps "0x", the 2017 one drops it; both
     * spellings are consistent within one script. */
    if (mk_md_match(l->call, "getaddrinfo() = %a", c, 1)) {
        bool nil = c[0].n == 5 && c[0].p[0] == '(';
        if (!nil || s->old) {
            mk_span_t key = nil ? (mk_span_t){"", 0} : c[0];
            entry_t *e = map_get(&s->addrinfo, key, true);
            if (e) {
                e->val = 1;
                set_where(e, s->where);
            }
            s->naddrinfos++;
        }
    } else if (mk_md_match(l->call, "freeaddrinfo(0x%x)", c, 1)) {
        entry_t *e = map_get(&s->addrinfo, c[0], false);
        if (!e || !e->val) {
            fprintf(s->out, "freeaddrinfo() without getaddrinfo(): %.*s\n", (int)len,
                    line);
        } else {
            e->val = 0;
            s->naddrinfos--;
        }
    }
}

static void one_line(state_t *s, const char *line, size_t len)
{
    mk_md_line_t l;
    mk_md_split(line, len, &l);
    s->lnum++;
    if (l.prefix != MK_MD_OTHER && l.prefix != MK_MD_BT)
        snprintf(s->where, sizeof s->where, "%.*s:%.*s", (int)l.source.n, l.source.p,
                 (int)l.lineno.n, l.lineno.p);
    switch (l.prefix) {
    case MK_MD_BT:
        if (s->old) /* 2017: no BT rule */
            fprintf(s->out, "Not recognized prefix line: %.*s\n", (int)len, line);
        break;
    case MK_MD_LIMIT:
    case MK_MD_GETNAME:
        break; /* LIMIT only matters to -t and -l */
    case MK_MD_MEM:
        mem_line(s, &l, line, len);
        break;
    case MK_MD_FD:
        fd_line(s, &l, line, len);
        break;
    case MK_MD_FILE:
        file_line(s, &l, line, len);
        break;
    case MK_MD_ADDR:
        addr_line(s, &l, line, len);
        break;
    default:
        fprintf(s->out, "Not recognized prefix line: %.*s\n", (int)len, line);
    }
}

static void leftovers(state_t *s)
{
    const char *dot = s->old ? "" : ".";
    if (s->totalmem) {
        fprintf(s->out, "Leak detected: memory still allocated: %" PRId64 " bytes\n",
                s->totalmem);
        for (size_t i = 0; i < s->size_at.n; i++) {
            const entry_t *e = &s->size_at.e[i];
            if (e->val <= 0)
                continue;
            fprintf(s->out, "At %s, there%s %" PRId64 " bytes.\n", e->key,
                    s->old ? "'s" : " is", e->val);
            fprintf(s->out, " allocated by %s\n", e->where ? e->where : "");
        }
    }
    if (s->openfile)
        for (size_t i = 0; i < s->fds.n; i++)
            if (s->fds.e[i].val == 1)
                fprintf(s->out, "Open file descriptor created at %s%s\n",
                        s->fds.e[i].where, dot);
    if (s->nfopens) {
        fprintf(s->out, "Open FILE handles left at:\n");
        for (size_t i = 0; i < s->fopens.n; i++)
            if (s->fopens.e[i].val == 1)
                fprintf(s->out, "fopen() called at %s%s\n", s->fopens.e[i].where, dot);
    }
    if (s->naddrinfos) {
        fprintf(s->out, "IPv6-style name resolve data left at:\n");
        for (size_t i = 0; i < s->addrinfo.n; i++)
            if (s->addrinfo.e[i].val == 1)
                fprintf(s->out, "getaddrinfo() called at %s%s\n", s->addrinfo.e[i].where,
                        dot);
    }
}

static void counts(const state_t *s)
{
    int64_t allocations = s->mallocs + s->callocs + s->reallocs + s->strdups + s->wcsdups;
    fprintf(s->out, "Mallocs: %" PRId64 "\n", s->mallocs);
    fprintf(s->out, "Reallocs: %" PRId64 "\n", s->reallocs);
    fprintf(s->out, "Callocs: %" PRId64 "\n", s->callocs);
    if (s->old) {
        /* Perl prints an unset counter as "" */
        fprintf(s->out, "Strdups:  %" PRId64 "\n", s->strdups);
        fprintf(s->out, "Wcsdups:  %" PRId64 "\n", s->wcsdups);
        if (s->frees)
            fprintf(s->out, "Frees: %" PRId64 "\n", s->frees);
        else
            fprintf(s->out, "Frees: \n");
        fprintf(s->out, "Allocations: %" PRId64 "\n", allocations);
        if (s->maxmem_set)
            fprintf(s->out, "Maximum allocated: %" PRId64 "\n", s->maxmem);
        else
            fprintf(s->out, "Maximum allocated: \n");
        return;
    }
    fprintf(s->out, "Strdups: %" PRId64 "\n", s->strdups);
    fprintf(s->out, "Wcsdups: %" PRId64 "\n", s->wcsdups);
    fprintf(s->out, "Frees: %" PRId64 "\n", s->frees);
    fprintf(s->out, "Sockets: %" PRId64 "\n", s->sockets);
    fprintf(s->out, "Allocations: %" PRId64 "\n", allocations);
    fprintf(s->out, "Operations: %" PRId64 "\n", allocations + s->sockets);
    fprintf(s->out, "Maximum allocated: %" PRId64 "\n", s->maxmem);
    fprintf(s->out, "Total allocated: %" PRId64 "\n", s->memsum);
}

bool mk_memanalyze(const char *path, FILE *out, int dialect, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return false;
    }
    state_t s = {.out = out, .old = dialect == 2017};
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, f)) >= 0) {
        if (len && line[len - 1] == '\n')
            len--;
        one_line(&s, line, (size_t)len);
    }
    bool ok = !ferror(f);
    if (!ok)
        snprintf(err, errlen, "%s: read error: %s", path, strerror(errno));
    free(line);
    fclose(f);
    leftovers(&s);
    counts(&s);
    map_free(&s.size_at);
    map_free(&s.fds);
    map_free(&s.fopens);
    map_free(&s.addrinfo);
    return ok;
}
