#!/bin/sh
# outside.sh BUILD [ROUNDS] - bench-real's table for programs outside its
# corpus, the ones docs/PERFORMANCE.md reports to show nothing was tuned to
# the corpus: perl building a 300,000-entry hash (1.2M allocations, most
# live at the end), sqlite3 inserting and indexing 200,000 rows, and jq
# reading a 200,000-object JSON document (2.2M allocations, all live). It
# writes their inputs and a BENCH_REAL_PROGRAMS file, then runs run.sh.
set -u
build=${1:-build}
rounds=${2:-3}
src=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
bench=bench-real-outside
. "$src/bench/real/outside_programs.sh"
outside_programs >"$dir/programs.txt"
BENCH_REAL_PROGRAMS="$dir/programs.txt" sh "$src/bench/real/run.sh" "$build" "$rounds" 1
