#!/usr/bin/env python3
"""verdict.py RUN.jsonl... - the bars of `make bench-patterns` from `memkit bench
patterns --json` runs: for each pattern and allocator the median over runs of the
run's median round time, its RSS after the round, and each libmemkit allocator's
ratios to glibc and mimalloc (their time over its: >= 1.00 is the bar). The
verdict column says which bars are met."""
import json
import statistics
import sys


def load(paths):
    """{pattern: {allocator: [result per run]}}"""
    data = {}
    for path in paths:
        with open(path) as f:
            for line in f:
                c = json.loads(line)
                for r in c["results"]:
                    if r["status"] == "ok":
                        data.setdefault(c["workload"], {}).setdefault(r["allocator"], []).append(r)
    return data


def med(results, key):
    return statistics.median(r[key] for r in results)


def main(paths):
    data = load(paths)
    print("\n| pattern | allocator | time ms | vs glibc | vs mimalloc | peak / final RSS MiB | verdict |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for pattern, by in data.items():
        g = med(by["glibc"], "time_s") if "glibc" in by else None
        m = med(by["mimalloc"], "time_s") if "mimalloc" in by else None
        for alloc, rs in by.items():
            if not alloc.startswith("mk_"):
                continue
            t = med(rs, "time_s")
            vg = g / t if g else float("nan")
            vm = m / t if m else float("nan")
            ok = vg >= 1.0 and vm >= 1.0
            print("| %s | %s | %.1f | %.2fx | %.2fx | %.0f / %.0f | %s |" % (
                pattern, alloc, t * 1e3, vg, vm, med(rs, "peak_rss_bytes") / 2**20,
                med(rs, "final_rss_bytes") / 2**20, "met" if ok else "not met"))
    if "burst-idle" in data:
        by = data["burst-idle"]
        base = med(by["glibc"], "final_rss_bytes")
        print("\n| burst-idle: RSS after the idle period | MiB | / glibc's | verdict |")
        print("| --- | --- | --- | --- |")
        for alloc, rs in by.items():
            rss = med(rs, "final_rss_bytes")
            mine = alloc.startswith("mk_")
            ok = rss <= 2 * base
            print("| %s | %.1f | %.2f | %s |" % (alloc, rss / 2**20, rss / base,
                                                 ("met" if ok else "not met") if mine else "-"))
    print("\n(%d runs; medians over runs of each run's median round; vs X: X's time over "
          "the allocator's, bar >= 1.00x)" % len(paths))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
