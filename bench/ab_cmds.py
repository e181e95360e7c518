#!/usr/bin/env python3
"""ab_cmds.py - shell commands timed side by side, interleaved.

    python3 bench/ab_cmds.py ROUNDS 'COMMAND A' 'COMMAND B' [...]

Each round runs every command once, in the given order on even rounds and in
reverse on odd ones (so a machine that speeds up or slows down within a round
favours neither side), output discarded. Prints, per command, the median wall
time with its range, and the median user and system CPU time (getrusage of the
children). This machine's speed drifts by tens of percent over minutes: medians
of interleaved runs are the figures to compare, never two separate runs.

Example: two builds' reports of one trace
    python3 bench/ab_cmds.py 8 'old/memkit report T' 'build/memkit report T'
"""
import resource
import statistics
import subprocess
import sys
import time


def run_once(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    subprocess.run(cmd, shell=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=False)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (wall, after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime)


def main():
    if len(sys.argv) < 3 or not sys.argv[1].isdigit() or int(sys.argv[1]) < 1:
        sys.exit("usage: ab_cmds.py ROUNDS 'COMMAND A' ['COMMAND B' ...]")
    rounds, cmds = int(sys.argv[1]), sys.argv[2:]
    times = {c: [] for c in cmds}
    for r in range(rounds):
        for c in (cmds if r % 2 == 0 else cmds[::-1]):
            times[c].append(run_once(c))
    for c in cmds:
        wall = [t[0] for t in times[c]]
        user = statistics.median(t[1] for t in times[c])
        sys_ = statistics.median(t[2] for t in times[c])
        print("wall %.3f s [%.3f-%.3f]  user %.3f  sys %.3f  %s" %
              (statistics.median(wall), min(wall), max(wall), user, sys_, c))


if __name__ == "__main__":
    main()
