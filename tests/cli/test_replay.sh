#!/bin/sh
# test_replay.sh MEMKIT PATTERNS TURNS SAMPLED COUNTALLOC SCHEMA - memkit replay end to end:
# the calls it replays are the trace's (the report's counts and peak, and
# an independent counting preload, libcountalloc, as the allocator: the
# calls that reach it for two traces differ by exactly what the replays
# say), threads as traced (cross-thread frees after their allocations) and
# on one, every built-in allocator a row, the JSON, and bad input (exit 2,
# one line).
set -u
memkit=$1
patterns=$2
turns=$3
sampled=$4
countalloc=$5
schema=$6
. "$(dirname "$0")/lib.sh"

cd "$tmp" || exit 1
"$memkit" trace -q -o lifo -- "$patterns" lifo >/dev/null 2>&1
"$memkit" trace -q -o fifo -- "$patterns" fifo >/dev/null 2>&1
"$memkit" trace -q -o turns -- "$turns" 7 >/dev/null 2>&1
for t in lifo fifo turns; do
    set -- "$tmp"/$t.*.mkt
    [ -f "$1" ] && ok || { bad "no $t trace"; exit 1; }
    eval "$t=\$1"
done

# the report's counts and peak, replayed exactly
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }
for t in "$lifo" "$fifo" "$turns"; do
    "$memkit" report --format json "$t" >"$tmp/r.json" 2>/dev/null || bad "report of $t"
    expect_status 0 "replay --json $t" "$memkit" replay --json --rounds 1 --allocators glibc "$t"
    cp "$tmp/out" "$tmp/p.json"
    want=$(json "$tmp/r.json" "d['totals']['allocation_calls'] + d['totals']['reallocs'] + d['totals']['frees'] - d['totals']['free_unknown']")
    got=$(json "$tmp/p.json" "d['calls']")
    [ "$want" = "$got" ] && ok || bad "$t: $got calls replayed, the report counts $want"
    want=$(json "$tmp/r.json" "d['totals']['max_allocated'], d['totals']['peak_live_blocks']")
    got=$(json "$tmp/p.json" "d['peak_live_bytes'], d['peak_live_blocks']")
    [ "$want" = "$got" ] && ok || bad "$t: peak $got replayed, the report's $want"
    got=$(json "$tmp/p.json" "d['allocators'][0]['name'], d['allocators'][0]['status'], d['allocators'][0]['allocator_ns'] > 0, d['fastest']")
    [ "$got" = "glibc ok True glibc" ] && ok || bad "$t: glibc's row: $got"
done

