#!/bin/sh
# pairs.sh BUILD [PAIRS [MODE]] - the tracer's slowdown on the churn
# workload, estimated from many short pairs: each pair is an untraced run and
# a `memkit trace -q` run (MODE "summary", the default, adds --summary-only;
# "full" traces every event), taken back to back, in alternating order (so a
# machine that slows down or speeds up within a pair biases neither side),
# with 1 and 2 threads interleaved (so both see the same hours of the
# machine). Prints the median and quartiles of the pairs' ratios.
#
# run.sh gives the bars' side-by-side table from medians of a few runs; on a
# machine whose speed drifts, one pair's ratio moves by 10-20% and a median
# of 5 by several hundredths. This script is for when that matters: 61 pairs
# put the median within about 0.02.
set -u
build=${1:-build}
pairs=${2:-61}
mode=${3:-summary}
n=${N:-20000000}
memkit=$build/memkit
churn=$build/memkit-churn
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for f in "$memkit" "$churn"; do
    [ -x "$f" ] || { echo "pairs: missing $f (make build)"; exit 2; }
done
case $mode in
summary) opt=--summary-only ;;
full) opt= ;;
*) echo "pairs: MODE is summary or full, not '$mode'"; exit 2 ;;
esac

ms() { # ms CMD...: the command's wall time in microseconds
    start=$(date +%s%N)
    "$@" >/dev/null 2>&1 || { echo "pairs: '$*' failed" >&2; exit 1; }
    end=$(date +%s%N)
    echo $(( (end - start) / 1000 ))
}
untraced() { ms "$churn" "$n" "$1"; }
traced() {
    t=$(ms "$memkit" trace -q $opt -o "$work/mk" -- "$churn" "$n" "$1")
    rm -f "$work"/mk.*
    echo "$t"
}

for i in $(seq "$pairs"); do
    for threads in 1 2; do
        if [ $((i % 2)) -eq 1 ]; then
            u=$(untraced "$threads") && t=$(traced "$threads") || exit 1
        else
            t=$(traced "$threads") && u=$(untraced "$threads") || exit 1
        fi
        echo "$u $t" | awk '{printf "%.4f\n", $2 / $1}' >>"$work/ratio$threads"
    done
done

echo "churn: $n iterations; $pairs pairs of an untraced run and 'memkit trace -q $opt'"
for threads in 1 2; do
    sort -n "$work/ratio$threads" | awk -v t="$threads" '{v[NR] = $1}
        END {printf "%d thread(s): median %.3fx   quartiles %.3f-%.3fx   range %.3f-%.3fx\n",
             t, v[int((NR + 1) / 2)], v[int((NR + 3) / 4)], v[int((3 * NR + 1) / 4)], v[1], v[NR]}'
done
