/*
 * events_seeds.c TRACE... OUTDIR - seeds for fuzz_events: every pair of
 * consecutive EVENTS records of each thread in each trace, as that target's
 * input (version byte, first payload's length, both payloads), and each
 * thread's last record alone. Built with the fuzz targets by `make fuzz`.
 */
#define _GNU_SOURCE
#include "trace/reader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int written;

static void write_seed(const char *dir, uint32_t version, const uint8_t *a, size_t na,
                       const uint8_t *b, size_t nb)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/events-%04d", dir, written++);
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        exit(1);
    }
    uint8_t head[5] = {(uint8_t)(version - 1)};
    uint32_t first = (uint32_t)na;
    memcpy(head + 1, &first, 4);
    fwrite(head, 1, 5, f);
    fwrite(a, 1, na, f);
    fwrite(b, 1, nb, f);
    fclose(f);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: events_seeds TRACE... OUTDIR\n");
        return 2;
    }
    const char *dir = argv[argc - 1];
    for (int i = 1; i < argc - 1; i++) {
        char err[512];
        mk_trace_t *tr = mk_trace_open(argv[i], err, sizeof err);
        if (!tr) {
            fprintf(stderr, "events_seeds: %s\n", err);
            return 1;
        }
        /* The previous EVENTS payload of each thread seen (threads < 64). */
        uint8_t *prev[64] = {0};
        size_t prev_len[64] = {0};
        unsigned type;
        const uint8_t *raw;
        size_t len;
        while (mk_trace_next(tr, &type, &raw, &len) == 1) {
            if (type != MK_REC_EVENTS || len == 0)
                continue;
            mk_cursor_t c = {raw, raw + len, 0};
            uint64_t thread = mk_get_varint(&c) % 64;
            if (prev[thread]) {
                write_seed(dir, tr->header.version, prev[thread], prev_len[thread], raw,
                           len);
                free(prev[thread]);
            }
            prev[thread] = malloc(len);
            if (!prev[thread])
                return 1;
            memcpy(prev[thread], raw, len);
            prev_len[thread] = len;
        }
        for (int t = 0; t < 64; t++) {
            if (prev[t])
                write_seed(dir, tr->header.version, prev[t], prev_len[t], NULL, 0);
            free(prev[t]);
        }
        mk_trace_close(tr);
    }
    printf("events_seeds: %d seeds in %s\n", written, dir);
    return 0;
}
