#!/usr/bin/env python3
"""run.py SOURCE WORK [--only NAME,...] [--list] [--jobs N] - make test-mutants.

Copies SOURCE (its git files, uncommitted edits included) to WORK/src, builds
it once in WORK/build, checks that the tests named first pass on the
unmutated copy (any other test that catches a mutant is checked so at the
end), then applies each mutant of tests/mutants/mutants.txt alone, rebuilds
(incrementally) and runs the tests of its part: first those its `first` key names (the test that
caught it before: most mutants are then settled in a second, not in the
part's whole run), then the rest. A mutant the tests do not
catch, a mutant whose text is not found exactly once, and a mutant that does
not build all fail the run: a stale or broken mutant tests nothing.
"""
import argparse
import configparser
import fcntl
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def die(msg):
    print("test-mutants: " + msg, file=sys.stderr)
    sys.exit(2)


def load(path, source):
    cp = configparser.ConfigParser(interpolation=None, comment_prefixes=("#",))
    cp.optionxform = str
    try:
        with open(path) as f:
            cp.read_file(f)
    except (OSError, configparser.Error) as e:
        die("cannot read %s: %s" % (path, e))
    parts = {}
    mutants = []
    for name in cp.sections():
        sec = cp[name]
        if name.startswith("part."):
            parts[name[5:]] = sec.get("tests", "")
            continue
        for key in ("part", "file", "old", "new"):
            if key not in sec:
                die("mutant %s has no %s" % (name, key))
        m = {"name": name, **{k: sec[k] for k in ("part", "file", "old", "new")}}
        m["first"] = sec.get("first", "").split()
        for k in ("old", "new"):  # \N: a line break, so a text can span lines
            m[k] = m[k].replace("\\N", "\n")
        mutants.append(m)
    for m in mutants:
        if m["part"] not in parts:
            die("mutant %s names the part %s, which has no tests" % (m["name"], m["part"]))
        try:
            with open(os.path.join(source, m["file"])) as f:
                text = f.read()
        except OSError as e:
            die("mutant %s: %s" % (m["name"], e))
        n = text.count(m["old"])
        if n != 1:
            die("mutant %s: its text occurs %d times in %s (once expected): %r"
                % (m["name"], n, m["file"], m["old"]))
        if m["old"] == m["new"]:
            die("mutant %s changes nothing" % m["name"])
        # a `first` test outside the part would catch what the part cannot
        for t in m["first"]:
            if not re.search(parts[m["part"]], t):
                die("mutant %s: its first test %s is not of the part %s"
                    % (m["name"], t, m["part"]))
    return parts, mutants


def copy_tree(source, dest):
    """The files git knows of (tracked, and untracked but not ignored), as they
    are in the work tree; without git, everything but build directories."""
    if os.path.exists(dest):
        shutil.rmtree(dest)
    r = subprocess.run(["git", "-C", source, "ls-files", "-z", "--cached", "--others",
                        "--exclude-standard"], capture_output=True)
    if r.returncode == 0:
        for rel in r.stdout.decode().split("\0"):
            if not rel or not os.path.isfile(os.path.join(source, rel)):
                continue  # deleted in the work tree
            os.makedirs(os.path.join(dest, os.path.dirname(rel)), exist_ok=True)
            shutil.copy2(os.path.join(source, rel), os.path.join(dest, rel))
    else:
        shutil.copytree(source, dest, symlinks=True,
                        ignore=shutil.ignore_patterns("build", "build-*", ".git"))
    # a checkout of its own: tests run git on the source tree (countcheck)
    for cmd in (["init", "-q"], ["add", "-A"],
                ["-c", "user.name=mutants", "-c", "user.email=mutants@localhost",
                 "commit", "-q", "-m", "the tree under test"]):
        if subprocess.run(["git", "-C", dest] + cmd, capture_output=True).returncode:
            break


def run(cmd, log, **kw):
    with open(log, "w") as f:
        return subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, **kw).returncode


