#!/bin/sh
# demo.sh BUILD - `make demo`: trace the bundled example before and after the
# fixes, print memkit's summaries, the findings that led to the fixes, the
# diff of the two runs and an HTML report, then time the two versions.
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
echo "== memkit report: what to fix in 'before' (its findings)"
"$build/memkit" report --top 4 "$out"/before.*.mkt | sed -n '/^Findings/,$p' | grep -v '^       from __libc\|more frames$'
echo
echo "== memkit diff before after"
"$build/memkit" diff --top 5 "$out"/before.*.mkt "$out"/after.*.mkt
"$build/memkit" report --format html -o "$out/before.html" "$out"/before.*.mkt
echo
echo "The whole report with charts and a flame graph: $out/before.html"
echo
"$build/memkit-demo"
