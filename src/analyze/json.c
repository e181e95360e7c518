/*
 * json.c - a streaming JSON writer: no tree in memory, output is valid by
 * construction (commas and nesting tracked per level, strings escaped per RFC 8259).
 */
#include "json.h"

#include <assert.h>
#include <math.h>

static void json_value_prefix(mk_json *j)
{
    /* need_comma per level: 0 first value, 1 a value was written, 2 a key was just
     * written (its value takes no comma). */
    if (j->depth > 0 && j->need_comma[j->depth] == 1)
        fputc(',', j->out);
    if (j->depth > 0)
        j->need_comma[j->depth] = 1;
}

static void json_open(mk_json *j, char c)
{
    json_value_prefix(j);
    fputc(c, j->out);
    assert(j->depth + 1 < (int)(sizeof j->need_comma / sizeof j->need_comma[0]));
    j->need_comma[++j->depth] = 0;
}

static void json_close(mk_json *j, char c)
{
    assert(j->depth > 0);
    j->depth--;
    fputc(c, j->out);
    if (j->depth == 0)
        fputc('\n', j->out);
}

void mk_json_begin_object(mk_json *j)
{
    json_open(j, '{');
}

void mk_json_end_object(mk_json *j)
{
    json_close(j, '}');
}

void mk_json_begin_array(mk_json *j)
{
    json_open(j, '[');
}

void mk_json_end_array(mk_json *j)
{
    json_close(j, ']');
}

/* The length of the valid UTF-8 sequence at p (1-4), or 0 if it is not one. */
static int utf8_len(const unsigned char *p)
{
    if (p[0] < 0x80)
        return 1;
    int n = p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 ? 2 : 0;
    if (!n || p[0] > 0xf4)
        return 0;
    for (int i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0; /* also stops at the terminating NUL */
    /* overlong forms, UTF-16 surrogates and code points past U+10FFFF */
    if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0) ||
        (p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] >= 0x90))
        return 0;
    return n;
}

/* A string as JSON: escaped per RFC 8259, invalid UTF-8 replaced by U+FFFD,
 * and <, >, & and the line separators escaped too, so the output can sit
 * inside an HTML <script> element unchanged. */
static void json_escaped(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        int n = utf8_len(p);
        if (n == 0) {
            fputs("\\ufffd", out);
            p++;
            continue;
        }
        if (n > 1) {
            /* U+2028 and U+2029 end a line in JavaScript */
            if (n == 3 && p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9))
                fprintf(out, "\\u20%02x", p[2] == 0xa8 ? 0x28 : 0x29);
            else
                fwrite(p, 1, (size_t)n, out);
            p += n;
            continue;
        }
        switch (*p) {
        case '"':
            fputs("\\\"", out);
            break;
        case '\\':
            fputs("\\\\", out);
            break;
        case '\n':
            fputs("\\n", out);
            break;
        case '\r':
            fputs("\\r", out);
            break;
        case '\t':
            fputs("\\t", out);
            break;
        case '<':
        case '>':
        case '&':
            fprintf(out, "\\u%04x", *p);
            break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                fprintf(out, "\\u%04x", *p);
            else
                fputc(*p, out);
        }
        p++;
    }
    fputc('"', out);
}

void mk_json_key(mk_json *j, const char *key)
{
    if (j->need_comma[j->depth])
        fputc(',', j->out);
    json_escaped(j->out, key);
    fputc(':', j->out);
    /* The value that follows must not write another comma. */
    j->need_comma[j->depth] = 2;
}

void mk_json_string(mk_json *j, const char *s)
{
    json_value_prefix(j);
    json_escaped(j->out, s ? s : "");
}

void mk_json_uint(mk_json *j, uint64_t v)
{
    json_value_prefix(j);
    fprintf(j->out, "%llu", (unsigned long long)v);
}

void mk_json_double(mk_json *j, double v)
{
    json_value_prefix(j);
    if (isfinite(v))
        fprintf(j->out, "%.6g", v);
    else
        fputs("null", j->out);
}

void mk_json_bool(mk_json *j, bool v)
{
    json_value_prefix(j);
    fputs(v ? "true" : "false", j->out);
}

void mk_json_null(mk_json *j)
{
    json_value_prefix(j);
    fputs("null", j->out);
}
