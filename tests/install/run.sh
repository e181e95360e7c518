#!/bin/sh
# run.sh BUILD_DIR CONSUMER_SRC - installs the build into a temporary prefix and
# builds a small external program against it twice: with pkg-config, and with CMake's
# find_package(memkit), the latter also a C++17 one using the pmr adapters.
# Every program must run and print "ok".
set -eu
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"

cmake --install "$build" --prefix "$prefix" >/dev/null

# 1. pkg-config, static and shared.
libdir=$(ls -d "$prefix"/lib* | head -n 1)
export PKG_CONFIG_PATH="$libdir/pkgconfig"
cc -std=gnu11 -Wall -Werror -o "$tmp/with_pc" "$src/consumer.c" \
   $(pkg-config --cflags --libs memkit) -Wl,-rpath,"$libdir"
"$tmp/with_pc" | grep -qx ok
cc -std=gnu11 -Wall -Werror -o "$tmp/with_pc_static" "$src/consumer.c" \
   $(pkg-config --cflags memkit) "$libdir/libmemkit.a" -pthread
"$tmp/with_pc_static" | grep -qx ok

# 2. CMake find_package.
cmake -S "$src" -B "$tmp/cm" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$tmp/cm" >/dev/null
"$tmp/cm/consumer" | grep -qx ok
"$tmp/cm/consumer_cxx" | grep -qx ok   # the C++ adapters, with -Wshadow -Werror
echo "install_consumer: 4 passed, 0 failed"
