/*
 * summary.h - the text summary of one traced process (memanalyze vocabulary).
 */
#ifndef MEMKIT_ANALYZE_SUMMARY_H
#define MEMKIT_ANALYZE_SUMMARY_H

#include "profile.h"

#include <stdio.h>

/* Prints the Name: value lines and the top `top` call sites. */
void mk_summary_print(FILE *out, const mk_trace_t *tr, const mk_profile_t *p, int top);

#endif /* MEMKIT_ANALYZE_SUMMARY_H */
