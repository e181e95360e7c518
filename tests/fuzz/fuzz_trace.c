/*
 * fuzz_trace.c - libFuzzer target for the trace reader and the replay: any
 * bytes must give a clean result or a clean error, never a crash, a hang or
 * a leak. Built by `make fuzz` with clang; seeds are real traces.
 */
#define _GNU_SOURCE
#include "analyze/profile.h"

#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    char path[64], err[512];

    if (fd < 0)
        fd = memfd_create("trace", 0);
    if (fd < 0 || ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
        return 0;
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    mk_trace_t *tr = mk_trace_open(path, err, sizeof err);
    if (!tr)
        return 0;
    mk_profile_t p = {0};
    mk_profile_build(&p, tr);
    mk_site_t *sites;
    mk_profile_sites(&p, tr, &sites);
    free(sites);
    mk_profile_free(&p);
    mk_trace_close(tr);
    return 0;
}
