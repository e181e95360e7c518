#!/bin/sh
# run.sh MEMKIT TRACE_PROGS REPORT_PROGS DATA TEST - end-to-end tests of
# memkit report, diff and check: traces of programs with known patterns,
# curl memdebug logs with memanalyze.pl's own output, and bad input.
set -u
memkit=$1
tprogs=$2
rprogs=$3
data=$4
test=$5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0

fail() {
    echo "FAIL [$test]: $*" >&2
    fails=$((fails + 1))
}

# trace NAME CMD...: a trace of CMD in $work/NAME.mkt
trace() {
    name=$1
    shift
    "$memkit" trace -q -o "$work/$name" -- "$@" >"$work/$name.out" 2>&1 ||
        fail "memkit trace $* failed: $(cat "$work/$name.out")"
    mv "$work/$name".*.mkt "$work/$name.mkt" 2>/dev/null || fail "no trace for $*"
}

# status CMD...: runs CMD, output in $work/out, exit status in $status
status() {
    "$@" >"$work/out" 2>&1
    status=$?
}

expect_status() {
    [ "$status" -eq "$1" ] || fail "exit status $status, expected $1: $(head -5 "$work/out")"
}

expect_line() {
    grep -qxF -- "$1" "$work/out" || fail "expected the line '$1'"
}

expect_re() {
    grep -qE -- "$1" "$work/out" || fail "expected a line matching '$1'"
}

# library_source FILE: a library for tests/trace/progs/dlopen whose
# allocating helper() has a name, a line and a caller (dllib_allocate).
library_source() {
    cat >"$1" <<'EOF'
#include <stdlib.h>
#include <string.h>
static __attribute__((noinline)) void helper(int n)
{
    for (int i = 0; i < n; i++)
        free(strdup("from the library"));
}
void dllib_allocate(int n) { helper(n); }
EOF
}

# findings KIND FUNCTION COUNT: the pattern program's run for KIND has a
# finding of that kind at FUNCTION with that count, and no finding of
# another lifetime kind at that site; `none` has no finding at all.
findings() {
    kind=$1 function=$2 count=$3
    trace "p_$kind" "$rprogs/patterns" "$kind"
    "$memkit" report --format json "$work/p_$kind.mkt" >"$work/p_$kind.json" ||
        fail "report --format json failed"
    python3 - "$work/p_$kind.json" "$kind" "$function" "$count" <<'PY' || fail "findings of $kind"
import json, sys
path, kind, function, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
r = json.load(open(path))
assert r["schema"] == "memkit-report" and r["version"] == 1
for k in ("mallocs", "reallocs", "callocs", "strdups", "wcsdups", "frees", "allocations",
          "max_allocated", "total_allocated", "allocation_calls", "news", "deletes",
          "peak_live_blocks", "leaked_bytes", "temporaries"):
    assert k in r["totals"], "totals lacks " + k
for f in r["findings"]:
    for k in ("kind", "site", "count", "estimated_saving_ns"):
        assert k in f, "finding lacks " + k
if kind == "none":
    assert not r["findings"], "control has findings: %s" % [f["kind"] for f in r["findings"]]
    sys.exit(0)
def fn(f):
    return f["site"]["frames"][0]["function"] if f["site"]["frames"] else None
mine = [f for f in r["findings"] if fn(f) == function]
kinds = sorted(f["kind"] for f in mine)
hit = [f for f in mine if f["kind"] == kind]
assert hit, "no %s finding at %s (there: %s; all: %s)" % (
    kind, function, kinds, [(f["kind"], fn(f)) for f in r["findings"]])
assert hit[0]["count"] == count, "%s count %d, expected %d" % (kind, hit[0]["count"], count)
assert hit[0]["estimated_saving_ns"] > 0
lifetime = {"hoist", "temporary", "lifo", "fifo", "cross_thread", "pool", "tiny"}
if kind in lifetime:
    others = [k for k in kinds if k in lifetime and k != kind]
    assert not others, "%s also has %s" % (function, others)
PY
}

memanalyze_section() { # FILE TITLE: the lines under "##### TITLE", Perl's warning dropped
    awk -v t="##### $2" '$0 == t {on = 1; next} /^#####/ {on = 0} on' "$1" | grep -v "^Use of uninitialized"
}

case $test in
lifo) findings lifo lifo_site 8000 ;;
fifo) findings fifo fifo_site 10000 ;;
temporary) findings temporary temporary_site 1000 ;;
hoist) findings hoist hoist_site 1000 ;;
pool) findings pool pool_site 4000 ;;
*_threshold)
    # A finding at its boundary, with patterns just at it and just past it.
    # Each case is PATTERN:KIND:COUNT:REMOVABLE, the finding the site must
    # have (KIND none: no finding of the test's kind there, nor another
    # about how its blocks live); its saving is exactly REMOVABLE at the
    # malloc+free cost given. The boundaries: half of a site's blocks freed
    # (pool), freed before the next allocation (temporary), under 32 bytes
    # (tiny), freed by another thread (cross_thread); 90% of the judged frees
    # of the youngest (lifo) or oldest (fifo) live block; 80% of the frees
    # judged (window: in the newest 256 live); one block alive at a time,
    # of one size (hoist); 80% of the rarer site's calls allocated and freed
    # together (paired); half of the grows of a block grown before
    # (realloc_chain); and 100 calls (floor: opts.min_count).
    case $test in
    pool_*) kind=pool site=pool_share_site
        cases="pool_half:pool:500:500 pool_under:none pool_fifth:none" ;;
    temporary_*) kind=temporary site=temp_share_site
        cases="temp_half:temporary:500:500 temp_under:none" ;;
    tiny_*) kind=tiny site=tiny_share_site cases="tiny_half:tiny:500:500 tiny_under:none" ;;
    cross_thread_*) kind=cross_thread site=cross_share_site
        cases="cross_half:cross_thread:500:500 cross_under:none" ;;
    lifo_*) kind=lifo site=order_share_site cases="lifo_at:lifo:9000:9000 lifo_under:none" ;;
    fifo_*) kind=fifo site=order_share_site cases="fifo_at:fifo:9000:9000 fifo_under:none" ;;
    window_*) kind=lifo site=window_share_site
        cases="window_at:lifo:1256:1256 window_under:none" ;;
    hoist_*) kind=hoist site=hoist_share_site
        cases="hoist_at:hoist:1000:999 hoist_two:lifo:1001:1001 hoist_sizes:none" ;;
    paired_*) kind=paired site=pair_node_site cases="paired_at:paired:800:800 paired_under:none" ;;
    realloc_chain_*) kind=realloc_chain site=realloc_share_site
        cases="realloc_at:realloc_chain:2000:1000 realloc_under:none" ;;
    floor_*) kind=pool site=floor_site cases="floor_at:pool:100:100 floor_under:none" ;;
    *) fail "no cases for $test"; cases= ;;
    esac
    for case in $cases; do
        pattern=${case%%:*} # (trace sets $name)
        trace "p_$pattern" "$rprogs/patterns" "$pattern"
        "$memkit" report --format json --cost-ns 100 "$work/p_$pattern.mkt" \
            >"$work/p_$pattern.json" || fail "report of $pattern failed"
        python3 - "$work/p_$pattern.json" "$case" "$kind" "$site" <<'PY' ||
import json, sys
r = json.load(open(sys.argv[1]))
case, kind, site = sys.argv[2].split(":"), sys.argv[3], sys.argv[4]
def fn(s):
    return s["frames"][0]["function"] if s["frames"] else None
lifetime = {"hoist", "temporary", "lifo", "fifo", "cross_thread", "pool", "tiny"}
here = [f for f in r["findings"] if fn(f["site"]) == site]
kinds = [(f["kind"], f["count"]) for f in here]
if case[1] == "none":
    bad = [f for f in here if f["kind"] == kind or (kind in lifetime and f["kind"] in lifetime)]
    assert not bad, "%s: expected no %s finding at %s: %s" % (case[0], kind, site, kinds)
    sys.exit(0)
want, count, removable = case[1], int(case[2]), int(case[3])
mine = [f for f in here if f["kind"] == want]
assert len(mine) == 1, "%s: expected one %s finding at %s: %s" % (case[0], want, site, kinds)
f = mine[0]
assert (f["count"], f["removable"]) == (count, removable), (case[0], f["count"], f["removable"])
assert f["estimated_saving_ns"] == removable * 100, (case[0], f["estimated_saving_ns"])
assert f["saving_from"] == "price", (case[0], f["saving_from"])
if want in lifetime:
    others = [k for k, _ in kinds if k in lifetime and k != want]
    assert not others, "%s: %s also has %s" % (case[0], site, others)
if want == "paired":
    assert fn(f["site2"]) == "pair_payload_site", f["site2"]
PY
            fail "$kind finding of $pattern"
    done
    ;;
ranked)
    # Findings ranked by the time they save, measured: 100 temporaries of
    # 64 MiB (mapped and unmapped every time) before 1000 of a fast path;
    # and a pair saves the cheaper of its two sites' time per call.
    trace p "$rprogs/patterns" ranked
    "$memkit" report --format json -o "$work/p.json" "$work/p.mkt" || fail "report failed"
    python3 - "$work/p.json" <<'PY' || fail "findings by measured saving"
import json, sys
r = json.load(open(sys.argv[1]))
def fn(s):
    return s["frames"][0]["function"] if s["frames"] else None
fs = [(f["kind"], fn(f["site"])) for f in r["findings"]]
costly, cheap = fs.index(("temporary", "few_costly_site")), fs.index(("temporary", "many_cheap_site"))
assert costly < cheap, "by saving: %s" % fs
per = {}
for s in r["sites"]:
    per[s["stack"]] = s["allocator_ns"] / s["calls"]
