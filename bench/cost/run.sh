#!/bin/sh
# run.sh BUILD [ROUNDS] [SCALE] - how much of a run the allocator takes,
# memkit's measurement beside perf's: `make bench-cost`.
#
# For each program of bench-real's corpus (corpus.sh) and perl, sqlite3 and
# jq (outside_programs.sh), each round runs:
#   - the program untraced under `perf record -e cpu-clock` (no memkit):
#     perf's share of its samples in glibc's allocator functions and the C++
#     operators new and delete (perf_share.py), and in the kernel;
#   - `memkit trace -q`, `memkit trace -q --no-times` and `memkit trace -q
#     --summary-only --cpu-samples`, in turn (the reverse order every other round), the
#     CPU time of each tree;
# then `memkit report --format json` on the timed and the summary run's
# traces: their allocator_share (allocator_ns over cpu_ns, summed over the
# processes; a summary measures by CPU samples alone, n/a without them).
# Round 1 also records perf's call graph (--call-graph dwarf): its top 3
# callers of the allocator must be among memkit's top 5 calling functions
# (the report's "callers"). Printed per program, medians over ROUNDS
# (default 3): perf's allocator and kernel shares, memkit's share, the
# bar's bounds (at least 0.75 x perf's allocator share, at most perf's
# allocator share + its kernel share + 3 points), the allocator's time by
# each in ms, the cost of timing (trace -q over trace -q --no-times, the
# median of the rounds' ratios; bar 1.10) and the verdict on all three. SCALE (default 1)
# shrinks the corpus's inputs (the smoke test's 0.01 checks that the script
# runs, not the bars).
set -u
build=$(cd "${1:-build}" && pwd)
rounds=${2:-3}
scale=${3:-1}
memkit=$build/memkit
src=$(cd "$(dirname "$0")/../.." && pwd)
bench=bench-cost
for tool in perf; do
    command -v "$tool" >/dev/null 2>&1 || {
        echo "SKIP: $bench: $tool is missing (make deps installs it)"
        exit 77
    }
done
[ -x "$memkit" ] || { echo "$bench: no $memkit (make build)"; exit 2; }
if ! perf record -q -e cpu-clock -o /dev/null true >/dev/null 2>&1; then
    echo "SKIP: $bench: perf cannot sample here (kernel.perf_event_paranoid is" \
        "$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null); 2 or less lets a user profile own processes)"
    exit 77
fi

. "$src/bench/real/corpus.sh"
dir=$work/outside
mkdir -p "$dir"
. "$src/bench/real/outside_programs.sh"
export MEMKIT_CACHE_DIR="$work/cache"
# perf script unwinds a sample's stack copy with DWARF: minutes for clang's
# libLLVM at 4999 Hz. A smoke run (SCALE under 1) samples the graph thinly.
graph_hz=$(awk -v s="$scale" 'BEGIN { print s < 1 ? 49 : 4999 }')

cpu() { # cpu OUT CMD...: the CPU seconds (user + system) of CMD's whole tree into
    # OUT: on a shared machine they move less than wall time
    out=$1
    shift
    python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
open(sys.argv[1], "w").write("%.6f\n" % (r.ru_utime + r.ru_stime))' "$out" "$@"
}

: >"$work/res"
r=1
while [ "$r" -le "$rounds" ]; do
    # BENCH_REAL_PROGRAMS (corpus.sh) replaces both lists
    { corpus; [ -n "${BENCH_REAL_PROGRAMS:-}" ] || outside_programs; } |
        while IFS='|' read -r name pdir cmd prep; do
        d=$work/tr/$name
        rm -rf "$d"
        mkdir -p "$d"
        cd "$pdir" || exit 2
        # shellcheck disable=SC2086 # the command's words
        set -- $cmd
        $prep
        perf record -q -e cpu-clock -F 4999 -o "$d/perf.data" -- "$@" >/dev/null 2>&1
        perf_json=$(python3 "$src/bench/cost/perf_share.py" "$d/perf.data") || perf_json=null
        callers=null
        if [ "$r" = 1 ]; then # the call graph, once: perf's callers of the allocator
            $prep
            perf record -q -e cpu-clock -F "$graph_hz" --call-graph dwarf -o "$d/perf-g.data" -- "$@" \
                >/dev/null 2>&1
            callers=$(python3 "$src/bench/cost/perf_share.py" --callers "$d/perf-g.data") ||
                callers=null
        fi
        for way in $(if [ $((r % 2)) = 1 ]; then echo t n s; else echo s n t; fi); do
            $prep
            case $way in
            t) cpu "$d/t.time" "$memkit" trace -q -o "$d/t" -- "$@" ;;
            n) cpu "$d/n.time" "$memkit" trace -q --no-times -o "$d/n" -- "$@" ;;
            s) cpu "$d/s.time" "$memkit" trace -q --summary-only --cpu-samples -o "$d/s" -- "$@" ;;
            esac
        done
        mk_json=$("$memkit" report --format json "$d"/t.*.mkt 2>/dev/null |
            python3 -c 'import json, sys; d = json.load(sys.stdin); t = d["totals"]; o = {k: t.get(k) for k in ("allocator_ns", "cpu_ns", "allocator_share", "allocator_slow_ns", "allocator_time_from", "tracer_ns")}; o["callers"] = [c["function"] for c in d.get("callers", [])[:5]]; print(json.dumps(o))' ||
            echo null)
        sum_json=$("$memkit" report --format json "$d"/s.*.mkt 2>/dev/null |
            python3 -c 'import json, sys; t = json.load(sys.stdin)["totals"]; print(json.dumps({k: t.get(k) for k in ("allocator_ns", "allocator_share", "allocator_time_from")}))' ||
            echo null)
        echo "{\"name\": \"$name\", \"round\": $r, \"perf\": $perf_json, \"memkit\": $mk_json, \"summary\": $sum_json, \"perf_callers\": $callers," \
            "\"timed_s\": $(cat "$d/t.time"), \"untimed_s\": $(cat "$d/n.time")}" >>"$work/res"
        rm -rf "$d"
        cd "$src" || exit 2
    done
    r=$((r + 1))
