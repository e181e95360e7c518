# lib.sh - what the CLI test scripts share, sourced after they set their
# arguments: a scratch directory ($tmp, removed on exit), pass/fail counts,
# and checks of a command's exit status and output.
fail=0
pass=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
# expect_status STATUS DESCRIPTION CMD...: runs CMD, stdout in $tmp/out, stderr in $tmp/err
expect_status() {
    want=$1; what=$2; shift 2
    "$@" >"$tmp/out" 2>"$tmp/err"; got=$?
    if [ "$got" -eq "$want" ]; then ok; else bad "$what: exit $got, want $want"; cat "$tmp/err"; fi
}
# has FILE PATTERN DESCRIPTION: FILE has a line matching PATTERN (shown if not)
has() { grep -q -- "$2" "$1" && ok || { bad "$3"; sed 's/^/  | /' "$1"; }; }
