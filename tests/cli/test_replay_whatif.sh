#!/bin/sh
# test_replay_whatif.sh MEMKIT PATTERNS TURNS TRANSFER SCHEMA - memkit replay
# --what-if end to end: for each kind of finding a fix can replay, the heap
# calls the fix takes are exactly its stacks' allocations and frees (the
# report's counts), and a fix that takes every call saves exactly those
# stacks' traced time; the findings together compose (a pair's second
# block inside its first, served by the first's other fix); threads (a
# block freed by another thread stays with its owner's fix); the JSON
# against its schema; bad input (exit 2, one line).
set -u
memkit=$1
patterns=$2
turns=$3
transfer=$4
schema=$5
. "$(dirname "$0")/lib.sh"

cd "$tmp" || exit 1
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

# Each pattern: the what-if of every finding against the report's counts.
for p in lifo fifo temporary hoist pool merged paired pool_paired; do
    "$memkit" trace -q -o "$p" -- "$patterns" "$p" >/dev/null 2>&1
    set -- "$tmp/$p".*.mkt
    [ -f "$1" ] || { bad "no $p trace"; continue; }
    "$memkit" report --format json "$1" >"$tmp/r.json" 2>/dev/null || bad "report of $p"
    n=$(json "$tmp/r.json" "len(d['findings'])")
    list=$(python3 -c "print(','.join(str(i) for i in range(1, $n + 1)))")
    expect_status 0 "what-if $p" "$memkit" replay --json --rounds 2 --top 0 \
        "--what-if=$list" "$1"
    python3 - "$tmp/r.json" "$tmp/out" "$schema" "$p" <<'PY' && ok || bad "what-if $p"
import json, sys
r, w = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
try:
    import jsonschema
    jsonschema.validate(w, json.load(open(sys.argv[3])))
except ImportError:
    open(sys.argv[2] + ".noschema", "w").close()
sites = {s["stack"]: s for s in r["sites"]}
def ops(stack):  # the heap calls of a stack's blocks: allocations and frees
    return sites[stack]["calls"] + sites[stack]["frees"]
replayable = {"pool", "hoist", "temporary", "lifo", "fifo", "paired"}
assert len(w["what_if"]) == len(r["findings"]), (len(w["what_if"]), len(r["findings"]))
covered, want_all = set(), 0
for i, (f, t) in enumerate(zip(r["findings"], w["what_if"])):
    assert t["finding"] == i + 1 and t["kind"] == f["kind"], (t, f["kind"])
    if f["kind"] not in replayable:
        assert t["status"] == "not replayed" and t["saving_ns"] is None, t
        continue
    assert t["status"] == "ok", t
    assert f["stack_count"] <= 3, f  # every stack named: site and other_sites
    stacks = [f["site"]["stack"]] + [o["stack"] for o in f["other_sites"]]
    if f["kind"] == "paired":  # the second block is gone, the first grows
        stacks = [f["site2"]["stack"]]
    want = sum(ops(s) for s in stacks)
    assert t["calls_removed"] == want, (sys.argv[4], f["kind"], t["calls_removed"], want)
    traced = sum(sites[s]["allocator_ns"] for s in stacks)
    if f["kind"] != "paired":  # every call taken: the stacks' traced time saved
        assert abs(t["saving_ns"] - traced) <= 1e-6 * traced + 1, (t["saving_ns"], traced)
    assert t["fix_ns"] >= 0 and t["peak_bytes_after"] >= 0 and 0 <= t["p_saves"] <= 1, t
    for s in stacks:
        if s not in covered:
            covered.add(s)
            want_all += ops(s)
a = w["what_if_all"]
if sum(t["status"] == "ok" for t in w["what_if"]) > 1:
    assert a["status"] == "ok" and a["finding"] is None and a["kind"] == "all", a
    assert a["calls_removed"] == want_all, (sys.argv[4], a["calls_removed"], want_all)
else:
    assert a is None, a
PY
    rm -f "$tmp/$p".*.mkt
done
if [ -e "$tmp/out.noschema" ]; then
    echo "SKIP: what-if JSON against its schema (python3-jsonschema not installed; make test installs it)"
    skipped=1
fi

# the demo: its three fixes together take every call of both its sites
"$memkit" trace -q -o demo -- "$transfer" before 500 >/dev/null 2>&1
set -- "$tmp"/demo.*.mkt
if [ ! -f "$1" ]; then
    echo "SKIP: the demo's what-if (memkit-transfer is a sanitizer build here: no tracer preloads into it)"
    skipped=1
else
    "$memkit" report --format json "$1" >"$tmp/r.json" 2>/dev/null
    list=$(json "$tmp/r.json" "','.join(str(i + 1) for i, f in enumerate(d['findings']) if f['kind'] in ('lifo', 'paired'))")
    expect_status 0 "what-if demo" "$memkit" replay --json --rounds 1 --top 0 "--what-if=$list" "$1"
    got=$(json "$tmp/out" "d['what_if_all']['calls_removed']")
    # 500 chunks of 8 headers: each a node and its name, allocated and freed
    [ "$got" = 16000 ] && ok || bad "the demo's lifo and paired fixes take $got calls, not 16000"
    # the text: a row per finding, and the findings together
    expect_status 0 "what-if text" "$memkit" replay --rounds 1 --top 0 "--what-if=$list" "$1"
    has "$tmp/out" "^What-if: each finding's fix" "the what-if's heading"
    has "$tmp/out" "^  all  all " "the findings together"
    has "$tmp/out" "^  [0-9]    paired " "the pair's row"
