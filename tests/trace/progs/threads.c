/*
 * threads.c - 4 threads x 10,000 malloc/free pairs, each thread leaking 5
 * blocks of 64 bytes, plus a producer/consumer pair where every block one
 * thread allocates is freed by the other (1,000 blocks through a pipe).
 * Expected: Mallocs 41,020 (4 x 10,005 + 1,000), Frees 41,000, leaks 20
 * blocks / 1,280 bytes, plus pthread_create's own callocs (their number
 * depends on timing: glibc reuses the stacks of threads that ended). With
 * argument 0 the threads do no work.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

static int work = 1;
static int fds[2];

static void *churn(void *arg)
{
    (void)arg;
    if (!work)
        return NULL;
    for (int i = 0; i < 10000; i++) {
        void *p = malloc((size_t)(16 + i % 200));
        if (!p)
            abort();
        free(p);
    }
    for (int i = 0; i < 5; i++)
        if (!malloc(64))
            abort();
    return NULL;
}

static void *producer(void *arg)
{
    (void)arg;
    for (int i = 0; work && i < 1000; i++) {
        void *p = malloc(48);
        if (!p || write(fds[1], &p, sizeof p) != (ssize_t)sizeof p)
            abort();
    }
    close(fds[1]);
    return NULL;
}

static void *consumer(void *arg)
{
    void *p;
    (void)arg;
    while (read(fds[0], &p, sizeof p) == (ssize_t)sizeof p)
        free(p);
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t t[6];
    work = argc < 2 || argv[1][0] != '0';
    if (pipe(fds) != 0)
        return 1;
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, churn, NULL);
    pthread_create(&t[4], NULL, producer, NULL);
    pthread_create(&t[5], NULL, consumer, NULL);
    for (int i = 0; i < 6; i++)
        pthread_join(t[i], NULL);
    return 0;
}
