#!/bin/sh
# run.sh BUILD [ITERATIONS] [RUNS] - the tracer's cost, side by side in one
# run: the churn workload (each iteration frees a random one of 10,000 live
# blocks and mallocs 8-256 bytes in its place) untraced, under `memkit
# trace` (full, and --summary-only) and under heaptrack, with 1 and 2
# threads. Prints medians of RUNS runs (default 3) and the ratios the
# tracer's bars are about. Needs GNU time (/usr/bin/time) and heaptrack.
#
# Each traced run is paired with an untraced run just before or after it
# (alternately), and a ratio is the median of those pairs' ratios: this
# machine's speed drifts by up to 2x over seconds (the 2-thread loop most),
# and a pair taken within a second sees the same machine, where medians of
# runs taken a minute apart need not. For a finer figure than a median of a
# few pairs, pairs.sh takes many.
set -u
build=${1:-build}
n=${2:-20000000}
runs=${3:-3}
memkit=$build/memkit
churn=$build/memkit-churn
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for f in "$memkit" "$churn" /usr/bin/time; do
    [ -x "$f" ] || { echo "bench-trace: missing $f (make build; apt-get install time)"; exit 2; }
done
have_ht=0
command -v heaptrack >/dev/null 2>&1 && have_ht=1

median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
spread() { sort -n | awk '{v[NR] = $1} END {printf "%s-%s", v[1], v[NR]}'; }

# measure NAME CMD...: appends "wall_s rss_kb" to $work/NAME, one line per run.
measure() {
    name=$1
    shift
    start=$(date +%s%N)
    /usr/bin/time -f "%M" -o "$work/time" "$@" >/dev/null 2>"$work/err" || {
        echo "bench-trace: '$*' failed:"
        cat "$work/err"
        exit 1
    }
    end=$(date +%s%N)
    # wall from the clock in ms (time's %e has 10 ms steps: 5% of a 2-thread run)
    echo "$(( (end - start) / 1000000 )) $(cat "$work/time")" |
        awk '{printf "%.3f %s\n", $1 / 1000, $2}' >>"$work/$name"
}

# paired NAME CMD...: an untraced run and CMD, back to back; appends CMD's
# time over the untraced run's to $work/NAME.ratio. The order alternates
# from run to run: here the second of two 2-thread runs is often the faster
# (second over first 0.976x, median of 31 pairs of the same untraced run),
# which always putting the untraced run first credits to the tracer.
paired() {
    pair=$1 # not $name: measure sets that (sh has no locals)
    shift
    if [ $((run % 2)) -eq 1 ]; then
        measure "plain$threads" "$churn" "$n" "$threads"
        measure "$pair" "$@"
    else
        measure "$pair" "$@"
        measure "plain$threads" "$churn" "$n" "$threads"
    fi
    base=$(tail -n 1 "$work/plain$threads" | cut -d' ' -f1)
    tail -n 1 "$work/$pair" | awk -v b="$base" '{printf "%.4f\n", $1 / (b > 0 ? b : 0.01)}' \
        >>"$work/$pair.ratio"
}

for threads in 1 2; do
    for run in $(seq "$runs"); do
        rm -f "$work"/mk.*
        paired "mk$threads" "$memkit" trace -q -o "$work/mk" -- "$churn" "$n" "$threads"
        stat -c %s "$work"/mk.*.mkt >>"$work/mksize$threads"
        # The summary is computed after the program ends: its time and memory.
        paired "mkrep$threads" "$memkit" report "$work"/mk.*.mkt
        rm -f "$work"/mk.*
        paired "mksum$threads" "$memkit" trace -q --summary-only -o "$work/mk" -- "$churn" "$n" "$threads"
        if [ "$have_ht" -eq 1 ]; then
            rm -f "$work"/ht.*
            paired "ht$threads" heaptrack -o "$work/ht" "$churn" "$n" "$threads"
            stat -c %s "$work"/ht.* >>"$work/htsize$threads"
        fi
    done
done

col() { cut -d' ' -f"$2" "$work/$1" | median; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }

echo "churn: $n iterations, live set 10,000, sizes 8-256; medians of $runs runs;"
echo "a ratio is the median of each run's time over the untraced run beside it"
printf '%-34s %8s %15s %7s %9s %15s %7s\n' "" "1 thread" "[min-max]" "ratio" "2 threads" \
    "[min-max]" "ratio"
pairs() { # pairs NAME: the median paired ratio, 1.00 for the untraced runs
    if [ -f "$work/$1.ratio" ]; then median <"$work/$1.ratio" | awk '{printf "%.2f", $1}'; else echo 1.00; fi
}
row() { # row LABEL NAME
    a=$(col "${2}1" 1)
    b=$(col "${2}2" 1)
    printf '%-34s %7ss %15s %6sx %8ss %15s %6sx\n' "$1" "$a" "[$(cut -d' ' -f1 "$work/${2}1" | spread)]" \
        "$(pairs "${2}1")" "$b" "[$(cut -d' ' -f1 "$work/${2}2" | spread)]" "$(pairs "${2}2")"
}
row "untraced" plain
row "memkit trace (stacks, depth 32)" mk
row "memkit trace --summary-only" mksum
[ "$have_ht" -eq 1 ] && row "heaptrack" ht
row "memkit report (the summary)" mkrep
echo
for t in 1 2; do
    mks=$(median <"$work/mksize$t")
    line="trace size, $t thread(s): memkit $((mks / 1000000)) MB"
    if [ "$have_ht" -eq 1 ]; then
        hts=$(median <"$work/htsize$t")
        line="$line, heaptrack $((hts / 1000000)) MB (memkit/heaptrack $(ratio "$mks" "$hts"))"
    fi
    echo "$line"
    echo "peak RSS, $t thread(s): untraced $(col plain$t 2) KB, traced program $(col mk$t 2) KB," \
         "memkit report $(col mkrep$t 2) KB; overhead $(( ($(col mk$t 2) + $(col mkrep$t 2) - $(col plain$t 2)) / 1024 )) MB"
done
