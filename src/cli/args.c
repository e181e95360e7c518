/*
 * args.c - what every subcommand's argument parsing shares: the usage error
 * and counts with k/M/G suffixes (cli.h).
 */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

int mk_usage_error(const char *fmt, ...)
{
    va_list ap;

    fputs("memkit: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return MK_EXIT_USAGE;
}

bool mk_parse_count(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v;
    uint64_t mul = 1;

    if (!s || !*s || *s == '-')
        return false;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno || end == s)
        return false;
    switch (*end) {
    case 'k':
    case 'K':
        mul = 1000ull;
        end++;
        break;
    case 'M':
    case 'm':
        mul = 1000000ull;
        end++;
        break;
    case 'G':
    case 'g':
        mul = 1000000000ull;
        end++;
        break;
    default:
        break;
    }
    if (*end || (v && mul > UINT64_MAX / v))
        return false;
    *out = v * mul;
    return true;
}
