#!/bin/sh
# run.sh BUILD [ROUNDS] [SCALE] - memkit trace --sample on real programs and
# on the churn loop: `make bench-sample` (docs/PERFORMANCE.md).
#
# Overhead: each round runs every program untraced, under the forwarding-
# only floor (libmemkit-floor.so: malloc/free forwarded to glibc, a thread-
# local byte budget decremented, nothing else), and under `memkit trace -q
# --sample 512K` and `--sample 64K`, one after the other; wall times and peak
# RSS are medians over ROUNDS rounds (default 3). The programs are the real-
# program corpus of bench/real (clang, python json, git log, curl, cmake) and
# the churn loop (memkit-churn, 20M iterations, 1 and 2 threads).
# Accuracy: the churn loop and the clang compile traced exactly and sampled
# at 64K with seeds 1-3: each of the exact trace's top 10 sites by bytes
# against its estimate, the top 5's order, the total.
# SCALE (default 1) shrinks the inputs (the smoke test runs 0.01).
# BENCH_SAMPLE_ONLY="clang churn-1t" runs only the programs named.
set -u
build=$(cd "${1:-build}" && pwd)
rounds=${2:-3}
scale=${3:-1}
memkit=$build/memkit
floor=$build/libmemkit-floor.so
src=$(cd "$(dirname "$0")/../.." && pwd)
bench=bench-sample
[ -x "$memkit" ] && [ -f "$floor" ] || { echo "$bench: build first (make build)"; exit 2; }

# The corpus's tools, the scratch directory, the inputs, the local server and
# corpus().
. "$src/bench/real/corpus.sh"

churn_iters=$(awk -v s="$scale" 'BEGIN { n = int(20000000 * s); print n < 1000 ? 1000 : n }')
{
    corpus | grep -v '^churn|'
    echo "churn-1t|$work|$build/memkit-churn $churn_iters 1|true"
    echo "churn-2t|$work|$build/memkit-churn $churn_iters 2|true"
} | if [ -n "${BENCH_SAMPLE_ONLY:-}" ]; then
    grep -E "^($(echo "$BENCH_SAMPLE_ONLY" | tr ' ' '|'))\|"
else
    cat
fi >"$work/programs"

/usr/bin/python3 - "$work" "$memkit" "$floor" "$rounds" "$scale" <<'PY'
import json, os, platform, resource, shlex, statistics, subprocess, sys, time

work, memkit, floor, rounds, scale = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
progs = [l.rstrip("\n").split("|") for l in open(f"{work}/programs") if l.strip()]

def run(argv, cwd, prep, env=None):
    """wall seconds and peak RSS (KB, the largest process of the run)"""
    subprocess.run(prep, shell=True, cwd=cwd)
    t = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os.chdir(cwd)
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.execvpe(argv[0], argv, env or os.environ)
    _, status, ru = os.wait4(pid, 0)
    return time.perf_counter() - t, ru.ru_maxrss

def traces(prefix):
    d = os.path.dirname(prefix)
    return [os.path.join(d, f) for f in os.listdir(d)
            if f.startswith(os.path.basename(prefix) + ".") and f.endswith(".mkt")]

def clear(prefix):
    for f in traces(prefix):
        os.unlink(f)

ways = ["untraced", "floor", "512K", "64K"]
res = {}
sizes = {}
for r in range(rounds):
    for name, cwd, cmd, prep in progs:
        argv = shlex.split(cmd)
        for way in ways:
            prefix = f"{work}/t.{name}.{way}"
            clear(prefix)
            if way == "untraced":
                m = run(argv, cwd, prep)
            elif way == "floor":
                m = run(argv, cwd, prep, dict(os.environ, LD_PRELOAD=floor))
            else:
                m = run([memkit, "trace", "-q", "--sample", way, "-o", prefix, "--"] + argv, cwd, prep)
                sizes[(name, way)] = sum(os.path.getsize(f) for f in traces(prefix))
            res.setdefault((name, way), []).append(m)

cpu = "?"
for l in open("/proc/cpuinfo"):
    if l.startswith("model name"):
        cpu = l.split(":", 1)[1].strip()
        break
print(f"memkit trace --sample: medians of {rounds} round(s), scale {scale}, {cpu}, {os.cpu_count()} CPUs")
print("%-12s %9s %9s %9s %9s %7s %7s %7s %9s %9s %9s" % (
    "program", "untraced", "floor", "512K", "64K", "floor/u", "512K/u", "64K/u",
    "RSS+512K", "trace512K", "trace64K"))
