#!/bin/sh
# run.sh BUILD [ROUNDS] [SCALE] - memkit replay against what it replays:
# `make bench-replay`.
#
# Fidelity: each program of bench-real's corpus (corpus.sh) and the 2-thread
# churn loop runs once untraced under perf (its samples in glibc's allocator,
# the independent instrument, shown beside) and is traced once with `memkit
# trace -q` (times on); the report's
# allocator_ns (the allocator's time measured in the traced run) beside
# `memkit replay --allocators glibc`'s (medians of ROUNDS, default 3); bar
# 0.67-1.5x. Speed: the replay's own work per call (its wall time less the
# allocator's) on the churn trace, 20M calls at SCALE 1; bar >= 10M calls/s.
# Ranking: the churn loop with 1 and 2 threads under `memkit tune` (ROUNDS
# runs) and its trace under `memkit replay` (ROUNDS rounds): every allocator
# tune finds faster than glibc beyond noise, replay must find faster too,
# and both must name the same fastest. What-if: whatif.sh (its bars). SCALE (default 1) shrinks the
# inputs (the smoke test's 0.01 checks that the script runs, not the bars).
set -u
build=$(cd "${1:-build}" && pwd)
rounds=${2:-3}
scale=${3:-1}
memkit=$build/memkit
src=$(cd "$(dirname "$0")/../.." && pwd)
bench=bench-replay
[ -x "$memkit" ] || { echo "$bench: no $memkit (make build)"; exit 2; }

. "$src/bench/real/corpus.sh"
have_perf=
perf record -q -e cpu-clock -o /dev/null true >/dev/null 2>&1 && have_perf=1

: >"$work/res"
{ corpus; echo "churn2|$work|$build/memkit-churn $churn_n 2|true"; } |
    while IFS='|' read -r name pdir cmd prep; do
    d=$work/tr/$name
    rm -rf "$d"
    mkdir -p "$d"
    cd "$pdir" || exit 2
    # shellcheck disable=SC2086 # the command's words
    set -- $cmd
    $prep
    # the independent instrument: perf's samples in glibc's allocator, untraced
    perf_ms=null
    if [ -n "$have_perf" ]; then
        perf record -q -e cpu-clock -F 4999 -o "$d/perf.data" -- "$@" >/dev/null 2>&1 &&
            perf_ms=$(python3 "$src/bench/cost/perf_share.py" "$d/perf.data" |
                python3 -c 'import json, sys; p = json.load(sys.stdin); print(p["allocator"] * p["samples"] / 4.999)') ||
            perf_ms=null
        $prep
    fi
    "$memkit" trace -q -o "$d/t" -- "$@" >/dev/null 2>&1
    traced=$("$memkit" report --format json "$d/t" 2>/dev/null |
        python3 -c 'import json, sys; d = json.load(sys.stdin); t, g = d["totals"], d["input"].get("glibc_heap"); print(json.dumps({"allocator_ns": t["allocator_ns"], "peak": t["max_allocated"], "heap_end": g["heap_rss_bytes"] + g["mmapped_bytes"] if g else None}))' ||
        echo null)
    "$memkit" replay --json --rounds "$rounds" --allocators glibc --top 0 "$d/t" \
        >"$d/r.json" 2>"$d/r.err" || { cat "$d/r.err"; echo null >"$d/r.json"; }
    echo "{\"name\": \"$name\", \"traced\": $traced, \"perf_ms\": $perf_ms, \"replay\": $(cat "$d/r.json")}" >>"$work/res"
    if [ "$name" = clang ]; then # the what-if of 10 findings, timed whole
        t0=$(date +%s.%N)
        "$memkit" replay --what-if=1,2,3,4,5,6,7,8,9,10 --top 0 "$d/t" >/dev/null 2>&1 &&
            python3 -c "import sys; print('%.2f' % (float(sys.argv[2]) - float(sys.argv[1])))" \
                "$t0" "$(date +%s.%N)" >"$work/whatif_s"
    fi
    rm -rf "$d"
    cd "$src" || exit 2
done

# ranking: tune on the program, replay on its trace
: >"$work/rank"
for threads in 1 2; do
    d=$work/rank$threads
    mkdir -p "$d"
    "$memkit" tune --json --runs "$rounds" -- "$build/memkit-churn" "$churn_n" "$threads" \
        >"$d/tune.json" 2>/dev/null || echo null >"$d/tune.json"
    "$memkit" trace -q -o "$d/t" -- "$build/memkit-churn" "$churn_n" "$threads" >/dev/null 2>&1
    "$memkit" replay --json --rounds "$rounds" --top 0 "$d/t" >"$d/replay.json" 2>/dev/null ||
        echo null >"$d/replay.json"
    echo "{\"name\": \"churn $threads thread(s)\", \"tune\": $(cat "$d/tune.json"), \"replay\": $(cat "$d/replay.json")}" >>"$work/rank"
    rm -rf "$d"
done

status=0
python3 - "$work/res" "$work/rank" "$rounds" "$scale" <<'PY' || status=1
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
ranks = [json.loads(l) for l in open(sys.argv[2])]
print("memkit replay against the traced run: medians of %s round(s), scale %s" % (sys.argv[3], sys.argv[4]))
print("CPU: %s" % next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                         if l.startswith("model name")), "unknown"))
print("%-12s %11s %11s %7s %10s %14s %8s %9s %9s %7s %8s %8s %7s" % (
    "program", "traced ms", "replay ms", "ratio", "calls", "replay calls/s", "verdict",
    "heap MB", "replay MB", "ratio", "verdict", "perf ms", "replay/perf"))