for f in r["findings"]:
    per_call = per[f["site"]["stack"]]
    if f["kind"] == "paired":
        per_call = min(per_call, per[f["site2"]["stack"]])
    # a site whose few timed fast calls all read under an empty reading's
    # cost is priced, and says so; the mapped blocks' never are
    if per_call > 0:
        assert f["saving_from"] == "measured", f
        want = f["removable"] * per_call
    else:
        assert f["saving_from"] == "price" and fn(f["site"]) != "few_costly_site", f
        want = f["removable"] * r["malloc_free_ns"]
    assert abs(f["estimated_saving_ns"] - want) <= 1e-5 * want, (f["kind"], f["estimated_saving_ns"], want)
savings = [f["estimated_saving_ns"] for f in r["findings"]]
assert savings == sorted(savings, reverse=True), savings
# the answer: the allocator's measured time over the run's CPU, its verdict
# (under 1%, 5%, 20%: not worth a change, a small gain, worth a look; else
# worth a change), where by calling function, the top finding first
a, t = r["answer"], r["totals"]
assert a["measured"] and a["allocator_ns"] == t["allocator_ns"], (a, t["allocator_ns"])
share = a["allocator_ns"] / a["cpu_ns"]
assert abs(a["share"] - share) <= 1e-5 * share, (a["share"], share)
want = ("not worth a change (under 1% of the run)" if share < 0.01 else
        "a small gain at most" if share < 0.05 else
        "worth a look" if share < 0.2 else "worth a change")
assert a["verdict"] == want, (a["verdict"], share)
assert a["where_by"] == "allocator_time", a
assert [w["name"] for w in a["where"]] == [c["function"] for c in r["callers"][:3]], (a["where"], r["callers"][:3])
assert a["first_fix"] == 0, a
PY
    # The text report opens with that answer, in three lines.
    status "$memkit" report "$work/p.mkt"
    expect_status 0
    head -1 "$work/out" | grep -qE "^Answer: the allocator took [0-9.]+ (us|ms|s) of [0-9.]+ (us|ms|s) CPU \([0-9.]+%\): (not worth a change|a small gain at most|worth a look|worth a change)" ||
        fail "line 1: $(head -1 "$work/out")"
    # (by calling function, as the JSON's callers: the mapped blocks' time is
    # their mallocs' at few_costly_site and their frees' at ranked)
    sed -n 2p "$work/out" | grep -qE "^Where: .*few_costly_site [0-9]+%.* of the allocator's time$" ||
        fail "line 2: $(sed -n 2p "$work/out")"
    sed -n 3p "$work/out" | grep -qE "^First fix: temporary at few_costly_site at patterns.c:[0-9]+ \(patterns\): use a local buffer .*\(saves ~[0-9.]+ (us|ms|s), [0-9]+% of the allocator's time\)$" ||
        fail "line 3: $(sed -n 3p "$work/out")"
    # Without times the answer is a price, and says so.
    "$memkit" trace -q --no-times -o "$work/n" -- "$rprogs/patterns" ranked >/dev/null 2>&1
    status "$memkit" report --cost-ns 50 "$work"/n.*.mkt
    head -1 "$work/out" | grep -qE "^Answer: the allocator costs about 55.0 us \(1,100 calls at a malloc\+free price of 50 ns: not measured\)" ||
        fail "priced: $(head -1 "$work/out")"
    # (the allocating functions by calls: 1000 and 100 of 1,100)
    sed -n 2p "$work/out" | grep -qxF "Where: many_cheap_site 91%, few_costly_site 9% of the allocation calls" ||
        fail "priced where: $(sed -n 2p "$work/out" | od -c | head -2)"
    ;;
tiny) findings tiny tiny_site 2000 ;;
cross_thread) findings cross_thread cross_thread_site 2000 ;;
paired) findings paired paired_node 2000 ;;
realloc_chain) findings realloc_chain realloc_chain_site 9000 ;;
none) findings none - 0 ;;

text)
    trace p "$rprogs/patterns" lifo
    status "$memkit" report "$work/p.mkt"
    expect_status 0
    expect_line "Mallocs: 8000"
    expect_line "Frees: 8000"
    # a trace with times: sites by the allocator's time, a time column
    expect_re "^Sites by allocator time \(top [0-9]+ of [0-9]+\)$"
    expect_re "^ +calls +bytes +at peak +leaked +median life +med size +time  site$"
    expect_re "^ +8,000 .* [0-9.]+ (ns|us|ms|s)  lifo_site \(patterns.c:[0-9]+\)$"
    status "$memkit" report --sort calls "$work/p.mkt"
    expect_status 0
    expect_re "^Sites by allocations \(top [0-9]+ of [0-9]+\)$"
    status "$memkit" report --sort peak "$work/p.mkt"
    expect_re "^Sites by bytes at peak \(top [0-9]+ of [0-9]+\)$"
    status "$memkit" report --sort size "$work/p.mkt"
    expect_status 2
    expect_re "^memkit: report: --sort"
    status "$memkit" report "$work/p.mkt"
    expect_re "^Findings \(1; savings: the allocator's time measured at each site\)$"
    expect_re "^  1\. lifo: 8,000 allocations, saves ~.*: lifo_site at patterns.c:[0-9]+ \(patterns\)$"
    expect_re "fix: allocate from an mk_stack frame"
    # measured savings: the removed calls' share of the site's measured time;
    # a site whose timed calls all read under an empty reading's cost (a few
    # dozen fast calls on a loaded machine) is priced instead, and says so
    status "$memkit" report --format json -o "$work/p.json" "$work/p.mkt"
    python3 - "$work/p.json" <<'PY' || fail "measured saving"
import json, sys
d = json.load(open(sys.argv[1]))
f = d["findings"][0]
site = next(s for s in d["sites"] if s["stack"] == f["site"]["stack"])
assert f["allocator_ns"] == site["allocator_ns"], (f, site)
assert 100 < d["input"]["time_resolution_ns"] < 100000, d["input"]["time_resolution_ns"]
if site["allocator_ns"] > 0:
    assert f["saving_from"] == "measured", f
    want = f["removable"] * site["allocator_ns"] / site["calls"]
else:
    assert f["saving_from"] == "price", f
    want = f["removable"] * d["malloc_free_ns"]
assert abs(f["estimated_saving_ns"] - want) <= 1e-5 * want, (f["estimated_saving_ns"], want)
PY
    # the share is the allocator's time over the run's CPU, alike in JSON
    # and text
    status "$memkit" report "$work/p.mkt"
    python3 - "$work/p.json" "$work/out" <<'PY' || fail "the allocator's share"
import json, re, sys
t = json.load(open(sys.argv[1]))["totals"]
assert t["cpu_ns"] > 0 and t["allocator_ns"] is not None, t
share = t["allocator_ns"] / t["cpu_ns"]
assert abs(t["allocator_share"] - share) <= 1e-5 * share, (t["allocator_share"], share)  # 6 digits
m = re.search(r"^Allocator time: .* CPU \(([0-9.]+)%\)", open(sys.argv[2]).read(), re.M)
assert m and abs(float(m.group(1)) - 100 * share) <= 0.051, (m and m.group(1), share)
PY
    # Blocks freed at once live less than a tick of the trace's clock: the
    # median life says so ("<1.6 us"), not "0 ns".
    trace tmp "$rprogs/patterns" temporary
    status "$memkit" report "$work/tmp.mkt"
    expect_re "^ +1,000 .* <[0-9.]+ us .*  temporary_site \(patterns.c:[0-9]+\)$"
    grep -E "^ +1,000 .* 0 ns .*  temporary_site" "$work/out" && fail "a median life of 0 ns"
    # a price where one is asked for
    status "$memkit" report --cost-ns 50 "$work/p.mkt"
    expect_re "^Findings \(1; malloc\+free costs 50(\.0)? ns on this machine\)$"
    expect_re "^  1\. lifo: 8,000 allocations, saves ~400(\.0)? us: lifo_site"
    status "$memkit" report "$work/p.mkt"
    grep -q "$(printf '\033')" "$work/out" && fail "colour in output that is not a terminal"
    status "$memkit" report --color "$work/p.mkt"
    grep -q "$(printf '\033')\[1m" "$work/out" || fail "--color gave no colour"
    ;;
collapsed)
    trace p "$rprogs/patterns" fifo
    status "$memkit" report --format collapsed "$work/p.mkt"
    expect_status 0
    expect_re "^_start.*;main \(patterns.c:[0-9]+\);fifo \(patterns.c:[0-9]+\);fifo_site \(patterns.c:[0-9]+\) 10000$"
    status "$memkit" report --format collapsed --weight bytes "$work/p.mkt"
    expect_re ";fifo_site \(patterns.c:[0-9]+\) [0-9]+$"
    grep -vqE '^[^;]+(;[^;]+)* [0-9]+$' "$work/out" && fail "a line is not 'frames count'"
    ;;
html)
    # (hoist_at: a finding whose count, 1000, is not what it removes, 999)
    trace p "$rprogs/patterns" hoist_at
    status "$memkit" report --format html -o "$work/p.html" "$work/p.mkt"
    expect_status 0
    grep -q '<script id="memkit-data" type="application/json">{"schema":"memkit-report"' \
        "$work/p.html" || fail "no report data in the page"
    grep -qE '<(script|link)[^>]* (src|href)=' "$work/p.html" && fail "the page loads something"
    # The page's data: each frame once, stacks as indices, rows under 0.1% of
    # every weight folded into one "other" whose sums keep the totals whole;
    # no growth series without snapshots unless --growth asks. folded: five
    # sites of 3 calls beside one of 20,000.
    trace g "$rprogs/patterns" folded
    "$memkit" report --format html -o "$work/g.html" "$work/g.mkt" || fail "report --format html failed"
    "$memkit" report --format html --growth -o "$work/gg.html" "$work/g.mkt" || fail "report --format html --growth failed"
    "$memkit" report --format json -o "$work/g.json" "$work/g.mkt" || fail "report --format json failed"
    python3 - "$work/g.html" "$work/gg.html" "$work/g.json" <<'PY' || fail "the page's data (above)"
import html, json, re, sys
def data(path):
    m = re.search(r'<script id="memkit-data" type="application/json">(.*?)</script>', open(path).read(), re.S)
    return json.loads(m.group(1))
