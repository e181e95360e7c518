/* json.h - a streaming JSON writer: objects and arrays with correct commas
 * and string escaping, no tree in memory. */
#ifndef MEMKIT_ANALYZE_JSON_H
#define MEMKIT_ANALYZE_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct mk_json {
    FILE *out;
    int depth;
    unsigned char need_comma[64]; /* per level: 0 first, 1 after a value, 2 after a key */
} mk_json;

void mk_json_begin_object(mk_json *j);
void mk_json_end_object(mk_json *j);
void mk_json_begin_array(mk_json *j);
void mk_json_end_array(mk_json *j);
void mk_json_key(mk_json *j, const char *key); /* next value belongs to this key */
void mk_json_string(mk_json *j, const char *s);
void mk_json_uint(mk_json *j, uint64_t v);
void mk_json_double(mk_json *j, double v); /* non-finite values become null */
void mk_json_bool(mk_json *j, bool v);
void mk_json_null(mk_json *j);

#endif /* MEMKIT_ANALYZE_JSON_H */
