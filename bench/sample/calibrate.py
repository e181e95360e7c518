#!/usr/bin/env python3
"""calibrate.py BUILD [SEEDS] - are --sample's standard errors honest?

memkit-sites (ten sites of known sizes and counts, bench/sample/sites.c)
and a clang-14 -O2 compile of one of this project's files, each traced
exactly once and then SEEDS times (default 20) at --sample 64K with seeds
1..SEEDS. For the exact trace's top 10 sites by bytes, each (site, seed)
pair counts as covered when the exact bytes (and, apart, the exact calls)
lie within the sampled report's estimate +- 2 standard errors. The bar:
90-99% of the pairs covered, and in each seed's top 5 no two sites in the
wrong order where their exact bytes differ by more than 4 standard errors
(of their difference, from the sampled run's own errors).
"""
import json
import os
import subprocess
import sys
import tempfile

build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
seeds = int(sys.argv[2]) if len(sys.argv) > 2 else 20
memkit = os.path.join(build, "memkit")
src = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
work = tempfile.mkdtemp()


def sites_of(prefix):
    paths = sorted(os.path.join(work, f) for f in os.listdir(work)
                   if f.startswith(os.path.basename(prefix) + ".") and f.endswith(".mkt"))
    out = subprocess.run([memkit, "report", "--format", "json"] + paths,
                         capture_output=True, text=True, check=True).stdout
    sites = {}
    for s in json.loads(out)["sites"]:
        if not s["frames"]:
            continue
        key = tuple((f["function"], f["file"], f["line"], f["module"], f["offset"])
                    for f in s["frames"])
        sites[key] = s
    return sites


def trace(name, argv, extra, env=None):
    prefix = os.path.join(work, name)
    subprocess.run([memkit, "trace", "-q", "-o", prefix] + extra + ["--"] + argv,
                   cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True)
    return sites_of(prefix)


programs = [("memkit-sites", [os.path.join(build, "memkit-sites")])]
programs.append(("clang", ["clang-14", "-O2", "-c", os.path.join(src, "src/analyze/profile.c"),
                           "-I" + os.path.join(src, "src"), "-I" + os.path.join(src, "include"),
                           "-o", os.path.join(work, "profile.o")]))
verdicts = []
for name, argv in programs:
    exact = trace(name + "-exact", argv, [])
    top = sorted(exact.items(), key=lambda kv: -kv[1]["bytes"])[:10]
    pairs = covered_b = covered_c = 0
    per = {}
    misordered = ordered_pairs = 0
    for seed in range(1, seeds + 1):
        env = dict(os.environ, MEMKIT_SAMPLE_SEED=str(seed))
        est = trace("%s-s%d" % (name, seed), argv, ["--sample", "64K"], env)
        got = []
        for key, s in top:
            e = est.get(key)
            b, bse = (e["bytes"], e["bytes_se"]) if e else (0, 0.0)
            c, cse = (e["calls"], e["calls_se"]) if e else (0, 0.0)
            pairs += 1
            covered_b += abs(b - s["bytes"]) <= 2 * bse
            per.setdefault(key, []).append((b, bse, abs(b - s["bytes"]) <= 2 * bse))
            covered_c += abs(c - s["calls"]) <= 2 * cse
            got.append((s["bytes"], b, bse))
        for i in range(5):
            for j in range(i + 1, 5):
                (xi, ei, si), (xj, ej, sj) = got[i], got[j]
                if xi - xj > 4 * (si * si + sj * sj) ** 0.5:
                    ordered_pairs += 1
                    misordered += ei <= ej
    share_b, share_c = covered_b / pairs, covered_c / pairs
    ok = 0.90 <= share_b <= 0.99 and 0.90 <= share_c <= 0.99 and misordered == 0
    verdicts.append(ok)
    print("%-13s %3d (site, seed) pairs: bytes within 2 SE %5.1f%%, calls %5.1f%% (bar 90-99%%); "
          "top-5 pairs apart by > 4 SE in the wrong order: %d of %d: %s" % (
              name, pairs, 100 * share_b, 100 * share_c, misordered, ordered_pairs,
              "met" if ok else "not met"))
    for key, s in top:
        f = key[0]
        inside = sum(x[2] for x in per[key])
        print("    %12d bytes %9d calls %3d/%d within 2 SE  %s" % (
            s["bytes"], s["calls"], inside, len(per[key]), "%s (%s:%s)" % f[:3] if f[0] else f[3]))
subprocess.run(["rm", "-rf", work])
sys.exit(0 if all(verdicts) else 1)
