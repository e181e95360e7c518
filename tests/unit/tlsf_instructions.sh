#!/bin/sh
# tlsf_instructions.sh VALGRIND TEST_TLSF - TLSF's bounded work, counted by an
# instrument of its own: cachegrind's instruction count (deterministic) of
# 200,000 free+malloc pairs over 1,000 and over 10,000 live blocks, less the
# same run's setup alone. A bounded allocator does about as much work a pair
# on both heaps; a search that walks its lists does several times more on
# the larger one. test_tlsf's bounded-steps check reads TLSF's own step
# counter, which cannot see a step it does not count.
set -u
valgrind=$1
prog=$2

ir() { # LIVE CALLS: the run's instructions
    "$valgrind" --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
        "$prog" churn "$1" "$2" 2>&1 | sed -n 's/^==[0-9]*== I *refs: *//p' | tr -d ,
}

per_pair() { # LIVE: instructions of one free+malloc pair
    base=$(ir "$1" 0) all=$(ir "$1" 200000)
    [ -n "$base" ] && [ -n "$all" ] || { echo "FAIL: no instruction count from cachegrind" >&2; exit 1; }
    echo $(( (all - base) / 200000 ))
}

small=$(per_pair 1000) || exit 1
large=$(per_pair 10000) || exit 1
echo "tlsf_instructions: $small instructions a free+malloc pair over 1,000 live blocks, $large over 10,000"
# 10x the blocks: at most 1.25x the work (a walk of the lists: about 10x)
[ $((large * 100)) -le $((small * 125)) ] || { echo "FAIL: the work of a call grows with the heap"; exit 1; }
echo "ok: TLSF's work a call does not grow with the heap"