def failed_tests(log):
    """The names under ctest's closing "The following tests FAILED:"."""
    names, on = [], False
    with open(log, errors="replace") as f:
        for line in f:
            if line.startswith("The following tests FAILED:"):
                on = True
            elif on and " - " in line:
                names.append(line.split(" - ", 1)[1].rsplit(" (", 1)[0].strip())
            elif on and line.strip():
                break
    return names


def test_names(build):
    """Every test of the build but the valgrind runs, as ctest lists them."""
    r = subprocess.run(["ctest", "-N", "-LE", "valgrind"], cwd=build, capture_output=True,
                       text=True)
    return [line.split(":", 1)[1].strip() for line in r.stdout.splitlines()
            if line.strip().startswith("Test") and "#" in line and ":" in line]


def ctest(build, names, jobs, log, stop=False):
    """Runs exactly these tests; a run of any other number of them fails (a
    selection ctest reads as empty passes otherwise). A mutant that makes a
    test hang is caught by the timeout, which no test of the parts nears.
    stop: a mutant's run ends at its first failing test (a third of the
    stage's time went on the tests after it); then fewer ran, by design."""
    # plain alternatives: CMake's regular expressions take at most 10 groups
    regex = "|".join("^%s$" % re.escape(n) for n in names)
    rc = run(["ctest", "-R", regex, "-j", str(jobs), "--timeout", "45",
              "--output-on-failure"] + (["--stop-on-failure"] if stop else []),
             log, cwd=build)
    if stop and rc:
        return rc
    with open(log, errors="replace") as f:
        m = re.search(r"tests passed, \d+ tests failed out of (\d+)", f.read())
    if not m or int(m.group(1)) != len(names):
        with open(log, "a") as f:
            f.write("test-mutants: ctest ran %s tests of the %d asked\n"
                    % (m.group(1) if m else "no", len(names)))
        return rc or 1
    return rc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("source")
    ap.add_argument("work")
    ap.add_argument("--only", default="")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    a = ap.parse_args()

    source = os.path.abspath(a.source)
    parts, mutants = load(os.path.join(HERE, "mutants.txt"), source)
    if a.only:
        want = set(a.only.split(","))
        unknown = want - {m["name"] for m in mutants}
        if unknown:
            die("no mutant named %s" % ", ".join(sorted(unknown)))
        mutants = [m for m in mutants if m["name"] in want]
    if a.list:
        for m in mutants:
            print("%-32s %-11s %s" % (m["name"], m["part"], m["file"]))
        return 0

    work = os.path.abspath(a.work)
    src, build, logs = (os.path.join(work, d) for d in ("src", "build", "logs"))
    os.makedirs(logs, exist_ok=True)
    lock = open(os.path.join(work, "lock"), "w")
    try:  # two runs in one copy would apply each other's mutants
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        die("another run uses %s" % work)
    start = time.time()
    # A fresh build every run: an object left by a run that stopped with a
    # mutant applied is newer than the restored source, and would stay.
    if os.path.exists(build):
        shutil.rmtree(build)
    copy_tree(source, src)
    # Ninja where it is (ninja-build, tools/packages.txt): its incremental
    # build of a mutant takes about a second less than make's, whose walk of
    # every target's rules alone takes 1.2 s (93 mutants: 1.5 minutes)
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    if run(["cmake", "-S", src, "-B", build, "-DCMAKE_BUILD_TYPE=RelWithDebInfo"] + generator,
           os.path.join(logs, "configure.log")) or \
       run(["cmake", "--build", build, "-j", str(a.jobs)], os.path.join(logs, "build.log")):
        die("the unmutated copy does not build: %s" % logs)

    used = sorted({m["part"] for m in mutants})
    every = test_names(build)
    tests = {}
    for p in used:
        tests[p] = [n for n in every if re.search(parts[p], n)]
        if not tests[p]:
            die("the part %s names no test of this build (%s)" % (p, parts[p]))
    for m in mutants:
        stale = [t for t in m["first"] if t not in tests[m["part"]]]
        if stale:
            die("mutant %s: its first test %s is no test of this build" % (m["name"], stale[0]))
    # The baseline: the tests named first, and every test of a part whose
    # mutants name none. A mutant counts as caught only by a test that passes
    # without it: those outside the baseline are run unmutated at the end.
    union = sorted({t for m in mutants for t in m["first"]} |
                   {n for m in mutants if not m["first"] for n in tests[m["part"]]})
    base_log = os.path.join(logs, "unmutated.log")
    if ctest(build, union, a.jobs, base_log):
        # what failed, where CI shows it: the log stays in the copy
        with open(base_log, errors="replace") as f:
            lines = [l for l in f if "FAIL" in l or "Error" in l or "assert" in l.lower()]
        sys.stderr.writelines(lines[-20:])
        die("the mutants' tests fail without a mutant (%s): %s"
            % (", ".join(failed_tests(base_log)) or "see the log", base_log))
    with open(base_log, errors="replace") as f:
        skipped = re.findall(r"\d+ - (\S+) \(Skipped\)", f.read())
    if skipped:  # a part that does not run can catch nothing
        die("%d of the mutants' tests skip here (%s): make test installs what they need"
            % (len(skipped), ", ".join(skipped)))
    print("test-mutants: the unmutated copy passes the %d tests named first (%.0f s)"
          % (len(union), time.time() - start), flush=True)

    survived, broken, catchers = [], [], {}
    for m in mutants:
        t0 = time.time()
        path = os.path.join(src, m["file"])
        with open(path) as f:
            original = f.read()
        log = os.path.join(logs, m["name"] + ".log")
        try:
            with open(path, "w") as f:
                f.write(original.replace(m["old"], m["new"], 1))
            if run(["cmake", "--build", build, "-j", str(a.jobs)], log):
                broken.append(m["name"])
                print("BROKEN   %-32s does not build: %s" % (m["name"], log), flush=True)
                continue
            # the named first, alone; the rest of the part only if they pass
            first = [t for t in m["first"] if t in tests[m["part"]]]
            rest = [t for t in tests[m["part"]] if t not in first]
            rc = ctest(build, first, a.jobs, log, stop=True) if first else 0
            if not rc and rest:
                rc = ctest(build, rest, a.jobs, log, stop=True)
        finally:
            with open(path, "w") as f:
                f.write(original)
        took = time.time() - t0
        if rc:
            fails = failed_tests(log)
            for t in fails:
                catchers.setdefault(t, []).append(m["name"])
            print("caught   %-32s %-11s %4.0f s  by %s" % (
                m["name"], m["part"], took,
                ", ".join(fails[:4]) + (" +%d" % (len(fails) - 4) if len(fails) > 4 else "")),
                flush=True)
        else:
            survived.append(m["name"])
            print("SURVIVED %-32s %-11s %4.0f s  (%s)" % (m["name"], m["part"], took, log),
                  flush=True)
    # the copy's build is left as the source is: the last mutant is undone
    run(["cmake", "--build", build, "-j", str(a.jobs)], os.path.join(logs, "restore.log"))
    # a catch by a test outside the baseline stands only if it passes unmutated
    extra = sorted(set(catchers) - set(union))
    check_log = os.path.join(logs, "catchers.log")
    if extra and ctest(build, extra, a.jobs, check_log):
        void = failed_tests(check_log) or extra
        die("tests that caught mutants fail without them too (%s): %s caught nothing; see %s"
            % (", ".join(void), ", ".join(sorted({m for t in void for m in catchers.get(t, [])})),
               check_log))
    caught = len(mutants) - len(survived) - len(broken)
    print("test-mutants: %d of %d mutants caught in %.0f s%s" % (
        caught, len(mutants), time.time() - start,
        "; survived: " + ", ".join(survived) if survived else ""))
    if broken:
        print("test-mutants: do not build: " + ", ".join(broken))
    return 1 if survived or broken else 0


if __name__ == "__main__":
    sys.exit(main())
