#!/bin/sh
# test_bench.sh MEMKIT SCHEMA - the memkit command's version and help, and memkit
# bench: every workload at a tiny scale for every allocator here (sane counts and
# rates, JSON valid against SCHEMA, docs/bench-schema.json), the HTML page, and the
# errors for unknown workloads, allocators and commands (exit status 2).
set -u
memkit=$1
schema=${2:-}
. "$(dirname "$0")/lib.sh"

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
for a in glibc mk_stack mk_pool mk_fifo; do
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
    # bump-ceiling (no allocator) has no free phase: its free rate is 0
    assert r["alloc_rate"] > 0 and (r["free_rate"] > 0) == (r["allocator"] != "bump-ceiling"), r
    assert r["peak_rss_bytes"] > 0 and r["wall_s"] > 0, r
    assert r["alloc_rate_min"] <= r["alloc_rate"] <= r["alloc_rate_max"], r
for r in d["results"]:
    assert r["status"] in ("ok", "skipped", "n/a"), r
    if r["status"] != "ok":
        assert r["reason"], r
PY
else
    echo "SKIP: JSON sanity (python3 not installed; make test installs it)"
    skipped=1
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
else
    echo "SKIP: realtime JSON (python3 not installed; make test installs it)"
    skipped=1
fi
expect_status 0 "bench realtime --quick table" "$memkit" bench realtime --quick --rounds 2 --allocators glibc
grep -q "p99 ns" "$tmp/out" && ok || bad "realtime table has latency columns"

# The other workloads: each runs at its tiny scale for every allocator here, with
# sane counts and rates, and n/a (with a reason) where the pattern does not fit.
for w in list-contended mixed fifo-queue producer-consumer local-array pmr-vector pmr-map \
         cxx-vector cxx-map cxx-string; do
    expect_status 0 "bench $w --quick --json" "$memkit" bench "$w" --quick --json --rounds 2
    if command -v python3 >/dev/null 2>&1; then
        python3 - "$tmp/out" "$w" <<'PY' && ok || bad "$w JSON (python3 check)"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["workload"] == sys.argv[2] and d["rounds"] == 2, d
ran = [r for r in d["results"] if r["status"] == "ok"]
assert "glibc" in {r["allocator"] for r in ran}, d
# libmemkit's allocator for each pattern runs (never a sanitizer skip)
ours = {"list-contended": "mk_ring", "producer-consumer": "mk_ring", "fifo-queue": "mk_fifo",
        "mixed": "mk_tlsf", "local-array": "mk_localbuf", "pmr-vector": "mk_stack",
        "pmr-map": "mk_pool", "cxx-vector": "mk_stack", "cxx-map": "mk_pool",
        "cxx-string": "mk_fifo"}
if sys.argv[2] in ours:
    assert ours[sys.argv[2]] in {r["allocator"] for r in ran}, d
# the containers' ceiling (an allocator that costs nothing) runs where it is offered
if sys.argv[2] in ("cxx-vector", "cxx-map"):
    assert "bump-ceiling" in {r["allocator"] for r in ran}, d
for r in ran:
    assert r["alloc_rate"] > 0 and r["free_rate"] > 0 and r["peak_rss_bytes"] > 0, r
    if sys.argv[2] == "mixed":  # malloc and free timed one by one
        assert 0 < r["p50_ns"] <= r["p99_ns"] <= r["p999_ns"] <= r["max_ns"], r
        assert 0 < r["free_p50_ns"] <= r["free_p99_ns"] <= r["free_p999_ns"] <= r["free_max_ns"], r
        assert ("max_call_steps" in r) == (r["allocator"] == "mk_tlsf"), r
        if r["allocator"] == "mk_tlsf":
            assert 1 <= r["max_call_steps"] <= 10, r
for r in d["results"]:
    assert r["status"] in ("ok", "skipped", "n/a"), r
    if r["status"] != "ok":
        assert r["reason"], r
PY
    else
        echo "SKIP: workload JSON (python3 not installed; make test installs it)"
        skipped=1
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
else
    echo "SKIP: malloc-free JSON (python3 not installed; make test installs it)"
    skipped=1
fi
expect_status 0 "bench malloc-free two threads" "$memkit" bench malloc-free --quick \
    --rounds 1 --size 32 --threads 2 --allocators glibc,mk_pool
grep -q "32 bytes on 2 threads" "$tmp/out" && ok || bad "malloc-free table names its configuration"
grep -q "^mk_pool .*n/a" "$tmp/out" && ok || bad "mk_pool is n/a on two threads"
expect_status 2 "bad --threads" "$memkit" bench malloc-free --quick --threads 0

# Every workload's JSON validates against the documented schema.
expect_status 0 "bench all --quick --json" "$memkit" bench --quick --json --rounds 2 \
    --threads 1 --size 64
cp "$tmp/out" "$tmp/all.jsonl"
[ "$(wc -l <"$tmp/all.jsonl")" -eq 13 ] && ok || bad "one JSON line per workload"
grep -q '"group"' "$tmp/all.jsonl" && bad "a plain bench ran the patterns" || ok

# memkit bench patterns: every shape, each allocator in its default configuration.
expect_status 0 "bench patterns --quick --json" "$memkit" bench patterns --quick --json \
    --rounds 2 --idle 10
[ "$(wc -l <"$tmp/out")" -eq 11 ] && ok || bad "one JSON line per pattern"
python3 - "$tmp/out" <<'PY' && ok || bad "patterns: times, RSS, the right allocators"
import json, sys
want = {"build-free-1k": {"mk_pool", "mk_stack", "mk_tlsf"}, "request-loop": {"mk_fifo", "mk_stack", "mk_tlsf"},
        "burst-idle": {"mk_pool", "mk_fifo", "mk_stack", "mk_tlsf"}, "sawtooth": {"mk_pool", "mk_tlsf"},
        "queue-drift": {"mk_fifo", "mk_tlsf"}, "xthread-queue": {"mk_ring"}, "mixed-tail": {"mk_tlsf"},
        "steady-spikes": {"mk_fifo", "mk_stack", "mk_tlsf"}}
