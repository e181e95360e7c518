#!/bin/sh
# damage.sh MEMKIT PROGS_DIR - damaged traces: cut at many points and with
# bytes overwritten, `memkit report` must print what it can, exit 0 (a clean
# prefix: the process was killed) or 2 (damage, said in one line), and never
# crash. What it prints is exactly the report of the intact prefix: the
# records before the damaged one (or, for bytes no reader needs, the
# intact trace's report).
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
    "$memkit" report --cost-ns 100 "$2" >"$work/out" 2>"$work/err"
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

# The records' boundaries (format.h: the magic, then records of a 40-byte
# head, whose third u32 is the stored length, and the stored bytes).
bounds=$(python3 - "$trace" <<'PY'
import struct, sys
d = open(sys.argv[1], "rb").read()
off, out = 8, [8]
while off + 40 <= len(d):
    sync, _, stored = struct.unpack_from("<4sII", d, off)
    assert sync == b"MKR1", (off, sync)
    off += 40 + stored
    out.append(off)
assert off == len(d), (off, len(d))
print(" ".join(map(str, out)))
PY
) || { echo "FAIL: the trace's records do not add up"; exit 1; }

# prefix_of AT: the last record boundary at or before AT (0 within the magic)
prefix_of() {
    k=0
    for b in $bounds; do
        [ "$b" -le "$1" ] && k=$b
    done
    echo "$k"
}

# expected K: the report (stdout) of the trace's first K bytes, intact,
# read from the same path as the damaged copies (the report names it)
expected() {
    if [ ! -e "$work/expect.$1" ]; then
        head -c "$1" "$trace" >"$work/x.mkt"
        "$memkit" report --cost-ns 100 "$work/x.mkt" >"$work/expect.$1" 2>/dev/null
    fi
    echo "$work/expect.$1"
}

# same WHAT AT [ALSO]: the last report printed what the prefix before AT
# holds (or what the prefix ALSO holds)
same() {
    exp=$(expected "$(prefix_of "$2")")
    cmp -s "$exp" "$work/out" && return
    [ -n "${3:-}" ] && cmp -s "$(expected "$3")" "$work/out" && return
    echo "FAIL: $1: the report differs from its intact prefix's ($(prefix_of "$2") bytes):"
    diff "$exp" "$work/out" | head -10
    fails=$((fails + 1))
}

# Cuts: every record boundary region and points in between.
step=$((size / 97 + 1))
at=0
while [ "$at" -lt "$size" ]; do
    head -c "$at" "$trace" >"$work/x.mkt"
    check "cut at $at of $size" "$work/x.mkt"
    same "cut at $at of $size" "$at"
    at=$((at + step))
done
# A cut at, and just inside, every record.
for b in $bounds; do
    for at in "$b" $((b + 1)) $((b + 39)) $((b + 41)); do
        [ "$at" -lt "$size" ] || continue
        head -c "$at" "$trace" >"$work/x.mkt"
        check "cut at $at of $size" "$work/x.mkt"
        same "cut at $at of $size" "$at"
    done
done
# A cut inside the last record still gives the events before it.
head -c $((size - 10)) "$trace" >"$work/x.mkt"
"$memkit" report "$work/x.mkt" >"$work/out" 2>"$work/err"
grep -q "^Mallocs: " "$work/out" || { echo "FAIL: no summary of the prefix"; fails=$((fails + 1)); }
grep -q "is damaged: cut short" "$work/err" || { echo "FAIL: the cut is not reported"; fails=$((fails + 1)); }

# Each record's head, field by field (thread, anchor ns, anchor tick: an
# EVENTS record's copies of its own head, which the merge orders and
# calibrates by): the prefix before the record, or the whole trace where
# the field is not read.
for b in $bounds; do
    for field in 16 24 32; do
        [ $((b + field + 4)) -le "$size" ] || continue
        cp "$trace" "$work/x.mkt"
        printf '\125\252\001\200' |
            dd of="$work/x.mkt" bs=1 seek=$((b + field)) conv=notrunc status=none
        check "the head of the record at $b, byte $field" "$work/x.mkt"
        same "the head of the record at $b, byte $field" "$b" "$size"
    done
    # the anchor tick's top byte: taken on trust, a tick far past the end
    # would set the clock's slope, and every time in the report with it
    [ $((b + 40)) -le "$size" ] || continue
    cp "$trace" "$work/x.mkt"
    printf '\177' | dd of="$work/x.mkt" bs=1 seek=$((b + 39)) conv=notrunc status=none
    check "the anchor tick of the record at $b" "$work/x.mkt"
    same "the anchor tick of the record at $b" "$b" "$size"
done

# Overwritten bytes at 60 places, 8 bytes each: the report is the prefix's
# before the record they fall in, or the whole trace's where no reader needs
# those bytes (a head's copy of fields the record itself holds).
i=0
while [ "$i" -lt 60 ]; do
    cp "$trace" "$work/x.mkt"
    off=$(( (i * 7919 + 13) * (size / 60 + 1) / 7919 % size ))
    printf '\377\000\125\252\001\200\177\376' |
        dd of="$work/x.mkt" bs=1 seek="$off" conv=notrunc status=none
    check "8 bytes overwritten at $off" "$work/x.mkt"
    same "8 bytes overwritten at $off" "$off" "$size"
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
[ "$fails" -eq 0 ] && echo "ok: damaged traces read safely, each as its intact prefix"
[ "$fails" -eq 0 ]
