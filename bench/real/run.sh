#!/bin/sh
# run.sh BUILD [ROUNDS] [SCALE] - memkit on real programs nobody here wrote,
# side by side with heaptrack: `make bench-real`.
#
# Programs (the corpus): clang-14 -O2 -c on one of this project's larger C
# files; python3 building and serializing dicts with json; git log --stat on
# this repository; curl downloading from a local python3 http.server; cmake
# configuring a small project; memkit-churn. Each round runs every program
# untraced, under `memkit trace -q`, `memkit trace` (the summary printed),
# `memkit trace -q --summary-only` and heaptrack, one after the other (in the
# reverse order every other round), then `memkit report` and `heaptrack_print`
# on that round's traces. Times are medians over ROUNDS rounds (default 3);
# each ratio is the median of the rounds' own ratios, whose range is printed
# below the table (this machine's speed drifts over minutes: a round's runs
# see the same machine, rounds need not). SCALE (default 1) shrinks the
# inputs: the smoke test runs 0.01 so the script cannot rot.
# BENCH_REAL_PROGRAMS=FILE runs FILE's programs instead, one a line:
# name|directory|command|what to run before each run.
#
# Printed: one table per program: wall time and peak RSS of each way, the
# overheads (traced - untraced) and their ratio to heaptrack's, trace sizes,
# and the allocation calls each tool counted. Needs GNU time, heaptrack,
# clang-14, curl, git, cmake, python3 (make deps installs them).
set -u
build=$(cd "${1:-build}" && pwd)
rounds=${2:-3}
scale=${3:-1}
memkit=$build/memkit
src=$(cd "$(dirname "$0")/../.." && pwd)
bench=bench-real
for tool in /usr/bin/time heaptrack heaptrack_print; do
    command -v "$tool" >/dev/null 2>&1 || {
        echo "SKIP: $bench: $tool is missing (make deps installs it)"
        exit 77
    }
done
[ -x "$memkit" ] || { echo "$bench: no $memkit (make build)"; exit 2; }

# The corpus's tools, the scratch directory, the inputs, the local server and
# corpus().
. "$src/bench/real/corpus.sh"
# A debug-file cache of its own, empty at the start: the first round inflates
# compressed debug files (libc6-dbg where installed), later rounds map the
# entries, as a user's later runs do; medians show the later runs.
export MEMKIT_CACHE_DIR="$work/cache"

# timed NAME WAY CMD...: wall seconds and peak RSS (KB) of CMD into
# $work/res (one line: program way wall rss).
timed() {
    name=$1 way=$2
    shift 2
    /usr/bin/time -f "%e %M" -o "$work/time" "$@" >/dev/null 2>"$work/err"
    echo "$name $way $(tail -n 1 "$work/time") $r" >>"$work/res"
}

sum_calls_memkit() { # TRACES...: allocation calls over all processes
    for t in "$@"; do
        "$memkit" report --no-symbols "$t" 2>/dev/null | sed -n 's/^Allocation calls: //p'
    done | awk '{ s += $1 } END { print s + 0 }'
}
sum_calls_heaptrack() {
    for t in "$@"; do
        heaptrack_print -f "$t" -p 0 -a 0 -T 0 -l 0 -n 0 -s 0 2>/dev/null |
            sed -n 's/^calls to allocation functions: \([0-9]*\).*/\1/p'
    done | awk '{ s += $1 } END { print s + 0 }'
}
size_of() { du -cb "$@" 2>/dev/null | tail -n 1 | cut -f1; }

: >"$work/res"
r=1
while [ "$r" -le "$rounds" ]; do
    corpus | while IFS='|' read -r name dir cmd prep; do
        d=$work/tr/$name.$r
        rm -rf "$d"
        mkdir -p "$d"
        cd "$dir" || exit 2
        # shellcheck disable=SC2086 # the command's words
        set -- $cmd
        # The ways in turn, in the reverse order every other round: a drift
        # of the machine's speed over a round then favours no way.
        for way in $(if [ $((r % 2)) = 1 ]; then echo u q t s h; else echo h s t q u; fi); do
            $prep
            case $way in
            u) timed "$name" untraced "$@" ;;
            q) timed "$name" memkit-q "$memkit" trace -q -o "$d/q" -- "$@" ;;
            t) timed "$name" memkit "$memkit" trace -o "$d/m" -- "$@" ;;
            s) timed "$name" summary-only "$memkit" trace -q --summary-only -o "$d/s" -- "$@" ;;
            h) timed "$name" heaptrack heaptrack -o "$d/h" "$@" ;;
            esac
        done
        timed "$name" report "$memkit" report "$d"/q.*.mkt
        ht=$(ls "$d"/h*.zst 2>/dev/null)
        # heaptrack_print of each process's file, as one timed step
        timed "$name" heaptrack_print sh -c 'for f; do heaptrack_print "$f" >/dev/null; done' sh $ht
        if [ "$r" = 1 ]; then
            echo "$name calls $(sum_calls_memkit "$d"/q.*.mkt) $(sum_calls_heaptrack $ht)" >>"$work/res"
            echo "$name size $(size_of "$d"/q.*.mkt) $(size_of $ht)" >>"$work/res"
            echo "$name procs $(ls "$d"/q.*.mkt | wc -l) $(echo $ht | wc -w)" >>"$work/res"
        fi
        cd "$src" || exit 2
    done
    r=$((r + 1))
