#!/bin/sh
# deps.sh check|ensure PURPOSE... - the packages of tools/packages.txt that the
# given purposes (build, demo, test) need: which are missing, and installing them.
#
#   check    print what is missing; exit 1 if anything is
#   ensure   install what is missing (as root directly, else with `sudo -n`);
#            when neither works, or MEMKIT_NO_INSTALL=1, print the exact
#            apt-get line instead and exit 1 if a build package is missing
#            (a missing test tool only makes its tests skip, saying why)
#
# On Debian the package database answers (one dpkg-query call: well under a
# second); elsewhere each package's probe does (a command, a pkg-config
# module, a shared library, a Python module) and the missing ones are named
# for the user's own package manager.
#
# Test hooks (tests/tools/test_deps.sh): MEMKIT_DEPS_ADMINDIR (dpkg's database
# directory), MEMKIT_DEPS_DPKG_QUERY, MEMKIT_DEPS_APT (the apt-get command),
# MEMKIT_DEPS_EUID.
set -u
here=$(cd "$(dirname "$0")" && pwd)
list=$here/packages.txt

usage() {
    echo "usage: deps.sh check|ensure PURPOSE... (purposes: build demo test)" >&2
    exit 2
}
[ $# -ge 2 ] || usage
mode=$1
shift
case $mode in check | ensure) ;; *) usage ;; esac
for p in "$@"; do
    case $p in build | demo | test) ;; *) echo "deps.sh: unknown purpose '$p'" >&2; exit 2 ;; esac
done

# The rows of the list for the purposes asked: "package probe description".
rows() {
    awk -v want=" $* " '/^[ \t]*(#|$)/ { next }
        index(want, " " $1 " ") { d = $4; for (i = 5; i <= NF; i++) d = d " " $i;
                                  print $2, $3, d }' "$list"
}
packages=$(rows "$@" | awk '{ print $1 }')
build_packages=$(rows build | awk '{ print $1 }')
[ -n "$packages" ] || exit 0

dpkg_query=${MEMKIT_DEPS_DPKG_QUERY:-dpkg-query}

# Not Debian: probe each package's capability and name what is missing.
if ! command -v "$dpkg_query" >/dev/null 2>&1; then
    probe() {
        case $1 in
        cmd:*) command -v "${1#cmd:}" >/dev/null 2>&1 ;;
        pc:*) pkg-config --exists "${1#pc:}" 2>/dev/null ;;
        lib:*) ldconfig -p 2>/dev/null | grep -q "${1#lib:} " ;;
        py:*) python3 -c "import ${1#py:}" >/dev/null 2>&1 ;;
        *) true ;;
        esac
    }
    missing=
    fatal=0
    while read -r pkg how what; do
        probe "$how" && continue
        missing="$missing
  $what"
        case " $(echo $build_packages) " in *" $pkg "*) fatal=1 ;; esac
    done <<EOF
$(rows "$@")
EOF
    [ -z "$missing" ] && exit 0
    echo "memkit: not a Debian system (no $dpkg_query); install these with your package manager:$missing"
    [ "$mode" = check ] && exit 1
    exit $fatal
fi

# Debian: one query for every package; installed means status "ii".
admin=${MEMKIT_DEPS_ADMINDIR:+--admindir=$MEMKIT_DEPS_ADMINDIR}
installed=$($dpkg_query $admin -W -f='${db:Status-Abbrev} ${Package}\n' $packages 2>/dev/null |
    awk '$1 == "ii" { print $2 }')
missing=
fatal=0
for pkg in $packages; do
    case " $(echo $installed) " in *" $pkg "*) continue ;; esac
    missing="$missing $pkg"
    case " $(echo $build_packages) " in *" $pkg "*) fatal=1 ;; esac
done
missing=${missing# }
[ -z "$missing" ] && exit 0

line="apt-get install --no-install-recommends $missing"
if [ "$mode" = check ]; then
    echo "memkit: missing Debian packages: $missing"
    echo "memkit: install them with: sudo $line"
    exit 1
fi
if [ "${MEMKIT_NO_INSTALL:-0}" = 1 ]; then
    echo "memkit: missing Debian packages: $missing (MEMKIT_NO_INSTALL=1: not installing)"
    echo "memkit: install them with: sudo $line"
    [ $fatal = 1 ] && exit 1
    echo "memkit: tests that need them are skipped, saying why"
    exit 0
fi

apt=${MEMKIT_DEPS_APT:-apt-get}
euid=${MEMKIT_DEPS_EUID:-$(id -u)}
if [ "$euid" = 0 ]; then
    sudo=
elif command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1; then
    sudo="sudo -n"
else
    hint=
    [ $fatal = 0 ] && hint=" (or make NO_INSTALL=1 to go on without these test tools)"
    echo "memkit: missing Debian packages: $missing; run this, then make again:" \
        "sudo $line$hint"
    exit 1
fi

echo "memkit: installing $missing"
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
if ! { $sudo $apt update -qq && $sudo $apt install -y -qq --no-install-recommends $missing; } \
    >"$log" 2>&1; then
    tail -n 5 "$log" | sed 's/^/  /'
    rm -f "$log"
    echo "memkit: installing failed; run this, then make again: sudo $line"
    exit 1
fi
rm -f "$log"
exit 0
