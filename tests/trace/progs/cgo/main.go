// cgo: a Go program whose C half allocates, for tests/trace/survival.sh.
// Four goroutines call into C at once; the program ends with os.Exit(3),
// which Go's runtime makes with its own exit_group system call, past libc.
package main

/*
#include <stdlib.h>
#include <string.h>

// A C library's work: each call builds a list of n nodes and frees it.
typedef struct node { struct node *next; char data[24]; } node;

static int build(int n) {
    node *head = NULL;
    for (int i = 0; i < n; i++) {
        node *x = malloc(sizeof *x);
        if (!x)
            abort();
        memset(x->data, i, sizeof x->data);
        x->next = head;
        head = x;
    }
    int sum = 0;
    while (head) {
        node *x = head;
        head = x->next;
        sum += x->data[0];
        free(x);
    }
    return sum;
}
*/
import "C"

import (
	"fmt"
	"os"
	"sync"
)

func main() {
	var wg sync.WaitGroup
	sums := make([]int, 4)
	for g := range sums {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				sums[g] += int(C.build(100))
			}
		}(g)
	}
	wg.Wait()
	fmt.Println("sums", sums[0], sums[1], sums[2], sums[3])
	os.Exit(3)
}
