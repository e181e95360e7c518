#!/usr/bin/env python3
"""layers.py OBJECT.o... - fails when object files depend on each other in a
cycle: A depends on B when A leaves undefined a symbol B defines (nm). Each
part of src/ is layered (docs/ARCHITECTURE.md): a cycle means a lower file
calls back up, which a callback passed down should do instead. Prints every
cycle (a strongly connected set of files) with the symbols that close it.

The tracer's files (src/preload/) are also checked against their layers,
TRACER_LAYERS below: a file may call only files of lower layers, or of its
own layer where that layer's files may call each other (the hooks call the
functions they define, as a program does; the core's parts are one). A
service that calls another service, or anything that calls up, fails, and
so does a tracer file that is in no layer."""
import collections
import os
import subprocess
import sys


# Highest first: (layer, may its files call each other?, files).
TRACER_LAYERS = [
    ("hooks", True, ["hooks", "hooks_cxx", "hooks_proc"]),
    # signals.c ends the trace on a fatal signal (the core's to do), and
    # keeps the program's own sigaction apart while it does; go_exit.c ends
    # it where Go's runtime exits
    ("core", True, ["runtime", "threads", "summary", "signals", "go_exit"]),
    ("services", False, ["stacks", "modules", "shadowed", "sampling", "glibc_heap",
                         "child_env", "oncpu"]),
    ("output", False, ["output"]),
    ("leaves", False, ["fds", "raw_frame", "elf_sym", "live_sizes"]),
    ("base", False, ["base"]),
]


def tracer_problems(objs, edges, why, name):
    """The tracer's calls that break its layers, as lines to print."""
    rank, peers = {}, {}
    for i, (layer, mutual, files) in enumerate(TRACER_LAYERS):
        for f in files:
            rank[f] = len(TRACER_LAYERS) - i
            peers[f] = mutual
    tracer = [o for o in objs if "memkit_preload.dir" in o]
    problems = ["tracer: %s is in no layer (layers.py, TRACER_LAYERS)" % name(o)
                for o in tracer if name(o) not in rank]
    for a in tracer:
        for b in sorted(edges[a]):
            na, nb = name(a), name(b)
            if na not in rank or nb not in rank:
                continue
            if rank[na] > rank[nb] or (rank[na] == rank[nb] and peers[na]):
                continue
            problems.append("tracer: %s calls %s (%s): %s" % (
                na, nb, "its own layer" if rank[na] == rank[nb] else "up",
                " ".join(sorted(why[(a, b)]))))
    return problems


def symbols(obj):
    defined, undefined = set(), set()
    out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) == 2 and f[0] == "U":
            undefined.add(f[1])
        elif len(f) == 3 and f[1] in "TDBRVWC":
            defined.add(f[2])
    return defined, undefined


def strongly_connected(nodes, edges):
    """Tarjan's algorithm, iterative: the sets of more than one node."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                part = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    part.append(w)
                    if w == v:
                        break
                if len(part) > 1:
                    found.append(sorted(part))
    return found


def main(objs):
    if not objs:
        print("layers: no object files given", file=sys.stderr)
        return 2
    owner, uses = {}, {}
    for o in objs:
        defined, undefined = symbols(o)
        uses[o] = undefined
        for s in defined:
            owner.setdefault(s, o)
    edges = collections.defaultdict(set)
    why = collections.defaultdict(set)
    for o in objs:
        for s in uses[o]:
            d = owner.get(s)
            if d and d != o:
                edges[o].add(d)
                why[(o, d)].add(s)
    cycles = strongly_connected(objs, edges)
    name = lambda p: os.path.basename(p).replace(".c.o", "").replace(".o", "")
    for part in cycles:
        print("cycle:", " ".join(name(p) for p in part))
        members = set(part)
        for a in part:
            for b in sorted(edges[a] & members):
                print("  %s -> %s: %s" % (name(a), name(b), " ".join(sorted(why[(a, b)]))))
    problems = tracer_problems(objs, edges, why, name)
    for p in problems:
        print(p)
    print("layers: %d object files, %d cycle(s), %d call(s) across the tracer's layers"
          % (len(objs), len(cycles), len(problems)))
    return 1 if cycles or problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
