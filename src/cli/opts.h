/*
 * opts.h - the one option parser of the memkit command (opts.c). Each
 * command declares its options in tables: name, argument, help line, and
 * where the value goes. Parsing and --help are both made from them, so an
 * option cannot be accepted without being documented, nor documented
 * without being accepted, and every command words its errors alike.
 */
#ifndef MEMKIT_CLI_OPTS_H
#define MEMKIT_CLI_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum mk_opt_kind {
    MK_OPT_FLAG,     /* bool at `at`, set true */
    MK_OPT_SET,      /* int at `at`, set to lo (--color 1, --no-color 0) */
    MK_OPT_STRING,   /* const char * at `at` */
    MK_OPT_COUNT,    /* uint64_t at `at`: a count (1k, 2M) in [lo, hi] */
    MK_OPT_INT,      /* int at `at`: a count in [lo, hi] */
    MK_OPT_BYTES,    /* uint64_t at `at`: a size (512K, 1M) in [lo, hi] */
    MK_OPT_DURATION, /* uint64_t at `at`: ns (1ms, 60s, 5m), at least lo */
    MK_OPT_SECONDS,  /* double at `at`: a number of seconds (or ns), > lo */
    MK_OPT_CHOICE,   /* int at `at`: the index of the word given in `choices` */
    MK_OPT_CALL,     /* call(dest, opt, value): -1 done, else an exit status said */
} mk_opt_kind_t;

typedef struct mk_opt {
    const char *name;  /* "--top" */
    const char *alias; /* "-o", or NULL */
    const char *arg;   /* the value's name in --help ("N"); NULL: a flag; "[=V]":
                        * an optional value, only as --name=V */
    mk_opt_kind_t kind;
    size_t at;                  /* offsetof the destination in the table's struct */
    long long lo, hi;           /* the range (hi 0: none); SET: the value */
    const char *const *choices; /* CHOICE: the words, NULL-ended */
    /* CALL: value NULL for a flag; lo and hi are the call's to read */
    int (*call)(void *dest, const struct mk_opt *opt, const char *value);
    const char *help; /* lines, '\n' between them */
} mk_opt_t;

/* A table and the struct its values go into. */
typedef struct mk_opt_table {
    const mk_opt_t *opts;
    size_t n;
    void *dest;
} mk_opt_table_t;

#define MK_OPTS_N(opts) (sizeof(opts) / sizeof *(opts))
/* clang-format off */
#define MK_OPT_TABLE(opts, dest) {(opts), MK_OPTS_N(opts), (dest)}
/* clang-format on */

typedef struct mk_command_spec {
    const char *name;     /* "report" */
    const char *synopsis; /* "memkit report [options] INPUT..." */
    const char *about;    /* text between the synopsis and the options */
    const char *after;    /* text after the options, or NULL */
    /* The command runs a program (trace, tune): the first argument that is
     * not an option, or the one after --, starts it, and parsing stops. */
    bool command_follows;
    int max_args; /* arguments that are not options the command takes */
} mk_command_spec_t;

/* The filter and findings options report, diff and check share (--module,
 * --function, --file, --pid, --thread, --from, --to, --min-count, --cost-ns,
 * --no-symbols), into an mk_report_opts_t (cmd_report.c). */
extern const mk_opt_t mk_filter_opts[];
extern const size_t mk_filter_nopts;

/* report, diff and check: o set to the defaults, then argv parsed against
 * the command's own options (into dest) and the filters (into o), as
 * mk_opts_parse. */
struct mk_report_opts;
int mk_opts_parse_report(const mk_command_spec_t *spec, const mk_opt_t *opts, size_t n,
                         void *dest, struct mk_report_opts *o, int argc, char **argv,
                         char **inputs, int *ninputs);

/* Parses argv[1..argc): every option into its table's struct, the other
 * arguments into args (at most spec->max_args; *nargs of them), or for a
 * command that runs a program, *nargs the index of its first word. Returns
 * -1 to go on; MK_EXIT_OK after printing --help; MK_EXIT_USAGE after one
 * line saying what is wrong. */
int mk_opts_parse(const mk_command_spec_t *spec, const mk_opt_table_t *tables,
                  size_t ntables, int argc, char **argv, char **args, int *nargs);

/* The command's --help, made from its tables. */
void mk_opts_help(const mk_command_spec_t *spec, const mk_opt_table_t *tables,
                  size_t ntables, FILE *out);

#endif /* MEMKIT_CLI_OPTS_H */
