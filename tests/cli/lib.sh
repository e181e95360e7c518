# lib.sh - what the CLI test scripts share, sourced after they set their
# arguments: a scratch directory ($tmp, removed on exit), pass/fail counts,
# checks of a command's exit status and output, and a page drawn by a browser.
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
# one_line DESCRIPTION: $tmp/err holds one line, as bad input's message must
one_line() { [ "$(wc -l <"$tmp/err")" -eq 1 ] && ok || { bad "$1: not one line"; cat "$tmp/err"; }; }
# render_page FILE WHAT: headless Chromium draws FILE (its DOM into $tmp/dom):
# its script finished and the console has no error. Without chromium: a
# SKIP line, skipped=1 and status 1, so the caller leaves its own checks.
render_page() {
    browser=$(command -v chromium || command -v chromium-browser || true)
    if [ -z "$browser" ]; then
        echo "SKIP: $2 (no chromium here to load the page; make test installs it)"
        skipped=1
        return 1
    fi
    timeout 120 "$browser" --headless --no-sandbox --disable-gpu --enable-logging=stderr \
        --v=0 --dump-dom "file://$1" >"$tmp/dom" 2>"$tmp/console"
    grep -q 'data-rendered="yes"' "$tmp/dom" && ok || bad "the page's script did not finish"
    grep -qiE 'Uncaught|CONSOLE.*(error|Error)' "$tmp/console" && bad "console errors" || ok
}
