/*
 * json.c - a streaming JSON writer: no tree in memory, output is valid by
 * construction (commas and nesting tracked per level, strings escaped per RFC 8259).
 */
#include "cli.h"

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

static void json_escaped(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
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
        default:
            if (*p < 0x20)
                fprintf(out, "\\u%04x", *p);
            else
                fputc(*p, out);
        }
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