for line in open(sys.argv[1]):
    d = json.loads(line)
    assert d["group"] == "patterns", d
    ran = {r["allocator"] for r in d["results"] if r["status"] == "ok" and r["allocator"].startswith("mk_")}
    if d["workload"] in want:
        assert ran == want[d["workload"]], (d["workload"], ran)
    for r in d["results"]:
        if r["status"] == "ok":
            assert r["time_s"] > 0 and r["time_s_min"] <= r["time_s"] <= r["time_s_max"], r
            assert r["final_rss_bytes"] > 0, r
PY
cat "$tmp/out" >>"$tmp/all.jsonl"
expect_status 0 "bench one pattern, table" "$memkit" bench build-free-10k --quick --rounds 2 \
    --allocators glibc,mimalloc,mk_pool,mk_fifo
grep -q "^allocator .*time ms .*vs glibc .*vs mimalloc .*final RSS" "$tmp/out" && ok ||
    bad "the pattern table's columns"
# (no mimalloc in a sanitizer build: its column is "-" there)
grep -qE "^mk_pool +[0-9.]+ \[[0-9.]+-[0-9.]+\] +[0-9.]+x +([0-9.]+x|-) .*MiB" "$tmp/out" && ok ||
    bad "mk_pool's row against glibc and mimalloc"
grep -q "^(not this pattern's: mk_fifo)" "$tmp/out" && ok || bad "unsuited allocators on one line"
expect_status 0 "bench --list names the patterns" "$memkit" bench --list
grep -q "^  burst-idle " "$tmp/out" && ok || bad "--list shows the patterns"
expect_status 2 "bad --idle" "$memkit" bench burst-idle --quick --idle 0
if [ -z "$schema" ]; then
    echo "SKIP: schema check (no schema path given)"
    skipped=1
elif python3 -c 'import jsonschema' 2>/dev/null; then
    python3 - "$schema" "$tmp/all.jsonl" <<'PY' && ok || bad "JSON against docs/bench-schema.json"
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
v = jsonschema.Draft202012Validator(schema)
lines = open(sys.argv[2]).read().splitlines()
for line in lines:
    for e in v.iter_errors(json.loads(line)):
        sys.exit("%s: %s at %s" % (json.loads(line)["workload"], e.message, list(e.path)))
# The schema itself rejects what it should: a zero rate, a missing reason.
d = json.loads(lines[0])
ok = [r for r in d["results"] if r["status"] == "ok"][0]
ok["alloc_rate"] = 0
assert list(v.iter_errors(d)), "a zero rate passed the schema"
d = json.loads(lines[0])
d["results"].append({"allocator": "glibc", "status": "skipped"})
assert list(v.iter_errors(d)), "a result without a reason passed the schema"
PY
else
    echo "SKIP: schema check (python3-jsonschema not installed; make test installs it)"
    skipped=1
fi

# --html: one self-contained page with every configuration's charts.
expect_status 0 "bench --html" "$memkit" bench list realtime burst-idle --quick --rounds 2 \
    --idle 10 --allocators glibc,mimalloc,mk_stack --html "$tmp/b.html"
grep -q "^memkit bench list:" "$tmp/out" && ok || bad "--html still prints the table"
grep -q '<script id="memkit-data" type="application/json">{"schema":"memkit-bench-page"' \
    "$tmp/b.html" && ok || bad "the page carries its data"
grep -qE '<(script|link)[^>]* (src|href)=' "$tmp/b.html" && bad "the page loads something" || ok
if render_page "$tmp/b.html" "html render"; then
    n=$(grep -o '<section class="config">' "$tmp/dom" | wc -l)
    [ "$n" -eq 3 ] && ok || bad "page has $n configurations, want 3"
    # One bar per allocator that ran in each chart: alloc, free and RSS, and p99
    # where latencies were measured (which allocators ran depends on the build).
    want=$(python3 - "$tmp/b.html" <<'PY'
import json, re, sys
page = open(sys.argv[1]).read()
d = json.loads(re.search(r'id="memkit-data" type="application/json">(.*?)</script>', page, re.S).group(1))
n = 0
for c in d["configs"]:
    ran = [r for r in c["results"] if r["status"] == "ok"]
    if c.get("group"):  # time, peak RSS, final RSS
        n += 3 * len(ran)
        continue
    n += 3 * len(ran) + len([r for r in ran if "p99_ns" in r])
print(n)
PY
)
    n=$(grep -o '<rect class="bar' "$tmp/dom" | wc -l)
    [ "$n" -eq "$want" ] && [ "$n" -ge 10 ] && ok || bad "page has $n bars, want $want"
    grep -q 'n/a: the realtime pattern does not fit mk_stack' "$tmp/dom" && ok ||
        bad "the page shows n/a with its reason"
fi
expect_status 2 "--html to a bad path" "$memkit" bench list --quick --html /nonexistent/dir/b.html
grep -q "cannot write /nonexistent/dir/b.html" "$tmp/err" && ok || bad "bad --html path message"
[ -s "$tmp/out" ] && bad "ran the benchmark before failing on --html" || ok

echo "cli_bench: $pass passed, $fail failed"
[ "$fail" -eq 0 ] || exit 1
# A part left out for a missing tool makes the whole test a skip, never a pass.
[ -z "${skipped:-}" ] || exit 77