page, asked, r = data(sys.argv[1]), data(sys.argv[2]), json.load(open(sys.argv[3]))
ft = page["frame_table"]
assert ft and len(ft) == len({json.dumps(f, sort_keys=True) for f in ft}), "a frame twice"
for k in ("sites", "functions", "lines"):
    rows, full = page[k], r[k]
    for w in ("calls", "bytes", "peak_bytes", "leaked_bytes", "frees"):
        assert sum(x[w] for x in rows) == sum(x[w] for x in full), (k, w)
    other = [x for x in rows if "other" in x]
    assert len(other) <= 1 and (not other or rows[-1] is other[0]), k
    kept = [x for x in rows if "other" not in x]
    assert len(kept) + (other[0]["other"] if other else 0) == len(full), (k, len(kept), len(full))
    total = sum(x["calls"] for x in full)
    for x in kept:
        assert x["calls"] * 1000 >= total or x["bytes"] * 1000 >= sum(y["bytes"] for y in full) or \
            (x["allocator_ns"] or 0) * 1000 >= sum(y["allocator_ns"] or 0 for y in full) or \
            x["peak_bytes"] * 1000 >= sum(y["peak_bytes"] for y in full) or \
            x["leaked_bytes"] * 1000 >= sum(y["leaked_bytes"] for y in full), (k, x.get("name"))
for x in page["sites"]:
    assert all(isinstance(f, int) and 0 <= f < len(ft) for f in x["frames"]), x["frames"]
by_stack = dict((x["stack"], x) for x in r["sites"])
for x in page["sites"]:
    if "other" not in x:
        assert [ft[i] for i in x["frames"]] == by_stack[x["stack"]]["frames"], x["stack"]
other = [x for x in page["sites"] if "other" in x]
# (the first calls of a run can hold 0.1% of its time: the heap's setup)
assert other and other[0]["other"] >= 3 and other[0]["calls"] == 3 * other[0]["other"], other
assert page["growth"] is None and r["growth"] is not None and asked["growth"] is not None
PY
    browser=$(command -v chromium || command -v chromium-browser || true)
    if [ -z "$browser" ]; then
        echo "SKIP [html]: no chromium here to load the page (make test installs it)"
        skipped=1
    else
        # --dump-dom prints the page after its script ran; console errors go
        # to stderr with --enable-logging.
        timeout 120 "$browser" --headless --no-sandbox --disable-gpu --enable-logging=stderr \
            --v=0 --dump-dom "file://$work/p.html" >"$work/dom" 2>"$work/console"
        grep -q 'data-rendered="yes"' "$work/dom" || fail "the page's script did not finish: $(grep -i console "$work/console" | head -3)"
        grep -iE 'Uncaught|CONSOLE.*(error|Error)' "$work/console" && fail "console errors"
        n=$(grep -o '<g class="frame">' "$work/dom" | wc -l)
        [ "$n" -ge 5 ] || fail "flame graph has $n frames"
        grep -q 'hoist_share_site (patterns.c' "$work/dom" || fail "flame graph lacks hoist_share_site"
        grep -q '<polyline' "$work/dom" || fail "no heap chart"
        grep -qE 'Allocator time</td><td>[0-9.]+ (ns|us|ms) of [0-9.]+ (us|ms|s) CPU \([0-9.]+%\)' \
            "$work/dom" || fail "the page does not state the allocator's time first"
        # what the page shows is the report's data: totals and findings
        "$memkit" report --format json -o "$work/p.json" "$work/p.mkt" || fail "report --format json"
        python3 - "$work/dom" "$work/p.json" <<'PY' || fail "the page's figures differ from the report's"
import html, json, re, sys
dom, r = open(sys.argv[1]).read(), json.load(open(sys.argv[2]))
t = r["totals"]
rows = dict((html.unescape(k), html.unescape(v)) for k, v in
            re.findall(r"<tr><td>([^<]*)</td><td>([^<]*)</td></tr>", dom))
for label, key in (("Allocation calls", "allocation_calls"), ("Mallocs", "mallocs"),
                   ("Frees", "frees"), ("Peak live blocks", "peak_live_blocks"),
                   ("Temporaries", "temporaries"), ("Tiny (< 32 bytes)", "tiny")):
    assert rows[label].replace(",", "") == str(t[key]), (label, rows[label], t[key])
share = re.search(r"CPU \(([0-9.]+)%\)", rows["Allocator time"]).group(1)
assert share == "%.1f" % (100 * t["allocator_share"]), (share, t["allocator_share"])
ans = re.search(r'<div class="answer" id="answer"><p>([^<]*)</p>', dom)
assert ans and ans.group(1).startswith("Answer: the allocator took ") and \
    ans.group(1).endswith("%): " + r["answer"]["verdict"]), (ans and ans.group(1), r["answer"])
shown = re.findall(r'<span class="kind">(\d+)\. ([a-z_]+)</span>: ([0-9,]+) allocations removable', dom)
# the findings that hold 90% of the saving (findings_shown), the rest behind a button
n = r["findings_shown"]
assert 1 <= n <= len(r["findings"]), (n, len(r["findings"]))
assert [(k, int(n_.replace(",", ""))) for _, k, n_ in shown] == \
    [(f["kind"], f["removable"]) for f in r["findings"][:n]], (shown, r["findings"])
more = re.search(r'<button id="more-findings">Show ([0-9,]+) more findings</button>', dom)
if n < len(r["findings"]):
    assert more and int(more.group(1).replace(",", "")) == len(r["findings"]) - n, more
else:
    assert not more, "a button with no finding behind it"
PY
        # The flame graph as a tool, driven through the page's address
        # (#search=, #bottom-up, #sort=): search marks the frames that match
        # and says their share of the total, counted once per stack; bottom-up
        # puts the allocating frames on the first row; the sites table sorts.
        for view in "search=hoist_share" "bottom-up" "sort=bytes" "sort=site"; do
            "$browser" --headless --no-sandbox --disable-gpu --enable-logging=stderr \
                --v=0 --dump-dom "file://$work/p.html#$view" >"$work/dom-$view" 2>"$work/console-$view"
            grep -q 'data-rendered="yes"' "$work/dom-$view" || fail "the page did not render ($view)"
            grep -iE "Uncaught|console\.error|SyntaxError" "$work/console-$view" && fail "console errors ($view)"
        done
        python3 - "$work/dom-search=hoist_share" "$work/dom-bottom-up" "$work/dom-sort=bytes" "$work/p.json" <<'PY' || fail "the flame graph's tools (above)"
import html, json, re, sys
search, flip, sort, r = [open(p).read() for p in sys.argv[1:4]] + [json.load(open(sys.argv[4]))]
calls = sum(s["calls"] for s in r["sites"])
mine = sum(s["calls"] for s in r["sites"] if any("hoist_share" in (f["function"] or "") for f in s["frames"]))
m = re.search(r'<span id="flame-found" class="sub">([0-9,]+) matching frames: ([0-9.]+)% of the total</span>', search)
assert m, re.search(r'<span id="flame-found"[^<]*</span>', search)
assert m.group(2) == "%.1f" % (100 * mine / calls), (m.group(2), mine, calls)
assert len(re.findall(r'<g class="frame match">', search)) == int(m.group(1).replace(",", "")), m.group(1)
def row(dom, y):
    return sorted(set(html.unescape(t).split("\n")[0] for t in
                      re.findall(r'<rect x="[^"]*" y="%d"[^>]*><title>([^<]*)</title>' % y, dom)))
def label(f):
    if f["function"] and f["file"]:
        return "%s (%s:%d)" % (f["function"], f["file"], f["line"])
    return f["function"] + (" (%s)" % f["module"] if f["module"] else "")
inner = sorted(set(label(s["frames"][0]) for s in r["sites"] if s["calls"]))
assert row(flip, 18) == inner, (row(flip, 18), inner)
assert row(search, 18) != inner, "top-down shows the allocating frames first"
cells = re.findall(r'<tr><td>([^<]*)</td><td>([^<]*)</td><td>[^<]*</td><td>[^<]*</td><td>[^<]*</td><td class="l frames">', sort)
def num(b):
    v, u = re.match(r"([0-9.]+) ?(\w*)", b.replace(",", "")).groups()
    return float(v) * {"": 1, "B": 1, "KB": 1024, "MB": 1 << 20, "GB": 1 << 30}.get(u, 1)
got = [num(b) for _, b in cells]
assert len(got) >= 2 and got == sorted(got, reverse=True), got
# the site column sorts too, by the site's name
by_name = open(sys.argv[1].replace("search=hoist_share", "sort=site")).read()
by_name = by_name[by_name.index('<table id="sites">'):]
names = [html.unescape(re.sub("<[^>]+>", "", c)).split("  <-  ")[0]
         for c in re.findall(r'<td class="l frames">(.*?)</td>', by_name[:by_name.index("</table>")])]
assert len(names) >= 2 and names == sorted(names), names
PY
    fi
    ;;
site_row)
    # A site's row, every field the analysis counts exactly: 1000 blocks of
    # 48 bytes, 200 freed in a shuffled order, 800 leaked.
    trace p "$rprogs/patterns" pool_fifth
    "$memkit" report --format json -o "$work/p.json" "$work/p.mkt" || fail "report failed"
    python3 - "$work/p.json" <<'PY' || fail "the site's row"
import json, sys
r = json.load(open(sys.argv[1]))
rows = [s for s in r["sites"] if s["frames"] and s["frames"][0]["function"] == "pool_share_site"]
assert len(rows) == 1, [s["frames"][:1] for s in r["sites"]]
s = rows[0]
want = {"calls": 1000, "bytes": 48000, "frees": 200, "min_size": 48, "max_size": 48,
        "median_size": 48, "peak_bytes": 48000, "peak_blocks": 1000, "leaked_blocks": 800,
        "leaked_bytes": 38400, "temporaries": 0, "tiny": 0, "cross_thread_frees": 0,
        "realloc_grows": 0}