done

python3 - "$work/res" "$rounds" "$scale" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
names = []
for r in rows:
    if r["name"] not in names:
        names.append(r["name"])
def med(v):
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None
print("allocator share, memkit beside perf: medians of %s round(s), scale %s" % (sys.argv[2], sys.argv[3]))
print("CPU: %s" % next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                         if l.startswith("model name")), "unknown"))
print("%-12s %8s %8s %8s %8s %8s %8s %8s %9s %9s %7s %8s" % ("program", "perf", "kernel", "memkit",
      "summary", "low", "high", "share", "perf ms", "memkit ms", "cost", "verdict"))
fails = 0
ranking = {}
for n in names:
    rs = [r for r in rows if r["name"] == n]
    pa = med([r["perf"]["allocator"] if r["perf"] else None for r in rs])
    pk = med([r["perf"]["kernel"] if r["perf"] else None for r in rs])
    ms = med([r["memkit"]["allocator_share"] if r["memkit"] else None for r in rs])
    ss = med([r["summary"]["allocator_share"] if r.get("summary") else None for r in rs])
    cost = med([r["timed_s"] / r["untimed_s"] if r["untimed_s"] > 0 else None for r in rs])
    # the allocator's time itself: perf's samples at 4999 Hz, memkit's ns
    pms = med([r["perf"]["allocator"] * r["perf"]["samples"] / 4.999 if r["perf"] else None
               for r in rs])
    mms = med([r["memkit"]["allocator_ns"] / 1e6 if r["memkit"] and r["memkit"]["allocator_ns"]
               is not None else None for r in rs])
    if pa is None or ms is None:
        print("%-12s %8s %8s %8s" % (n, "n/a" if pa is None else "%.1f%%" % (100 * pa),
              "n/a" if pk is None else "%.1f%%" % (100 * pk),
              "n/a" if ms is None else "%.1f%%" % (100 * ms)))
        fails += 1
        continue
    # ranking: perf's top 3 callers (round 1) among memkit's top 5 by time
    first = next((r for r in rs if r["round"] == 1), None)
    def norm(f):
        return f.split("(")[0].strip()
    pc = ["%s (%d)" % (norm(c), k) for c, k in (first["perf_callers"] or [])[:3]] if first else []
    mc = [norm(c) for c in (first["memkit"] or {}).get("callers", [])] if first else []
    missing = [c for c in pc if c.rsplit(" (", 1)[0] not in mc]
    ranking[n] = (pc, mc, missing)
    lo, hi = 0.75 * pa, pa + pk + 0.03
    share_ok = lo <= ms <= hi
    # --summary-only --cpu-samples beside it, no bar of its own: * when outside
    sum_txt = "n/a" if ss is None else "%.1f%%%s" % (100 * ss, "" if lo <= ss <= hi else "*")
    cost_ok = cost is not None and cost <= 1.10
    rank_ok = not missing
    fails += not (share_ok and cost_ok and rank_ok)
    print("%-12s %7.1f%% %7.1f%% %7.1f%% %8s %7.1f%% %7.1f%% %8s %9.1f %9.1f %6.2fx %8s" % (
        n, 100 * pa, 100 * pk, 100 * ms, sum_txt,
        100 * lo, 100 * hi, "met" if share_ok else "NOT met",
        pms, mms or 0, cost, "met" if share_ok and cost_ok and rank_ok else "NOT met"))
print("bars: memkit's share (trace -q) in [0.75 x perf, perf + kernel + 3 points] (summary:"
      " --summary-only --cpu-samples, * outside them, no bar); cost (trace -q over"
      " trace -q --no-times, CPU) <= 1.10x; perf's top 3 callers of the allocator among"
      " memkit's top 5 calling functions by time")
print()
print("ranking (round 1): perf's top 3 callers (samples, 10 or more) | memkit's top 5 | missing")
for n, (pc, mc, missing) in ranking.items():
    print("%-12s %s | %s | %s" % (n, ", ".join(pc) or "-", ", ".join(mc) or "-",
                                  ", ".join(missing) or "none"))
print("programs missing a bar: %d of %d" % (fails, len(names)))
PY
