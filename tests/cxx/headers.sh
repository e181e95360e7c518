#!/bin/sh
# headers.sh SOURCE_DIR LIBMEMKIT_A - tests/cxx/headers.cc (every public header
# and typed macro) compiled with g++ and clang++, -std=c++17 and c++20, warnings
# as errors, linked and run; and each C++ header under -std=c++14 stopping at
# one error that names C++17. A compiler that is missing is a skip, saying so.
set -u
src=$1
lib=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
ran=0
skips=
for cxx in g++ clang++; do
    if ! command -v "$cxx" >/dev/null 2>&1; then
        echo "SKIP: $cxx is not installed (make test installs clang)"
        skips=1
        continue
    fi
    for std in c++17 c++20; do
        ran=$((ran + 1))
        if "$cxx" -std=$std -Wall -Wextra -Werror -I"$src/include" -o "$work/h" \
            "$src/tests/cxx/headers.cc" "$lib" -pthread >"$work/log" 2>&1 &&
            "$work/h" | grep -qx ok; then
            echo "ok [$cxx -std=$std]"
        else
            echo "FAIL [$cxx -std=$std]: $(head -5 "$work/log")"
            fails=$((fails + 1))
        fi
    done
done
# Before C++17 each C++ header stops at one error that says what it needs.
for cxx in g++ clang++; do
    command -v "$cxx" >/dev/null 2>&1 || continue
    for h in allocators pmr small_vector; do
        echo "#include <memkit/$h.hpp>" >"$work/old.cc"
        ran=$((ran + 1))
        if "$cxx" -std=c++14 -fsyntax-only -I"$src/include" "$work/old.cc" >"$work/log" 2>&1; then
            echo "FAIL [$cxx $h.hpp -std=c++14]: compiled"
            fails=$((fails + 1))
        elif [ "$(grep -c ': error:' "$work/log")" -ne 1 ] ||
            ! grep -q "memkit/$h.hpp needs C++17 or later" "$work/log"; then
            echo "FAIL [$cxx $h.hpp -std=c++14]: $(head -3 "$work/log")"
            fails=$((fails + 1))
        else
            echo "ok [$cxx $h.hpp -std=c++14: one error]"
        fi
    done
done
echo "headers: $ran builds, $fails failed"
[ "$fails" -eq 0 ] || exit 1
[ -z "$skips" ] || exit 77
