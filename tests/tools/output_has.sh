#!/bin/sh
# output_has.sh PATTERN... -- CMD ARGS...: runs CMD and passes when it exits 0
# and its output (standard output and error) has a line matching every
# PATTERN (grep -E). ctest's PASS_REGULAR_EXPRESSION alone ignores the exit
# status, and one pattern lets a table with rows missing pass.
set -u
n=0
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do
    n=$((n + 1))
    eval "pattern_$n=\$1"
    shift
done
[ "$#" -gt 1 ] || { echo "usage: output_has.sh PATTERN... -- CMD ARGS..."; exit 2; }
shift
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$@" >"$out" 2>&1
status=$?
cat "$out"
fails=0
[ "$status" -eq 0 ] || { echo "output_has: $1 exited $status"; fails=1; }
i=1
while [ "$i" -le "$n" ]; do
    eval "pattern=\$pattern_$i"
    grep -Eq -- "$pattern" "$out" || { echo "output_has: no line matches '$pattern'"; fails=1; }
    i=$((i + 1))
done
exit "$fails"
