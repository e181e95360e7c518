#!/usr/bin/env python3
"""docs.py SOURCE_DIR - the bounds the docs keep (the developers' brief):
docs/ARCHITECTURE.md describes the design in at most 3,500 words, and
docs/PERFORMANCE.md holds current figures only, so it names no session of
work and no commit (a story of how a figure was reached is
PERFORMANCE-LOG.md's and git's)."""
import os
import re
import sys

MAX_ARCHITECTURE_WORDS = 3500


def main(root):
    problems = []
    with open(os.path.join(root, "docs", "ARCHITECTURE.md"), encoding="utf-8") as f:
        words = len(f.read().split())
    if words > MAX_ARCHITECTURE_WORDS:
        problems.append("ARCHITECTURE.md has %d words, over %d: move detail into the "
                        "code's comments or a README beside it" % (words, MAX_ARCHITECTURE_WORDS))
    with open(os.path.join(root, "docs", "PERFORMANCE.md"), encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            for m in re.finditer(r"\b(sessions?|[0-9a-f]{7,40})\b", line, re.IGNORECASE):
                tok = m.group(1)
                if tok.lower().startswith("session") or (
                        re.search(r"[a-f]", tok) and re.search(r"[0-9]", tok)):
                    problems.append("PERFORMANCE.md:%d names '%s': current figures only"
                                    % (n, tok))
    for p in problems:
        print("docs:", p)
    print("docs: ARCHITECTURE.md %d words; %d problem(s)" % (words, len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
