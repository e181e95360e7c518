#!/bin/sh
# whatif.sh BUILD [ROUNDS] [SCALE] - memkit replay --what-if against the
# truth, part of `make bench-replay`.
#
# Three programs written twice, where the fix is only the allocator (sized so
# that each traced run's allocator time is tens of milliseconds: the tracer
# times most fast calls one in 64, and a run of a few milliseconds moved by
# 0.64-1.30x between runs of one build on this machine): the
# demo's transfer_before/transfer_after, malloc nodes against mk_pool nodes,
# per-request mallocs against an MK_SCOPE frame (whatif_fixes.c). Each side
# is traced (`memkit trace -q`, times on) ROUNDS times (default 5); the
# truth is the median allocator time of the first side's traces less the
# fixed side's. The prediction is the what-if's saving of the findings (those
# the report shows, together when there are several) on a trace of its own
# of the first side (replay medians of ROUNDS rounds): no trace is both the
# prediction's and the truth's. Bar: within 30%.
set -u
build=$(cd "${1:-build}" && pwd)
rounds=${2:-5}
scale=${3:-1}
memkit=$build/memkit
bench=bench-replay-whatif
[ -x "$memkit" ] || { echo "$bench: no $memkit (make build)"; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/$bench.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
n=$(python3 -c "print(max(200, int(20000 * $scale)))")

: >"$work/res"
for row in "demo|$build/memkit-transfer before $((n * 5))|$build/memkit-transfer after $((n * 5))" \
    "pool nodes|$build/memkit-whatif-fixes nodes-malloc $((n * 5))|$build/memkit-whatif-fixes nodes-pool $((n * 5))" \
    "scope frame|$build/memkit-whatif-fixes requests-malloc $((n * 25))|$build/memkit-whatif-fixes requests-scope $((n * 25))"; do
    name=${row%%|*}
    rest=${row#*|}
    before=${rest%%|*}
    after=${rest#*|}
    # shellcheck disable=SC2086 # the commands' words
    "$memkit" trace -q -o "$work/w" -- $before >/dev/null 2>&1
    "$memkit" replay --what-if --json --top 0 --rounds "$rounds" "$work/w" \
        >"$work/w.json" 2>"$work/w.err" || { cat "$work/w.err"; echo null >"$work/w.json"; }
    for side in b a; do
        cmd=$before
        [ $side = a ] && cmd=$after
        echo "[" >"$work/$side.json"
        i=0
        while [ $i -lt "$rounds" ]; do
            # shellcheck disable=SC2086
            "$memkit" trace -q -o "$work/t" -- $cmd >/dev/null 2>&1
            [ $i -gt 0 ] && echo "," >>"$work/$side.json"
            "$memkit" report --format json "$work/t" 2>/dev/null |
                python3 -c 'import json, sys; print(json.load(sys.stdin)["totals"]["allocator_ns"] or 0)' \
                >>"$work/$side.json" || echo null >>"$work/$side.json"
            rm -f "$work"/t.*
            i=$((i + 1))
        done
        echo "]" >>"$work/$side.json"
    done
    echo "{\"name\": \"$name\", \"before\": $(tr -d "\n" <"$work/b.json"), \"after\": $(tr -d "\n" <"$work/a.json"), \"what_if\": $(tr -d "\n" <"$work/w.json")}" >>"$work/res"
    rm -f "$work"/w.* "$work"/b.* "$work"/a.*
done

python3 - "$work/res" "$rounds" "$scale" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("memkit replay --what-if against the fixed program's trace: medians of %s round(s), scale %s"
      % (sys.argv[2], sys.argv[3]))
print("CPU: %s" % next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                         if l.startswith("model name")), "unknown"))
print("%-12s %11s %11s %11s %11s %7s %8s" % ("program", "before ms", "after ms", "truth ms",
                                            "what-if ms", "ratio", "verdict"))
fails = 0
for r in rows:
    w = r["what_if"]
    if None in r["before"] + r["after"] or not w:
        print("%-12s n/a" % r["name"])
        fails += 1
        continue
    b, a = statistics.median(r["before"]), statistics.median(r["after"])
    truth = b - a
    tried = w["what_if_all"] or (w["what_if"][0] if w["what_if"] else None)
    if not tried or tried["status"] != "ok":
        print("%-12s no what-if" % r["name"])
        fails += 1
        continue
    ratio = tried["saving_ns"] / truth if truth > 0 else float("inf")
    ok = 0.7 <= ratio <= 1.3
    fails += not ok
    print("%-12s %11.2f %11.3f %11.2f %11.2f %6.2fx %8s   (raw replay %.2f ms)" % (
        r["name"], b / 1e6, a / 1e6, truth / 1e6, tried["saving_ns"] / 1e6, ratio,
        "met" if ok else "NOT MET", tried["replay_saving_ns"] / 1e6))
print("bar: the what-if's saving within 30% of the truth (median traced allocator time of")
print("before less after's, from traces the what-if did not see)")
sys.exit(1 if fails and float(sys.argv[3]) >= 1 else 0)
PY
