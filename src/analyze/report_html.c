/*
 * report_html.c - the report as one self-contained HTML page: the page
 * (report_page.html, embedded at build time) with the report's JSON in it.
 * The JSON writer escapes <, > and &, so no string can end the script
 * element early.
 */
#define _GNU_SOURCE
#include "report.h"

#include <string.h>

extern const unsigned char mk_report_page[];
extern const size_t mk_report_page_len;

/* Stacks in the flame graph: the busiest ones; the rest would only make
 * slivers too thin to see while making the page heavy. */
#define MK_HTML_MAX_SITES 5000

bool mk_render_html(mk_report_t *r, FILE *out, int top)
{
    static const char marker[] = "@MEMKIT_DATA@";
    const char *page = (const char *)mk_report_page;
    const char *at = memmem(page, mk_report_page_len, marker, sizeof marker - 1);
    if (!at)
        return false;
    (void)top;
    fwrite(page, 1, (size_t)(at - page), out);
    mk_render_page_json(r, out, MK_HTML_MAX_SITES);
    const char *rest = at + sizeof marker - 1;
    fwrite(rest, 1, mk_report_page_len - (size_t)(rest - page), out);
    return !ferror(out);
}
