/*
 * test_frame_label.c - mk_frame_label (src/analyze/names.c) against the
 * snprintf formats it stands for: every mix of known and unknown function,
 * file and module, lines and offsets at their edges, and every buffer size
 * from 0 to past the longest label, truncation included. The bytes after the
 * terminator must be left alone, as snprintf leaves them.
 */
#include "../../src/analyze/names.h"
#include "check.h"

#include <inttypes.h>

static void reference(const mk_frame_t *f, char *buf, size_t cap)
{
    if (f->function && f->file)
        snprintf(buf, cap, "%s (%s:%d)", f->function, f->file, f->line);
    else if (f->function)
        snprintf(buf, cap, "%s (%s)", f->function, f->module ? f->module : "?");
    else if (f->file)
        snprintf(buf, cap, "%s:%d", f->file, f->line);
    else if (f->module)
        snprintf(buf, cap, "%s+0x%" PRIx64, f->module, f->offset);
    else
        snprintf(buf, cap, "0x%" PRIx64, f->offset);
}

int main(void)
{
    static const char *const strings[] = {NULL, "", "f", "std::vector<int>::push_back",
                                          "/usr/src/project/lib/a_long_file_name.cc"};
    static const int lines[] = {0, 7, 10, 99999, -1, INT32_MAX, INT32_MIN};
    static const uint64_t offsets[] = {0, 9, 0xa, 0x7f3a12, UINT64_MAX};
    enum { NS = sizeof strings / sizeof strings[0] };
    long differ = 0;

    for (int a = 0; a < NS; a++)
        for (int b = 0; b < NS; b++)
            for (int c = 0; c < NS; c++)
                for (size_t li = 0; li < sizeof lines / sizeof lines[0]; li++)
                    for (size_t oi = 0; oi < sizeof offsets / sizeof offsets[0]; oi++)
                        for (size_t cap = 0; cap < 96; cap++) {
                            mk_frame_t f = {strings[a], strings[b], lines[li], strings[c],
                                            offsets[oi]};
                            char want[112], got[112];
                            memset(want, '#', sizeof want);
                            memset(got, '#', sizeof got);
                            reference(&f, want, cap);
                            const char *r = mk_frame_label(&f, got, cap);
                            CHECK(r == got);
                            if (memcmp(want, got, sizeof want) != 0 && differ++ < 5)
                                fprintf(stderr, "cap %zu: want \"%.*s\", got \"%.*s\"\n",
                                        cap, (int)(cap ? cap - 1 : 0), want,
                                        (int)(cap ? cap - 1 : 0), got);
                        }
    CHECK(differ == 0);
    return check_report("frame_label");
}
