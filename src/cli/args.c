/*
 * args.c - what every subcommand's argument parsing shares: the usage error
 * and numbers with their units: counts, byte sizes, durations (cli.h).
 */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

bool mk_parse_bytes(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    if (!s || !isdigit((unsigned char)*s))
        return false;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
        return false;
    uint64_t mul = 1;
    switch (toupper((unsigned char)*end)) {
    case 'K':
        mul = 1ull << 10;
        break;
    case 'M':
        mul = 1ull << 20;
        break;
    case 'G':
        mul = 1ull << 30;
        break;
    case 'T':
        mul = 1ull << 40;
        break;
    case 0:
        break;
    case 'B':
        if (!end[1]) {
            *out = v;
            return true;
        }
        return false;
    default:
        return false;
    }
    if (mul > 1) {
        end++;
        if (strcmp(end, "") != 0 && strcasecmp(end, "B") != 0 &&
            strcasecmp(end, "iB") != 0)
            return false;
    }
    if (v > UINT64_MAX / mul)
        return false;
    *out = v * mul;
    return true;
}

bool mk_parse_duration(const char *s, uint64_t *ns)
{
    char *end;
    double v, unit = 1e9;

    if (!s || !((*s >= '0' && *s <= '9') || *s == '.'))
        return false;
    errno = 0;
    v = strtod(s, &end);
    if (errno || end == s || !isfinite(v))
        return false;
    if (strcmp(end, "ms") == 0)
        unit = 1e6;
    else if (strcmp(end, "m") == 0 || strcmp(end, "min") == 0)
        unit = 60e9;
    else if (strcmp(end, "h") == 0)
        unit = 3600e9;
    else if (*end && strcmp(end, "s") != 0)
        return false;
    if (v * unit >= 1e19)
        return false;
    *ns = (uint64_t)(v * unit);
    return true;
}
