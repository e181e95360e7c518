#!/bin/sh
# test_bench.sh MEMKIT - the memkit command's first cut: version, help, bench list
# at a tiny scale (every allocator available runs, JSON has the contract's fields),
# and the errors for unknown workloads, allocators and commands (exit status 2).
set -u
memkit=$1
fail=0
pass=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
expect_status() { # expected-status description command...
    want=$1; what=$2; shift 2
    "$@" >"$tmp/out" 2>"$tmp/err"; got=$?
    if [ "$got" -eq "$want" ]; then ok; else bad "$what: exit $got, want $want"; cat "$tmp/err"; fi
}

expect_status 0 "--version" "$memkit" --version
grep -q '^memkit [0-9]' "$tmp/out" && ok || bad "--version output"
expect_status 0 "help" "$memkit" help
grep -q 'bench' "$tmp/out" && ok || bad "help lists bench"
expect_status 2 "no command" "$memkit"
expect_status 2 "unknown command" "$memkit" frobnicate
grep -q "unknown command 'frobnicate'" "$tmp/err" && ok || bad "unknown command message"

expect_status 0 "bench --list" "$memkit" bench --list
grep -q '^  list ' "$tmp/out" && ok || bad "--list describes list"
expect_status 2 "unknown workload" "$memkit" bench nosuch --quick
grep -q "unknown workload 'nosuch'" "$tmp/err" && ok || bad "unknown workload message"
expect_status 2 "unknown allocator" "$memkit" bench list --quick --allocators glibc,nosuch
grep -q "unknown allocator 'nosuch'" "$tmp/err" && ok || bad "unknown allocator message"
expect_status 2 "bad scale" "$memkit" bench list --scale -5

expect_status 0 "bench list --quick" "$memkit" bench list --quick
for a in glibc mk_stack mk_pool; do
    grep -q "^$a " "$tmp/out" && ok || bad "table has a $a row"
done

expect_status 0 "bench list --quick --json" "$memkit" bench list --quick --json --rounds 2
json="$tmp/out"
for key in '"workload":"list"' '"scale":200000' '"results":\[' '"allocator":"glibc"' \
           '"allocator":"mk_stack"' '"allocator":"mk_pool"' '"alloc_rate":' '"free_rate":' \
           '"peak_rss_bytes":' '"minor_faults":' '"wall_s":'; do
    grep -q "$key" "$json" && ok || bad "JSON has $key"
done
# Every allocator that ran reports positive rates and RSS.
if command -v python3 >/dev/null 2>&1; then
    python3 - "$json" <<'PY' && ok || bad "JSON sanity (python3 check)"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["workload"] == "list" and d["scale"] == 200000
ran = [r for r in d["results"] if r["status"] == "ok"]
assert {"glibc", "mk_stack", "mk_pool"} <= {r["allocator"] for r in ran}, ran
for r in ran:
    assert r["alloc_rate"] > 0 and r["free_rate"] > 0, r
    assert r["peak_rss_bytes"] > 0 and r["wall_s"] > 0, r
    assert r["alloc_rate_min"] <= r["alloc_rate"] <= r["alloc_rate_max"], r
for r in d["results"]:
    assert r["status"] in ("ok", "skipped", "n/a"), r
    if r["status"] != "ok":
        assert r["reason"], r
PY
else
    echo "JSON sanity: skipped (python3 not installed)"
fi

# realtime: single-call latencies, first-vs-steady, and glibc with the tuned settings.
expect_status 0 "bench realtime --quick --json" "$memkit" bench realtime --quick --json --rounds 4
if command -v python3 >/dev/null 2>&1; then
    python3 - "$tmp/out" <<'PY' && ok || bad "realtime JSON (python3 check)"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["workload"] == "realtime" and d["rounds"] == 4, d
by = {r["allocator"]: r for r in d["results"]}
# In a sanitizer build malloc is the sanitizer's: glibc-tuned is skipped (with
# its reason) and glibc's trimming is not there to see.
tuned = by["glibc-tuned"]["status"] == "ok"
if not tuned:
    assert by["glibc-tuned"]["status"] == "skipped" and "sanitizer" in by["glibc-tuned"]["reason"], by
for name in ("glibc", "glibc-tuned") if tuned else ("glibc",):
    r = by[name]
    assert r["status"] == "ok", r
    assert 0 < r["p50_ns"] <= r["p99_ns"] <= r["p999_ns"] <= r["max_ns"], r
    assert r["first_to_steady"] > 0 and r["alloc_rate"] > 0, r
# every round frees the whole set: glibc trims and faults again, tuned keeps it
if tuned:
    assert by["glibc"]["minor_faults"] > by["glibc-tuned"]["minor_faults"], by
assert by["mk_stack"]["status"] == "n/a" and by["mk_stack"]["reason"], by
PY
fi
expect_status 0 "bench realtime --quick table" "$memkit" bench realtime --quick --rounds 2 --allocators glibc
grep -q "p99 ns" "$tmp/out" && ok || bad "realtime table has latency columns"

# The other workloads: each runs at its tiny scale for every allocator here, with
# sane counts and rates, and n/a (with a reason) where the pattern does not fit.
for w in list-contended mixed fifo-queue producer-consumer; do
    expect_status 0 "bench $w --quick --json" "$memkit" bench "$w" --quick --json --rounds 2
    if command -v python3 >/dev/null 2>&1; then
        python3 - "$tmp/out" "$w" <<'PY' && ok || bad "$w JSON (python3 check)"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["workload"] == sys.argv[2] and d["rounds"] == 2, d
ran = [r for r in d["results"] if r["status"] == "ok"]
assert "glibc" in {r["allocator"] for r in ran}, d
for r in ran:
    assert r["alloc_rate"] > 0 and r["free_rate"] > 0 and r["peak_rss_bytes"] > 0, r
for r in d["results"]:
    assert r["status"] in ("ok", "skipped", "n/a"), r
    if r["status"] != "ok":
        assert r["reason"], r
PY
    fi
done

# malloc-free: one configuration with --size/--threads, reported in the JSON.
expect_status 0 "bench malloc-free one config" "$memkit" bench malloc-free --quick --json \
    --rounds 2 --size 64 --threads 1 --allocators glibc,mk_pool
if command -v python3 >/dev/null 2>&1; then
    python3 - "$tmp/out" <<'PY' && ok || bad "malloc-free JSON (python3 check)"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["workload"] == "malloc-free" and d["size"] == 64 and d["threads"] == 1, d
by = {r["allocator"]: r for r in d["results"]}
assert by["glibc"]["status"] == "ok" and by["mk_pool"]["status"] == "ok", by
assert by["glibc"]["alloc_rate"] > 0 and by["mk_pool"]["alloc_rate"] > 0, by
PY
fi
expect_status 0 "bench malloc-free two threads" "$memkit" bench malloc-free --quick \
    --rounds 1 --size 32 --threads 2 --allocators glibc,mk_pool
grep -q "32 bytes on 2 threads" "$tmp/out" && ok || bad "malloc-free table names its configuration"
grep -q "^mk_pool .*n/a" "$tmp/out" && ok || bad "mk_pool is n/a on two threads"
expect_status 2 "bad --threads" "$memkit" bench malloc-free --quick --threads 0

echo "cli_bench: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
