#!/bin/sh
# test_deps.sh - tools/deps.sh against a fake package database (dpkg's
# --admindir), a fake apt-get that only logs, and a fake sudo: the exact
# messages, the opt-out, root, sudo, no sudo, a failed install, a non-Debian
# system, and that nothing is installed when everything is there.
set -u
deps=$(cd "$(dirname "$0")/../../tools" && pwd)/deps.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $1"; }

# db PACKAGE...: a dpkg status file in which exactly these are installed.
db() {
    mkdir -p "$tmp/db"
    : >"$tmp/db/status"
    for p in "$@"; do
        printf 'Package: %s\nStatus: install ok installed\nArchitecture: amd64\nVersion: 1\nMaintainer: x\nDescription: x\n\n' \
            "$p" >>"$tmp/db/status"
    done
}
build_pkgs=$(awk '$1 == "build" { print $2 }' "$(dirname "$deps")/packages.txt" | tr '\n' ' ')
test_pkgs=$(awk '$1 == "test" { print $2 }' "$(dirname "$deps")/packages.txt" | tr '\n' ' ')

# A fake apt-get logs its arguments; APT_FAIL=1 makes install fail.
cat >"$tmp/apt" <<'SH'
#!/bin/sh
echo "$*" >>"$APT_LOG"
[ "$1" = install ] && [ "${APT_FAIL:-0}" = 1 ] && { echo "E: Unable to locate package" >&2; exit 100; }
exit 0
SH
# sudo -n works (SUDO_OK=1) or asks for a password.
mkdir -p "$tmp/bin"
cat >"$tmp/bin/sudo" <<'SH'
#!/bin/sh
[ "${SUDO_OK:-0}" = 1 ] || { echo "sudo: a password is required" >&2; exit 1; }
[ "$1" = -n ] && shift
echo "sudo $*" >>"$APT_LOG.sudo"
exec "$@"
SH
chmod +x "$tmp/apt" "$tmp/bin/sudo"

# run EUID ARGS...: deps.sh with the fakes; output in $tmp/out, status in $rc.
run() {
    euid=$1
    shift
    : >"$tmp/apt.log"
    rm -f "$tmp/apt.log.sudo"
    PATH="$tmp/bin:$PATH" APT_LOG="$tmp/apt.log" MEMKIT_DEPS_ADMINDIR="$tmp/db" \
        MEMKIT_DEPS_APT="$tmp/apt" MEMKIT_DEPS_EUID=$euid sh "$deps" "$@" >"$tmp/out" 2>&1
    rc=$?
}
expect() { # STATUS TEXT LABEL: exit status and the exact output
    [ "$rc" = "$1" ] && ok || bad "$3: exit $rc, want $1"
    [ "$(cat "$tmp/out")" = "$2" ] && ok || bad "$3: output was
$(cat "$tmp/out")
want
$2"
}

# Everything installed: silent, nothing installed, fast.
db $build_pkgs $test_pkgs
run 0 ensure build demo test
expect 0 "" "all present"
[ -s "$tmp/apt.log" ] && bad "all present: apt-get ran" || ok
run 0 check build test
expect 0 "" "all present, check"

# Build packages missing, not root, no sudo: one line naming the apt-get line.
db cmake build-essential pkg-config $test_pkgs
run 1000 ensure build
expect 1 "memkit: missing Debian packages: libzstd-dev libdw-dev libelf-dev libunwind-dev zlib1g-dev libjson-c-dev; run this, then make again: sudo apt-get install --no-install-recommends libzstd-dev libdw-dev libelf-dev libunwind-dev zlib1g-dev libjson-c-dev" "no sudo"
[ -s "$tmp/apt.log" ] && bad "no sudo: apt-get ran" || ok

# Only test tools missing, no sudo: the line also offers the opt-out.
db $build_pkgs
run 1000 ensure build test
expect 1 "memkit: missing Debian packages: $(echo $test_pkgs); run this, then make again: sudo apt-get install --no-install-recommends $(echo $test_pkgs) (or make NO_INSTALL=1 to go on without these test tools)" "no sudo, test tools"

