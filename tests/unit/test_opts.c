/*
 * test_opts.c - the command's option parser (src/cli/opts.c): every kind of
 * option stored where its table says, values given apart or with '=', ranges
 * and choices refused with one line and MK_EXIT_USAGE, unknown options,
 * missing values, arguments that are not options, a program's command
 * after the options, and --help made from the same table.
 */
#include "check.h"

#include "../../src/cli/cli.h"
#include "../../src/cli/opts.h"

#include <stdarg.h>
#include <stddef.h>

typedef struct cfg {
    bool flag;
    int set, n, choice;
    const char *s;
    uint64_t count, bytes, ns;
    double secs;
    int called;
    const char *called_with;
} cfg_t;

static int call_it(void *dest, const mk_opt_t *opt, const char *v)
{
    cfg_t *c = dest;
    c->called += (int)opt->lo;
    c->called_with = v;
    return v && strcmp(v, "stop") == 0 ? MK_EXIT_FAIL : -1;
}

static const char *const words[] = {"red", "green", "blue", NULL};

#define AT(f) offsetof(cfg_t, f)

static const mk_opt_t opts[] = {
    {.name = "--flag",
     .alias = "-f",
     .kind = MK_OPT_FLAG,
     .at = AT(flag),
     .help = "a flag"},
    {.name = "--on", .kind = MK_OPT_SET, .at = AT(set), .lo = 7, .help = "sets 7"},
    {.name = "--n",
     .arg = "N",
     .kind = MK_OPT_INT,
     .at = AT(n),
     .lo = 1,
     .hi = 10,
     .help = "1 to 10\nsecond line"},
    {.name = "--s", .arg = "S", .kind = MK_OPT_STRING, .at = AT(s), .help = "a string"},
    {.name = "--count",
     .arg = "N",
     .kind = MK_OPT_COUNT,
     .at = AT(count),
     .help = "a count"},
    {.name = "--bytes",
     .arg = "B",
     .kind = MK_OPT_BYTES,
     .at = AT(bytes),
     .lo = 1,
     .hi = 1 << 20,
     .help = "bytes"},
    {.name = "--every",
     .arg = "T",
     .kind = MK_OPT_DURATION,
     .at = AT(ns),
     .lo = 1000000,
     .help = "a duration"},
    {.name = "--secs", .arg = "X", .kind = MK_OPT_SECONDS, .at = AT(secs), .help = "> 0"},
    {.name = "--color",
     .arg = "C",
     .kind = MK_OPT_CHOICE,
     .at = AT(choice),
     .choices = words,
     .help = "a word"},
    {.name = "--call",
     .arg = "[=V]",
     .kind = MK_OPT_CALL,
     .lo = 3,
     .call = call_it,
     .help = "an optional value"},
};

static const mk_command_spec_t spec = {.name = "demo",
                                       .synopsis = "memkit demo [options] IN",
                                       .about = "About.\n",
                                       .after = "After.\n",
                                       .max_args = 2};
static const mk_command_spec_t runs = {.name = "runs",
                                       .synopsis = "memkit runs -- CMD",
                                       .about = "Runs.\n",
                                       .command_follows = true};

/* Parses the NULL-ended words (argv[0] is the command's name). */
static int parse(const mk_command_spec_t *sp, cfg_t *c, char **args, int *nargs, ...)
{
    char *argv[32] = {"memkit-demo"};
    int argc = 1;
    va_list ap;
    va_start(ap, nargs);
    for (char *w; (w = va_arg(ap, char *));)
        argv[argc++] = w;
    va_end(ap);
    mk_opt_table_t t = MK_OPT_TABLE(opts, c);
    /* quiet: the refusals' lines are checked by their status */
    fflush(stderr);
    FILE *saved = stderr;
    stderr = fopen("/dev/null", "w");
    int rc = mk_opts_parse(sp, &t, 1, argc, argv, args, nargs);
    fclose(stderr);
    stderr = saved;
    return rc;
}

static void test_kinds(void)
{
    cfg_t c = {0};
    char *args[2];
    int n;
    CHECK_EQ(parse(&spec, &c, args, &n, "-f", "--on", "--n", "10", "--s=x y", "--count",
                   "2k", "--bytes", "64K", "--every", "2s", "--secs", "0.5",
                   "--color=blue", "in1", "--call", "in2", NULL),
             -1);
    CHECK(c.flag);
    CHECK_EQ(c.set, 7);
    CHECK_EQ(c.n, 10);
    CHECK(c.s && strcmp(c.s, "x y") == 0);
    CHECK_EQ(c.count, 2000);
    CHECK_EQ(c.bytes, 65536);
    CHECK_EQ(c.ns, 2000000000ll);
    CHECK(c.secs == 0.5);
    CHECK_EQ(c.choice, 2);
    CHECK_EQ(c.called, 3);
    CHECK(c.called_with == NULL); /* an optional value, not the next word */
    CHECK_EQ(n, 2);
    CHECK(strcmp(args[0], "in1") == 0 && strcmp(args[1], "in2") == 0);
    cfg_t d = {0};
    CHECK_EQ(parse(&spec, &d, args, &n, "--call=v", "-", NULL), -1);
    CHECK(d.called_with && strcmp(d.called_with, "v") == 0);
    CHECK(n == 1 && strcmp(args[0], "-") == 0); /* "-" is an argument (stdin) */
    CHECK_EQ(parse(&spec, &d, args, &n, "--call=stop", NULL), MK_EXIT_FAIL);
    /* after "--", everything is an argument */
    CHECK_EQ(parse(&spec, &d, args, &n, "--", "--flag", NULL), -1);
    CHECK(n == 1 && strcmp(args[0], "--flag") == 0);
}

