/*
 * fuzz_input.h - what the file-reading fuzz targets share: the input bytes
 * as a file (a memfd, reached through /proc/self/fd) and a sink for the
 * renderers' output. Include it after defining _GNU_SOURCE (memfd_create).
 */
#ifndef MEMKIT_FUZZ_INPUT_H
#define MEMKIT_FUZZ_INPUT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

/* Writes data into the target's one memfd and names it in path; *sink is
 * /dev/null. False when either cannot be had (the input is then skipped). */
static inline bool fuzz_input(const uint8_t *data, size_t size, char *path, size_t cap,
                              FILE **sink)
{
    static int fd = -1;
    static FILE *null_out;

    if (fd < 0)
        fd = memfd_create("fuzz-input", 0);
    if (!null_out)
        null_out = fopen("/dev/null", "w");
    if (fd < 0 || !null_out || ftruncate(fd, 0) != 0 ||
        pwrite(fd, data, size, 0) != (ssize_t)size)
        return false;
    snprintf(path, cap, "/proc/self/fd/%d", fd);
    *sink = null_out;
    return true;
}

#endif /* MEMKIT_FUZZ_INPUT_H */
