/*
 * memdebug.h - curl's memdebug log (CURL_MEMDEBUG=file in a debug build of
 * curl): one line per call, e.g.
 *
 *   MEM url.c:458 calloc(1,3280) = 0x5582e99b6a88
 *   MEM escape.c:192 free(0x5582e99b62d8)
 *   FD connect.c:1309 sclose(4)
 *
 * Two consumers: memanalyze.c prints what curl's memanalyze.pl prints, and
 * mk_memdebug_profile feeds the calls to the analysis core as events whose
 * "stack" is the source location. Both read lines the way memanalyze.pl's
 * patterns do, so the two agree on what a line means.
 */
#ifndef MEMKIT_ANALYZE_MEMDEBUG_H
#define MEMKIT_ANALYZE_MEMDEBUG_H

#include "names.h"
#include "profile.h"

#include <stdio.h>

typedef struct mk_span {
    const char *p;
    size_t n;
} mk_span_t;

/* The line kinds, by prefix. */
enum mk_md_prefix {
    MK_MD_OTHER, /* no known prefix, or a prefix without "file:line " */
    MK_MD_BT,
    MK_MD_LIMIT,
    MK_MD_MEM,
    MK_MD_FD,
    MK_MD_FILE,
    MK_MD_GETNAME,
    MK_MD_ADDR,
};

typedef struct mk_md_line {
    enum mk_md_prefix prefix;
    mk_span_t source, lineno, call; /* "url.c", "458", "calloc(1,3280) = 0x..." */
} mk_md_line_t;

/* Splits a line (without its newline) into prefix, source, line number and
 * call, as `^PREFIX ([^ ]*):(\d*) (.*)` does. */
void mk_md_split(const char *line, size_t len, mk_md_line_t *out);

/* What a MEM line's call is. Addresses are hex digits without 0x; nil is
 * "(nil)". */
enum mk_md_op {
    MK_MD_UNKNOWN,
    MK_MD_FREE,
    MK_MD_MALLOC,
    MK_MD_CALLOC,
    MK_MD_REALLOC,
    MK_MD_STRDUP,
    MK_MD_WCSDUP,
};

typedef struct mk_md_call {
    enum mk_md_op op;
    mk_span_t addr;     /* result (or the freed address) */
    bool addr_nil;      /* free((nil)); with lenient: an allocation that failed */
    mk_span_t old_addr; /* realloc's first argument */
    bool old_nil;
    mk_span_t n1, n2; /* sizes: malloc/realloc/strdup n1; calloc n1 x n2 */
} mk_md_call_t;

/* Parses a MEM line's call. lenient also accepts "= (nil)" results (failed
 * calls), which memanalyze.pl does not recognize. */
void mk_md_parse_mem(mk_span_t call, bool lenient, mk_md_call_t *out);

/* A decimal span as a number (memanalyze's Perl reads "" as 0); saturates. */
uint64_t mk_md_number(mk_span_t s);

/* A hex span as an address; spans longer than 16 digits are hashed. */
uint64_t mk_md_address(mk_span_t s);

/* Searches s for the leftmost place where pattern matches: literal
 * characters, %d a digit run, %x a hex run, %a "(nil)" or "0x" and a hex run
 * (captured without the 0x). Runs are captured into caps in order. */
bool mk_md_match(mk_span_t s, const char *pattern, mk_span_t *caps, int ncaps);

/* An fopen/fdopen line's result, as memanalyze's
 * f[d]*open\("(.*)","([^"]*)"\) = ((nil)|0x([0-9a-f]*)) finds it: *res is
 * "(nil)" or the hex digits. False when the call is not an fopen. */
bool mk_md_fopen_result(mk_span_t call, mk_span_t *res);

/* What a log holds besides memory calls. */
typedef struct mk_memdebug_info {
    uint64_t lines, mem_lines, unrecognized;
    uint64_t sockets, fds_left, files_left, addrinfos_left;
} mk_memdebug_info_t;

/* True when the first bytes look like a memdebug log (a known prefix). */
bool mk_memdebug_sniff(const unsigned char *head, size_t n);

/* Reads a log into p (init'ed by the caller) with one stack per file:line
 * from names. Times are line numbers. Returns false and writes err when the
 * file cannot be read; a line that is not understood is counted, not an
 * error. */
bool mk_memdebug_profile(const char *path, mk_profile_t *p, mk_names_t *names,
                         mk_memdebug_info_t *info, char *err, size_t errlen);

/* memanalyze.pl -v on the log: its messages, leaks and counts. `dialect`:
 * 2017 for curl 7.53's script, anything else for the current one. Returns
 * false with err set when the file cannot be read. */
bool mk_memanalyze(const char *path, FILE *out, int dialect, char *err, size_t errlen);

#endif /* MEMKIT_ANALYZE_MEMDEBUG_H */
