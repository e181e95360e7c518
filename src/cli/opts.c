/*
 * opts.c - the one option parser (opts.h): options found by name in the
 * command's tables, their values checked and stored by kind, and --help
 * printed from the same tables.
 */
#include "opts.h"

#include "cli.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- finding an option ---- */

typedef struct found {
    const mk_opt_t *opt;
    void *dest;
} found_t;

/* The option named by `word` (up to len characters), in any table. */
static found_t find_opt(const mk_opt_table_t *tables, size_t ntables, const char *word,
                        size_t len)
{
    for (size_t t = 0; t < ntables; t++)
        for (size_t i = 0; i < tables[t].n; i++) {
            const mk_opt_t *o = &tables[t].opts[i];
            if ((strlen(o->name) == len && strncmp(o->name, word, len) == 0) ||
                (o->alias && strlen(o->alias) == len &&
                 strncmp(o->alias, word, len) == 0))
                return (found_t){o, tables[t].dest};
        }
    return (found_t){NULL, NULL};
}

/* ---- storing a value ---- */

static int bad_value(const mk_command_spec_t *spec, const mk_opt_t *o, const char *value,
                     const char *wants)
{
    return mk_usage_error("%s: %s wants %s, not '%s'", spec->name, o->name, wants, value);
}

/* "a number from 1 to 128", "a number of at least 1" */
static void range_words(char *buf, size_t len, const char *what, const mk_opt_t *o)
{
    if (o->hi)
        snprintf(buf, len, "%s from %lld to %lld", what, o->lo, o->hi);
    else
        snprintf(buf, len, "%s of at least %lld", what, o->lo);
}

static bool in_range(const mk_opt_t *o, uint64_t v)
{
    return v >= (uint64_t)o->lo && (!o->hi || v <= (uint64_t)o->hi);
}

static int store_number(const mk_command_spec_t *spec, const mk_opt_t *o, void *at,
                        const char *value)
{
    char wants[96];
    uint64_t v;
    switch (o->kind) {
    case MK_OPT_COUNT:
    case MK_OPT_INT:
        range_words(wants, sizeof wants, "a number", o);
        if (!mk_parse_count(value, &v) || !in_range(o, v))
            return bad_value(spec, o, value, wants);
        if (o->kind == MK_OPT_INT)
            *(int *)at = (int)v;
        else
            *(uint64_t *)at = v;
        return -1;
    case MK_OPT_BYTES:
        range_words(wants, sizeof wants, "a byte count (e.g. 512K)", o);
        if (!mk_parse_bytes(value, &v) || !in_range(o, v))
            return bad_value(spec, o, value, wants);
        *(uint64_t *)at = v;
        return -1;
    case MK_OPT_DURATION:
        if (!mk_parse_duration(value, &v) || v < (uint64_t)o->lo)
            return bad_value(spec, o, value, "a duration (e.g. 60s, 5m, 100ms)");
        *(uint64_t *)at = v;
        return -1;
    default: { /* MK_OPT_SECONDS */
        char *end;
        double d = strtod(value, &end);
        if (end == value || *end || !isfinite(d) || d <= (double)o->lo ||
            (o->hi && d > (double)o->hi))
            return bad_value(spec, o, value, "a positive number");
        *(double *)at = d;
        return -1;
    }
    }
}

static int store_choice(const mk_command_spec_t *spec, const mk_opt_t *o, void *at,
                        const char *value)
{
    char words[256] = "";
    size_t n = 0;
    for (int i = 0; o->choices[i]; i++) {
        if (strcmp(o->choices[i], value) == 0) {
            *(int *)at = i;
            return -1;
        }
        n += (size_t)snprintf(words + n, n < sizeof words ? sizeof words - n : 0, "%s%s",
                              i == 0              ? ""
                              : o->choices[i + 1] ? ", "
                                                  : " or ",
                              o->choices[i]);
    }
    return mk_usage_error("%s: %s: %s, not '%s'", spec->name, o->name, words, value);
}

/* Stores o's value (NULL for a flag): -1 to go on, else an exit status. */
static int store(const mk_command_spec_t *spec, found_t f, const char *value)
{
    const mk_opt_t *o = f.opt;
    void *at = (char *)f.dest + o->at;
    switch (o->kind) {
    case MK_OPT_FLAG:
        *(bool *)at = true;
        return -1;
    case MK_OPT_SET:
        *(int *)at = (int)o->lo;
        return -1;
    case MK_OPT_STRING:
        *(const char **)at = value;
        return -1;
    case MK_OPT_CHOICE:
        return store_choice(spec, o, at, value);
    case MK_OPT_CALL:
        return o->call(f.dest, o, value);
    default:
        return store_number(spec, o, at, value);
    }
}

