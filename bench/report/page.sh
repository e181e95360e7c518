#!/bin/sh
# page.sh BUILD [RUNS] - the report's HTML page at a real program's size:
# `memkit report --format html` of a clang-14 -O2 compile of one of this
# project's files and of the churn loop's 20M events; each page's size, and
# the clang page's load time in headless Chromium (--dump-dom of the page
# against a blank page, RUNS times each, interleaved; default 3): the
# difference of the medians. Bars: clang's page <= 5 MB and loads in <= 1.5 s
# more than a blank page; churn's page <= 2 MB.
set -u
build=${1:-build}
runs=${2:-3}
memkit=$build/memkit
src=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
browser=$(command -v chromium || command -v chromium-browser || true)
for f in "$memkit" "$build/memkit-churn" "$browser" "$(command -v clang-14)"; do
    [ -n "$f" ] && [ -x "$f" ] || { echo "bench-page: missing $f (make build; make deps)"; exit 2; }
done
"$memkit" trace -q -o "$work/clang" -- clang-14 -O2 -c "$src/src/analyze/profile.c" \
    -I"$src/src" -I"$src/include" -o "$work/profile.o" >/dev/null 2>&1 || { echo "trace of clang failed"; exit 1; }
"$memkit" trace -q -o "$work/churn" -- "$build/memkit-churn" 10000000 >/dev/null 2>&1 ||
    { echo "trace of churn failed"; exit 1; }
for t in clang churn; do
    "$memkit" report --format html -o "$work/$t.html" "$work/$t".*.mkt || { echo "report of $t failed"; exit 1; }
done
echo '<html><body>blank</body></html>' >"$work/blank.html"
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
load() { # FILE: seconds to --dump-dom it
    s=$(date +%s.%N)
    timeout 120 "$browser" --headless --no-sandbox --disable-gpu --dump-dom "file://$1" >/dev/null 2>&1
    e=$(date +%s.%N)
    echo "$e - $s" | bc
}
for r in $(seq "$runs"); do
    load "$work/blank.html" >>"$work/blank.t"
    load "$work/clang.html" >>"$work/clang.t"
done
b=$(median <"$work/blank.t")
c=$(median <"$work/clang.t")
echo "clang: $(grep -c '' "$work/clang.t") loads, median $c s, blank page $b s"
printf '%-24s %12s %8s\n' "page" "bytes" "bar"
printf '%-24s %12s %8s\n' "clang" "$(stat -c %s "$work/clang.html")" "5 MB"
printf '%-24s %12s %8s\n' "churn (20M events)" "$(stat -c %s "$work/churn.html")" "2 MB"
echo "clang load over a blank page: $(echo "$c - $b" | bc) s (bar <= 1.5)"
