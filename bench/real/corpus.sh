# corpus.sh - the real programs of bench/real/run.sh and bench/sample/run.sh:
# sourced with src (the repository), build, scale and bench (the benchmark's
# name, for messages) set, after the caller's own checks. Skips (exit 77)
# when a corpus tool is missing; makes the scratch directory $work and the
# inputs in it, starts a local HTTP server for curl (its pid in $server),
# removes both at exit, and defines corpus(): one program a line,
# name|directory|command|what to run before each run.
# BENCH_REAL_PROGRAMS=FILE runs FILE's programs instead, same format.
# shellcheck shell=sh

for tool in clang-14 curl git cmake python3; do
    command -v "$tool" >/dev/null 2>&1 || {
        echo "SKIP: $bench: $tool is missing (make deps installs it)"
        exit 77
    }
done
work=$(mktemp -d)
server=
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

# The inputs, scaled.
n_dicts=$(awk -v s="$scale" 'BEGIN { n = int(200000 * s); print n < 100 ? 100 : n }')
mb=$(awk -v s="$scale" 'BEGIN { n = int(20 * s); print n < 1 ? 1 : n }')
churn_n=$(awk -v s="$scale" 'BEGIN { n = int(10000000 * s); print n < 1000 ? 1000 : n }')
git_n=$(awk -v s="$scale" 'BEGIN { n = int(100000 * s); print n < 20 ? 20 : n }')
mkdir -p "$work/www" "$work/cmk"
head -c "$((mb * 1048576))" /dev/urandom >"$work/www/blob"
cat >"$work/dicts.py" <<EOF
import json
rows = [{"id": i, "name": "item-%d" % i, "tags": ["a", "b", str(i % 7)], "score": i * 0.5}
        for i in range($n_dicts)]
text = json.dumps(rows)
print(len(json.loads(text)))
EOF
cat >"$work/cmk/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.20)
project(bench_real C)
include(CheckIncludeFile)
include(CheckFunctionExists)
check_include_file(zstd.h HAVE_ZSTD_H)
check_function_exists(memfd_create HAVE_MEMFD_CREATE)
add_executable(hello hello.c)
EOF
echo 'int main(void) { return 0; }' >"$work/cmk/hello.c"
# A local server for curl (loopback only), on a free port.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
(cd "$work/www" && exec python3 -m http.server "$port" --bind 127.0.0.1 >/dev/null 2>&1) &
server=$!
for _ in 1 2 3 4 5 6 7 8 9 10; do
    curl -s -o /dev/null "http://127.0.0.1:$port/" && break
    sleep 0.3
done

# The corpus: name, directory, command (run as is, no shell between: each
# tool sees the program itself; words split on blanks), and what to do
# before each run.
corpus() {
    if [ -n "${BENCH_REAL_PROGRAMS:-}" ]; then
        # programs of one's own, same format: name|directory|command|before each run
        cat "$BENCH_REAL_PROGRAMS"
        return
    fi
    cat <<EOF
clang|$src|clang-14 -O2 -c src/analyze/profile.c -Isrc -Iinclude -o $work/profile.o|true
python-json|$work|/usr/bin/python3 $work/dicts.py|true
git-log|$src|git log --stat -n $git_n|true
curl|$work|curl -s -o $work/got http://127.0.0.1:$port/blob|true
cmake|$work/cmk|cmake -S . -B b|rm -rf b
churn|$work|$build/memkit-churn $churn_n 1|true
EOF
}

