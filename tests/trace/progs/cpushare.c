/* cpushare.c - known shares of the CPU in the allocator, for the tracer's
 * CPU samples (preload/oncpu.h).
 *
 *   cpushare alloc N    N malloc/free pairs over a live set of 4,096 blocks:
 *                       nearly all of its time is glibc's allocator
 *   cpushare compute N  N rounds of arithmetic, one malloc in 4,096: nearly
 *                       none of it is
 *   cpushare fork N     alloc N in a forked child, then compute N in the
 *                       parent, which allocated before forking; a child of
 *                       a raw fork system call (no fork handlers) allocates
 *                       too, and must not crash
 *   cpushare threads N  alloc N in each of 3 threads
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static long n;

static void *alloc_loop(void *arg)
{
    void *live[4096] = {0};
    uint64_t x = (uintptr_t)arg | 1;
    for (long i = 0; i < n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        unsigned k = (unsigned)(x >> 33) % 4096;
        free(live[k]);
        live[k] = malloc(16 + ((x >> 20) & 511));
    }
    for (int k = 0; k < 4096; k++)
        free(live[k]);
    return NULL;
}

static volatile uint64_t sink;

static void compute_loop(void)
{
    uint64_t x = 1;
    for (long i = 0; i < n; i++) {
        for (int j = 0; j < 64; j++)
            x = x * 6364136223846793005ull + (uint64_t)j;
        if ((i & 4095) == 0)
            free(malloc(64));
    }
    sink = x;
}

static int wait_ok(pid_t pid)
{
    int st;
    return waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    n = atol(argv[2]);
    if (strcmp(argv[1], "alloc") == 0) {
        alloc_loop(NULL);
    } else if (strcmp(argv[1], "compute") == 0) {
        compute_loop();
    } else if (strcmp(argv[1], "fork") == 0) {
        for (int i = 0; i < 1000; i++) /* the children inherit a thread state */
            free(malloc(32));
        pid_t pid = fork();
        if (pid == 0) {
            alloc_loop(NULL);
            exit(0);
        }
        long raw = syscall(SYS_fork);
        if (raw == 0) { /* no fork handler ran: the tracer's state is the parent's */
            for (int i = 0; i < 1000; i++)
                free(malloc(32));
            _exit(0);
        }
        if (pid < 0 || raw < 0 || !wait_ok(pid) || !wait_ok((pid_t)raw))
            return 1;
        compute_loop();
    } else if (strcmp(argv[1], "threads") == 0) {
        pthread_t t[3];
        for (int i = 0; i < 3; i++)
            if (pthread_create(&t[i], NULL, alloc_loop, (void *)(uintptr_t)(i + 1)))
                return 1;
        for (int i = 0; i < 3; i++)
            pthread_join(t[i], NULL);
    } else {
        return 2;
    }
    puts("cpushare: done");
    return 0;
}
