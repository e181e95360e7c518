/* workloads.c - the registry of `memkit bench` workloads, and shared helpers. */
#include "workload.h"

#include <string.h>
#include <time.h>

extern const mk_workload mk_workload_list;

const mk_workload *const mk_workloads[] = {
    &mk_workload_list,
    NULL,
};

const mk_workload *mk_workload_find(const char *name)
{
    for (int i = 0; mk_workloads[i]; i++)
        if (strcmp(mk_workloads[i]->name, name) == 0)
            return mk_workloads[i];
    return NULL;
}

double mk_bench_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
