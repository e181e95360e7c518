/*
 * zstdhooks.c - a program that defines zstd's tracing hooks, as a program
 * built with zstd's tracing would, and exports them (-rdynamic). The tracer
 * links its own zstd in; its copy must never call these with its
 * compression contexts (the hooks are weak references in zstd). 40,000
 * allocations make records large enough to be compressed, not written raw;
 * the last is written at exit, after main, so a hook that is called says
 * so on stderr and ends the process with status 3. Prints "zstdhooks: ok"
 * and exits 0 otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

unsigned long long ZSTD_trace_compress_begin(const void *cctx);
void ZSTD_trace_compress_end(unsigned long long ctx, const void *trace);

static void called(void)
{
    static const char msg[] = "zstdhooks: the tracer called the program's zstd hooks\n";
    if (write(2, msg, sizeof msg - 1) < 0)
        _exit(4);
    _exit(3);
}

unsigned long long ZSTD_trace_compress_begin(const void *cctx)
{
    (void)cctx;
    called();
    return 0;
}

void ZSTD_trace_compress_end(unsigned long long ctx, const void *trace)
{
    (void)ctx;
    (void)trace;
    called();
}

int main(void)
{
    for (int i = 0; i < 40000; i++)
        free(malloc(16 + (size_t)(i % 7) * 8));
    printf("zstdhooks: ok\n");
    return 0;
}