# the heap over time: a pool of 64 blocks of 48 bytes, one replaced at a
# time, holds the same live bytes at every point (or 48 fewer, between a
# free and its allocation), whatever else the program keeps live
"$memkit" trace -q -o pool -- "$patterns" pool >/dev/null 2>&1
expect_status 0 "replay pool" "$memkit" replay --json --rounds 1 --allocators glibc "$tmp"/pool.*.mkt
python3 - "$tmp/out" <<'PY' && ok || bad "the heap over time: $(cat "$tmp/out")"
import json, sys
d = json.load(open(sys.argv[1]))
pts = d["allocators"][0]["rss_over_time"]
assert 8 <= len(pts) <= 64, len(pts)
assert all(a["t_ns"] <= b["t_ns"] for a, b in zip(pts, pts[1:])), pts
assert all(p["live_bytes"] <= d["peak_live_bytes"] for p in pts), pts
mid = sorted({p["live_bytes"] for p in pts[len(pts) // 4: 3 * len(pts) // 4]})
assert len(mid) <= 2 and mid[-1] - mid[0] in (0, 48), mid
PY
rm -f "$tmp"/pool.*.mkt

# an independent count: what reaches the allocator under the replay. The
# child's own calls (start-up, its thread) are the same for both traces, so
# the counts differ by exactly the replayed calls' difference.
counted() {
    rm -f "$tmp/count"
    "$memkit" replay --json --rounds 1 --allocators glibc \
        --allocator "counted=LD_PRELOAD=$countalloc COUNTALLOC_OUT=$tmp/count" "$1" \
        >"$tmp/c.json" 2>"$tmp/err" || bad "replay under countalloc: $(cat "$tmp/err")"
    st=$(json "$tmp/c.json" "' '.join(a['status'] for a in d['allocators'])")
    case $st in
    "ok ok") ;;
    "ok n/a") return ;; # a sanitizer build: nothing can be preloaded (said below)
    *) bad "counted run: $st: $(cat "$tmp/c.json")" ;;
    esac
    sed -n 's/^countalloc: \([0-9]*\) allocation calls, \([0-9]*\) frees$/\1 \2/p' "$tmp/count"
}
set -- $(counted "$lifo") $(counted "$fifo")
ca1=$(json "$tmp/c.json" "d['calls'] - d['frees']")
cf1=$(json "$tmp/c.json" "d['frees']")
"$memkit" replay --json --rounds 1 --allocators glibc "$lifo" >"$tmp/l.json"
ca0=$(json "$tmp/l.json" "d['calls'] - d['frees']")
cf0=$(json "$tmp/l.json" "d['frees']")
if [ $# -eq 0 ] && grep -q '"n/a"' "$tmp/c.json"; then
    echo "SKIP: the independent count (a sanitizer build of memkit preloads no allocator)"
    skipped=1
elif [ $# -eq 4 ]; then
    [ $(($3 - $1)) -eq $((ca1 - ca0)) ] && ok ||
        bad "allocations reaching the allocator: $1 and $3, the replays say $ca0 and $ca1"
    [ $(($4 - $2)) -eq $((cf1 - cf0)) ] && ok ||
        bad "frees reaching the allocator: $2 and $4, the replays say $cf0 and $cf1"
else
    bad "countalloc printed no counts"
fi

# threads: as traced, a free of another thread's block waits for it; on one, none do
expect_status 0 "replay turns" "$memkit" replay --json --rounds 1 --allocators glibc "$turns"
got=$(json "$tmp/out" "d['threads'], d['cross_thread_calls'] > 1000")
[ "$got" = "as-traced True" ] && ok || bad "as-traced replay: $got"
calls=$(json "$tmp/out" "d['calls']")
expect_status 0 "replay --threads 1" "$memkit" replay --json --rounds 1 --threads 1 \
    --allocators glibc "$turns"
got=$(json "$tmp/out" "d['threads'], d['cross_thread_calls'], d['calls']")
[ "$got" = "1 0 $calls" ] && ok || bad "one-thread replay: $got (calls $calls)"

# the table: every built-in allocator a row, measured or missing with its package
expect_status 0 "replay table" "$memkit" replay --rounds 2 "$lifo" "$fifo"
for n in glibc glibc-realtime glibc-lean glibc-throughput jemalloc tcmalloc mimalloc mk_tlsf; do
    has "$tmp/out" "^$n " "the table has a $n row"
done
# lifo's and fifo's calls (16,000 and 20,000) and the dynamic loader's few
has "$tmp/out" "^Replayed 36,0[0-9][0-9] allocator calls of 2 traces" "the table's first line"
has "$tmp/out" "^fastest: " "the verdict"
has "$tmp/out" "lifo_site (patterns.c:[0-9]*)" "the sites by glibc's time"

# the JSON against docs/replay-schema.json, every allocator's row
expect_status 0 "replay --json, every allocator" "$memkit" replay --json --rounds 2 "$lifo" "$turns"
python3 - "$tmp/out" "$schema" <<'PY' && ok || bad "JSON checks"
import json, sys
d = json.load(open(sys.argv[1]))
try:
    import jsonschema
    jsonschema.validate(d, json.load(open(sys.argv[2])))
except ImportError:
    open(sys.argv[1] + ".noschema", "w").close()  # the schema part: skipped, said below
names = [a["name"] for a in d["allocators"]]
assert names == ["glibc", "glibc-realtime", "glibc-lean", "glibc-throughput", "jemalloc",
                 "tcmalloc", "mimalloc", "mk_tlsf"], names
for a in d["allocators"]:
    if a["status"] == "ok":
        r = a["allocator_ns_rounds"]
        assert r["min"] <= a["allocator_ns"] <= r["max"] and a["allocator_ns"] > 0, a
        assert a["p50_ns"] <= a["p99_ns"] <= a["max_ns"] and a["peak_rss"] > 0, a
    else:
        assert a["status"] in ("missing", "n/a") and a["reason"], a
by = {a["name"]: a for a in d["allocators"]}
assert by[d["fastest"]]["status"] == "ok" and by[d["leanest"]]["status"] == "ok", d
assert d["traces"] == sys.argv[1:2] or len(d["traces"]) == 2, d["traces"]
PY
if [ -e "$tmp/out.noschema" ]; then
    echo "SKIP: replay JSON against its schema (python3-jsonschema not installed; make test installs it)"
    skipped=1
fi

# --html: one self-contained page, drawn without errors: a bar per
# allocator that ran in each of its three charts, a line per allocator for
# the heap over time and one for the live bytes
expect_status 0 "replay --html" "$memkit" replay --rounds 1 --top 3 --html "$tmp/r.html" "$lifo"
has "$tmp/out" "^fastest: " "--html still prints the table"
grep -q '<script id="memkit-data" type="application/json">{"schema":"memkit-replay"' \
    "$tmp/r.html" && ok || bad "the page carries its data"
grep -qE '<(script|link)[^>]* (src|href)=' "$tmp/r.html" && bad "the page loads something" || ok
if render_page "$tmp/r.html" "replay's page rendered"; then
    want=$(python3 - "$tmp/r.html" <<'PY'
import json, re, sys
page = open(sys.argv[1]).read()
d = json.loads(re.search(r'id="memkit-data" type="application/json">(.*?)</script>', page, re.S).group(1))
ran = [a for a in d["allocators"] if a["status"] == "ok"]
print(3 * len(ran), len([a for a in ran if len(a["rss_over_time"]) > 1]) + 1)
PY
)
    set -- $want
    n=$(grep -o '<rect class="bar' "$tmp/dom" | wc -l)
    [ "$n" -eq "$1" ] && [ "$n" -ge 3 ] && ok || bad "the page has $n bars, want $1"
    n=$(grep -oE '<path class="(line|live)"' "$tmp/dom" | wc -l)
    [ "$n" -eq "$2" ] && ok || bad "the page has $n lines of the heap over time, want $2"
fi
expect_status 2 "--html into no directory" "$memkit" replay --rounds 1 --html /nonexistent/r.html "$lifo"

# bad input: one line, exit 2
expect_status 2 "no trace" "$memkit" replay
one_line "no trace"
printf 'not a trace\n' >"$tmp/junk"
expect_status 2 "not a trace" "$memkit" replay "$tmp/junk"
one_line "not a trace"
expect_status 2 "missing" "$memkit" replay "$tmp/nonexistent.mkt"
one_line "missing"
"$memkit" trace -q --summary-only -o so -- "$patterns" lifo >/dev/null 2>&1
expect_status 2 "summary-only" "$memkit" replay "$tmp"/so.*.mkt
has "$tmp/err" "summary-only" "summary-only refused, saying why"
one_line "summary-only"
"$memkit" trace -q --sample 4K -o sa -- "$sampled" >/dev/null 2>&1
expect_status 2 "sampled" "$memkit" replay "$tmp"/sa.*.mkt
has "$tmp/err" "sampled trace" "a sampled trace refused, saying why"
one_line "sampled"
expect_status 2 "standard input" "$memkit" replay - <"$lifo"
one_line "standard input"
# a run's prefix: its process's trace
expect_status 0 "a prefix" "$memkit" replay --json --rounds 1 --allocators glibc "$tmp/lifo"
got=$(json "$tmp/out" "d['traces'], d['calls']")
[ "$got" = "['$lifo'] 16000" ] && ok || bad "prefix replayed: $got"
expect_status 2 "unknown allocator" "$memkit" replay --allocators glibc,nosuch "$lifo"
has "$tmp/err" "unknown allocator 'nosuch'" "unknown allocator named"
expect_status 2 "bad --allocator" "$memkit" replay --allocator "x=notanassignment" "$lifo"
expect_status 2 "taken name" "$memkit" replay --allocator "jemalloc=A=1" "$lifo"
expect_status 2 "bad --threads" "$memkit" replay --threads 3 "$lifo"

echo "test_replay: $pass checks passed, $fail failed"
[ "$fail" -eq 0 ] || exit 1
# A part left out for a missing tool makes the whole test a skip, never a pass.
[ -z "${skipped:-}" ] || exit 77
