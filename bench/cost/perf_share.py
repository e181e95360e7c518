#!/usr/bin/env python3
"""perf_share.py PERF.DATA: the share of a run's cpu-clock samples that perf
attributes to the allocator (self time of glibc's malloc functions and the
C++ operators new and delete), to the kernel, and in all, as one JSON line:
{"samples": N, "allocator": share, "kernel": share, "functions": {...}}.
perf_share.py --callers PERF.DATA (recorded with --call-graph): the
allocator's callers by perf's call graph, most samples first, as a JSON
list of [name, samples]: for each sample in the allocator (kernel frames
under it included), the first frame out of libc and the allocator's
functions. Frames perf cannot name are left out, and so are callers with
fewer than 10 samples: perf's own sampling error would rank them.
The allocator's functions are recognised by name: glibc keeps its internal
ones (_int_malloc, malloc_consolidate, unlink_chunk, ...) in its symbol
table, so perf names them without debug files."""
import json
import re
import subprocess
import sys

# glibc's allocator: the public entry points and the internal functions they
# call (names as perf prints them, with GCC's .constprop/.isra suffixes and
# symbol versions allowed).
GLIBC = re.compile(
    r"^(__libc_)?(malloc|free|cfree|calloc|realloc|reallocarray|memalign|"
    r"posix_memalign|aligned_alloc|valloc|pvalloc|malloc_usable_size|"
    r"_int_malloc|_int_free|_int_free_merge_chunk|_int_free_create_chunk|"
    r"_int_free_maybe_consolidate|_int_realloc|_int_memalign|_mid_memalign|"
    r"malloc_consolidate|unlink_chunk|sysmalloc|sysmalloc_mmap|systrim|"
    r"munmap_chunk|mremap_chunk|tcache_\w+|arena_get2|arena_get_retry|"
    r"get_free_list|reused_arena|_int_new_arena|new_heap|alloc_new_heap|"
    r"grow_heap|shrink_heap|heap_trim|mtrim|malloc_trim|__malloc_\w+|"
    r"ptmalloc_init|malloc_init|__glibc_morecore|__default_morecore|"
    r"alloc_perturb|free_perturb)"
    r"(\.(constprop|isra|part|cold)(\.\d+)?)*(@@?GLIBC_[\d.]+)?$")
# operator new and delete in libstdc++ (perf demangles them).
CXX = re.compile(r"^operator (new|delete)(\[\])?(\(|$)")


def classify(dso, sym):
    if dso.startswith("[kernel") or dso == "[unknown]" and sym.startswith("[k]"):
        return "kernel"
    name = sym
    if dso.startswith("libc.so") or dso.startswith("libc-"):
        if GLIBC.match(name):
            return "allocator"
    if dso.startswith("libstdc++") and CXX.match(name):
        return "allocator"
    return None


def is_allocator(sym, dso):
    base = dso.rsplit("/", 1)[-1]
    if base.startswith("libc.so") or base.startswith("libc-"):
        return bool(GLIBC.match(sym.split("+")[0]))
    return base.startswith("libstdc++") and bool(CXX.match(sym))


def callers(data):
    out = subprocess.run(["perf", "script", "-i", data, "-F", "ip,sym,dso"],
                         capture_output=True, text=True, check=True).stdout
    counts = {}
    for sample in out.split("\n\n"):
        frames = []
        for line in sample.splitlines():
            m = re.match(r"\s*([0-9a-f]+)\s+(.*?)\s+\((.*)\)\s*$", line)
            if m:
                frames.append((m.group(2), m.group(3)))
        user = [f for f in frames if not f[1].startswith("[kernel")]
        if not user or not is_allocator(*user[0]):
            continue
        for sym, dso in user[1:]:
            base = dso.rsplit("/", 1)[-1]
            if dso == "inlined" or is_allocator(sym, dso) or base.startswith("libc.so"):
                continue
            if sym and sym != "[unknown]" and not re.match(r"^(0x)?[0-9a-f]+$", sym):
                name = sym.split("+0x")[0]
                counts[name] = counts.get(name, 0) + 1
            break
    print(json.dumps([kv for kv in sorted(counts.items(), key=lambda kv: -kv[1])
                      if kv[1] >= 10]))


def main():
    if sys.argv[1] == "--callers":
        callers(sys.argv[2])
        return
    data = sys.argv[1]
    out = subprocess.run(
        ["perf", "report", "-i", data, "--no-children", "--stdio",
         "--sort", "dso,sym", "-F", "sample,dso,sym", "--percent-limit", "0"],
        capture_output=True, text=True, check=True).stdout
    total = alloc = kernel = 0
    funcs = {}
    for line in out.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        m = re.match(r"\s*(\d+)\s+(\S+)\s+\[(.)\]\s+(.*?)\s*$", line)
        if not m:
            continue
        n, dso, level, sym = int(m.group(1)), m.group(2), m.group(3), m.group(4)
        total += n
        kind = "kernel" if level == "k" else classify(dso, sym)
        if kind == "kernel":
            kernel += n
        elif kind == "allocator":
            alloc += n
            funcs[sym] = funcs.get(sym, 0) + n
    if total == 0:
        print("perf_share: no samples in %s" % data, file=sys.stderr)
        sys.exit(1)
    print(json.dumps({"samples": total, "allocator": alloc / total,
                      "kernel": kernel / total,
                      "functions": dict(sorted(funcs.items(), key=lambda kv: -kv[1]))}))


if __name__ == "__main__":
    main()