/* ---- the arguments ---- */

/* argv[*i] is an option: its value taken (from "=V" or the next argument)
 * and stored. */
static int one_option(const mk_command_spec_t *spec, const mk_opt_table_t *tables,
                      size_t ntables, int argc, char **argv, int *i)
{
    const char *a = argv[*i], *eq = strncmp(a, "--", 2) == 0 ? strchr(a, '=') : NULL;
    found_t f = find_opt(tables, ntables, a, eq ? (size_t)(eq - a) : strlen(a));
    if (!f.opt)
        return mk_usage_error("unknown %s option '%s' (memkit %s --help)", spec->name, a,
                              spec->name);
    bool optional = f.opt->arg && f.opt->arg[0] == '[';
    if (!f.opt->arg || optional) {
        if (eq && !optional)
            return mk_usage_error("%s: %.*s takes no value", spec->name, (int)(eq - a),
                                  a);
        return store(spec, f, eq ? eq + 1 : NULL);
    }
    if (eq)
        return store(spec, f, eq + 1);
    if (*i + 1 >= argc)
        return mk_usage_error("%s: %s needs a value (memkit %s --help)", spec->name, a,
                              spec->name);
    return store(spec, f, argv[++*i]);
}

int mk_opts_parse(const mk_command_spec_t *spec, const mk_opt_table_t *tables,
                  size_t ntables, int argc, char **argv, char **args, int *nargs)
{
    bool options_end = false;
    *nargs = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool option = !options_end && a[0] == '-' && a[1];
        if (option && strcmp(a, "--") == 0) {
            options_end = true;
            if (spec->command_follows && i + 1 < argc) {
                *nargs = i + 1;
                return -1;
            }
            continue;
        }
        if (option && (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)) {
            mk_opts_help(spec, tables, ntables, stdout);
            return MK_EXIT_OK;
        }
        if (option) {
            int rc = one_option(spec, tables, ntables, argc, argv, &i);
            if (rc >= 0)
                return rc;
            continue;
        }
        if (spec->command_follows) {
            *nargs = i;
            return -1;
        }
        if (*nargs >= spec->max_args)
            return mk_usage_error("%s takes at most %d input%s ('%s' is one more)",
                                  spec->name, spec->max_args,
                                  spec->max_args == 1 ? "" : "s", a);
        args[(*nargs)++] = argv[i];
    }
    if (spec->command_follows)
        return mk_usage_error("%s: no command given (memkit %s -- CMD ARGS...)",
                              spec->name, spec->name);
    return -1;
}

/* ---- --help ---- */

#define HELP_COLUMN 24

/* "  -o, --output PREFIX" into buf; its length. */
static int left_part(char *buf, size_t len, const mk_opt_t *o)
{
    const char *arg = o->arg ? o->arg : "";
    bool glued = arg[0] == '[';
    if (o->alias)
        return snprintf(buf, len, "  %s, %s%s%s", o->alias, o->name,
                        *arg && !glued ? " " : "", arg);
    return snprintf(buf, len, "  %s%s%s", o->name, *arg && !glued ? " " : "", arg);
}

static void help_option(const mk_opt_t *o, FILE *out)
{
    char left[128];
    int n = left_part(left, sizeof left, o);
    fputs(left, out);
    if (n + 2 > HELP_COLUMN)
        fprintf(out, "\n%*s", HELP_COLUMN, "");
    else
        fprintf(out, "%*s", HELP_COLUMN - n, "");
    for (const char *p = o->help; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        fprintf(out, "%.*s\n", (int)len, p);
        if (!nl)
            break;
        p = nl + 1;
        fprintf(out, "%*s", HELP_COLUMN, "");
    }
}

void mk_opts_help(const mk_command_spec_t *spec, const mk_opt_table_t *tables,
                  size_t ntables, FILE *out)
{
    fprintf(out, "usage: %s\n\n%s\n", spec->synopsis, spec->about);
    for (size_t t = 0; t < ntables; t++)
        for (size_t i = 0; i < tables[t].n; i++)
            help_option(&tables[t].opts[i], out);
    fprintf(out, "  -h, --help%*sthis help\n", HELP_COLUMN - 12, "");
    if (spec->after)
        fprintf(out, "\n%s", spec->after);
}
