/*
 * fuzz_json.c - libFuzzer target for the JSON writer's string escaping: any
 * bytes as a string must come out as one valid JSON string (RFC 8259), in
 * valid UTF-8, with no raw '<' (the HTML report embeds the JSON in a script
 * element). The checker below is independent of the writer.
 */
#define _GNU_SOURCE
#include "analyze/json.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Length of a valid UTF-8 sequence at s (within n bytes), 0 if invalid. */
static size_t utf8_ok(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len = c < 0x80             ? 1
                 : (c & 0xe0) == 0xc0 ? 2
                 : (c & 0xf0) == 0xe0 ? 3
                 : (c & 0xf8) == 0xf0 ? 4
                                      : 0;
    if (!len || len > n)
        return 0;
    unsigned cp = len == 1 ? c : c & (0x7f >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    static const unsigned min[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

static void check_string(const unsigned char *s, size_t n)
{
    if (n < 2 || s[0] != '"' || s[n - 1] != '"')
        abort();
    for (size_t i = 1; i < n - 1;) {
        unsigned char c = s[i];
        if (c < 0x20 || c == '<' || c == '>' || c == '"')
            abort();
        if (c == '\\') {
            if (i + 1 >= n - 1)
                abort();
            unsigned char e = s[i + 1];
            if (e == 'u') {
                if (i + 5 >= n - 1)
                    abort();
                for (int k = 2; k < 6; k++)
                    if (!strchr("0123456789abcdefABCDEF", s[i + k]) || !s[i + k])
                        abort();
                i += 6;
            } else if (strchr("\"\\/bfnrt", e) && e) {
                i += 2;
            } else {
                abort();
            }
            continue;
        }
        size_t len = utf8_ok(s + i, n - 1 - i);
        if (!len)
            abort();
        i += len;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1), *buf = NULL;
    size_t len = 0;
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = 0; /* the writer takes C strings: up to the first NUL */
    FILE *out = open_memstream(&buf, &len);
    if (out) {
        mk_json j = {.out = out};
        mk_json_begin_array(&j);
        mk_json_string(&j, s);
        mk_json_end_array(&j);
        fclose(out);
        /* "[" string "]\n" */
        if (len < 4 || buf[0] != '[' || buf[len - 2] != ']' || buf[len - 1] != '\n')
            abort();
        check_string((const unsigned char *)buf + 1, len - 3);
    }
    free(buf);
    free(s);
    return 0;
}
