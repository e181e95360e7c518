#!/usr/bin/env python3
"""layout.py SOURCE_DIR - docs/ARCHITECTURE.md's layout table against the tree.

Every file in src/*/ and include/memkit/ must be named (in backticks) in the
table row of its folder, and every file a row of those folders names must
exist: the table cannot drift from the code."""
import os
import re
import sys

CHECKED = ["include/memkit/", "src/alloc/", "src/preload/", "src/trace/",
           "src/analyze/", "src/cli/"]


def rows(doc):
    """The layout table's rows: folder -> the names in backticks after it."""
    found = {}
    for line in doc.splitlines():
        m = re.match(r"^\| `([^`]+/)` \|(.*)$", line)
        if m:
            found[m.group(1)] = set(re.findall(r"`([^`\s]+)`", m.group(2)))
    return found


def main(root):
    with open(os.path.join(root, "docs", "ARCHITECTURE.md"), encoding="utf-8") as f:
        table = rows(f.read())
    problems = []
    for folder in CHECKED:
        named = {n for n in table.get(folder, set()) if re.search(r"\.(c|h|hpp|html|js|css)$", n)}
        if folder not in table:
            problems.append("no layout row for %s" % folder)
            continue
        present = {n for n in os.listdir(os.path.join(root, folder))
                   if os.path.isfile(os.path.join(root, folder, n))
                   and re.search(r"\.(c|h|hpp|html|js|css)$", n)}
        for n in sorted(present - named):
            problems.append("%s%s is not in the layout table" % (folder, n))
        for n in sorted(named - present):
            problems.append("%s%s is in the layout table but not in the tree" % (folder, n))
    for p in problems:
        print("layout: " + p)
    print("layout: %d folders checked, %d problem(s)" % (len(CHECKED), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: layout.py SOURCE_DIR", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
