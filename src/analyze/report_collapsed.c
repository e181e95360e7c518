/*
 * report_collapsed.c - folded stacks ("outer;inner;alloc 42" per line), the
 * input of flamegraph.pl, speedscope and inferno.
 */
#define _GNU_SOURCE
#include "report.h"

#include <inttypes.h>

/* A frame label with the format's separators (';', newline) made harmless;
 * a trailing space-number would read as the count. */
static void put_label(FILE *out, const char *s)
{
    for (; *s; s++)
        fputc(*s == ';' ? ':' : (*s == '\n' || *s == '\r') ? ' ' : *s, out);
}

static uint64_t weight_of(const mk_stack_agg_t *a, enum mk_weight w)
{
    switch (w) {
    case MK_WEIGHT_BYTES:
        return a->bytes;
    case MK_WEIGHT_PEAK:
        return a->peak_bytes;
    case MK_WEIGHT_LEAKED:
        return a->leaked_bytes;
    default:
        return a->calls;
    }
}

void mk_render_collapsed(mk_report_t *r, FILE *out, enum mk_weight w)
{
    for (size_t i = 0; i < r->nsites; i++) {
        uint64_t v = weight_of(r->sites[i].agg, w);
        if (!v)
            continue;
        uint32_t depth;
        const mk_frame_t *f = mk_names_stack(r->names, r->sites[i].stack, &depth);
        if (!depth) {
            fputs("(no stack)", out);
        }
        for (uint32_t k = depth; k-- > 0;) {
            char label[1024];
            put_label(out, mk_frame_label(&f[k], label, sizeof label));
            if (k)
                fputc(';', out);
        }
        fprintf(out, " %" PRIu64 "\n", v);
    }
}
