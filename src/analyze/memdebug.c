/*
 * memdebug.c - reading curl memdebug logs: line splitting and call parsing
 * shared with memanalyze.c, and the log as events for the analysis core.
 *
 * The patterns mirror memanalyze.pl's regular expressions (unanchored
 * searches, greedy digit and hex runs), so a line means the same here and
 * there. None of the runs can contain the literal that follows it, so a
 * greedy scan without backtracking finds what the regex finds.
 */
#define _GNU_SOURCE
#include "memdebug.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_hex(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f');
}

static const struct {
    const char *word;
    enum mk_md_prefix prefix;
} prefixes[] = {
    {"LIMIT ", MK_MD_LIMIT}, {"MEM ", MK_MD_MEM},         {"FD ", MK_MD_FD},
    {"FILE ", MK_MD_FILE},   {"GETNAME ", MK_MD_GETNAME}, {"ADDR ", MK_MD_ADDR},
};

void mk_md_split(const char *line, size_t len, mk_md_line_t *out)
{
    memset(out, 0, sizeof *out);
    if (len >= 2 && line[0] == 'B' && line[1] == 'T') {
        out->prefix = MK_MD_BT; /* memanalyze's /^BT/: any line starting so */
        return;
    }
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
        size_t wl = strlen(prefixes[i].word);
        if (len < wl || memcmp(line, prefixes[i].word, wl) != 0)
            continue;
        /* ([^ ]*):(\d*) then a space: the token runs to the first space, and
         * splits at the last colon whose remainder is all digits. */
        const char *tok = line + wl, *end = line + len;
        const char *sp = memchr(tok, ' ', (size_t)(end - tok));
        if (!sp)
            return;
        for (const char *c = sp; c-- > tok;) {
            if (*c == ':') {
                out->prefix = prefixes[i].prefix;
                out->source = (mk_span_t){tok, (size_t)(c - tok)};
                out->lineno = (mk_span_t){c + 1, (size_t)(sp - c - 1)};
                out->call = (mk_span_t){sp + 1, (size_t)(end - sp - 1)};
                return;
            }
            if (!is_digit(*c))
                return;
        }
        return;
    }
}

/* Matches pattern at s[at..]: literal characters, %d a digit run, %x a hex
 * run, %a "(nil)" or "0x" and a hex run (captured without the 0x). */
static bool match_here(const char *s, const char *end, const char *pat, mk_span_t *caps,
                       int ncaps)
{
    int c = 0;
    for (; *pat; pat++) {
        if (*pat != '%') {
            if (s == end || *s != *pat)
                return false;
            s++;
            continue;
        }
        char cls = *++pat;
        if (cls == 'a') {
            if (end - s >= 5 && memcmp(s, "(nil)", 5) == 0) {
                if (c < ncaps)
                    caps[c] = (mk_span_t){s, 5};
                c++;
                s += 5;
                continue;
            }
            if (end - s < 2 || s[0] != '0' || s[1] != 'x')
                return false;
            s += 2;
            cls = 'x';
        }
        const char *t = s;
        while (t < end && (cls == 'd' ? is_digit(*t) : is_hex(*t)))
            t++;
        if (c < ncaps)
            caps[c] = (mk_span_t){s, (size_t)(t - s)};
        c++;
        s = t;
    }
    return true;
}

bool mk_md_match(mk_span_t s, const char *pattern, mk_span_t *caps, int ncaps)
{
    const char *end = s.p + s.n;
    for (const char *at = s.p; at < end; at++) {
        at = memchr(at, pattern[0], (size_t)(end - at));
        if (!at)
            return false;
        if (match_here(at, end, pattern, caps, ncaps))
            return true;
    }
    return false;
}

bool mk_md_fopen_result(mk_span_t call, mk_span_t *res)
{
    const char *p = call.p, *end = call.p + call.n;
    for (const char *at = p; (at = memmem(at, (size_t)(end - at), "open(\"", 6)); at++) {
        const char *f = at;
        while (f > p && f[-1] == 'd')
            f--;
        if (f == p || f[-1] != 'f')
            continue;
        /* (.*) is greedy: the last "," that leads to a match wins */
        for (const char *q = end - 3; q >= at + 6; q--) {
            if (memcmp(q, "\",\"", 3) != 0)
                continue;
            const char *r = q + 3;
            while (r < end && *r != '"')
                r++;
            if (match_here(r, end, "\") = %a", res, 1))
                return true;
        }
    }
    return false;
}

static bool is_nil(mk_span_t s)
{
    return s.n == 5 && s.p[0] == '(';
}

