#!/bin/sh
# page.sh MEMKIT TRANSFER TEMPLATES SOURCE_DIR ARTIFACTS - the report's HTML
# page as a tool, in headless Chromium, on real programs: the demo
# (memkit-transfer before), a clang-14 -O2 compile of one of this project's
# files, and a C++ program whose frames are template instances.
#
# For each page: it renders without console errors; its rows' time slices
# sum to their calls and bytes; a range given in the address (#range=FROM-TO,
# as a drag on the chart sets it) makes the flame graph's total the range's
# calls, the sites table only the sites with calls in it, and each finding
# say its calls in it. The templates page shows C++ names folded, whole in
# their titles, and stacks that open with a click. Screenshots of the top of
# the demo's and clang's pages are kept in ARTIFACTS.
set -u
memkit=$1
transfer=$2
templates=$3
src=$4
artifacts=$5
skipped=
# bad, ok, render_page and the scratch directory $tmp
. "$(dirname "$0")/../cli/lib.sh"
work=$tmp

browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
    echo "SKIP: no chromium here to load the pages (make test installs it)"
    exit 77
fi
mkdir -p "$artifacts"

# page NAME CMD...: NAME's trace of CMD and its page, $work/NAME.html
page() {
    name=$1
    shift
    "$memkit" trace -q -o "$work/$name" -- "$@" >"$work/$name.out" 2>&1 ||
        bad "$name: memkit trace failed: $(tail -3 "$work/$name.out")"
    "$memkit" report --format html -o "$work/$name.html" "$work/$name".*.mkt ||
        bad "$name: report --format html failed"
}

# dom NAME VIEW: the page drawn with VIEW as its address's fragment, its
# script finished and no console error (render_page); its DOM in $out.
dom() {
    out="$work/$1.$(echo "$2" | tr -c 'a-z0-9\n' _).dom"
    render_page "$work/$1.html#$2" "$1 ($2)"
    cp "$tmp/dom" "$out"
}

# check NAME: the slices' sums, and a range through the address
check() {
    name=$1
    python3 - "$work/$name.html" >"$work/$name.range" <<'PY' || bad "$name: the page's slices (above)"
import json, re, sys
d = json.loads(re.search(r'<script id="memkit-data" type="application/json">(.*?)</script>',
                         open(sys.argv[1]).read(), re.S).group(1))
tl = d["timeline"]
n = tl["slices"]
assert 1 <= n <= 32 and tl["slice"] == tl["bucket"] * 8, tl
for k in ("sites", "functions", "lines"):
    for x in d[k]:
        c, b, t = x["slices"]
        assert len(c) == len(b) == len(t) == n, (k, x["stack"])
        assert sum(c) == x["calls"], (k, x["stack"], sum(c), x["calls"])
        assert abs(sum(b) - x["bytes"]) <= n, (k, x["stack"], sum(b), x["bytes"])
        # (the JSON writes times to 6 significant digits)
        assert abs(sum(t) - (x["allocator_ns"] or 0)) <= n + 1e-5 * sum(t), \
            (k, x["stack"], sum(t), x["allocator_ns"])
# a range: the middle half of the slices that have calls
busy = [i for i in range(n) if any(x["slices"][0][i] for x in d["sites"])]
lo, hi = busy[len(busy) // 4], busy[3 * len(busy) // 4] + 1
calls = sum(sum(x["slices"][0][lo:hi]) for x in d["sites"])
sites = sum(1 for x in d["sites"] if sum(x["slices"][0][lo:hi]))
print(lo * tl["slice"], hi * tl["slice"], calls, min(sites, 50))
PY
    set -- $(cat "$work/$name.range")
    [ $# -eq 4 ] || return
    from=$1 to=$2 calls=$3 rows=$4
    dom "$name" "range=$from-$to"
    python3 - "$out" "$work/$name.html" "$calls" "$rows" "$from" "$to" <<'PY' || bad "$name: the range (above)"
import html, json, re, sys
dom = open(sys.argv[1]).read()
d = json.loads(re.search(r'<script id="memkit-data" type="application/json">(.*?)</script>',
                         open(sys.argv[2]).read(), re.S).group(1))
calls, rows, frm, to = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
m = re.search(r'<span id="flame-total" class="sub">total: ([0-9,]+) calls in the range</span>', dom)
assert m and int(m.group(1).replace(",", "")) == calls, (m and m.group(1), calls)
assert re.search(r'<span id="range-info" class="sub">the range ', dom), "the range is not said"
table = dom[dom.index('<table id="sites">'):]
table = table[:table.index("</table>")]
got = len(re.findall(r'<td class="l frames">', table))
assert got == rows, (got, rows)
# each finding shown says its calls in the range; none shown has none
slice_ = d["timeline"]["slice"]
lo, hi = frm // slice_, to // slice_
by_stack = dict((x["stack"], x) for x in d["sites"])
for f, div in zip(d["findings"], re.findall(r'<div class="finding"[^>]*>', dom)):
    want = sum(sum(by_stack[s["stack"]]["slices"][0][lo:hi]) for s in [f["site"]] + f.get("other_sites", [])
               if s["stack"] in by_stack)
    assert ("hidden" in div) == (want == 0), (f["kind"], div, want)
PY
}

page demo "$transfer" before
check demo
shot="$artifacts/page-demo.png"
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --window-size=1300,1600 --screenshot="$shot" "file://$work/demo.html" >/dev/null 2>&1
[ "$(stat -c %s "$shot" 2>/dev/null || echo 0)" -gt 10000 ] || bad "no screenshot of the demo's page"

page templates "$templates"
check templates
dom templates ""
python3 - "$out" <<'PY' || bad "templates: folded names and stacks that open (above)"
import html, re, sys
dom = open(sys.argv[1]).read()
# the flame graph's labels fold template arguments and parameters...
labels = [html.unescape(t) for t in re.findall(r'<text x="[^"]*" y="[^"]*">([^<]*)</text>', dom)]
assert any(t.startswith("std::map<\u2026>::operator[](\u2026) (") for t in labels), \
    [t for t in labels if "std::" in t][:4]
assert not any("std::allocator<" in t for t in labels), "a label not folded"
# ...their titles keep them whole
titles = [html.unescape(t) for t in re.findall(r"<title>([^<]*)</title>", dom)]
assert any("std::map<std::__cxx11::basic_string<char" in t for t in titles), "no whole name"
# stacks show their first frames and open on a click for the rest; a
# folded frame keeps its whole name in its title
assert re.search(r'<span class="more">  \+[0-9]+ more</span>', dom), "no stack to open"
folded = [(html.unescape(t), html.unescape(x)) for t, x in
          re.findall(r'<span class="fn" title="([^"]*)">([^<]*)</span>', dom)]
assert folded and all("\u2026" in x and "\u2026" not in t for t, x in folded), folded[:2]
PY

if command -v clang-14 >/dev/null 2>&1; then
    page clang clang-14 -O2 -c "$src/src/analyze/profile.c" -I"$src/src" -I"$src/include" \
        -o "$work/profile.o"
    check clang
    shot="$artifacts/page-clang.png"
    timeout 120 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --window-size=1300,1600 --screenshot="$shot" "file://$work/clang.html" >/dev/null 2>&1
    [ "$(stat -c %s "$shot" 2>/dev/null || echo 0)" -gt 10000 ] || bad "no screenshot of clang's page"
else
    echo "SKIP: clang: clang-14 is not installed (make test installs it)"
    skipped=1
fi

[ "$fail" -eq 0 ] || exit 1
echo "page: screenshots in $artifacts"
[ -n "$skipped" ] && exit 77
echo "ok [page]"
