#!/bin/sh
# countcheck.sh MEMKIT COUNTALLOC_SO - memkit's allocation calls against an
# independent count (progs/countalloc.c, a counting preload written apart
# from memkit) on real programs, multi-threaded ones among them, run once
# under each. Both runs get the same variables, memkit's and the counter's
# (a program's start-up allocations can depend on its environment: perl's
# %ENV costs about five a variable). Threads are made to overlap where the
# program allows it: glibc reuses the stacks of threads that ended, so how
# many thread structures it allocates otherwise depends on timing.
set -u
memkit=$1
counter=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
checked=0
# The variables `memkit trace` sets, as it sets them (a program that copies
# its environment, as perl does into %ENV, allocates for each).
env_of_memkit=$("$memkit" trace -q -o "$work/env" -- env 2>/dev/null |
    grep '^MEMKIT_TRACE_' | grep -v '^MEMKIT_TRACE_PREFIX=')
env_of_memkit="MEMKIT_TRACE_PREFIX=$work/e $env_of_memkit"
case $env_of_memkit in
*MEMKIT_TRACE_RUN=*) ;;
*) echo "FAIL: memkit trace -- env shows no MEMKIT_TRACE_RUN"; exit 1 ;;
esac

# count_both CMD...: want (the counting preload's count) and got (memkit's)
# of one run of CMD under each
count_both() {
    rm -f "$work/count" "$work"/t.*
    # shellcheck disable=SC2086 # the variables' words
    env $env_of_memkit COUNTALLOC_OUT="$work/count" LD_PRELOAD="$counter" "$@" \
        >/dev/null 2>&1
    want=$(sed -n 's/^countalloc: \([0-9]*\) allocation calls.*/\1/p' "$work/count")
    # the same variables in both runs: COUNTALLOC_OUT too
    COUNTALLOC_OUT="$work/count.unused" "$memkit" trace -q -o "$work/t" -- "$@" \
        >/dev/null 2>&1
    got=$("$memkit" report --no-symbols "$work"/t.*.mkt 2>/dev/null |
        sed -n 's/^Allocation calls: //p')
}

# check NAME CMD...: the counts of both tools on CMD. A threaded program's
# count can move with the machine's load (python's 8 threads: 1 call in 10
# runs under two busy loops, under the counting preload alone too), so a
# pair that differs is taken twice more: equal in one of three pairs is
# equal, and each pair is said.
check() {
    name=$1
    shift
    checked=$((checked + 1))
    pairs=
    for try in 1 2 3; do
        count_both "$@"
        if [ -n "$want" ] && [ "$want" = "$got" ]; then
            echo "ok [$name]: $got allocation calls by both${pairs:+ (pairs before: $pairs)}"
            return
        fi
        pairs="$pairs${pairs:+, }${got:-nothing}/${want:-nothing}"
    done
    echo "FAIL [$name]: memkit/the counting preload counted $pairs"
    fails=$((fails + 1))
}

cat >"$work/threads.py" <<'PY'
import json, threading
N = 8
started = threading.Barrier(N)
def work(i):
    started.wait()  # no thread ends before all exist
    for j in range(2000):
        json.dumps({"a": [i, j, str(j) * 50], "b": {"c": j}})
ts = [threading.Thread(target=work, args=(i,)) for i in range(N)]
[t.start() for t in ts]
[t.join() for t in ts]
PY
seq 1 200000 | awk '{ print ($1 * 7919) % 200003 }' >"$work/nums"
skips=
if [ -x /usr/bin/python3 ]; then
    check python-8-threads /usr/bin/python3 "$work/threads.py"
else
    echo "SKIP: no /usr/bin/python3 (make test installs it)"
    skips=1
fi
check sort-parallel sort --parallel=2 -S 1M "$work/nums"
src=$(cd "$(dirname "$0")/../.." && pwd)
if ! command -v git >/dev/null 2>&1; then
    echo "SKIP: git-grep: git is not installed (make test installs it)"
    skips=1
elif [ ! -d "$src/.git" ]; then
    echo "SKIP: git-grep: $src is not a git checkout"
    skips=1
else
    check git-grep git -C "$src" grep -c malloc -- src
fi
if ! command -v perl >/dev/null 2>&1; then
    echo "SKIP: perl-hash: perl is not installed"
    skips=1
else
    # perl copies its environment into %ENV; a fixed hash seed makes its
    # hash's growth, and so its count, the same run after run
    PERL_HASH_SEED=0 PERL_PERTURB_KEYS=0
    export PERL_HASH_SEED PERL_PERTURB_KEYS
    check perl-hash perl -e 'my %h; $h{"key$_"} = [$_, "val$_"] for 1 .. 30000; print scalar(keys %h), "\n"'
fi
echo "countcheck: $checked programs, $fails failures"
[ "$fails" -eq 0 ] || exit 1
[ -z "$skips" ] || exit 77