void mk_md_parse_mem(mk_span_t call, bool lenient, mk_md_call_t *out)
{
    mk_span_t c[4];
    memset(out, 0, sizeof *out);
    /* memanalyze's order: free, malloc, calloc, realloc, strdup, wcsdup */
    if (mk_md_match(call, "free(%a", c, 1)) {
        out->op = MK_MD_FREE;
        out->addr = c[0];
        out->addr_nil = is_nil(c[0]);
        return;
    }
    const char *res = lenient ? "%a" : "0x%x";
    char pat[64];
    snprintf(pat, sizeof pat, "malloc(%%d) = %s", res);
    if (mk_md_match(call, pat, c, 2)) {
        *out = (mk_md_call_t){.op = MK_MD_MALLOC, .n1 = c[0], .addr = c[1]};
    } else if (snprintf(pat, sizeof pat, "calloc(%%d,%%d) = %s", res),
               mk_md_match(call, pat, c, 3)) {
        *out = (mk_md_call_t){.op = MK_MD_CALLOC, .n1 = c[0], .n2 = c[1], .addr = c[2]};
    } else if (snprintf(pat, sizeof pat, "realloc(%%a, %%d) = %s", res),
               mk_md_match(call, pat, c, 3)) {
        *out = (mk_md_call_t){.op = MK_MD_REALLOC,
                              .old_addr = c[0],
                              .old_nil = is_nil(c[0]),
                              .n1 = c[1],
                              .addr = c[2]};
    } else if (snprintf(pat, sizeof pat, "strdup(0x%%x) (%%d) = %s", res),
               mk_md_match(call, pat, c, 3)) {
        *out = (mk_md_call_t){.op = MK_MD_STRDUP, .n1 = c[1], .addr = c[2]};
    } else if (snprintf(pat, sizeof pat, "wcsdup(0x%%x) (%%d) = %s", res),
               mk_md_match(call, pat, c, 3)) {
        *out = (mk_md_call_t){.op = MK_MD_WCSDUP, .n1 = c[1], .addr = c[2]};
    } else {
        return;
    }
    out->addr_nil = is_nil(out->addr);
}

