/*
 * transfer_main.c - one version of the transfer example as a program, for
 * `memkit trace`: memkit-transfer before|after [CHUNKS]. Prints what the
 * example counted itself, so the trace's numbers can be checked against it.
 */
#include "transfer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int chunks = argc > 2 ? atoi(argv[2]) : 20000;
    transfer_result_t r;

    if (argc < 2 || chunks <= 0 ||
        (strcmp(argv[1], "before") && strcmp(argv[1], "after"))) {
        fprintf(stderr, "usage: memkit-transfer before|after [CHUNKS]\n");
        return 2;
    }
    r = strcmp(argv[1], "before") == 0 ? transfer_before(chunks, 8)
                                       : transfer_after(chunks, 8);
    printf("%s: %d chunks, checksum %llu, %llu allocation calls counted by the example\n",
           argv[1], chunks, (unsigned long long)r.checksum,
           (unsigned long long)r.allocation_calls);
    return 0;
}
