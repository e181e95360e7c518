/*
 * shortthreads.c - 2,000 short threads, four at a time, each 10 mallocs and
 * frees: what a thread-per-task program does. The tracer once kept every
 * ended thread's state (about 80 KB each, and a longer list for every new
 * thread to search), and the reader decoded every thread's first record at
 * once (about 150 KB each).
 */
#include <pthread.h>
#include <stdlib.h>

#define ROUNDS  500
#define AT_ONCE 4

static void *work(void *arg)
{
    (void)arg;
    for (int i = 0; i < 10; i++) {
        void *volatile p = malloc(40);
        free(p);
    }
    return NULL;
}

int main(void)
{
    for (int r = 0; r < ROUNDS; r++) {
        pthread_t t[AT_ONCE];
        for (int i = 0; i < AT_ONCE; i++)
            if (pthread_create(&t[i], NULL, work, NULL) != 0)
                return 1;
        for (int i = 0; i < AT_ONCE; i++)
            pthread_join(t[i], NULL);
    }
    return 0;
}
