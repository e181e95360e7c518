/*
 * summary.c - the summary `memkit trace` prints: one "Name: value" line each,
 * memanalyze's names first (scripts written for curl's memanalyze.pl parse
 * it unchanged), then memkit's own lines and the top call sites.
 */
#define _GNU_SOURCE
#include "summary.h"

#include "symbolize.h"

#include <inttypes.h>
#include <stdlib.h>

void mk_summary_print(FILE *out, const mk_trace_t *tr, const mk_profile_t *p, int top)
{
    fprintf(out, "Mallocs: %" PRIu64 "\n", p->mallocs);
    fprintf(out, "Reallocs: %" PRIu64 "\n", p->reallocs);
    fprintf(out, "Callocs: %" PRIu64 "\n", p->callocs);
    fprintf(out, "Strdups: %" PRIu64 "\n", p->strdups);
    fprintf(out, "Wcsdups: %" PRIu64 "\n", p->wcsdups);
    fprintf(out, "Frees: %" PRIu64 "\n", p->frees);
    fprintf(out, "Allocations: %" PRIu64 "\n", p->allocations);
    fprintf(out, "Maximum allocated: %" PRIu64 "\n", p->max_allocated);
    fprintf(out, "Total allocated: %" PRIu64 "\n", p->total_allocated);
    fprintf(out, "News: %" PRIu64 "\n", p->news);
    fprintf(out, "Deletes: %" PRIu64 "\n", p->deletes);
    fprintf(out, "Aligned allocations: %" PRIu64 "\n", p->aligned);
    fprintf(out, "Allocation calls: %" PRIu64 "\n", p->allocation_calls);
    fprintf(out, "Peak live blocks: %" PRIu64 "\n", p->peak_blocks);
    fprintf(out, "Leaks at exit: %" PRIu64 " blocks, %" PRIu64 " bytes\n", p->live_blocks,
            p->live_bytes);
    if (tr->end.present) {
        fprintf(out, "Peak RSS: %" PRIu64 " KB\n", tr->end.maxrss_kb);
        fprintf(out, "Page faults: %" PRIu64 " minor, %" PRIu64 " major\n",
                tr->end.minflt, tr->end.majflt);
        /* The tracer's own trace writes are not the program's I/O. */
        uint64_t wrote =
            tr->end.wchar -
            (tr->end.trace_bytes < tr->end.wchar ? tr->end.trace_bytes : tr->end.wchar);
        uint64_t io = tr->end.rchar + wrote;
        fprintf(out, "I/O bytes: %" PRIu64 " read, %" PRIu64 " written", tr->end.rchar,
                wrote);
        if (p->allocation_calls && io >= p->allocation_calls)
            fprintf(out, " (one allocation per %.1f bytes)",
                    (double)io / (double)p->allocation_calls);
        else if (io)
            fprintf(out, " (%.1f allocations per byte)",
                    (double)p->allocation_calls / (double)io);
        fputc('\n', out);
    }

    mk_site_t *sites;
    size_t n = mk_profile_sites(p, tr, &sites);
    if (n && top > 0) {
        mk_symbolizer_t *sym = mk_symbolizer_new(tr);
        fprintf(out, "Top call sites by allocations%s:\n",
                p->from_summary ? " (calling instruction)" : "");
        for (size_t i = 0; i < n && i < (size_t)top; i++) {
            mk_symbol_t s;
            char where[1024];
            mk_symbolize(sym, sites[i].pc, &s);
            fprintf(out, "  %zu. %" PRIu64 " calls, %" PRIu64 " bytes: %s\n", i + 1,
                    sites[i].calls, sites[i].bytes,
                    sites[i].pc ? mk_symbol_format(&s, where, sizeof where)
                                : "(no stack)");
        }
        mk_symbolizer_free(sym);
    }
    free(sites);
}
