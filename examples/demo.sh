#!/bin/sh
# demo.sh BUILD - `make demo`: trace the bundled example before and after the
# fixes, print memkit's summaries, then time the two versions side by side.
set -e
build=${1:-build}
out=$build/demo
mkdir -p "$out"
rm -f "$out"/*.mkt

echo "== memkit trace -- memkit-transfer before   (node + name per header, buffer per chunk)"
"$build/memkit" trace -o "$out/before" -- "$build/memkit-transfer" before
echo
echo "== memkit trace -- memkit-transfer after    (name inline, nodes from mk_pool, buffer in MK_SCOPE)"
"$build/memkit" trace -o "$out/after" -- "$build/memkit-transfer" after
echo
"$build/memkit-demo"