# The purposes asked for are the ones checked: build alone needs none of them.
run 1000 ensure build
expect 0 "" "build only"

# Opt-out: prints, installs nothing; a missing test tool does not stop the build.
db $build_pkgs valgrind
MEMKIT_NO_INSTALL=1 run 0 ensure build test
rest=$(echo $test_pkgs | sed 's/valgrind //')
expect 0 "memkit: missing Debian packages: $rest (MEMKIT_NO_INSTALL=1: not installing)
memkit: install them with: sudo apt-get install --no-install-recommends $rest
memkit: tests that need them are skipped, saying why" "opt-out, test tools"
[ -s "$tmp/apt.log" ] && bad "opt-out: apt-get ran" || ok
db cmake
MEMKIT_NO_INSTALL=1 run 0 ensure build
[ "$rc" = 1 ] && ok || bad "opt-out, build packages: exit $rc, want 1"
grep -q "MEMKIT_NO_INSTALL=1: not installing" "$tmp/out" && ok || bad "opt-out, build: message"
[ -s "$tmp/apt.log" ] && bad "opt-out, build: apt-get ran" || ok

# Root: update, then install exactly the missing ones.
db $build_pkgs
run 0 ensure build demo test
[ "$rc" = 0 ] && ok || bad "root: exit $rc"
[ "$(cat "$tmp/apt.log")" = "update -qq
install -y -qq --no-install-recommends $(echo $test_pkgs)" ] && ok || bad "root: apt-get calls were $(cat "$tmp/apt.log")"
[ -e "$tmp/apt.log.sudo" ] && bad "root: used sudo" || ok

# Not root, sudo -n works: through sudo.
SUDO_OK=1 run 1000 ensure build test
[ "$rc" = 0 ] && ok || bad "sudo: exit $rc"
grep -q "^sudo $tmp/apt install -y -qq --no-install-recommends" "$tmp/apt.log.sudo" 2>/dev/null && ok ||
    bad "sudo: install did not go through sudo -n"

# A failed install says so, names the line, exits 1.
APT_FAIL=1 run 0 ensure build test
[ "$rc" = 1 ] && ok || bad "failed install: exit $rc"
tail -n 1 "$tmp/out" | grep -qx "memkit: installing failed; run this, then make again: sudo apt-get install --no-install-recommends $(echo $test_pkgs)" && ok ||
    bad "failed install: message was $(cat "$tmp/out")"

# check: lists the missing, exit 1.
db $build_pkgs
run 0 check build demo
expect 0 "" "check build demo"
db
run 0 check build
[ "$rc" = 1 ] && ok || bad "check, empty db: exit $rc"
head -n 1 "$tmp/out" | grep -qx "memkit: missing Debian packages: $(echo $build_pkgs)" && ok || bad "check, empty db: $(cat "$tmp/out")"

# Not Debian: probed, and named by what they are. With pkg-config looking in
# an empty directory, every library of the build is missing.
PKG_CONFIG_LIBDIR=$tmp/none PKG_CONFIG_PATH= MEMKIT_DEPS_DPKG_QUERY=/nonexistent/dpkg-query \
    sh "$deps" ensure build >"$tmp/out" 2>&1
rc=$?
[ "$rc" = 1 ] && ok || bad "non-Debian: exit $rc, want 1"
head -n 1 "$tmp/out" | grep -qx "memkit: not a Debian system (no /nonexistent/dpkg-query); install these with your package manager:" &&
    ok || bad "non-Debian: $(head -n 1 "$tmp/out")"
grep -qx "  elfutils libdw and headers (symbols)" "$tmp/out" && ok || bad "non-Debian: libdw not named"
grep -q "libdw-dev" "$tmp/out" && bad "non-Debian: named a Debian package" || ok

# Bad use.
sh "$deps" ensure >"$tmp/out" 2>&1
[ $? = 2 ] && ok || bad "no purpose: not exit 2"
sh "$deps" ensure bogus >"$tmp/out" 2>&1
[ $? = 2 ] && grep -q "unknown purpose 'bogus'" "$tmp/out" && ok || bad "unknown purpose"

echo "test_deps: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
