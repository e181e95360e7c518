#!/usr/bin/env python3
"""ab_tree.py - CPU time of a program's whole process tree under two tracer builds.

    python3 bench/real/ab_tree.py [--rounds N] [--mode full|sample|nosample]
        [--cwd DIR] [--prep 'SHELL COMMAND'] [--floor FLOOR.so] [--old-env VAR=VALUE]...
        OLD.so NEW.so -- CMD ARGS...

Each round runs CMD untraced, under the forwarding-only floor (if given), under
OLD.so and under NEW.so (each a libmemkit-preload.so, set by hand as `memkit
trace -q` would: the run's prefix, --depth 32 or --sample 512K / 1G), one after
the other, and measures the wall time and the CPU time (user + system) of the
whole tree with getrusage(RUSAGE_CHILDREN). Prints the medians and each way's
excess over untraced. CPU time of the tree moves less than wall time on a
shared machine, and counts what every child pays (cmake's configure: 68
processes), which a profile of the parent alone misses. PREP runs (in DIR)
before every run, untimed: `rm -rf b` for cmake. --old-env sets a variable
for OLD's runs alone: one build against itself with a setting changed
(`--old-env MEMKIT_TRACE_TIMES=0 L.so L.so`: the cost of timing).
"""
import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--mode", choices=["full", "sample", "nosample"], default="full")
    ap.add_argument("--cwd", default=".")
    ap.add_argument("--prep", default="")
    ap.add_argument("--floor", default="")
    ap.add_argument("--old-env", action="append", default=[])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    if not cmd:
        sys.exit("ab_tree.py: no command (after --)")
    for lib in [a.old, a.new] + ([a.floor] if a.floor else []):
        if not os.path.isfile(lib):
            sys.exit("ab_tree.py: no such library: " + lib)
    sample = {"full": "0", "sample": "524288", "nosample": "1073741824"}[a.mode]
    scratch = tempfile.mkdtemp(prefix="ab_tree.")
    ways = [("untraced", None)] + ([("floor", a.floor)] if a.floor else [])
    ways += [("old", a.old), ("new", a.new)]
    wall = {w: [] for w, _ in ways}
    cpu = {w: [] for w, _ in ways}
    try:
        for _ in range(a.rounds):
            for way, lib in ways:
                if a.prep:
                    subprocess.run(a.prep, shell=True, cwd=a.cwd, check=False)
                for f in os.listdir(scratch):
                    os.unlink(os.path.join(scratch, f))
                env = dict(os.environ)
                if lib:
                    env["LD_PRELOAD"] = os.path.abspath(lib)
                    if way != "floor":
                        env.update(MEMKIT_TRACE_PREFIX=os.path.join(scratch, "t"),
                                   MEMKIT_TRACE_RUN="1", MEMKIT_TRACE_DEPTH="32",
                                   MEMKIT_TRACE_SAMPLE=sample)
                    if way == "old":
                        env.update(v.split("=", 1) for v in a.old_env)
                r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                t0 = time.perf_counter()
                subprocess.run(cmd, cwd=a.cwd, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, check=False)
                t1 = time.perf_counter()
                r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                wall[way].append((t1 - t0) * 1000)
                cpu[way].append((r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) * 1000)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    med = {w: (statistics.median(wall[w]), statistics.median(cpu[w])) for w, _ in ways}
    print("%s, %d rounds, medians (ms)" % (a.mode, a.rounds))
    for way, _ in ways:
        line = "%-9s wall %7.0f  cpu %7.0f" % (way, med[way][0], med[way][1])
        if way != "untraced":
            line += "   over untraced: wall %6.0f  cpu %6.0f" % (
                med[way][0] - med["untraced"][0], med[way][1] - med["untraced"][1])
        print(line)


if __name__ == "__main__":
    main()
