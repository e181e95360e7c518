#!/bin/sh
# run.sh BUILD [ITERATIONS] [RUNS] - memkit report next to heaptrack_print
# on the same workload: the churn program (bench/trace/churn.c, ITERATIONS
# malloc/free pairs, default 20M) traced once by each tool, then each
# analyser run RUNS times (default 3), alternating, on its own tool's trace.
# Prints medians of wall time and peak RSS, events per second and the
# ratios the report issue's bar is about. Needs heaptrack and GNU time.
set -u
build=${1:-build}
n=${2:-20000000}
runs=${3:-3}
memkit=$build/memkit
churn=$build/memkit-churn
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for f in "$memkit" "$churn" /usr/bin/time; do
    [ -x "$f" ] || { echo "bench-report: missing $f (make build; apt-get install time)"; exit 2; }
done
command -v heaptrack_print >/dev/null 2>&1 ||
    { echo "bench-report: heaptrack_print not found (apt-get install heaptrack)"; exit 2; }

"$memkit" trace -q -o "$work/mk" -- "$churn" "$n" 1 >/dev/null 2>&1 || { echo "trace failed"; exit 1; }
heaptrack -o "$work/ht" "$churn" "$n" 1 >/dev/null 2>&1 || { echo "heaptrack failed"; exit 1; }
mk=$(ls "$work"/mk.*.mkt)
ht=$(ls "$work"/ht.*)

median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
measure() { # NAME CMD...: appends "wall rss_kb"
    name=$1
    shift
    /usr/bin/time -f "%e %M" -o "$work/time" "$@" >/dev/null 2>"$work/err" ||
        { echo "bench-report: '$*' failed:"; cat "$work/err"; exit 1; }
    cat "$work/time" >>"$work/$name"
}
for run in $(seq "$runs"); do
    measure mk "$memkit" report "$mk"
    measure ht heaptrack_print "$ht"
done
# events in the trace: the report's own count of calls
events=$("$memkit" report --format json "$mk" |
    python3 -c 'import json,sys; t=json.load(sys.stdin)["totals"]; print(t["allocation_calls"] + t["frees"] + t["free_null"] + t["free_unknown"])')
col() { cut -d' ' -f"$2" "$work/$1" | median; }
mkt=$(col mk 1) mkm=$(col mk 2) htt=$(col ht 1) htm=$(col ht 2)
echo "churn: $n iterations; $events events; trace sizes: memkit $(stat -c %s "$mk") B, heaptrack $(stat -c %s "$ht") B; medians of $runs runs"
printf '%-16s %10s %12s %14s\n' "" "wall (s)" "peak RSS KB" "events/s"
printf '%-16s %10s %12s %14.0f\n' "memkit report" "$mkt" "$mkm" "$(awk -v e="$events" -v t="$mkt" 'BEGIN {print e / t}')"
printf '%-16s %10s %12s %14.0f\n' "heaptrack_print" "$htt" "$htm" "$(awk -v e="$events" -v t="$htt" 'BEGIN {print e / t}')"
echo "ratios memkit/heaptrack: time $(awk -v a="$mkt" -v b="$htt" 'BEGIN {printf "%.2f", a / b}')" \
    "(bar < 1), memory $(awk -v a="$mkm" -v b="$htm" 'BEGIN {printf "%.2f", a / b}') (bar < 1)"
