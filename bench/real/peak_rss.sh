#!/bin/sh
# peak_rss.sh PATTERN CMD... - runs CMD (output discarded) and prints the
# highest peak RSS (VmHWM) of any process whose command line matches PATTERN
# (pgrep -f) while CMD runs. GNU time reports only the largest waited-for
# process; this measures one helper inside a tool, e.g. heaptrack's
# interpreter, which matches each free to its allocation while the program
# runs (the per-block state memkit keeps in its report instead):
#
#     sh bench/real/peak_rss.sh heaptrack_interpret heaptrack jq -c . big.json
#
# It samples every 20 ms, so a helper living less than that may be missed.
set -u
[ $# -ge 2 ] || { echo "usage: peak_rss.sh PATTERN CMD..." >&2; exit 2; }
pattern=$1
shift
"$@" >/dev/null 2>&1 &
cmd=$!
best=0
while kill -0 "$cmd" 2>/dev/null; do
    for p in $(pgrep -f "$pattern"); do
        kb=$(awk '/^VmHWM:/ { print $2 }' "/proc/$p/status" 2>/dev/null)
        [ -n "$kb" ] && [ "$kb" -gt "$best" ] && best=$kb
    done
    sleep 0.02
done
wait "$cmd"
echo "$pattern: peak RSS ${best} KB"
