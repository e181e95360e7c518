#!/usr/bin/env python3
"""child_env_vars.py SOURCE_DIR - fails when the tracer reads a MEMKIT_
variable that exec does not carry into a rebuilt environment: every
getenv("MEMKIT_...") of src/preload/ must be in child_env.c's traced_vars, or
a child exec'd with an environment of the program's making is traced
differently from its parent (a --sample run's child was once traced in full).
The tests' own hooks (MEMKIT_TRACE_TEST_*) are not carried."""
import glob
import os
import re
import sys


def main():
    preload = os.path.join(sys.argv[1], "src", "preload")
    read = set()
    for path in glob.glob(os.path.join(preload, "*.c")):
        read |= set(re.findall(r'getenv\("(MEMKIT_[A-Z_]+)"\)', open(path).read()))
    read = {v for v in read if not v.startswith("MEMKIT_TRACE_TEST_")}
    text = open(os.path.join(preload, "child_env.c")).read()
    body = re.search(r"traced_vars\[\] = \{(.*?)\};", text, re.S)
    if not body or not read:
        print("child_env_vars: cannot find traced_vars or the tracer's getenv calls")
        return 1
    carried = set(re.findall(r'"([A-Z_]+)"', body.group(1)))
    missing = sorted(read - carried)
    for v in missing:
        print(f"child_env_vars: the tracer reads {v}, which exec does not carry (child_env.c)")
    print(f"child_env_vars: {len(read)} variables read, {len(missing)} not carried")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