got = {k: s[k] for k in want}
assert got == want, {k: (got[k], want[k]) for k in want if got[k] != want[k]}
assert r["totals"]["leaked_bytes"] >= 38400 and r["totals"]["max_allocated"] >= 48000, r["totals"]
PY
    status "$memkit" report "$work/p.mkt"
    expect_re "^Leaks at exit: 800 blocks, 38400 bytes"
    ;;
script_safe)
    # The traced command's text reaches the page's data: no string in it
    # may end the script element, and the JSON carries < > & escaped.
    evil='</script><img src=x onerror=alert(1)>&'
    "$memkit" trace -q -o "$work/e" -- "$rprogs/patterns" "$evil" >/dev/null 2>&1
    mv "$work"/e.*.mkt "$work/e.mkt" 2>/dev/null || fail "no trace"
    status "$memkit" report --format html -o "$work/e.html" "$work/e.mkt"
    expect_status 0
    [ "$(grep -o '</script' "$work/e.html" | wc -l)" -eq "$(grep -o '<script' "$work/e.html" | wc -l)" ] ||
        fail "a string of the data ends a script element"
    grep -q '<img src=x' "$work/e.html" && fail "the command's markup is in the page as markup"
    status "$memkit" report --format json "$work/e.mkt"
    grep -q '\\u003c/script\\u003e\\u003cimg src=x onerror=alert(1)\\u003e\\u0026' "$work/out" ||
        fail "the JSON does not escape < > &: $(grep -o '"command":"[^"]*"' "$work/out")"
    python3 - "$work/e.html" "$evil" <<'PY' || fail "the page's data"
import json, re, sys
page, evil = open(sys.argv[1]).read(), sys.argv[2]
d = json.loads(re.search(r'id="memkit-data" type="application/json">(.*?)</script>', page, re.S).group(1))
assert evil in d["input"]["command"], d["input"]["command"]
PY
    ;;
symbols)
    # Inlined frames: the allocating call sits in an always_inline function.
    trace p "$rprogs/patterns" inlined
    status "$memkit" report --format json "$work/p.mkt"
    python3 - "$work/out" <<'PY' || fail "inlined frames"
import json, sys
r = json.load(open(sys.argv[1]))
site = [s for s in r["sites"] if s["calls"] == 10][0]
f = site["frames"]
assert f[0]["function"] == "inlined_alloc", f[:3]
assert f[1]["function"] == "inlined" and f[1]["file"] == "patterns.c", f[:3]
assert f[2]["function"] == "main", f[:3]
assert f[0]["line"] != f[1]["line"]
PY
    # Without symbols: module+offset only, still one site, and no word of
    # missing debug information (offsets were asked for).
    status "$memkit" report --no-symbols "$work/p.mkt"
    expect_re "^ +10 .* patterns\+0x[0-9a-f]+$"
    grep -q "^No symbols for" "$work/out" && fail "--no-symbols: a hint about symbols"
    # A stripped program: its frames are offsets, and the report says why
    # and what would name them, its build-id's debug file among it.
    command -v strip >/dev/null && command -v readelf >/dev/null ||
        { echo "SKIP: no strip or readelf (binutils)"; exit 77; }
    cp "$rprogs/patterns" "$work/stripped" && strip --strip-all "$work/stripped"
    trace s "$work/stripped" temporary
    status "$memkit" report "$work/s.mkt"
    expect_status 0
    expect_re "^No symbols for stripped \([0-9]+ frames above shown as an offset\)"
    id=$(readelf -n "$work/stripped" | sed -n 's/^ *Build ID: *//p')
    expect_re "build it with -g, or install its debug symbols \(Debian: the -dbgsym package of \`dpkg -S $work/stripped\`'s package\), or put its debug file at /usr/lib/debug/.build-id/$(echo "$id" | cut -c1-2)/$(echo "$id" | cut -c3-).debug$"
    status "$memkit" report --format json "$work/s.mkt"
    python3 - "$work/out" "$id" <<'PY' || fail "unsymbolized_modules"
import json, sys
u = json.load(open(sys.argv[1]))["input"]["unsymbolized_modules"]
assert [m["module"] for m in u] == ["stripped"], u
assert u[0]["build_id"] == sys.argv[2] and u[0]["frames"] >= 1, u
assert u[0]["debug_file"] == "/usr/lib/debug/.build-id/%s/%s.debug" % (sys.argv[2][:2], sys.argv[2][2:]), u
PY
    browser=$(command -v chromium || command -v chromium-browser || true)
    if [ -z "$browser" ]; then
        echo "SKIP [symbols]: no chromium here to load the page (make test installs it)"
        skipped=1
    else
        "$memkit" report --format html -o "$work/s.html" "$work/s.mkt" || fail "html report"
        timeout 120 "$browser" --headless --no-sandbox --disable-gpu --dump-dom \
            "file://$work/s.html" >"$work/dom" 2>/dev/null
        grep -q "<summary>No symbols for stripped ([0-9]* frames): their frames show as offsets</summary>" \
            "$work/dom" && grep -q "<p>stripped: build it with -g" "$work/dom" ||
            fail "the page does not say why the frames are offsets"
    fi
    ;;
filters)
    trace d "$tprogs/dlopen" "$tprogs/libdllib.so"
    status "$memkit" report --module libdllib.so "$work/d.mkt"
    expect_status 0
    expect_line "Strdups: 25"
    expect_line "Allocation calls: 25"
    expect_line "Frees: 25"
    status "$memkit" report --function dllib_allocate "$work/d.mkt"
    expect_line "Allocation calls: 25"
    status "$memkit" report --file dllib.c "$work/d.mkt"
    expect_line "Allocation calls: 25"
    status "$memkit" report --function no_such_function "$work/d.mkt"
    expect_line "Allocation calls: 0"
    trace t "$rprogs/patterns" cross_thread
    # Threads are numbered from 1 in the order they start: the producer is 2.
    # Its blocks' frees happen on thread 1, outside the filter.
    status "$memkit" report --thread 2 "$work/t.mkt"
    expect_line "Mallocs: 2000"
    expect_line "Frees: 0"
    # A thread or a window that selects nothing is named, not reported empty
    # (--from 2e10 once wrapped to 0 and reported everything).
    for w in "--from 1000" "--from 2e10" "--to 2e10 --from 1e10"; do
        status "$memkit" report $w "$work/t.mkt"
        expect_status 2
        expect_re "^memkit: .*t.mkt has no event (from|between) --from .*\(its events run from 0 to [0-9.]+ s\)$"
    done
    for n in 0 99; do
        status "$memkit" report --thread $n "$work/t.mkt"
        expect_status 2
        expect_line "memkit: $work/t.mkt has no event of thread $n (its 2 threads are numbered from 1)"
    done
    status "$memkit" report --cost-ns nan "$work/t.mkt"
    expect_status 2
    expect_line "memkit: report: --cost-ns wants a positive number, not 'nan'"
    status "$memkit" report --from inf "$work/t.mkt"
    expect_status 2
    status "$memkit" report --from 2 --to 1 "$work/t.mkt"
    expect_status 2
    ;;
memdebug)
    for log in master-small 7_53_1-small; do
        dialect=current
        [ $log = 7_53_1-small ] && dialect=2017
        status "$memkit" report --memanalyze=$dialect "$data/$log.log"
        expect_status 0
        diff "$work/out" "$data/$log.expected.txt" >/dev/null || fail "--memanalyze on $log differs"
        # The report's totals agree with memanalyze's.
        status "$memkit" report "$data/$log.log"
        expect_status 0
        for name in Mallocs Reallocs Callocs Frees Allocations "Maximum allocated"; do
            want=$(grep "^$name:" "$data/$log.expected.txt" | sed 's/.*: *//')
            expect_line "$name: $want"
        done
    done
    # Counters memanalyze never set: the 2017 script prints them as nothing
    # (README.md of the data), the current one as 0.
    for log in unset-frees unset-all; do
        for dialect in 2017 current; do
            want=$data/$log.expected.txt
            [ $dialect = 2017 ] && want=$data/$log.2017.expected.txt
            status "$memkit" report --memanalyze=$dialect "$data/$log.log"
            expect_status 0
            diff "$work/out" "$want" >&2 || fail "--memanalyze=$dialect on $log differs"
        done
    done
    expect_line_in() { grep -qxF -- "$2" "$1" || fail "expected the line '$2' in $1"; }
    expect_line_in "$data/unset-frees.2017.expected.txt" "Frees: "
    expect_line_in "$data/unset-all.2017.expected.txt" "Maximum allocated: "
    status "$memkit" report "$data/master-small.log" --format json
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["totals"]["total_allocated"] == 123660 and r["totals"]["sockets"] == 2' "$work/out" ||
        fail "json totals of master-small"
    # synthetic: every line kind and error; leftovers in any order.
    for pair in "master:current" "7.53.1:2017"; do
        title=${pair%%:*} dialect=${pair#*:}
        memanalyze_section "$data/synthetic.expected.txt" "$title memanalyze.pl -v" >"$work/want"
        status "$memkit" report --memanalyze=$dialect "$data/synthetic.log"
        expect_status 0
        sort "$work/out" >"$work/got.sorted"
        sort "$work/want" >"$work/want.sorted"
        diff "$work/got.sorted" "$work/want.sorted" >&2 || fail "synthetic ($title) differs"
        # Order matters outside the leftovers: messages first, counts last.
        grep -vE '^(At |Open file| allocated by|fopen|getaddrinfo)' "$work/out" >"$work/a"
        grep -vE '^(At |Open file| allocated by|fopen|getaddrinfo)' "$work/want" >"$work/b"
        diff "$work/a" "$work/b" >&2 || fail "synthetic ($title): order of lines differs"
    done
    status "$memkit" report "$data/synthetic.log"
    expect_status 0
    expect_line "Lines not understood: 2" # BT lines are known (back-traces)
    ;;
merged)
    # One allocation site reached from three stacks is one finding (one fix),
    # its counts and savings the three's sums, the busiest stack first; the
    # same churn at a site of its own stays a finding of its own.
    trace m "$rprogs/patterns" merged
    "$memkit" report --format json "$work/m.mkt" >"$work/m.json" || fail "report --format json failed"
    python3 - "$work/m.json" <<'PY' || fail "merged findings (above)"
