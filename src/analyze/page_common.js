/* page_common.js - what both of memkit's pages (the report's and the
 * bench's) draw with, inlined into each at build time (cmake/embed.cmake):
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
