#!/bin/sh
# ab.sh LIB_A LIB_B [RUNS [THREADS [MODE]]] - two builds of the tracer side by
# side: runs the churn workload traced with each build's
# libmemkit-preload.so in turn (A then B, B then A, ...) and prints the
# median over the pairs of B's time over A's, in wall and in CPU time.
# MODE is "full" (default, as -q), "trace" (full with the summary's counting,
# as memkit trace without -q), "summary" (--summary-only) or "sample"
# (--sample 512K, SAMPLE=BYTES to change). Pairs taken a
# second apart see the same machine, where medians of separate runs need not
# (its speed drifts by up to 2x over seconds).
#
# ENV_A and ENV_B, when set, are VAR=value words each side runs with: one
# build against itself with a setting changed.
#
# Examples: a change against the build before it
#   cp build/libmemkit-preload.so /tmp/new.so   (and the old build's as /tmp/old.so)
#   sh bench/trace/ab.sh /tmp/old.so /tmp/new.so 9 1
# and the cost of timing the allocator's calls (make bench-cost's bar):
#   ENV_A=MEMKIT_TRACE_TIMES=0 sh bench/trace/ab.sh build/libmemkit-preload.so \
#       build/libmemkit-preload.so 9 1
set -u
a=$1
b=$2
runs=${3:-9}
threads=${4:-1}
mode=${5:-full}
n=${N:-20000000}
churn=${CHURN:-build/memkit-churn}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for f in "$a" "$b" "$churn" /usr/bin/time; do
    [ -e "$f" ] || { echo "ab: missing $f"; exit 2; }
done
summary=; too=; sample=
[ "$mode" = summary ] && summary=1
[ "$mode" = trace ] && too=1
[ "$mode" = sample ] && sample=${SAMPLE:-524288}

one() { # one LIB [VAR=value...]: prints "wall_ms cpu_ms"
    lib=$1
    shift
    start=$(date +%s%N)
    env "$@" LD_PRELOAD=$lib MEMKIT_TRACE_PREFIX="$work/t" MEMKIT_TRACE_RUN=ab \
        MEMKIT_TRACE_SUMMARY_ONLY=$summary MEMKIT_TRACE_SUMMARY=$too MEMKIT_TRACE_SAMPLE=$sample \
        /usr/bin/time -f "%U %S" -o "$work/time" "$churn" "$n" "$threads" >/dev/null 2>&1 ||
        { echo "ab: the traced run with $lib failed"; exit 1; }
    end=$(date +%s%N)
    rm -f "$work"/t.*
    awk -v w=$(( (end - start) / 1000000 )) '{printf "%d %d\n", w, ($1 + $2) * 1000}' "$work/time"
}

for r in $(seq "$runs"); do
    # shellcheck disable=SC2086 # the settings' words
    if [ $((r % 2)) -eq 0 ]; then ta=$(one "$a" ${ENV_A:-}); tb=$(one "$b" ${ENV_B:-}); else tb=$(one "$b" ${ENV_B:-}); ta=$(one "$a" ${ENV_A:-}); fi
    echo "$ta $tb" | awk '{printf "%.4f %.4f\n", $3 / $1, ($2 > 0 ? $4 / $2 : 1)}' >>"$work/ratios"
done
median() { sort -n | awk '{v[NR] = $1} END {printf "%.3f", v[int((NR + 1) / 2)]}'; }
echo "B/A over $runs pairs ($threads thread(s), $mode): wall $(cut -d' ' -f1 "$work/ratios" | median)x," \
    "CPU $(cut -d' ' -f2 "$work/ratios" | median)x"
