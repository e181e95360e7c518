#!/bin/sh
# run.sh BUILD [ITERATIONS] [RUNS] - the tracer's cost, side by side in one
# run: the churn workload (each iteration frees a random one of 10,000 live
# blocks and mallocs 8-256 bytes in its place) untraced, under `memkit
# trace` (full, and --summary-only) and under heaptrack, with 1 and 2
# threads. Prints medians of RUNS runs (default 3) and the ratios the
# tracer's bars are about. Needs GNU time (/usr/bin/time) and heaptrack.
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

# measure NAME CMD...: appends "wall rss_kb" to $work/NAME, one line per run.
measure() {
    name=$1
    shift
    /usr/bin/time -f "%e %M" -o "$work/time" "$@" >/dev/null 2>"$work/err" || {
        echo "bench-trace: '$*' failed:"
        cat "$work/err"
        exit 1
    }
    cat "$work/time" >>"$work/$name"
}

for threads in 1 2; do
    for run in $(seq "$runs"); do
        measure "plain$threads" "$churn" "$n" "$threads"
        rm -f "$work"/mk.*
        measure "mk$threads" "$memkit" trace -q -o "$work/mk" -- "$churn" "$n" "$threads"
        stat -c %s "$work"/mk.*.mkt >>"$work/mksize$threads"
        # The summary is computed after the program ends: its time and memory.
        measure "mkrep$threads" "$memkit" report "$work"/mk.*.mkt
        rm -f "$work"/mk.*
        measure "mksum$threads" "$memkit" trace -q --summary-only -o "$work/mk" -- "$churn" "$n" "$threads"
        if [ "$have_ht" -eq 1 ]; then
            rm -f "$work"/ht.*
            measure "ht$threads" heaptrack -o "$work/ht" "$churn" "$n" "$threads"
            stat -c %s "$work"/ht.* >>"$work/htsize$threads"
        fi
    done
done

col() { cut -d' ' -f"$2" "$work/$1" | median; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }

echo "churn: $n iterations, live set 10,000, sizes 8-256; medians of $runs runs"
printf '%-34s %8s %12s %7s %8s %12s %7s\n' "" "1 thread" "[min-max]" "ratio" "2 threads" \
    "[min-max]" "ratio"
row() { # row LABEL NAME
    a=$(col "${2}1" 1)
    b=$(col "${2}2" 1)
    printf '%-34s %7ss %12s %6sx %7ss %12s %6sx\n' "$1" "$a" "[$(cut -d' ' -f1 "$work/${2}1" | spread)]" \
        "$(ratio "$a" "$(col plain1 1)")" "$b" "[$(cut -d' ' -f1 "$work/${2}2" | spread)]" \
        "$(ratio "$b" "$(col plain2 1)")"
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
