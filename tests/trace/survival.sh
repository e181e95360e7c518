#!/bin/sh
# survival.sh MEMKIT SOURCE_DIR [quick|long] [COUNTALLOC_SO] - real programs
# nobody here wrote, each run untraced and under `memkit trace`: the same exit
# status, the same stdout, and every trace the run wrote reads with `memkit
# report`.
#
# quick (make test): binutils on a small object and archive (ar, nm, ranlib,
# objdump load the LTO plugin, a C++ library, with RTLD_LOCAL), python3
# importing a C++ extension (apt_pkg), make building a small C project with
# a static library, a Java VM starting, a shell pipeline, git log, a Go
# program built with cgo (its allocation calls also counted in the same run
# by the counting preload, COUNTALLOC_SO, and equal).
# long (.ci/run): also chromium --dump-dom, and `make build` of a clean clone
# of this repository (cmake, cc1, as, ld, ar: hundreds of processes).
set -u
memkit=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$(cd "$2" && pwd)
mode=${3:-quick}
countalloc=${4:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
ran=0
skips=

fail() {
    echo "FAIL [survival]: $*" >&2
    fails=$((fails + 1))
}

# same NAME DIR CMD...: CMD in DIR untraced, then traced; compares.
same() {
    name=$1 dir=$2
    shift 2
    ran=$((ran + 1))
    before=$fails
    (cd "$dir" && "$@") >"$work/$name.plain" 2>"$work/$name.plain.err"
    plain=$?
    rm -rf "$work/tr-$name"
    mkdir -p "$work/tr-$name"
    (cd "$dir" && "$memkit" trace -q -o "$work/tr-$name/t" -- "$@") >"$work/$name.traced" \
        2>"$work/$name.traced.err"
    traced=$?
    [ "$plain" = "$traced" ] ||
        fail "$name: exit $traced traced, $plain untraced: $(tail -3 "$work/$name.traced.err")"
    cmp -s "$work/$name.plain" "$work/$name.traced" ||
        fail "$name: stdout differs traced: $(diff "$work/$name.plain" "$work/$name.traced" | head -5)"
    grep "^memkit:" "$work/$name.traced.err" | grep -v "^memkit: '.*' exited with status" |
        head -3 | while IFS= read -r line; do fail "$name: memkit said: $line"; done
    n=0
    for t in "$work/tr-$name"/t.*.mkt; do
        [ -e "$t" ] || continue
        n=$((n + 1))
        "$memkit" report --no-symbols "$t" >"$work/report" 2>&1 ||
            fail "$name: trace $(basename "$t") does not read: $(head -2 "$work/report")"
    done
    [ "$n" -gt 0 ] || fail "$name: no trace written"
    [ "$fails" = "$before" ] && echo "ok [$name]: exit $plain, $n trace(s)"
}

need() { # TOOL: present, or the case is skipped, saying why
    command -v "$1" >/dev/null 2>&1 && return 0
    echo "SKIP: $1 is not installed (make test installs it)"
    skips=1
    return 1
}

# A small C project: a static library and a program, built by make.
mkdir -p "$work/proj"
cat >"$work/proj/lib.c" <<'EOF'
#include <stdlib.h>
#include <string.h>
char *lib_copy(const char *s) { return strcpy(malloc(strlen(s) + 1), s); }
EOF
cat >"$work/proj/main.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
char *lib_copy(const char *s);
int main(void) { char *s = lib_copy("built"); puts(s); free(s); return 0; }
EOF
printf 'prog: main.o libx.a\n\t$(CC) -o $@ main.o libx.a\nlibx.a: lib.o\n\t$(AR) rcs $@ lib.o\nclean:\n\trm -f *.o *.a prog\n' \
    >"$work/proj/Makefile"

if need cc && need make && need nm && need objdump && need ar; then
    cc -c -o "$work/x.o" "$work/proj/lib.c"
    same ar "$work" ar rcs libx.a x.o
    same nm "$work" nm x.o
    same nm-archive "$work" nm libx.a
    same ranlib "$work" ranlib libx.a
    same objdump "$work" objdump -d x.o
    same make "$work/proj" sh -c 'make -s clean && make -s && ./prog'
fi
if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import apt_pkg' 2>/dev/null; then
    same python-apt_pkg "$work" /usr/bin/python3 -c 'import apt_pkg; apt_pkg.init_config(); print("ok")'
else
    echo "SKIP: /usr/bin/python3 with python3-apt is not installed (make test installs it)"
    skips=1
fi
# A Java VM: each of its threads asks glibc for its own stack bounds first
# thing, from inside an allocation that holds the thread's lock.
if need java; then
    # (the flags but the one that differs with the address-space layout)
    same java "$work" sh -c 'timeout 120 java -XX:+PrintFlagsFinal -version >flags && grep -v BaseAddress flags'
fi
same pipeline "$work" sh -c 'seq 1 20000 | sort -r | uniq | tr 0-9 a-j | wc -l'
if need git; then
    git -C "$work" init -q repo && (cd "$work/repo" && for i in 1 2 3; do
        echo "$i" >f && git add f && git -c user.name=t -c user.email=t@t commit -qm "c$i"
    done)
    same git-log "$work/repo" git log --stat --format=%s
    if [ -d "$src/.git" ]; then
        same git-log-memkit "$src" git log --oneline -n 200
    else
        echo "SKIP: git-log-memkit: $src is not a git checkout"
        skips=1
    fi
fi
# Go with cgo: Go's runtime ends the process with its own exit_group system
# call, past libc (preload/go_exit.c). The counting preload goes ahead of
# the tracer in the same run (Go starts a varying number of threads, so two
# runs may differ by a few of glibc's calls for them), and both count the
# calls the program's own code makes: the tracer's own (glibc's
# pthread_getattr_np allocates) come from libraries.
if need go && need cc; then
    cp -r "$src/tests/trace/progs/cgo" "$work/cgo"
    if ! (cd "$work/cgo" && GOCACHE="$work/gocache" GOPATH="$work/gopath" GOFLAGS=-mod=mod \
        GOPROXY=off CGO_ENABLED=1 go build -o "$work/cgoprog" .) >"$work/go.err" 2>&1; then
        fail "go build of the cgo program: $(tail -3 "$work/go.err")"
    else
        same go-cgo "$work" "$work/cgoprog"
        if [ -z "$countalloc" ]; then
            echo "SKIP: go-cgo count: no counting preload given (argument 4)"
            skips=1
        else
            rm -rf "$work/tr-gocount" "$work/count"*
            mkdir -p "$work/tr-gocount"
            COUNTALLOC_OUT="$work/count" CA="$countalloc" PROG="$work/cgoprog" \
                "$memkit" trace -q -o "$work/tr-gocount/t" -- \
                sh -c 'LD_PRELOAD="$CA:$LD_PRELOAD" exec "$PROG"' >/dev/null 2>&1
            want=$(od -An -tu8 -j16 -N8 "$work/count.live" 2>/dev/null | tr -d ' ')
            got=$("$memkit" report --no-symbols --format json \
                "$(ls -t "$work"/tr-gocount/t.*.mkt | head -1)" 2>/dev/null | python3 -c '
import json, sys
sites = json.load(sys.stdin)["sites"]
print(sum(s["calls"] for s in sites if s["frames"] and s["frames"][0]["module"] == "cgoprog"))')
            # 50 lists of 100 nodes in each of 4 goroutines: 20,000, and cgo's own
            if [ -n "$want" ] && [ "$want" = "$got" ] && [ "$got" -ge 20000 ]; then
                echo "ok [go-cgo count]: $got allocation calls from the program by both"
            else
                fail "go-cgo: memkit counts ${got:-nothing}, the counting preload ${want:-nothing}"
            fi
        fi
    fi
fi

if [ "$mode" = long ]; then
    browser=$(command -v chromium || command -v chromium-browser || true)
    if [ -n "$browser" ]; then
        echo '<html><body><p id="x">survived</p></body></html>' >"$work/page.html"
        same chromium "$work" timeout 120 "$browser" --headless --no-sandbox --disable-gpu \
            --dump-dom "file://$work/page.html"
    else
        echo "SKIP: chromium is not installed (make test installs it)"
        skips=1
    fi
    if [ -d "$src/.git" ]; then
        git clone -q "$src" "$work/clone"
        # traced only (an untraced build of the same clone would only repeat it):
        # it succeeds and every trace of its processes reads.
        ran=$((ran + 1))
        mkdir -p "$work/build"
        "$memkit" trace -q -o "$work/build/t" -- make -C "$work/clone" -j2 build \
            BUILD="$work/clone/build" >"$work/mk.out" 2>&1 ||
            fail "traced make build failed: $(tail -5 "$work/mk.out")"
        n=0
        bad=0
        for t in "$work/build"/t.*.mkt; do
            n=$((n + 1))
            "$memkit" report --no-symbols "$t" >/dev/null 2>"$work/report.err" || {
                [ "$bad" = 0 ] && cp "$work/report.err" "$work/first.err"
                bad=$((bad + 1))
            }
        done
        [ "$bad" = 0 ] || fail "make build: $bad of $n traces do not read: $(cat "$work/first.err")"
        echo "ok [make build of memkit]: $n traces"
    fi
fi

echo "survival: $ran programs, $fails failures"
[ "$fails" -eq 0 ] || exit 1
[ -z "$skips" ] || exit 77