med = lambda k, i: statistics.median(x[i] for x in res[k])
for name, *_ in progs:
    u = med((name, "untraced"), 0)
    f, a, b = (med((name, w), 0) for w in ("floor", "512K", "64K"))
    rss = med((name, "512K"), 1) - med((name, "untraced"), 1)
    print("%-12s %8.3fs %8.3fs %8.3fs %8.3fs %7.3f %7.3f %7.3f %8.1fM %8.2fM %8.2fM" % (
        name, u, f, a, b, f / u, a / u, b / u, rss / 1024,
        sizes[(name, "512K")] / 1e6, sizes[(name, "64K")] / 1e6))
print("bars: 512K/u <= 1.03 on the real programs, <= 1.15 on churn; 64K/u <= 1.25 on churn;")
print("RSS+512K (peak RSS over untraced) <= 16 MB")
print()

# ---- accuracy ----
def report(paths):
    out = subprocess.run([memkit, "report", "--format", "json"] + paths,
                         capture_output=True, text=True).stdout
    d = json.loads(out)
    sites = {}
    for s in d["sites"]:
        key = tuple((f["function"], f["file"], f["line"], f["module"], f["offset"])
                    for f in s["frames"])
        c, b = sites.get(key, (0, 0))
        sites[key] = (c + s["calls"], b + s["bytes"])
    return d, sites

acc = [p for p in progs if p[0] in ("clang", "churn-1t")]
for name, cwd, cmd, prep in acc:
    argv = shlex.split(cmd)
    exact = f"{work}/a.{name}.exact"
    clear(exact)
    run([memkit, "trace", "-q", "-o", exact, "--"] + argv, cwd, prep)
    de, se = report(traces(exact))
    top = sorted(se.items(), key=lambda kv: -kv[1][1])[:10]
    print(f"accuracy, {name}: exact bytes of its top 10 sites against --sample 64K (seeds 1-3)")
    print("%4s %14s %10s %10s %10s %8s  %s" % ("site", "exact bytes", "seed 1", "seed 2", "seed 3",
                                           "exp. SE", "innermost frame"))
    errs = {k: [] for k, _ in top}
    orders, totals = [], []
    for seed in (1, 2, 3):
        sp = f"{work}/a.{name}.s{seed}"
        clear(sp)
        run([memkit, "trace", "-q", "--sample", "64K", "-o", sp, "--"] + argv, cwd, prep,
            dict(os.environ, MEMKIT_SAMPLE_SEED=str(seed)))
        ds, ss = report(traces(sp))
        for k, (c, b) in top:
            errs[k].append(ss.get(k, (0, 0))[1] / b - 1 if b else 0)
        est_top5 = [k for k, _ in sorted(((k, ss.get(k, (0, 0))[1]) for k, _ in top), key=lambda kv: -kv[1])[:5]]
        orders.append(est_top5 == [k for k, _ in top[:5]])
        # the sites' estimates summed (the exact total is in the SAMPLES record)
        est_total = sum(b for _, b in ss.values())
        totals.append(est_total / sum(b for _, b in se.values()) - 1 if se else 0)
    # The relative standard error one can expect of a site of b bytes: a
    # Poisson sample of rate 1/mean over its bytes, about b / mean samples,
    # gives sqrt(mean / b) for allocations far smaller than the mean (less
    # for larger ones, which are sampled nearly surely).
    worst = worst_resolvable = 0
    for i, (k, (c, b)) in enumerate(top):
        e = max(abs(e) for e in errs[k])
        worst = max(worst, e)
        se = (65536 / b) ** 0.5 if b else 1
        if se <= 0.05:  # a 10% bar two standard errors wide
            worst_resolvable = max(worst_resolvable, e)
        f0 = k[0] if k else (None,) * 5
        where = ("%s (%s:%s)" % f0[:3] if f0[0] and f0[1] else
                 "%s (%s)" % (f0[0], f0[3]) if f0[0] else "%s+0x%x" % (f0[3], f0[4]))
        print("%4d %14d %+9.1f%% %+9.1f%% %+9.1f%% %7.1f%%  %s" % (
            (i + 1, b) + tuple(100 * e for e in errs[k]) + (100 * se, where)))
    print(f"worst error {100 * worst_resolvable:.1f}% on the sites whose expected SE is <= 5% "
          f"(so that 10% is 2 SE); worst of all {100 * worst:.1f}%")
    print(f"worst site error {100 * worst:.1f}% (bar 10%); top 5 in the exact order: "
          f"{sum(orders)} of 3 seeds; sum of the sites' estimates off by at most "
          f"{max(abs(t) for t in totals) * 100:.2f}% (bar 2%; the total by kind is exact)")
    print()
PY