uint64_t mk_md_number(mk_span_t s)
{
    uint64_t v = 0;
    for (size_t i = 0; i < s.n; i++) {
        unsigned d = (unsigned)(s.p[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return UINT64_MAX;
        v = v * 10 + d;
    }
    return v;
}

uint64_t mk_md_address(mk_span_t s)
{
    if (s.n > 16) /* not a real address, but still one key per spelling */
        return mk_hash_bytes(s.p, s.n) | 0x8000000000000000ull;
    uint64_t v = 0;
    for (size_t i = 0; i < s.n; i++)
        v = v << 4 | (uint64_t)(is_digit(s.p[i]) ? s.p[i] - '0' : s.p[i] - 'a' + 10);
    return v;
}

bool mk_memdebug_sniff(const unsigned char *head, size_t n)
{
    static const char *const words[] = {"MEM ",   "FD ",      "FILE ", "ADDR ",
                                        "LIMIT ", "GETNAME ", "BT"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        size_t wl = strlen(words[i]);
        if (n >= wl && memcmp(head, words[i], wl) == 0)
            return true;
    }
    return false;
}

/* ---- the log as events ---- */

static int line_number(mk_span_t s)
{
    uint64_t v = mk_md_number(s);
    return v > 1000000000 ? 1000000000 : (int)v;
}

#define MK_MD_MAX_SIZE ((uint64_t)1 << 47)

static void feed_mem(mk_profile_t *p, mk_names_t *names, const mk_md_line_t *l,
                     uint64_t time, mk_memdebug_info_t *info)
{
    mk_md_call_t c;
    mk_md_parse_mem(l->call, true, &c);
    if (c.op == MK_MD_UNKNOWN) {
        info->unrecognized++;
        return;
    }
    info->mem_lines++;
    mk_event_t ev = {.time = time};
    ev.addr = c.addr_nil ? 0 : mk_md_address(c.addr);
    if (c.op != MK_MD_FREE) {
        ev.stack = mk_names_add_location(names, l->source.p, l->source.n,
                                         line_number(l->lineno));
        ev.size = mk_md_number(c.n1);
    }
    switch (c.op) {
    case MK_MD_FREE:
        ev.kind = MK_K_FREE;
        break;
    case MK_MD_MALLOC:
        ev.kind = MK_K_MALLOC;
        break;
    case MK_MD_CALLOC: {
        uint64_t n2 = mk_md_number(c.n2);
        ev.kind = MK_K_CALLOC;
        ev.size = n2 && ev.size > UINT64_MAX / n2 ? UINT64_MAX : ev.size * n2;
        break;
    }
    case MK_MD_REALLOC:
        ev.kind = MK_K_REALLOC;
        ev.old_addr = c.old_nil ? 0 : mk_md_address(c.old_addr);
        break;
    case MK_MD_STRDUP:
        ev.kind = MK_K_STRDUP;
        break;
    case MK_MD_WCSDUP:
        ev.kind = MK_K_WCSDUP;
        break;
    default:
        return;
    }
    /* No allocation can have a size past the address space (2^47 bytes on
     * x86-64 and arm64): such a line is damage, and adding it up would wrap
     * the totals. */
    if (ev.kind != MK_K_FREE && ev.size > MK_MD_MAX_SIZE) {
        info->mem_lines--;
        info->unrecognized++;
        return;
    }
    mk_profile_event(p, &ev);
}

/* File descriptors, FILE handles and name-resolve data: counted to say what
 * was left open, by key (the number or address as written). */
typedef struct open_set {
    mk_kv_table_t t;
} open_set_t;

static uint64_t key_of(mk_span_t s)
{
    return mk_hash_bytes(s.p, s.n) | 1; /* kv keys are never 0 */
}

static void set_open(open_set_t *s, mk_span_t key, bool open, uint64_t *left)
{
    bool fresh;
    mk_kv_t *e =
        open ? mk_kv_put(&s->t, key_of(key), &fresh) : mk_kv_find(&s->t, key_of(key));
    if (!e)
        return;
    if (open && (fresh || !e->a)) {
        e->a = 1;
        (*left)++;
    } else if (!open && e->a) {
        e->a = 0;
        (*left)--;
    }
}

static void feed_other(const mk_md_line_t *l, open_set_t *fds, open_set_t *files,
                       open_set_t *addrs, mk_memdebug_info_t *info)
{
    mk_span_t c[2];
    switch (l->prefix) {
    case MK_MD_FD:
        if (mk_md_match(l->call, "socket() = %d", c, 1)) {
            info->sockets++;
            set_open(fds, c[0], true, &info->fds_left);
        } else if (mk_md_match(l->call, "socketpair() = %d %d", c, 2)) {
            set_open(fds, c[0], true, &info->fds_left);
            set_open(fds, c[1], true, &info->fds_left);
        } else if (mk_md_match(l->call, "accept() = %d", c, 1)) {
            set_open(fds, c[0], true, &info->fds_left);
        } else if (mk_md_match(l->call, "sclose(%d)", c, 1)) {
            set_open(fds, c[0], false, &info->fds_left);
        }
        break;
    case MK_MD_FILE:
        if (mk_md_fopen_result(l->call, c)) {
            if (!is_nil(c[0])) /* a failed fopen opened nothing */
                set_open(files, c[0], true, &info->files_left);
        } else if (mk_md_match(l->call, "fclose(0x%x)", c, 1)) {
            set_open(files, c[0], false, &info->files_left);
        }
        break;
    case MK_MD_ADDR:
        if (mk_md_match(l->call, "getaddrinfo() = 0x%x", c, 1))
            set_open(addrs, c[0], true, &info->addrinfos_left);
        else if (mk_md_match(l->call, "freeaddrinfo(0x%x)", c, 1))
            set_open(addrs, c[0], false, &info->addrinfos_left);
        break;
    default:
        break;
    }
}

bool mk_memdebug_profile(const char *path, mk_profile_t *p, mk_names_t *names,
                         mk_memdebug_info_t *info, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return false;
    }
    open_set_t fds = {mk_kv_heap_table()};
    open_set_t files = fds, addrs = fds;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    memset(info, 0, sizeof *info);
    while ((len = getline(&line, &cap, f)) >= 0) {
        if (len && line[len - 1] == '\n')
            len--;
        info->lines++;
        mk_md_line_t l;
        mk_md_split(line, (size_t)len, &l);
        if (l.prefix == MK_MD_MEM)
            feed_mem(p, names, &l, info->lines, info);
        else if (l.prefix == MK_MD_OTHER)
            info->unrecognized++;
        else
            feed_other(&l, &fds, &files, &addrs, info);
    }
    bool ok = !ferror(f);
    if (!ok)
        snprintf(err, errlen, "%s: read error: %s", path, strerror(errno));
    free(line);
    fclose(f);
    free(fds.t.slots);
    free(files.t.slots);
    free(addrs.t.slots);
    mk_profile_finish(p);
    return ok;
}
