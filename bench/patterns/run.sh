#!/bin/sh
# run.sh BUILD [RUNS] [QUICK] - `make bench-patterns`: libmemkit's defaults against
# malloc on the shapes of real programs (`memkit bench patterns`).
#
# Runs `memkit bench patterns --json` RUNS times (default 3): each run starts one
# process per (pattern, allocator), so the runs interleave the allocators, and the
# figures are medians over the runs of each run's median round. Prints one table
# per bar (verdict.py): every libmemkit allocator, in its default configuration,
# against glibc and mimalloc in time on each pattern it suits (bar: >= 1.00x both),
# and burst-idle's RSS after the idle period against glibc's (bar: <= 2x). QUICK=1
# runs `--quick` with a 100 ms idle (the smoke test: the script runs, not the bars).
set -u
build=$(cd "${1:-build}" && pwd)
runs=${2:-3}
quick=${3:-0}
memkit=$build/memkit
here=$(cd "$(dirname "$0")" && pwd)
[ -x "$memkit" ] || { echo "bench-patterns: no $memkit (make build)"; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
args=""
[ "$quick" = 1 ] && args="--quick --idle 100"
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
echo "bench-patterns: $runs runs of memkit bench patterns $args on $cpu ($(nproc) cores)"
i=1
while [ "$i" -le "$runs" ]; do
    # shellcheck disable=SC2086 # args is a word list
    "$memkit" bench patterns --json $args >"$out/run$i.jsonl" || {
        echo "bench-patterns: run $i failed"
        exit 1
    }
    i=$((i + 1))
done
python3 "$here/verdict.py" "$out"/run*.jsonl
