/*
 * symbolize.h - addresses from a trace to function, file and line, offline,
 * with elfutils' libdw, from the trace's module map (path, load address,
 * build id). A binary rebuilt since the trace (build id differs) is not
 * trusted: its frames print as module+offset.
 */
#ifndef MEMKIT_ANALYZE_SYMBOLIZE_H
#define MEMKIT_ANALYZE_SYMBOLIZE_H

#include "../trace/reader.h"

typedef struct mk_symbolizer mk_symbolizer_t;

typedef struct mk_symbol {
    const char *function; /* NULL when unknown */
    const char *file;     /* source file, NULL when there is no line info */
    int line;
    const char *module; /* base name of the object */
    uint64_t offset;    /* address within the module */
} mk_symbol_t;

mk_symbolizer_t *mk_symbolizer_new(const mk_trace_t *tr);
void mk_symbolizer_free(mk_symbolizer_t *s);

/* Opens the module file at path and reads its symbols and debug
 * information now, for symbolizers made later in this process (memkit
 * trace warms libc's while the program runs). Thread-safe. */
void mk_symbolize_warm(const char *path);

/* Symbolizes a return address (the call instruction is just before it)
 * with the functions inlined at it: out[0] is
 * the innermost inlined function at the address's own line, each next one
 * the function it was inlined into at the line of that call, the last the
 * real (out-of-line) function. Returns how many were written (1 when
 * nothing was inlined or there is no debug information; at most max). C++
 * names are demangled. The strings live as long as the symbolizer (a
 * demangled name: until 64 more have been demangled). */
int mk_symbolize_inline(mk_symbolizer_t *s, uint64_t return_addr, mk_symbol_t *out,
                        int max);

#endif /* MEMKIT_ANALYZE_SYMBOLIZE_H */
