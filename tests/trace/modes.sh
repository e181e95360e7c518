#!/bin/sh
# modes.sh PRELOAD MODES_CHECK PROGS_DIR - every combination of the tracer's
# mode variables, set by hand as a user or a script might (memkit trace
# never sets a contradictory pair), on programs with C calls, C++ operators
# and threads. In each, the trace's own summary and its replay must count
# the same (modes_check), and the exact counts must be those of a plain full
# trace of the same program: one mode is decided once, whatever the mix.
set -u
preload=$1
check=$2
progs=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
runs=0
bad=0

fail() {
    echo "FAIL [modes]: $*" >&2
    fails=$((fails + 1))
}

# The lines every mode counts exactly (a sampled run estimates the peak and
# the leaks; its counts by kind are exact).
exact() {
    grep -E '^(Mallocs|Reallocs|Callocs|Strdups|Wcsdups|Frees|News|Deletes|Aligned allocations|Allocation calls):' "$1"
}

# run NAME PROG SUMMARY_ONLY SUMMARY SAMPLE SYSCALLS: the program traced with
# these variables; its counts in $work/NAME.counts.
run() {
    rm -f "$work"/t.*
    env LD_PRELOAD="$preload" MEMKIT_TRACE_PREFIX="$work/t" MEMKIT_TRACE_RUN=modes \
        MEMKIT_TRACE_SUMMARY_ONLY="$3" MEMKIT_TRACE_SUMMARY="$4" MEMKIT_TRACE_SAMPLE="$5" \
        MEMKIT_TRACE_SYSCALLS="$6" MEMKIT_SAMPLE_SEED=7 "$2" >/dev/null 2>"$work/stderr" ||
        { fail "$1: the program failed: $(head -3 "$work/stderr")"; return 1; }
    set -- "$1" "$work"/t.*.mkt
    [ "$#" -eq 2 ] && [ -f "$2" ] || { fail "$1: not one trace: $*"; return 1; }
    "$check" "$2" >"$work/$1.counts" 2>"$work/check" ||
        { fail "$1: $(cat "$work/check")"; return 1; }
    runs=$((runs + 1))
}

# combo PROG NAME SUMMARY_ONLY SUMMARY SAMPLE SYSCALLS: one combination,
# against the program's reference counts.
combo() {
    run "$2" "$progs/$1" "$3" "$4" "$5" "$6" || return
    exact "$work/$2.counts" >"$work/$2.exact"
    # threads: glibc's thread start-up callocs vary with timing; its
    # summary and replay still agree (modes_check).
    [ "$1" = threads ] && return
    ref=$work/$1-ref.exact
    # A sampled run counts every free call; a replay counts the frees of
    # blocks it saw allocated: cxx's bad_alloc object is allocated inside
    # operator new, unseen, and freed outside it. The rest is exact in
    # every mode.
    if [ -n "$5" ] && [ "$1" = cxx ]; then
        frees_ref=$(sed -n 's/^Frees: //p' "$ref")
        frees=$(sed -n 's/^Frees: //p' "$work/$2.exact")
        [ "$frees" -ge "$frees_ref" ] || fail "$2: Frees $frees below a full trace's $frees_ref"
        sed -i '/^Frees: /d' "$work/$2.exact"
        grep -v '^Frees: ' "$ref" >"$work/$1-ref.nofrees"
        ref=$work/$1-ref.nofrees
    fi
    cmp -s "$ref" "$work/$2.exact" ||
        fail "$2: counts differ from a full trace's:
$(diff "$ref" "$work/$2.exact")"
}

for prog in basic cxx threads; do
    run "$prog-ref" "$progs/$prog" 0 0 "" 0 || continue
    exact "$work/$prog-ref.counts" >"$work/$prog-ref.exact"
    [ -s "$work/$prog-ref.exact" ] || fail "$prog: no counts in the reference trace"
    for only in 0 1; do
        for too in 0 1; do
            for sample in "" 4096; do
                for sys in 0 1; do
                    before=$fails
                    combo "$prog" "$prog-o$only-s$too-r${sample:-0}-y$sys" \
                        "$only" "$too" "$sample" "$sys"
                    [ "$fails" -eq "$before" ] || bad=$((bad + 1))
                done
            done
        done
    done
done
echo "modes: $runs traced runs, 48 combinations checked"
echo "$((48 - bad)) passed, $bad failed"
[ "$fails" -eq 0 ]