fi

# memkit report --replay: each replayed finding's measure beside its
# estimate, exactly the replay's; --what-if runs the replay itself (a pool
# and a pair: two findings replayed)
"$memkit" trace -q -o paired -- "$patterns" paired >/dev/null 2>&1
set -- "$tmp"/paired.*.mkt
"$memkit" replay --json --rounds 1 --top 0 --what-if "$1" >"$tmp/w.json" 2>/dev/null
expect_status 0 "report --replay" "$memkit" report --format json --replay "$tmp/w.json" "$1"
python3 - "$tmp/w.json" "$tmp/out" <<'PY' && ok || bad "report --replay: the findings' measures"
import json, sys
w, r = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
tried = {t["finding"]: t for t in w["what_if"] if t["status"] == "ok"}
assert tried
for i, f in enumerate(r["findings"]):
    t = tried.get(i + 1)
    if t is None:
        assert f["replayed"] is None, f
        continue
    m = f["replayed"]
    assert (m["saving_ns"], m["fix_ns"], m["calls_removed"]) == \
        (t["saving_ns"], t["fix_ns"], t["calls_removed"]), (m, t)
    assert m["beyond_noise"] == (t["p_saves"] <= 0.05), (m, t)
PY
expect_status 0 "report --what-if" "$memkit" report --what-if "$1"
has "$tmp/out" "^     replayed with the fix: saves " "the text's measured saving"
expect_status 0 "report --what-if, html" "$memkit" report --what-if --format html -o "$tmp/p.html" "$1"
has "$tmp/p.html" '"replayed":{"saving_ns":' "the page's data carries the measure"
# another trace with as many findings or more: only the kinds and sites tell
"$memkit" trace -q -o other -- "$patterns" hoist >/dev/null 2>&1
expect_status 2 "report --replay, another trace" "$memkit" report --replay "$tmp/w.json" "$tmp"/other.*.mkt
one_line "report --replay, another trace"
has "$tmp/err" "a replay of another trace" "another trace's replay refused"
printf '{"schema": "memkit-replay", "what_if": [' >"$tmp/cut.json"
expect_status 2 "report --replay, cut JSON" "$memkit" report --replay "$tmp/cut.json" "$1"
one_line "report --replay, cut JSON"
"$memkit" report --format json "$1" >"$tmp/rep.json" 2>/dev/null
expect_status 2 "report --replay, a report's JSON" "$memkit" report --replay "$tmp/rep.json" "$1"
has "$tmp/err" "is not memkit replay's JSON" "a report's JSON refused, saying why"
expect_status 2 "report --replay and --what-if" "$memkit" report --replay "$tmp/w.json" --what-if "$1"
rm -f "$tmp"/other.*.mkt

# threads: blocks another thread frees stay with their owner's fix
"$memkit" trace -q -o turns -- "$turns" 7 >/dev/null 2>&1
set -- "$tmp"/turns.*.mkt
expect_status 0 "what-if turns" "$memkit" replay --json --rounds 1 --top 0 --what-if "$1"
python3 - "$tmp/out" <<'PY' && ok || bad "what-if on threads: $(cat "$tmp/out")"
import json, sys
w = json.load(open(sys.argv[1]))
assert w["cross_thread_calls"] > 0
for t in w["what_if"] + ([w["what_if_all"]] if w["what_if_all"] else []):
    assert t["status"] in ("ok", "not replayed"), t
    assert t["status"] != "ok" or t["calls_removed"] <= w["calls"], t
PY

# bad input: one line, exit 2
"$memkit" trace -q -o pool -- "$patterns" pool >/dev/null 2>&1
set -- "$tmp"/pool.*.mkt "$tmp"/paired.*.mkt
for bad_list in 0 99 x 1,x ,; do
    expect_status 2 "--what-if=$bad_list" "$memkit" replay "--what-if=$bad_list" "$1"
    one_line "--what-if=$bad_list"
done
has "$tmp/err" "finding numbers expected" "a bad list named"
expect_status 2 "--what-if, two traces" "$memkit" replay --what-if "$1" "$2"
one_line "--what-if, two traces"
"$memkit" trace -q -o none -- "$patterns" none >/dev/null 2>&1
expect_status 2 "--what-if, no finding" "$memkit" replay --what-if "$tmp"/none.*.mkt
one_line "--what-if, no finding"
has "$tmp/err" "no finding to try" "no finding said"

echo "test_replay_whatif: $pass checks passed, $fail failed"
[ "$fail" -eq 0 ] || exit 1
[ -z "${skipped:-}" ] || exit 77