fails = 0
for r in rows:
    t, p = r["traced"], r["replay"]
    if not t or not p or not t["allocator_ns"]:
        print("%-12s n/a (traced %s, replay %s)" % (r["name"], bool(t), bool(p)))
        fails += 1
        continue
    g = p["allocators"][0]
    ratio = g["allocator_ns"] / t["allocator_ns"]
    own = (g["wall_ns"] - g["allocator_ns"]) / 1e9
    rate = p["calls"] / own if own > 0 else float("inf")
    ok = 0.67 <= ratio <= 1.5
    speed = ""
    if r["name"] == "churn2":
        speed = " speed %s" % ("met" if rate >= 10e6 else "NOT MET")
        ok = ok and rate >= 10e6
    fails += not ok
    # the heap at exit: the traced run's [heap] RSS and mmapped blocks
    # (glibc's view, one process's) beside the replay's RSS after its last call
    rss = "%9s %9s %7s %8s" % ("n/a", "", "", "")
    if t.get("heap_end") and g.get("end_rss") is not None and t["heap_end"] < 1 << 20:
        rss = "%9.3f %9.3f %7s %8s" % (t["heap_end"] / 1e6, g["end_rss"] / 1e6, "", "n/a")
    elif t.get("heap_end") and g.get("end_rss") is not None:
        rr = g["end_rss"] / t["heap_end"]
        rok = abs(rr - 1) <= 0.15
        fails += not rok
        rss = "%9.2f %9.2f %6.2fx %8s" % (t["heap_end"] / 1e6, g["end_rss"] / 1e6, rr,
                                          "met" if rok else "NOT MET")
    pm = r.get("perf_ms")
    vs_perf = "%8.1f %6.2fx" % (pm, g["allocator_ns"] / 1e6 / pm) if pm else "%8s %7s" % ("n/a", "")
    print("%-12s %11.1f %11.1f %6.2fx %10d %14.3g %8s %s %s%s" % (
        r["name"], t["allocator_ns"] / 1e6, g["allocator_ns"] / 1e6, ratio, p["calls"], rate,
        "met" if 0.67 <= ratio <= 1.5 else "NOT MET", rss, vs_perf, speed))
print("bars: replay/traced allocator time in [0.67, 1.5]; the heap at exit within 15%; the churn2")
print("replay's own work >= 10M calls/s (heap n/a: a run of several processes has no one heap,")
print("or one under 1 MiB at exit, where a page or two decides the ratio); perf ms: the untraced")
print("run's samples in glibc's allocator (bench/cost/perf_share.py), beside, no bar")
try:
    took = float(open(sys.argv[1].rsplit("/", 1)[0] + "/whatif_s").read())
    print("what-if of clang's findings 1-10 (5 rounds): %.2f s (bar <= 10 s): %s"
          % (took, "met" if took <= 10 else "NOT MET"))
    fails += took > 10
except (OSError, ValueError):
    print("what-if of clang's findings 1-10: n/a (fewer than 10 findings, or it failed)")
    fails += 1
print()
print("ranking: allocators memkit tune finds faster than glibc beyond noise, and memkit replay's verdict")
for r in ranks:
    tu, rp = r["tune"], r["replay"]
    if not tu or not rp:
        print("%-20s n/a" % r["name"])
        fails += 1
        continue
    tfast = [c["name"] for c in tu["candidates"] if c["status"] == "ok" and c["p_faster"] is not None
             and c["p_faster"] <= 0.05 and c["speedup"] > 1]
    rby = {a["name"]: a for a in rp["allocators"]}
    rfast = [a["name"] for a in rp["allocators"] if a["status"] == "ok" and a["p_faster"] is not None
             and a["p_faster"] <= 0.05 and a["speedup"] > 1]
    # the pairs tune tells apart: one's slowest run faster than the other's fastest
    tok = {c["name"]: c for c in tu["candidates"] if c["status"] == "ok"}
    pairs = [(a, b) for a in tok for b in tok
             if a != b and tok[a]["wall_s"]["max"] < tok[b]["wall_s"]["min"]
             and a in rby and b in rby and rby[a]["status"] == "ok" and rby[b]["status"] == "ok"]
    agree = [(a, b) for a, b in pairs if rby[a]["allocator_ns"] < rby[b]["allocator_ns"]]
    same = all(n in rfast for n in tfast) and len(agree) == len(pairs)
    fails += not same
    print("%-20s tune: %s, fastest %s | replay: %s, fastest %s | pairs tune tells apart: %d, "
          "replay orders %d the same%s | %s" % (
        r["name"], ",".join(tfast) or "none", tu["recommendation"]["fastest"],
        ",".join(rfast) or "none", rp["fastest"], len(pairs), len(agree),
        "".join(" (not %s < %s)" % ab for ab in pairs if ab not in agree),
        "met" if same else "NOT MET"))
print("bar: every allocator tune finds faster than glibc, replay finds faster too; every pair")
print("tune tells apart (all runs of one faster than all of the other's) replay orders the same")
print("(the same fastest is shown, not required: tune's top allocators are often within noise)")
sys.exit(1 if fails and float(sys.argv[4]) >= 1 else 0)
PY
echo
# the what-if against the fixed programs' traces
sh "$src/bench/replay/whatif.sh" "$build" 5 "$scale" || status=1 # 5 traces a side: cheap
exit $status