import json, sys
r = json.load(open(sys.argv[1]))
def fn(frames):
    return frames[0]["function"] if frames else None
at = {}
for f in r["findings"]:
    at.setdefault((f["kind"], fn(f["site"]["frames"])), []).append(f)
m, apart = at.get(("pool", "merged_site")), at.get(("pool", "merged_apart"))
assert m and apart, sorted(at)
assert len(m) == 1 and len(apart) == 1, (len(m), len(apart))
m, apart = m[0], apart[0]
assert m["stack_count"] == 3 and apart["stack_count"] == 1, (m["stack_count"], apart["stack_count"])
# the first 64 of each caller come from another line of churn_from: too few
assert m["count"] == 6000 and m["removable"] == m["count"], m
assert apart["count"] == 1000, apart
# the busiest stack first (merged_a's), then the others, each once
callers = [s["frames"][2]["function"] for s in [m["site"]] + m["other_sites"]]
assert callers == ["merged_a", "merged_b", "merged_c"], callers
assert len(m["other_sites"]) == 2 and m["priced_stacks"] <= 3
# no two findings of one kind at one site
keys = [(f["kind"], json.dumps(f["site"]["frames"][:1])) for f in r["findings"]]
assert len(keys) == len(set(keys)), keys
assert 1 <= r["findings_shown"] <= min(10, len(r["findings"])), r["findings_shown"]
PY
    status "$memkit" report --top 5 "$work/m.mkt"
    expect_status 0
    expect_re "^  [0-9]+\. pool: 6,000 allocations from 3 stacks, saves ~[0-9.]+ (ns|us|ms).*: merged_site at patterns\.c:[0-9]+ \(patterns\)$"
    expect_re "^     at the busiest stack: 3000 allocations, all of 40 bytes, 3000 freed again: fixed-size churn$"
    expect_re "^     and from \(its first 2 frames the busiest stack's\):$"
    expect_re "^       from merged_b at patterns\.c:[0-9]+ \(patterns\)$"
    # --findings: how many are shown; the rest are said in one line
    status "$memkit" report --findings 1 "$work/m.mkt"
    expect_status 0
    [ "$(grep -cE '^  [0-9]+\. ' "$work/out")" -eq 1 ] || fail "--findings 1 showed another number"
    expect_re "^  1 more finding saves ~[0-9.]+ (ns|us|ms) in all \([0-9]+% of the findings' saving\): --findings all shows them$"
    status "$memkit" report --findings all "$work/m.mkt"
    expect_status 0
    grep -q "more finding" "$work/out" && fail "--findings all left some out"
    "$memkit" report --format json --findings all "$work/m.mkt" | python3 -c '
import json, sys
r = json.load(sys.stdin)
assert r["findings_shown"] == len(r["findings"]), (r["findings_shown"], len(r["findings"]))' ||
        fail "--findings all: findings_shown is not every finding"
    for bad in 0 -1 x 2.5; do
        status "$memkit" report --findings "$bad" "$work/m.mkt"
        expect_status 2
        expect_re "^memkit: report: --findings: a count of at least 1 or 'all', not '$bad'$"
    done
    # --depth-shown: the frames of each stack
    status "$memkit" report --depth-shown 1 "$work/m.mkt"
    expect_status 0
    grep -q "^       from churn_from" "$work/out" && fail "--depth-shown 1 showed a second frame"
    expect_re "^       at   merged_site at patterns\.c:[0-9]+ \(patterns\)$"
    status "$memkit" report --depth-shown 0 "$work/m.mkt"
    expect_status 2
    ;;
pprof)
    # The report as a pprof profile, read back by an instrument of its own
    # (go tool pprof): each sample type's total is the JSON report's, the
    # sites are its sites, with their frames, lines and modules.
    if ! command -v go >/dev/null 2>&1; then
        echo "SKIP [pprof]: go is not installed (make test installs golang-go)"
        exit 77
    fi
    # merged: several sites and stacks; pool_fifth: blocks live at the end
    trace m "$rprogs/patterns" merged
    trace l "$rprogs/patterns" pool_fifth
    for t in m l; do
    "$memkit" report --format pprof -o "$work/$t.pb.gz" "$work/$t.mkt" || fail "report --format pprof failed"
    "$memkit" report --format json "$work/$t.mkt" >"$work/$t.json" || fail "report --format json failed"
    [ "$(head -c 2 "$work/$t.pb.gz" | od -An -tx1 | tr -d ' ')" = "1f8b" ] || fail "not gzipped"
    HOME=$work GOCACHE=$work/gocache go tool pprof -raw "$work/$t.pb.gz" >"$work/raw" 2>&1 ||
        fail "go tool pprof -raw failed: $(cat "$work/raw")"
    python3 - "$work/raw" "$work/$t.json" <<'PY' || fail "pprof against the JSON report ($t, above)"
import json, re, sys
raw, r = open(sys.argv[1]).read(), json.load(open(sys.argv[2]))
head = re.search(r"^Samples:\n(.*)\n", raw, re.M).group(1).split()
types = [t.replace("[dflt]", "") for t in head]
assert types == ["alloc_objects/count", "alloc_space/bytes", "inuse_objects/count",
                 "inuse_space/bytes", "alloc_time/nanoseconds"], types
samples = re.findall(r"^\s+((?:\d+\s+)+)?(\d+): ([\d ]+)$", raw, re.M)
rows = []
for line in raw.split("Samples:\n", 1)[1].split("Locations", 1)[0].splitlines()[1:]:
    vals, locs = line.split(":")
    rows.append(([int(v) for v in vals.split()], [int(l) for l in locs.split()]))
sites = r["sites"]
assert len(rows) == len(sites), (len(rows), len(sites))
total = [sum(v[i] for v, _ in rows) for i in range(5)]
want = [sum(s["calls"] for s in sites), sum(s["bytes"] for s in sites),
        sum(s["leaked_blocks"] for s in sites), sum(s["leaked_bytes"] for s in sites)]
assert total[:4] == want, (total, want)
assert total[0] == r["totals"]["allocation_calls"], (total[0], r["totals"]["allocation_calls"])
assert total[3] == r["totals"]["leaked_bytes"], (total[3], r["totals"]["leaked_bytes"])
ns = sum(s["allocator_ns"] for s in sites)
assert abs(total[4] - ns) <= len(sites), (total[4], ns)
# every site's stack: its frames by function and line, leaf first
locs = dict((int(i), (f, l)) for i, f, l in
            re.findall(r"^\s+(\d+): 0x[0-9a-f]+ M=\d+ (\S+) (\S*:\d+)", raw, re.M))
