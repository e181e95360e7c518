/*
 * main.c - the `memkit` command: subcommand dispatch. Each subcommand lives
 * in its own cmd_*.c file; their shared argument helpers in args.c.
 */
#include "cli.h"
#include "outfile.h"

#include <memkit/common.h>

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command_t;

static const command_t commands[] = {
    {"trace", mk_cmd_trace, "run a program and record every allocation, then summarize"},
    {"report", mk_cmd_report,
     "a trace or curl memdebug log: sites, peak, leaks, findings"},
    {"diff", mk_cmd_diff, "compare two traces: totals with ratios, sites that changed"},
    {"check", mk_cmd_check, "fail CI when allocation counts regress"},
    {"bench", mk_cmd_bench, "benchmark allocators on classic workloads"},
    {"tune", mk_cmd_tune,
     "find the allocator and glibc settings that make a program faster"},
    {"replay", mk_cmd_replay,
     "a trace's exact allocation calls against each allocator, timed"},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void print_help(void)
{
    printf("memkit %s - how much does malloc cost your program, where, and what to do "
           "about it\n\nusage: memkit COMMAND [ARGS...]\n\ncommands:\n",
           mk_version());
    for (size_t i = 0; i < N_COMMANDS; i++)
        printf("  %-8s %s\n", commands[i].name, commands[i].summary);
    printf("  %-8s %s\n", "help", "this text; `memkit COMMAND --help` for one command");
    printf("\nmemkit --version prints the version.\n");
}

int main(int argc, char **argv)
{
    const char *cmd = argc > 1 ? argv[1] : NULL;

    if (!cmd || strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 ||
        strcmp(cmd, "-h") == 0) {
        print_help();
        return cmd ? MK_EXIT_OK : MK_EXIT_USAGE;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
        printf("memkit %s\n", mk_version());
        return MK_EXIT_OK;
    }
    for (size_t i = 0; i < N_COMMANDS; i++) {
        if (strcmp(commands[i].name, cmd) != 0)
            continue;
        int rc = commands[i].run(argc - 1, argv + 1);
        /* Whatever went to standard output must have arrived (a full disk,
         * /dev/full, a closed pipe): else one line, and a failing status. */
        if (!mk_stdout_close() && rc == MK_EXIT_OK)
            rc = MK_EXIT_USAGE;
        return rc;
    }
    return mk_usage_error("unknown command '%s' (memkit help lists them)", cmd);
}
