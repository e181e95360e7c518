/*
 * fmt.h - numbers as people read them, for every report format that prints
 * text: sizes, counts with thousands separators, durations. Each writes into
 * buf (cap bytes, always terminated) and returns it.
 */
#ifndef MEMKIT_ANALYZE_FMT_H
#define MEMKIT_ANALYZE_FMT_H

#include <stddef.h>
#include <stdint.h>

/* Human sizes: "1.2 MB" */
const char *mk_fmt_bytes(uint64_t v, char *buf, size_t cap);
/* 33961 -> "33,961" */
const char *mk_fmt_count(uint64_t v, char *buf, size_t cap);
/* ns -> "12 ns", "3.4 us", "1.2 ms", "2.5 s" */
const char *mk_fmt_ns(double ns, char *buf, size_t cap);

#endif /* MEMKIT_ANALYZE_FMT_H */