got = sorted(tuple(locs[l][0] for l in ls[:3]) for _, ls in rows)
exp = sorted(tuple(f["function"] for f in s["frames"][:3]) for s in sites)
assert got == exp, (got, exp)
assert any(v in ("merged_site", "pool_share_site") for v, _ in locs.values()), locs
maps = re.findall(r"^\d+: 0x[0-9a-f]+/0x[0-9a-f]+/0x[0-9a-f]+ (\S+) ([0-9a-f]*) ", raw, re.M)
assert maps and maps[0][0].endswith("/patterns") and len(maps[0][1]) == 40, maps
PY
    done
    HOME=$work GOCACHE=$work/gocache go tool pprof -top -sample_index=inuse_objects "$work/l.pb.gz" >"$work/out" 2>&1
    expect_re "^ +800 +100% +100% +800 +100% +pool_share_site$"
    HOME=$work GOCACHE=$work/gocache go tool pprof -top -sample_index=alloc_objects "$work/m.pb.gz" >"$work/out" 2>&1 ||
        fail "go tool pprof -top failed"
    expect_re "^ +6192 +[0-9.]+% +[0-9.]+% +6192 +[0-9.]+% +merged_site$"
    # memkit trace --pprof: a sampled run's profile and one per snapshot, each
    # read back; the run's totals are its JSON report's estimates, snapshot
    # K's the report's up to that time (allocated since the start, live then)
    mkdir -p "$work/pp"
    "$memkit" trace -q --sample 16K --snapshot-every 0.25s --pprof -o "$work/pp/t" -- \
        "$tprogs/sampled" grow 1 >"$work/out" 2>&1 || fail "memkit trace --pprof failed"
    grep -q "^pprof: .*\.pb\.gz, and .*\.snap1\.\.[0-9]*\.pb\.gz ([0-9]* of [0-9]* snapshots)$" \
        "$work/out" || fail "memkit trace --pprof does not name its profiles: $(cat "$work/out")"
    mkt=$(ls "$work"/pp/t.*.mkt)
    "$memkit" report --format json "$mkt" >"$work/pp/all.json" || fail "report of the sampled trace"
    for f in "$work"/pp/*.pb.gz; do
        HOME=$work GOCACHE=$work/gocache go tool pprof -raw "$f" >"$f.raw" 2>&1 ||
            fail "go tool pprof -raw $(basename "$f") failed: $(head -3 "$f.raw")"
    done
    for k in $(python3 -c 'import json, sys; print(" ".join(str(i + 1) for i in range(len(json.load(open(sys.argv[1]))["growth"]["points_ns"]))))' "$work/pp/all.json"); do
        t=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["growth"]["points_ns"][int(sys.argv[2]) - 1] / 1e9)' "$work/pp/all.json" "$k")
        "$memkit" report --format json --to "$t" "$mkt" >"$work/pp/snap$k.json" || fail "report --to $t"
    done
    python3 - "$work/pp" <<'PY' || fail "memkit trace --pprof's profiles (above)"
import glob, json, os, re, sys
d = sys.argv[1]
def totals(raw):
    rows = raw.split("Samples:\n", 1)[1].split("Locations", 1)[0].splitlines()[1:]
    vals = [[int(v) for v in line.split(":")[0].split()] for line in rows if ":" in line]
    return [sum(v[i] for v in vals) for i in range(4)]
def want(r):
    s = r["sites"]
    return [sum(x["calls"] for x in s), sum(x["bytes"] for x in s),
            sum(x["leaked_blocks"] for x in s), sum(x["leaked_bytes"] for x in s)]
run = [p for p in glob.glob(d + "/t.*.pb.gz.raw") if ".snap" not in p]
assert len(run) == 1, run
assert totals(open(run[0]).read()) == want(json.load(open(d + "/all.json"))), "the run's profile"
snaps = sorted(glob.glob(d + "/t.*.snap*.pb.gz.raw"), key=lambda p: int(re.search(r"snap(\d+)", p).group(1)))
assert len(snaps) >= 2, snaps
prev = None
for k, p in enumerate(snaps, 1):
    got = totals(open(p).read())
    assert got == want(json.load(open("%s/snap%d.json" % (d, k)))), (k, got)
    assert prev is None or got[1] >= prev[1], (k, got, prev)  # allocated since the start grows
    prev = got
PY
    # a process tree's profile: the processes merged, as the JSON report merges them
    rm -f "$work"/f.*
    "$memkit" trace -q -o "$work/f" -- "$tprogs/forkexec" >/dev/null 2>&1 || fail "trace of forkexec"
    "$memkit" report --format pprof -o "$work/tree.pb.gz" "$work"/f.*.mkt || fail "pprof of a tree"
    "$memkit" report --format json "$work"/f.*.mkt >"$work/tree.json" || fail "json of a tree"
    HOME=$work GOCACHE=$work/gocache go tool pprof -raw "$work/tree.pb.gz" >"$work/tree.raw" 2>&1 ||
        fail "go tool pprof -raw of a tree failed"
    python3 - "$work/tree.raw" "$work/tree.json" <<'PY' || fail "the tree's profile (above)"
import json, sys
raw, r = open(sys.argv[1]).read(), json.load(open(sys.argv[2]))
rows = raw.split("Samples:\n", 1)[1].split("Locations", 1)[0].splitlines()[1:]
vals = [[int(v) for v in line.split(":")[0].split()] for line in rows if ":" in line]
got = [sum(v[i] for v in vals) for i in range(2)]
assert got == [r["totals"]["allocation_calls"], sum(s["bytes"] for s in r["sites"])], (got, r["totals"])
PY
    # a sampled trace's estimates, and the filters, apply as in the other formats
    "$memkit" report --format pprof --function merged_b -o "$work/b.pb.gz" "$work/m.mkt" ||
        fail "report --format pprof --function failed"
    HOME=$work GOCACHE=$work/gocache go tool pprof -top -sample_index=alloc_objects "$work/b.pb.gz" >"$work/out" 2>&1
    expect_re "Total samples = 2064 *$"
    status "$memkit" report --format pprof --growth "$work/m.mkt"
    expect_status 2
    ;;
diff)
    trace before "$rprogs/patterns" lifo
    trace after "$rprogs/patterns" none
    status "$memkit" diff "$work/before.mkt" "$work/after.mkt"
    expect_status 0
    expect_re "^Allocation calls +8,000 +2,000  4.00x fewer$"
    expect_re "^ +8,000 +0 +-8,000  lifo_site \(patterns.c:[0-9]+\) <- lifo \(patterns.c:[0-9]+\) \(gone\)$"
    expect_re "^ +0 +2,000 +\+2,000  none_site \(patterns.c:[0-9]+\) <- none \(patterns.c:[0-9]+\) \(new\)$"
    status "$memkit" diff "$work/before.mkt" "$work/before.mkt"
    expect_status 0
    expect_line "No site changed its allocation count."
    status "$memkit" diff --format json "$work/before.mkt" "$work/after.mkt"
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["before"]["allocation_calls"]==8000 and d["after"]["allocation_calls"]==2000' "$work/out" || fail "diff json"
    # Both runs' allocator time and share. These runs take a few ms, and a
    # timed call that the host stole the CPU from inside (a shared VM: no
    # switch the kernel sees, so no rseq abort) can hold more than the run's
    # CPU time: a pair out of range is traced again once, its values said.
    share_ok='import json,sys; d=json.load(open(sys.argv[1])); v=[(d[s]["allocator_ns"], d[s]["allocator_share"]) for s in ("before", "after")]; print(v); assert all(ns and ns > 0 and sh and 0 < sh < 1 for ns, sh in v)'
    if ! python3 -c "$share_ok" "$work/out" >"$work/share1" 2>&1; then
        echo "diff json: allocator time and share out of range, once: $(head -1 "$work/share1")"
        trace before "$rprogs/patterns" lifo
        trace after "$rprogs/patterns" none
        status "$memkit" diff --format json "$work/before.mkt" "$work/after.mkt"
        python3 -c "$share_ok" "$work/out" >"$work/share2" 2>&1 ||
            fail "diff json: the allocator's time: $(head -1 "$work/share1"), then $(head -1 "$work/share2")"
    fi
    status "$memkit" diff "$work/before.mkt" "$work/after.mkt"
    expect_re "^Allocator time +[0-9.]+ (ns|us|ms) +[0-9.]+ (ns|us|ms)  [0-9.]+x (less|more)$"
    expect_re "^Allocator share +[0-9.]+% +[0-9.]+%$"
    # Sites are matched by name, not address: the same program twice matches.
    trace again "$rprogs/patterns" lifo
    status "$memkit" diff "$work/before.mkt" "$work/again.mkt"
    expect_line "No site changed its allocation count."
    status "$memkit" diff "$work/before.mkt"
    expect_status 2
    ;;
check)
    trace p "$rprogs/patterns" lifo
    status "$memkit" check "$work/p.mkt" --max-allocations 8000 --max-peak 1M --max-leaked 0
    expect_status 0
    expect_re "within all limits"
    status "$memkit" check "$work/p.mkt" --max-allocations 7999 --max-peak 10 --max-leaked 0
    expect_status 1
    expect_re "allocation calls 8000 > limit 7999$"
    expect_re "maximum allocated bytes [0-9]+ > limit 10$"
    [ "$(wc -l <"$work/out")" -eq 2 ] || fail "expected one line per breached limit"
    printf '# limits for CI\nmax-allocations = 100  # too few\nmax-peak = 1M\n' >"$work/limits"
    status "$memkit" check --config "$work/limits" "$work/p.mkt"
    expect_status 1
    expect_re "allocation calls 8000 > limit 100$"
    status "$memkit" check --config "$work/limits" --max-allocations 9000 "$work/p.mkt"
    expect_status 0
    status "$memkit" check --max-findings 0 "$work/p.mkt"
    expect_status 1
    printf 'max-allocs = 1\n' >"$work/bad"
    status "$memkit" check --config "$work/bad" "$work/p.mkt"
    expect_status 2
    expect_re "unknown limit 'max-allocs'"
    status "$memkit" check "$work/p.mkt"
    expect_status 2
    status "$memkit" check --max-peak 12Q "$work/p.mkt"
    expect_status 2
    status "$memkit" check --max-allocations 100000 "$data/master-small.log"
    expect_status 0
    # the allocator's measured time and share
    status "$memkit" check "$work/p.mkt" --max-allocator-share 100% --max-allocator-time 1h
    expect_status 0
    status "$memkit" check "$work/p.mkt" --max-allocator-share 0 --max-allocator-time 0
    expect_status 1
    expect_re "allocator share of the CPU time [0-9.]+% > limit 0.00%$"
    expect_re "allocator time [0-9]+ ns > limit 0 ns$"
    status "$memkit" check "$work/p.mkt" --max-allocator-share 101
    expect_status 2
    status "$memkit" check --max-allocator-share 5% "$data/master-small.log"
    expect_status 2
    expect_re "has no allocator times .* --max-allocator-share$"
    "$memkit" trace -q --no-times -o "$work/nt" -- "$rprogs/patterns" lifo >/dev/null 2>&1
    status "$memkit" check --max-allocator-time 1s "$work"/nt.*.mkt
    expect_status 2
    expect_re "has no allocator times"
    ;;
badinput)
    # One clear line for each, exit 2.
    status "$memkit" report "$work"
    expect_status 2
    expect_line "memkit: $work is a directory, not a trace or a memdebug log"
    printf 'MEM a.c:1 malloc(18446744073709551000) = 0x1000\nMEM a.c:2 malloc(100) = 0x2000\n' \
        >"$work/huge.log"
    status "$memkit" report "$work/huge.log"
    expect_line "Total allocated: 100"
    expect_line "Lines not understood: 1"
    printf 'max-allocations = 1\n' >"$work/limits"
    status "$memkit" check --config "$work" "$work/huge.log"
    expect_status 2
    expect_line "memkit: cannot read check config $work: Is a directory"
    status "$memkit" check --max-allocations 3 "$work/none.mkt"
    expect_status 2
    [ "$(wc -l <"$work/out")" -eq 1 ] || fail "check on bad input: not one line: $(cat "$work/out")"
    status "$memkit" bench --allocators ,
    expect_status 2
    expect_line "memkit: bench: --allocators names no allocator in ',' (memkit bench --list shows them)"
    status "$memkit" bench --bogus
    expect_status 2
    expect_line "memkit: unknown bench option '--bogus' (memkit bench --help)"
    status "$memkit" bench --scale
    expect_status 2
    expect_line "memkit: bench: --scale needs a value (memkit bench --help)"
    status "$memkit" trace -o
    expect_status 2
    expect_line "memkit: trace: -o needs a value (memkit trace --help)"
    status "$memkit" report "$work/missing.mkt"
    expect_status 2
    expect_re "missing.mkt: No such file"
    : >"$work/empty"
    status "$memkit" report "$work/empty"
    expect_status 2
    expect_re "empty file"
    printf 'hello, world\n' >"$work/text"
    status "$memkit" report "$work/text"
    expect_status 2
    [ "$(wc -l <"$work/out")" -eq 1 ] || fail "expected a one-line error"
    trace p "$rprogs/patterns" lifo
    size=$(wc -c <"$work/p.mkt")
    head -c $((size / 2)) "$work/p.mkt" >"$work/cut.mkt"
    for fmt in text json html collapsed; do
        status "$memkit" report --format $fmt "$work/cut.mkt"
        expect_status 2
        expect_re "cut.mkt is damaged: .*; the report covers what came before"
    done
    # ... and into a file named by -o too: nothing before the cut is lost
    status "$memkit" report -o "$work/cut.txt" "$work/cut.mkt"
    expect_status 2
    grep -q "^Mallocs: " "$work/cut.txt" 2>/dev/null || fail "-o dropped a cut trace's report"
    status "$memkit" report --format json "$work/cut.mkt"
    "$memkit" report --format json "$work/cut.mkt" 2>/dev/null |
        python3 -c 'import json,sys; r=json.load(sys.stdin); assert r["input"]["partial"]' ||
        fail "a cut trace's JSON is not the part before the cut"
    status "$memkit" report --format yaml "$work/p.mkt"
    expect_status 2
    status "$memkit" report --thread 1 "$data/master-small.log"
    expect_status 2
    expect_re "has no threads or times"
    ;;
modules)
    # A library rebuilt since the trace (its build id differs) is not trusted:
    # its frames are module+offset, with one note; a library without any
    # symbols gives module+offset too, never a wrong name.
    library_source "$work/lib.c"
    cc -O1 -g -shared -fPIC -Wl,--build-id=0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa -o "$work/libx.so" "$work/lib.c" ||
        fail "cannot build the library"
    "$memkit" trace -q -o "$work/m" -- "$tprogs/dlopen" "$work/libx.so" >/dev/null 2>&1 ||
        fail "trace failed"
    status "$memkit" report --sort calls --top 3 "$work"/m.*.mkt
    expect_re " helper \(lib.c:[0-9]+\)"
    cc -O1 -g -shared -fPIC -Wl,--build-id=0xbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb -o "$work/libx.so" "$work/lib.c"
    status "$memkit" report --sort calls --top 3 "$work"/m.*.mkt
    expect_status 0
    [ "$(grep -c "libx.so changed since the trace was taken" "$work/out")" -eq 1 ] ||
        fail "not one note for the changed library"
    expect_re " libx\.so\+0x[0-9a-f]+"
    grep -q " helper " "$work/out" && fail "a name from the changed library"
    # no symbols at all: stripped, the helper has no name anywhere
    cc -O1 -shared -fPIC -s -Wl,--build-id=0xcccccccccccccccccccccccccccccccccccccccc -o "$work/liby.so" "$work/lib.c"
    "$memkit" trace -q -o "$work/s" -- "$tprogs/dlopen" "$work/liby.so" >/dev/null 2>&1 ||
        fail "trace failed"
    status "$memkit" report --sort calls --top 3 "$work"/s.*.mkt
    expect_status 0
    expect_re " liby\.so\+0x[0-9a-f]+"
    grep -q "helper" "$work/out" && fail "a name for a stripped function"
    ;;
debugcache)
    # A separate debug file with compressed sections (as distributions ship
    # them) is inflated once into the cache, named by build id; the names
    # read from the entry are the names read from the file.
    command -v objcopy >/dev/null || { echo "SKIP: no objcopy (binutils)"; exit 77; }
    library_source "$work/lib.c"
    # DWARF enough for an entry of 110 KB, past the file-size limit below
    i=0
    while [ $i -lt 600 ]; do
        echo "struct pad_s$i { int a; long b; const char *c$i; };"
        echo "int pad_$i(struct pad_s$i *p) { return p->a + (int)p->b; }"
        i=$((i + 1))
    done >>"$work/lib.c"
    id=dddddddddddddddddddddddddddddddddddddddd
    cc -O1 -g -shared -fPIC -Wl,--build-id=0x$id -o "$work/libz.so" "$work/lib.c" &&
        objcopy --only-keep-debug --compress-debug-sections=zlib "$work/libz.so" \
            "$work/libz.so.debug" &&
        objcopy --strip-debug --add-gnu-debuglink="$work/libz.so.debug" "$work/libz.so" ||
        fail "cannot build the library and its compressed debug file"
    readelf -SW "$work/libz.so.debug" | grep -qE '\.debug_info .* C ' ||
        fail "the debug file's sections are not compressed"
    "$memkit" trace -q -o "$work/z" -- "$tprogs/dlopen" "$work/libz.so" >/dev/null 2>&1 ||
        fail "trace failed"
    cache=$work/cache
    entry=$cache/debug/$id.debug
    report_z() { # report_z CACHE_DIR OUT
        MEMKIT_CACHE_DIR=$1 "$memkit" report --cost-ns 100 --sort calls --top 3 "$work"/z.*.mkt >"$2" 2>&1
    }
    report_z "" "$work/off"
    grep -qE " helper \(lib.c:[0-9]+\)" "$work/off" || fail "no line for helper without the cache"
    [ -e "$cache" ] && fail "MEMKIT_CACHE_DIR= (off) made a cache"
    # The first report makes the entry; libdwfl holds the debug file it
    # found by its link, so the entry serves from the next report on.
    report_z "$cache" "$work/first"
    cmp -s "$work/off" "$work/first" || fail "the run that makes the entry reports otherwise"
    [ -f "$entry" ] || fail "no cache entry $entry"
    readelf -SW "$entry" | grep -qE '\.debug_info .* C ' && fail "the entry is still compressed"
    # The entry serves alone: the debug file it came from is gone.
    mv "$work/libz.so.debug" "$work/moved.debug"
    report_z "$cache" "$work/again"
    cmp -s "$work/off" "$work/again" || fail "the report from the entry differs"
    # An entry of another build under this build id is not used, and is made anew.
    mv "$work/moved.debug" "$work/libz.so.debug"
    cc -O1 -g -shared -fPIC -o "$work/other.so" "$work/lib.c"
    cp "$work/other.so" "$entry"
    report_z "$cache" "$work/wrong"
    cmp -s "$work/off" "$work/wrong" || fail "a wrong entry changed the report"
    readelf -n "$entry" | grep -q "$id" || fail "the wrong entry was not made anew"
    # A cache that cannot be written costs nothing but the saving.
    status report_z /proc/memkit-no-such-dir "$work/ro"
    expect_status 0
    cmp -s "$work/off" "$work/ro" || fail "an unwritable cache changed the report"
    # Under a file-size limit (50 KB: the report's output fits, the entry
    # does not) an entry is not made: writing past the limit raises SIGXFSZ,
    # which once killed memkit itself.
    (ulimit -f 100 && report_z "$work/cache2" "$work/limited")
    status=$?
    expect_status 0
    cmp -s "$work/off" "$work/limited" || fail "a file-size limit changed the report"
    [ -e "$work/cache2/debug/$id.debug" ] && fail "an entry was made under a file-size limit"
    ;;
arenas)
    # Four threads fill their own glibc arenas (64 MiB-aligned heaps) with
    # live blocks: the tables of live blocks place blocks near their heap
    # neighbours, and arenas a table's width apart once collided whole there
    # (the report of this trace ran for minutes). Exact counts, in time.
    cat >"$work/arenas.c" <<'EOF'
#include <pthread.h>
#include <stdlib.h>
#define N 200000
static void *work(void *arg)
{
    void **p = malloc(N * sizeof *p);
    for (int i = 0; i < N; i++)
        p[i] = malloc(24);
    for (int i = 0; i < N; i += 2) {
        free(p[i]);
        p[i] = malloc(24);
    }
    return arg ? p : NULL;
}
int main(void)
{
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, work, &t[i]);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    return 0;
}
EOF
    cc -O1 -pthread -o "$work/arenas" "$work/arenas.c" || fail "cannot build arenas.c"
    trace a "$work/arenas"
    status timeout 60 "$memkit" report --no-symbols "$work/a.mkt"
    expect_status 0
    expect_line "Mallocs: 1200004" # 4 x (200,000 + 100,000 + its array)
    expect_line "Frees: 400000"
    ;;
merge)
    # A run's traces are one report: by prefix or as several files, sites
    # matched by symbolized stack, totals summed, a process table.
    "$memkit" trace -q -o "$work/f" -- "$tprogs/forkexec" >/dev/null 2>&1 ||
        fail "trace of forkexec failed"
    [ "$(ls "$work"/f.*.mkt | wc -l)" -eq 3 ] || fail "forkexec: not 3 traces"
    mkfifo "$work/f.999999.mkt" # planted under a trace's name: skipped, not read
    status timeout 30 "$memkit" report "$work/f"
    expect_status 0
    expect_line "Allocation calls: 15"
    expect_line "Mallocs: 15"
    expect_re "^Processes: 3 "
    [ "$(sed -n '/^Processes:/,/^$/p' "$work/out" | awk '$1 ~ /^[0-9]+$/ { print $2 }' | tr '\n' ' ')" = "7 5 3 " ] ||
        fail "the process table is not 7 5 3"
    rm "$work/f.999999.mkt"
    # A process killed before its trace had a head leaves an empty file: the
    # run's report covers the others, says so in one line, and exits 2.
    : >"$work/f.999998.mkt"
    status "$memkit" report "$work/f"
    expect_status 2
    expect_line "Allocation calls: 15"
    expect_line "memkit: $work/f.999998.mkt: empty file, not a trace or a memdebug log; left out of the report"
    "$memkit" report --format json "$work/f" 2>/dev/null |
        python3 -c 'import json,sys; r=json.load(sys.stdin); assert r["input"]["partial"] and r["totals"]["allocation_calls"] == 15' ||
        fail "a run with an empty trace: JSON not the others' report, marked partial"
    : >"$work/g.1.mkt"
    : >"$work/g.2.mkt"
    status "$memkit" report "$work/g"
    expect_status 2
    [ "$(wc -l <"$work/out")" -eq 1 ] || fail "no trace readable: expected a one-line error"
    rm "$work/f.999998.mkt" "$work/g.1.mkt" "$work/g.2.mkt"
    status "$memkit" report "$work"/f.*.mkt
    expect_line "Allocation calls: 15"
    "$memkit" report --format json "$work/f" >"$work/j" 2>/dev/null || fail "json of a prefix failed"
    python3 - "$work/j" <<'PY' || fail "merged JSON"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["totals"]["allocation_calls"] == 15, r["totals"]
procs = r["totals"]["processes"]
assert [p["allocation_calls"] for p in procs] == [7, 5, 3], procs
PY
    # --pid: one process (the child: before and after its exec, 5 + 7)
    child=$(sed -n '/^Processes:/,/^$/p' "$work/out" | awk '$2 == 7 { print $1 }')
    status "$memkit" report --pid "$child" "$work/f"
    expect_status 0
    expect_line "Allocation calls: 12"
    status "$memkit" report --pid 999999999 "$work/f"
    expect_status 2
    expect_line "memkit: --pid 999999999: no trace given is of that process"
    # Two runs of one program in a tree: the same stack, one site, summed.
    "$memkit" trace -q -o "$work/two" -- sh -c "'$tprogs/basic'; '$tprogs/basic'" \
        >/dev/null 2>&1 || fail "trace of two basics failed"
    status "$memkit" report --sort calls --top 3 "$work/two"
    expect_re "^ +20 +[0-9.]+ [KMG]?B .*main \(basic.c:[0-9]+\)"
    # Two stacks of the largest process that name the same frames (two
    # calls on one line) are one merged site; a smaller process's stack
    # naming them too adds to it.
    cat >"$work/same.c" <<'EOF'
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>
__attribute__((noinline)) static void twice(int n)
{
    for (int i = 0; i < n; i++) {
        void *p = malloc(24), *q = malloc(24); free(p); free(q);
    }
}
int main(void)
{
    pid_t pid = fork();
    twice(pid == 0 ? 10 : 500);
    if (pid > 0)
        waitpid(pid, NULL, 0);
    return 0;
}
EOF
    cc -O0 -g -fno-builtin -o "$work/same" "$work/same.c" || fail "cannot build same.c"
    "$memkit" trace -q -o "$work/sm" -- "$work/same" >/dev/null 2>&1 || fail "trace of same failed"
    "$memkit" report --no-symbols --format json "$(ls -S "$work"/sm.*.mkt | head -n 1)" \
        >"$work/j1" 2>/dev/null || fail "json of the parent failed"
    "$memkit" report --format json "$work/sm" >"$work/j2" 2>/dev/null || fail "json of same failed"
    python3 - "$work/j1" "$work/j2" <<'PY' || fail "same-line stacks not merged into one site"
import json, sys
one, merged = (json.load(open(p)) for p in sys.argv[1:])
# the parent alone: two stacks (two call instructions), 500 calls each
assert sorted(s["calls"] for s in one["sites"] if s["calls"] >= 500)[-2:] == [500, 500], one["sites"]
twice = [s for s in merged["sites"] if s["frames"][0]["function"] == "twice"]
assert [s["calls"] for s in twice] == [1020], twice
assert twice[0]["frees"] == 1020, twice
assert merged["totals"]["allocation_calls"] >= 1020, merged["totals"]
PY
    # diff and check take prefixes too
    status "$memkit" diff "$work/f" "$work/two"
    expect_status 0
    status "$memkit" check --max-allocations 14 "$work/f"
    expect_status 1
    status "$memkit" check --max-allocations 15 "$work/f"
    expect_status 0
    # a prefix that matches nothing
    status "$memkit" report "$work/nothing"
    expect_status 2
    expect_line "memkit: no trace matches '$work/nothing' (a trace file, or a run's prefix: PREFIX.<pid>.mkt)"
    ;;
outputs_replace)
    # A file replaced whole keeps its mode (a 0600 report stays 0600), and
    # one's own link to a device is written through (as /dev/stdout is).
    trace p "$rprogs/patterns" paired
    echo old >"$work/r.txt"
    chmod 600 "$work/r.txt"
    status "$memkit" report -o "$work/r.txt" "$work/p.mkt"
    expect_status 0
    [ "$(stat -c %a "$work/r.txt")" = 600 ] ||
        fail "-o widened the file's mode to $(stat -c %a "$work/r.txt")"
    grep -q '^Mallocs: ' "$work/r.txt" || fail "-o did not replace the file"
    ln -s /dev/null "$work/null"
    status "$memkit" report -o "$work/null" "$work/p.mkt"
    expect_status 0
    # Another user's link in a directory anyone may write (a sticky /tmp with
    # fs.protected_symlinks off), to a FIFO nobody reads: one line and
    # status 2, not a report fed to their reader nor a process blocked.
    if [ "$(id -u)" -ne 0 ] || ! id nobody >/dev/null 2>&1; then
        echo "SKIP: a link planted by another user (needs root and the user nobody)"
        skipped=1
    else
        shared=$work/shared
        mkdir "$shared" && chmod 1777 "$shared" && mkfifo "$shared/fifo" &&
            ln -s "$shared/fifo" "$shared/planted" && chown -h nobody "$shared/planted" ||
            fail "could not set up the shared directory"
        status timeout 10 "$memkit" report -o "$shared/planted" "$work/p.mkt"
        expect_status 2
        expect_re "planted is another user's symbolic link to something other than a file"
    fi
    ;;
outputs)
    # Every writer checks every write and its close: /dev/full gives one line
    # and a failing status; a file on a full disk is never left truncated.
    trace p "$rprogs/patterns" paired
    for fmt in text json html collapsed; do
        status "$memkit" report --format $fmt -o /dev/full "$work/p.mkt"
        [ "$status" -ne 0 ] || fail "report --format $fmt -o /dev/full exited 0"
        [ "$(wc -l <"$work/out")" -eq 1 ] || fail "report -o /dev/full: not one line: $(cat "$work/out")"
        expect_re "^memkit: cannot write /dev/full: "
        status sh -c '"$0" report --format "$1" "$2" >/dev/full' "$memkit" $fmt "$work/p.mkt"
        [ "$status" -ne 0 ] || fail "report --format $fmt >/dev/full exited 0"
        expect_re "^memkit: cannot write standard output: "
    done
    status sh -c '"$0" diff "$1" "$1" >/dev/full' "$memkit" "$work/p.mkt"
    [ "$status" -ne 0 ] || fail "diff >/dev/full exited 0"
    expect_re "^memkit: cannot write standard output"
    status sh -c '"$0" bench list --quick --rounds 1 --allocators glibc --json >/dev/full' "$memkit"
    [ "$status" -ne 0 ] || fail "bench --json >/dev/full exited 0"
    expect_re "^memkit: cannot write standard output"
    status sh -c '"$0" bench list --quick --rounds 1 --allocators glibc --html /dev/full >/dev/null' "$memkit"
    [ "$status" -ne 0 ] || fail "bench --html /dev/full exited 0"
    # A full disk: the target is untouched (an old page stays whole), no
    # temporary file is left.
    mkdir "$work/full"
    if unshare -m true 2>/dev/null; then
        unshare -m sh -c 'mount -t tmpfs -o size=40k none "$1" && echo "old page" >"$1/r.html" &&
            dd if=/dev/zero of="$1/fill" bs=4k count=8 2>/dev/null
            "$2" report --format html -o "$1/r.html" "$3"; echo "status $?"
            "$2" report --format html -o "$1/new.html" "$3"; echo "status $?"
            cat "$1/r.html"; ls -a "$1"' sh "$work/full" "$memkit" "$work/p.mkt" \
            >"$work/out" 2>&1
        expect_line "old page"
        grep -qx "status 0" "$work/out" && fail "a report on a full disk exited 0"
        grep -qx "new\.html\|\.r\.html\..*\|\.new\.html\..*" "$work/out" && fail "a partial file was left: $(cat "$work/out")"
        [ "$(grep -c '^memkit: cannot write' "$work/out")" -eq 2 ] || fail "not one line per failed report"
    else
        echo "SKIP [outputs]: no mount namespace here to make a full disk (unshare -m)"
        skipped=1
    fi
    ;;
pipes)
    # A trace is a stream: standard input ("-", /dev/stdin), a process
    # substitution's pipe and a FIFO are each read once; a directory is named.
    trace p "$rprogs/patterns" paired # --cost-ns: the outputs must compare
    "$memkit" report --cost-ns 5 "$work/p.mkt" >"$work/want" 2>&1 || fail "report of the file failed"
    status sh -c 'cat "$0" | "$1" report --cost-ns 5 -' "$work/p.mkt" "$memkit"
    expect_status 0
    cmp -s "$work/out" "$work/want" || fail "report - differs from the file's"
    status sh -c 'cat "$0" | "$1" report --cost-ns 5 /dev/stdin' "$work/p.mkt" "$memkit"
    expect_status 0
    cmp -s "$work/out" "$work/want" || fail "report /dev/stdin differs from the file's"
    mkfifo "$work/fifo"
    (cat "$work/p.mkt" >"$work/fifo" &)
    status timeout 30 "$memkit" report --cost-ns 5 "$work/fifo"
    expect_status 0
    cmp -s "$work/out" "$work/want" || fail "report FIFO differs from the file's"
    (cat "$work/p.mkt" >"$work/fifo" &)
    status timeout 30 sh -c '"$1" diff "$0" - <"$2"' "$work/fifo" "$memkit" "$work/p.mkt"
    expect_status 0
    (cat "$work/p.mkt" >"$work/fifo" &)
    status timeout 30 "$memkit" check --max-allocations 1000000000 "$work/fifo"
    expect_status 0
    # a curl log through a pipe too
    log=$(ls "$data"/*.log | head -1)
    "$memkit" report "$log" >"$work/want" 2>&1
    status sh -c 'cat "$0" | "$1" report -' "$log" "$memkit"
    cmp -s "$work/out" "$work/want" || fail "a piped curl log reads differently"
    status "$memkit" report "$work"
    expect_status 2
    expect_line "memkit: $work is a directory, not a trace or a memdebug log"
    status sh -c ': | "$0" report -' "$memkit"
    expect_status 2
    expect_re "standard input.*empty"
    ;;
*)
    fail "unknown test $test"
    ;;
esac
[ "$fails" -eq 0 ] || exit 1
# A part left out for a missing tool makes the whole test a skip, never a pass.
[ -n "${skipped:-}" ] && exit 77
echo "ok [$test]"