done

# The table: medians per (program, way); each ratio the median of the
# rounds' own ratios (a round's runs are minutes closer than the rounds).
python3 - "$work/res" "$rounds" "$scale" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
med = {}
extra = {}
by_round = {}
for r in rows:
    if r[1] in ("calls", "size", "procs"):
        extra[(r[0], r[1])] = (int(r[2]), int(r[3]))
        continue
    med.setdefault((r[0], r[1]), []).append((float(r[2]), int(r[3])))
    by_round.setdefault((r[0], int(r[4])), {})[r[1]] = float(r[2])
def ratios(u, q, t, h, rp, hp):
    return ((q - u) / (h - u) if h > u else float("nan"), t / (h + hp), t / q,
            rp / max(hp, 0.5))
def round_ratios(name):
    out = []
    for (n, _), w in sorted(by_round.items()):
        if n == name and len(w) == 7:
            out.append(ratios(w["untraced"], w["memkit-q"], w["memkit"], w["heaptrack"],
                              w["report"], w["heaptrack_print"]))
    return out
names = []
for r in rows:
    if r[0] not in names:
        names.append(r[0])
def m(name, way):
    v = med.get((name, way))
    if not v:
        return float("nan"), 0
    return statistics.median(x[0] for x in v), int(statistics.median(x[1] for x in v))
print("memkit on real programs: medians of %s round(s), scale %s" % (sys.argv[2], sys.argv[3]))
print("%-12s %9s %9s %9s %9s %9s %9s %9s %8s %8s %8s %7s" % (
    "program", "untraced", "trace -q", "trace", "summary", "heaptrk", "report", "ht_print",
    "q/ht oh", "t/ht+p", "t/q", "rep/htp"))
spreads = []
for n in names:
    u = m(n, "untraced")[0]; q = m(n, "memkit-q")[0]; t = m(n, "memkit")[0]
    s = m(n, "summary-only")[0]; h = m(n, "heaptrack")[0]
    rp, rrss = m(n, "report"); hp, hrss = m(n, "heaptrack_print")
    per = round_ratios(n)
    # a round whose heaptrack run was no slower than untraced has no q/ht
    cols = [[x[i] for x in per if x[i] == x[i]] for i in range(4)]
    if all(cols):
        rat = [statistics.median(c) for c in cols]
        spreads.append((n, [(min(c), max(c)) for c in cols]))
    else:
        rat = ratios(u, q, t, h, rp, hp)
    print("%-12s %8.2fs %8.2fs %8.2fs %8.2fs %8.2fs %8.2fs %8.2fs %8.2f %8.2f %8.2f %7.2f" % (
        (n, u, q, t, s, h, rp, hp) + tuple(rat)))
print()
print("%-12s %12s %12s %11s %11s %9s %9s %8s %8s" % (
    "program", "calls memkit", "calls htrack", "trace MB", "htrack MB", "rep RSS", "htp RSS",
    "procs", "ht files"))
for n in names:
    c = extra.get((n, "calls"), (0, 0)); z = extra.get((n, "size"), (0, 0))
    p = extra.get((n, "procs"), (0, 0))
    print("%-12s %12d %12d %11.1f %11.1f %8dK %8dK %8d %8d" % (
        n, c[0], c[1], z[0] / 1e6, z[1] / 1e6, m(n, "report")[1], m(n, "heaptrack_print")[1],
        p[0], p[1]))
print()
print("%-12s %17s %17s %17s %17s" % ("ratios' range", "q/ht oh", "t/ht+p", "t/q", "rep/htp"))
for n, sp in spreads:
    print("%-12s %s" % (n, " ".join("%8.2f-%-8.2f" % lo_hi for lo_hi in sp)))
print()
print("q/ht oh: memkit trace -q's overhead over heaptrack's (bar <= 0.5); t/ht+p: memkit")
print("trace over heaptrack + heaptrack_print (bar <= 1); t/q: memkit trace over -q (bar")
print("<= 1.3); rep/htp: memkit report over max(heaptrack_print, 0.5 s) (bar <= 1).")
print("Ratios are medians of the rounds' own ratios (q/ht of the rounds where heaptrack")
print("ran slower than untraced); the ways run in the reverse order every other round.")
PY
