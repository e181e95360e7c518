/*
 * signals.h - where the program leaves a fatal signal at its default action,
 * a handler that ends the trace first (signals.c).
 */
#ifndef MEMKIT_PRELOAD_SIGNALS_H
#define MEMKIT_PRELOAD_SIGNALS_H

#include "base.h"

/* Called once tracing is on; end_trace(MK_END_SIGNAL) runs in the handler
 * before the signal's default action. */
MK_HIDDEN void mk_signals_arm(void (*end_trace)(int reason));

#endif /* MEMKIT_PRELOAD_SIGNALS_H */