static void test_refusals(void)
{
    cfg_t c = {0};
    char *args[2];
    int n;
    CHECK_EQ(parse(&spec, &c, args, &n, "--n", "0", NULL), MK_EXIT_USAGE);  /* below */
    CHECK_EQ(parse(&spec, &c, args, &n, "--n", "11", NULL), MK_EXIT_USAGE); /* above */
    CHECK_EQ(parse(&spec, &c, args, &n, "--n", "x", NULL), MK_EXIT_USAGE);
    CHECK_EQ(parse(&spec, &c, args, &n, "--n", NULL), MK_EXIT_USAGE); /* no value */
    CHECK_EQ(parse(&spec, &c, args, &n, "--bytes", "2M", NULL), MK_EXIT_USAGE);
    CHECK_EQ(parse(&spec, &c, args, &n, "--every", "1us", NULL), MK_EXIT_USAGE);
    CHECK_EQ(parse(&spec, &c, args, &n, "--every", "500", NULL), -1); /* seconds */
    CHECK_EQ(parse(&spec, &c, args, &n, "--every", "0.0001", NULL), MK_EXIT_USAGE);
    CHECK_EQ(parse(&spec, &c, args, &n, "--secs", "0", NULL), MK_EXIT_USAGE);
    CHECK_EQ(parse(&spec, &c, args, &n, "--secs", "nan", NULL), MK_EXIT_USAGE);
    CHECK_EQ(parse(&spec, &c, args, &n, "--color", "pink", NULL), MK_EXIT_USAGE);
    CHECK_EQ(parse(&spec, &c, args, &n, "--flag=1", NULL), MK_EXIT_USAGE);
    CHECK_EQ(parse(&spec, &c, args, &n, "--fla", NULL), MK_EXIT_USAGE); /* no prefixes */
    CHECK_EQ(parse(&spec, &c, args, &n, "-x", NULL), MK_EXIT_USAGE);
    CHECK_EQ(parse(&spec, &c, args, &n, "a", "b", "c", NULL), MK_EXIT_USAGE);
    CHECK_EQ(c.n, 0); /* nothing refused was stored */
}

static void test_command_follows(void)
{
    cfg_t c = {0};
    int first = 0;
    CHECK_EQ(parse(&runs, &c, NULL, &first, "-f", "prog", "--flag", NULL), -1);
    CHECK_EQ(first, 2); /* prog's own --flag is its */
    CHECK(c.flag);
    CHECK_EQ(parse(&runs, &c, NULL, &first, "--", "--prog", NULL), -1);
    CHECK_EQ(first, 2);
    CHECK_EQ(parse(&runs, &c, NULL, &first, "-f", NULL), MK_EXIT_USAGE);
    CHECK_EQ(parse(&runs, &c, NULL, &first, "-f", "--", NULL), MK_EXIT_USAGE);
}

static void test_help(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    mk_opt_table_t t = MK_OPT_TABLE(opts, NULL);
    mk_opts_help(&spec, &t, 1, f);
    fclose(f);
    /* every option of the table, with its argument and help */
    for (size_t i = 0; i < sizeof opts / sizeof *opts; i++) {
        CHECK_MSG(strstr(text, opts[i].name) != NULL, "%s", opts[i].name);
        CHECK_MSG(strstr(text, opts[i].help) || strchr(opts[i].help, '\n'), "%s",
                  opts[i].help);
    }
    CHECK(strstr(text, "usage: memkit demo [options] IN\n\nAbout.\n") == text);
    CHECK(strstr(text, "  -f, --flag") != NULL);
    CHECK(strstr(text, "  --n N                 1 to 10\n                        second "
                       "line\n") != NULL);
    CHECK(strstr(text, "--call[=V]") != NULL);
    CHECK(strstr(text, "\nAfter.\n") != NULL);
    free(text);
    cfg_t c = {0};
    int n;
    /* --help is answered with MK_EXIT_OK (and printed on stdout) */
    fflush(stdout);
    FILE *saved = stdout;
    stdout = fopen("/dev/null", "w");
    int rc = parse(&spec, &c, NULL, &n, "--help", NULL);
    fclose(stdout);
    stdout = saved;
    CHECK_EQ(rc, MK_EXIT_OK);
}

int main(void)
{
    test_kinds();
    test_refusals();
    test_command_follows();
    test_help();
    return check_report("test_opts");
}
