#!/usr/bin/env python3
"""layers.py OBJECT.o... - fails when object files depend on each other in a
cycle: A depends on B when A leaves undefined a symbol B defines (nm). Each
part of src/ is layered (docs/ARCHITECTURE.md): a cycle means a lower file
calls back up, which a callback passed down should do instead. Prints every
cycle (a strongly connected set of files) with the symbols that close it."""
import collections
import os
import subprocess
import sys


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
    print("layers: %d object files, %d cycle(s)" % (len(objs), len(cycles)))
    return 1 if cycles else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
