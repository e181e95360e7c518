/*
 * modes_check.c - modes_check TRACE: the counts a trace's own summary holds
 * against the counts its replay gives (tests/trace/modes.sh).
 *
 * The trace is loaded twice: as `memkit trace` prints it (summary_first:
 * the SUMMARY record where the tracer counted one, the SAMPLES record's
 * exact counts where it sampled) and as `memkit report` does (the events
 * replayed). Every count line of the two (the memanalyze counters down to
 * the leaks) must be equal; they are printed once on standard output for
 * the script to compare with the program's known counts. One exception,
 * documented: with several threads the counted peak is sampled (summary.h
 * bounds it and the summary states the bound in a "Peak note"), so there the
 * peak's two lines must be within that bound of the replay's exact ones. Exit 1 with
 * both sides shown when they differ, 2 when the trace cannot be read.
 */
#define _GNU_SOURCE
#include "../../src/analyze/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The count lines of the brief text report: from "Mallocs:" to "Leaks at
 * exit:", less the lines that are no count (rates, times). */
static bool is_peak(const char *line)
{
    return strncmp(line, "Maximum allocated:", 18) == 0 ||
           strncmp(line, "Peak live blocks:", 17) == 0;
}

/* The value of the line starting with key in text, or -1. */
static long long value_of(const char *text, const char *key)
{
    const char *at = strstr(text, key);
    return at ? strtoll(at + strlen(key), NULL, 10) : -1;
}

/* Is the counted value within bound of the replayed one? */
static bool near(long long counted, long long replayed, long long bound)
{
    return counted >= 0 && replayed >= 0 && llabs(counted - replayed) <= bound;
}

/* The count lines; *peak_note tells whether the summary sampled its peak.
 * With keep_peak false the peak's lines are left out. */
static char *count_lines(const char *path, bool summary_first, bool *peak_note,
                         bool keep_peak)
{
    mk_report_t r;
    mk_report_opts_t o;
    char err[1024], *text = NULL, *out = NULL;
    size_t len = 0, out_len = 0;

    mk_report_opts_default(&o);
    o.summary_first = summary_first;
    o.no_symbols = true;
    if (mk_report_load(&r, path, &o, err, sizeof err) != 0) {
        fprintf(stderr, "modes_check: %s\n", err);
        exit(2);
    }
    FILE *f = open_memstream(&text, &len);
    FILE *o_f = open_memstream(&out, &out_len);
    if (!f || !o_f)
        exit(2);
    mk_render_text(&r, f, 3, false, true);
    fclose(f);
    mk_report_free(&r);
    bool in = false;
    *peak_note = strstr(text, "Peak note:") != NULL;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, "Mallocs:", 8) == 0)
            in = true;
        /* the allocator's time comes from the events' timed calls, which
         * the SUMMARY record does not carry */
        if (in && !strstr(line, "per second") && strncmp(line, "Allocator time:", 15) &&
            (keep_peak || (!is_peak(line) && strncmp(line, "Peak note:", 10) != 0)))
            fprintf(o_f, "%s\n", line);
        if (strncmp(line, "Leaks at exit:", 14) == 0)
            break;
    }
    fclose(o_f);
    free(text);
    return out;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: modes_check TRACE\n");
        return 2;
    }
    bool note, unused;
    char *counted = count_lines(argv[1], true, &note, true);
    char *replayed = count_lines(argv[1], false, &unused, true);
    bool peak_ok = true;
    if (note) { /* compare the rest exactly, the peak within the stated bound */
        unsigned long long kb = 0, blocks = 0;
        const char *at = strstr(counted, "Peak note:");
        at = at ? strstr(at, "within") : NULL;
        peak_ok = at && sscanf(at, "within %llu KB and %llu blocks", &kb, &blocks) == 2;
        peak_ok = peak_ok &&
                  near(value_of(counted, "Maximum allocated: "),
                       value_of(replayed, "Maximum allocated: "), (long long)kb * 1024) &&
                  near(value_of(counted, "Peak live blocks: "),
                       value_of(replayed, "Peak live blocks: "), (long long)blocks);
        free(counted);
        free(replayed);
        counted = count_lines(argv[1], true, &note, false);
        replayed = count_lines(argv[1], false, &unused, false);
    }
    if (!counted[0] || !peak_ok || strcmp(counted, replayed) != 0) {
        fprintf(stderr,
                "modes_check: %s: the summary's counts differ from the replay's\n"
                "-- summary:\n%s-- replay:\n%s",
                argv[1], counted, replayed);
        return 1;
    }
    fputs(counted, stdout);
    free(counted);
    free(replayed);
    return 0;
}
