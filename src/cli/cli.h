/* cli.h - what the `memkit` subcommands share: entry points and small helpers. */
#ifndef MEMKIT_CLI_H
#define MEMKIT_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Exit statuses of the memkit command. */
enum {
    MK_EXIT_OK = 0,
    MK_EXIT_FAIL = 1,  /* the job ran and found a failure (e.g. a check limit) */
    MK_EXIT_USAGE = 2, /* bad arguments or bad input */
};

int mk_cmd_bench(int argc, char **argv);
int mk_cmd_trace(int argc, char **argv);
int mk_cmd_report(int argc, char **argv);

/* Reads a trace and prints its summary (full) or nothing; *calls gets its
 * allocation calls. Returns MK_EXIT_OK, or MK_EXIT_USAGE when the file is
 * not a trace or is damaged (what came before the damage is still printed). */
int mk_summarize_trace(const char *path, FILE *out, bool full, int top, uint64_t *calls);

/* Prints "memkit: <message>" on stderr and returns MK_EXIT_USAGE. */
int mk_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Parses a non-negative integer with an optional k/M/G suffix (powers of 1000). */
bool mk_parse_count(const char *s, uint64_t *out);

/* ---- JSON writer: objects and arrays with correct commas and string escaping ---- */
typedef struct mk_json {
    FILE *out;
    int depth;
    unsigned char need_comma[64]; /* per level: 0 first, 1 after a value, 2 after a key */
} mk_json;

void mk_json_begin_object(mk_json *j);
void mk_json_end_object(mk_json *j);
void mk_json_begin_array(mk_json *j);
void mk_json_end_array(mk_json *j);
void mk_json_key(mk_json *j, const char *key); /* next value belongs to this key */
void mk_json_string(mk_json *j, const char *s);
void mk_json_uint(mk_json *j, uint64_t v);
void mk_json_double(mk_json *j, double v); /* non-finite values become null */
void mk_json_bool(mk_json *j, bool v);
void mk_json_null(mk_json *j);

#endif /* MEMKIT_CLI_H */
