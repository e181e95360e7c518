#!/bin/sh
# damage.sh MEMKIT PROGS_DIR - damaged traces: cut at many points and with
# bytes overwritten, `memkit report` must print what it can, exit 0 (a clean
# prefix: the process was killed) or 2 (damage, said in one line), and never
# crash.
set -u
memkit=$1
progs=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0

"$memkit" trace -q -o "$work/t" -- "$progs/threads" >/dev/null 2>&1
trace=$(ls "$work"/t.*.mkt | head -1)
size=$(stat -c %s "$trace")
[ "$size" -gt 1000 ] || { echo "FAIL: no trace to damage"; exit 1; }

check() { # check WHAT FILE
    "$memkit" report "$2" >"$work/out" 2>"$work/err"
    rc=$?
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 2 ]; then
        echo "FAIL: $1: exit status $rc"
        cat "$work/err"
        fails=$((fails + 1))
    elif [ "$rc" -eq 2 ] && [ "$(wc -l <"$work/err")" -ne 1 ]; then
        echo "FAIL: $1: expected one line of error, got:"
        cat "$work/err"
        fails=$((fails + 1))
    fi
}

# Cuts: every record boundary region and points in between.
step=$((size / 97 + 1))
at=0
while [ "$at" -lt "$size" ]; do
    head -c "$at" "$trace" >"$work/cut.mkt"
    check "cut at $at of $size" "$work/cut.mkt"
    at=$((at + step))
done
# A cut inside the last record still gives the events before it.
head -c $((size - 10)) "$trace" >"$work/cut.mkt"
"$memkit" report "$work/cut.mkt" >"$work/out" 2>"$work/err"
grep -q "^Mallocs: " "$work/out" || { echo "FAIL: no summary of the prefix"; fails=$((fails + 1)); }
grep -q "is damaged: cut short" "$work/err" || { echo "FAIL: the cut is not reported"; fails=$((fails + 1)); }

# Overwritten bytes at 60 places, 8 bytes each.
i=0
while [ "$i" -lt 60 ]; do
    cp "$trace" "$work/bad.mkt"
    off=$(( (i * 7919 + 13) * (size / 60 + 1) / 7919 % size ))
    printf '\377\000\125\252\001\200\177\376' |
        dd of="$work/bad.mkt" bs=1 seek="$off" conv=notrunc status=none
    check "8 bytes overwritten at $off" "$work/bad.mkt"
    i=$((i + 1))
done
# Inputs the fuzzer found (tests/trace/data/fuzz-*.mkt): in the sanitizer
# build, undefined behaviour fails the run. fuzz-huge-tick.mkt: a tick whose
# time in ns was outside uint64_t; fuzz-pc-all-ones.mkt: a stack frame of all
# ones, whose key in the report's table of addresses wrapped to 0 (an empty
# slot: MK_ASSERT in the Debug and sanitizer builds).
for f in "$(dirname "$0")"/data/fuzz-*.mkt; do
    [ -e "$f" ] || { echo "FAIL: no fuzzer inputs in $(dirname "$0")/data"; fails=$((fails + 1)); }
    check "fuzzer input $(basename "$f")" "$f"
done
[ "$fails" -eq 0 ] && echo "ok: $((size / step + 61)) damaged traces read safely"
[ "$fails" -eq 0 ]
