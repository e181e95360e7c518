/*
 * go_exit.h - a Go program's own exit_group ends the trace first
 * (go_exit.c).
 */
#ifndef MEMKIT_PRELOAD_GO_EXIT_H
#define MEMKIT_PRELOAD_GO_EXIT_H

#include "base.h"

/* From the constructor, before the program runs: in a Go program, its
 * runtime's exit ends the trace with end_trace(MK_END_EXIT_NOW) first. */
MK_HIDDEN void mk_go_exit_arm(void (*end_trace)(int reason));

#endif /* MEMKIT_PRELOAD_GO_EXIT_H */
