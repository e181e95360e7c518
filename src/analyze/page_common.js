/* page_common.js - what memkit's pages (the report's, bench's and
 * replay's) draw with, inlined into each at build time (cmake/embed.cmake):
 * one file, no network, works from file://. */
var SVGNS = "http://www.w3.org/2000/svg";

/* An HTML element with attributes and text. */
function el(tag, attrs, text) {
  var e = document.createElement(tag);
  for (var k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  return e;
}

/* The same, in SVG's namespace. */
function svg(tag, attrs, text) {
  var e = document.createElementNS(SVGNS, tag);
  for (var k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  return e;
}

/* 1234567 as "1,234,567". */
function count(n) { return Number(n).toLocaleString("en-US"); }

/* A chart of one horizontal bar per row: name(r), cls(r) (the bar's class),
 * value(r), and optional whiskers lo(r)..hi(r). A bar more than four times
 * the next longest (a stack frame's single pop "frees" millions of blocks
 * per microsecond) is cut at that length and marked, so the others stay
 * readable. */
function barChart(title, rows, name, cls, value, lo, hi, label) {
  var box = el("div", {"class": "chart"});
  box.appendChild(el("h3", {}, title));
  var bar = 16, gap = 6, left = 104, width = 440, right = 84;
  var h = rows.length * (bar + gap) + gap;
  var s = svg("svg", {"viewBox": "0 0 " + width + " " + h});
  var ends = rows.map(function (r) { return hi ? hi(r) : value(r); }).sort(function (a, b) { return b - a; });
  var max = ends.length > 1 && ends[0] > 4 * ends[1] ? 4 * ends[1] : ends[0] || 0;
  var scale = max > 0 ? (width - left - right) / max : 0;
  function x(v) { return left + Math.min(v, max) * scale; }
  rows.forEach(function (r, i) {
    var y = gap + i * (bar + gap), v = value(r), cut = (hi ? hi(r) : v) > max;
    s.appendChild(svg("text", {"x": left - 6, "y": y + bar - 4, "text-anchor": "end"}, name(r)));
    var rect = svg("rect", {"class": cls(r), "x": left, "y": y, "width": Math.max(1, x(v) - left), "height": bar});
    rect.appendChild(svg("title", {}, name(r) + ": " + label(v)));
    s.appendChild(rect);
    if (lo && hi) {
      var mid = y + bar / 2;
      s.appendChild(svg("line", {"class": "whisker", "x1": x(lo(r)), "x2": x(hi(r)), "y1": mid, "y2": mid}));
    }
    s.appendChild(svg("text", {"x": x(hi ? hi(r) : v) + 4, "y": y + bar - 4}, (cut ? "\u00bb " : "") + label(v)));
  });
  box.appendChild(s);
  return box;
}
