#!/usr/bin/env python3
"""spawn_cost.py - what a short process pays to start under each environment.

    python3 bench/real/spawn_cost.py [--runs N] [--rounds R] \
        WAY=VAR=VALUE[,VAR=VALUE...] ... -- CMD ARGS...

Each round runs CMD N times (default 300) under each way in turn, each run
started with posix_spawn and waited for, and times the batch; prints each
way's median time per run over R rounds (default 7), and its excess over the
first way. A way is a name and the variables it adds to the environment,
e.g. `untraced=` and `traced=LD_PRELOAD=build/libmemkit-preload.so,
MEMKIT_TRACE_PREFIX=/dev/shm/t,MEMKIT_TRACE_SAMPLE=524288`. Traces written
under a prefix are removed after each batch (PREFIX.*.mkt), untimed.

A process tree's cost under the tracer is mostly what each of its processes
pays to load and start it: this measures that on a program that does almost
nothing else (/bin/true), one way against another, interleaved so that the
machine's drift falls on every way alike (docs/PERFORMANCE-LOG.md, "fifth
session").
"""
import argparse
import glob
import os
import statistics
import sys
import time


def parse_way(spec):
    name, _, assignments = spec.partition("=")
    env = {}
    for a in filter(None, assignments.split(",")):
        key, _, value = a.partition("=")
        env[key] = value
    return name, env


def batch(cmd, env, runs):
    start = time.perf_counter()
    for _ in range(runs):
        pid = os.posix_spawnp(cmd[0], cmd, env)
        os.waitpid(pid, 0)
    return (time.perf_counter() - start) / runs


def clear(env):
    prefix = env.get("MEMKIT_TRACE_PREFIX")
    if prefix:
        for f in glob.glob(prefix + ".*.mkt"):
            os.unlink(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    if "--" not in a.args:
        ap.error("give the ways, then -- and the command")
    cut = a.args.index("--")
    ways = [parse_way(w) for w in a.args[:cut]]
    cmd = a.args[cut + 1:]
    if not ways or not cmd:
        ap.error("give at least one way and a command")
    times = {name: [] for name, _ in ways}
    for _ in range(a.rounds):
        for name, extra in ways:
            env = dict(os.environ, **extra)
            times[name].append(batch(cmd, env, a.runs))
            clear(env)
    base = statistics.median(times[ways[0][0]])
    print(f"{a.runs} runs x {a.rounds} rounds of {' '.join(cmd)}: median per run")
    for name, _ in ways:
        m = statistics.median(times[name])
        print(f"{name:16s} {m * 1e6:9.1f} us   {(m - base) * 1e6:+9.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
