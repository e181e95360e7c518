#!/bin/sh
# threads.sh BUILD [ITERATIONS] [RUNS] - memkit report's memory against the
# traced program's thread count: the churn program (bench/trace/churn.c)
# with ITERATIONS malloc/free pairs in all (default 8M), run on 4 and on 64
# threads that start together, each traced once, each report run RUNS times
# (default 3). The run's live set is 40,000 blocks on either (10,000 a
# thread on 4, 625 on 64: the report's memory is to grow with live blocks,
# not with threads), and LIVE_PER_THREAD=N gives each thread N instead.
# Prints the median peak RSS and wall time of each and their ratio (the
# bar: 64 threads within 2x of 4). Needs GNU time.
set -u
build=${1:-build}
n=${2:-8000000}
runs=${3:-3}
memkit=$build/memkit
churn=$build/memkit-churn
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for f in "$memkit" "$churn" /usr/bin/time; do
    [ -x "$f" ] || { echo "bench-report-threads: missing $f (make build; apt-get install time)"; exit 2; }
done
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
for t in 4 64; do
    "$memkit" trace -q -o "$work/t$t" -- "$churn" "$n" "$t" "${LIVE_PER_THREAD:-$((40000 / t))}" \
        >/dev/null 2>&1 ||
        { echo "trace of $t threads failed"; exit 1; }
done
for run in $(seq "$runs"); do
    for t in 4 64; do
        /usr/bin/time -f "%e %M" -o "$work/time" "$memkit" report "$work"/t$t.*.mkt \
            >/dev/null 2>"$work/err" || { echo "report failed:"; cat "$work/err"; exit 1; }
        cat "$work/time" >>"$work/r$t"
    done
done
echo "churn: $n iterations in all; medians of $runs reports"
printf '%-10s %10s %12s %12s %12s\n' "threads" "wall (s)" "peak RSS KB" "trace B" "peak live"
for t in 4 64; do
    printf '%-10s %10s %12s %12s %12s\n' "$t" "$(cut -d' ' -f1 "$work/r$t" | median)" \
        "$(cut -d' ' -f2 "$work/r$t" | median)" "$(stat -c %s "$work"/t$t.*.mkt)" \
        "$("$memkit" report "$work"/t$t.*.mkt 2>/dev/null | sed -n 's/^Peak live blocks: //p')"
done
echo "ratio 64/4 peak RSS: $(awk -v a="$(cut -d' ' -f2 "$work/r64" | median)" \
    -v b="$(cut -d' ' -f2 "$work/r4" | median)" 'BEGIN {printf "%.2f", a / b}') (bar <= 2)"
