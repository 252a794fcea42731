/* SPDX-License-Identifier: LGPL-2.1-or-later */
// memtrace view's page: draws the model that view/memtrace_view.py put in
// #memtrace-data (frames interned, with their texts; sites as stacks of
// frame indexes, innermost first, each with the name view/sites.py gave it;
// the groups of sites that share a name; a timeline or none; the diff from
// a base run or none). Plain DOM and SVG, no library.
//
// The charts carry what they draw, for tests/e2e/view.sh: each chart's
// <svg> names its scale (data-t0, data-t1 in ns at data-x0, data-x1 px;
// data-vmax at data-y1 px, 0 at data-y0 px), each series' element its
// values (data-values) and its points in that scale, a band its group's
// sites (data-sites, their ids) and their bytes at the peak (data-peak). A table's row carries its group's sites
// (data-sites) and each value (data-key, data-value). A flame graph's cells
// carry their frame (data-name) and bytes (data-value). The caller/callee
// view is of the function named by the page's #callers=NAME, else of the
// one under the most bytes. When everything is drawn, <body
// data-rendered="yes">.
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("memtrace-data").textContent);
  var NS = "http://www.w3.org/2000/svg";
  var TOP_ROWS = 20;

  function el(tag, attrs, parent, text) {
    var e = tag.indexOf("svg:") === 0 ? document.createElementNS(NS, tag.slice(4))
      : document.createElement(tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function bytes(n) {
    var u = ["bytes", "KiB", "MiB", "GiB", "TiB"], i = 0, v = n;
    while (Math.abs(v) >= 1024 && i < u.length - 1) { v /= 1024; i++; }
    return (i ? v.toFixed(v < 10 ? 2 : 1).replace(/\.0+$/, "") : String(v)) + " " + u[i];
  }
  function count(n) { return Number(n).toLocaleString("en-US"); }
  function secs(ns) {
    return ns >= 1e9 ? (ns / 1e9).toFixed(3) + " s" : ns >= 1e6 ? (ns / 1e6).toFixed(3) + " ms" :
      (ns / 1e3).toFixed(1) + " µs";
  }
  function px(v) { return Math.round(v * 100) / 100; }
  function base(p) { return p ? p.slice(p.lastIndexOf("/") + 1) : p; }

  // A frame as text: "function at file:line", or module+offset when unknown
  // (view/sites.py's frame_text wrote them).
  function frameText(i) { return D.texts[i]; }
  // A function, as the caller/callee view merges frames: its name, or its
  // text when it has none.
  function funcKey(i) { return D.frames[i][0] || D.texts[i]; }

  var body = document.body;

  // ------------------------------------------------------------ header
  var h = el("header", {}, body);
  el("h1", {}, h, "memtrace: " + D.file);
  var facts = [];
  if (D.command) facts.push("command: " + D.command);
  if (D.pid) facts.push("pid " + D.pid);
  if (D.duration_ns) facts.push("ran " + secs(D.duration_ns));
  var t = D.totals;
  if (t.allocations !== undefined) facts.push(count(t.allocations) + " allocations (" +
    bytes(t.allocated_bytes) + "), " + count(t.frees) + " frees");
  if (D.timeline) facts.push("peak " + bytes(D.timeline.peak.bytes) + " at " +
    secs(D.timeline.peak.time_ns));
  if (t.leaked_bytes !== undefined) facts.push("leaked " + bytes(t.leaked_bytes) + " in " +
    count(t.leaked_blocks) + " blocks");
  if (t.temporary !== undefined) facts.push(count(t.temporary) + " temporary allocations");
  el("p", { class: "facts" }, h, facts.join(" · "));
  // A sampled recording holds only the blocks drawn, one in sample_rate
  // bytes: every figure on the page is theirs, not the run's.
  if (D.sample_rate)
    el("p", { class: "warn", id: "sampled" }, h, "Sampled recording: figures are of the " +
      "sampled blocks only, one in " + count(D.sample_rate) + " bytes (MEMTRACE_SAMPLE); the " +
      "run's own are larger.");
  if (D.truncated)
    el("p", { class: "warn", id: "truncated" }, h, "This recording was cut short (a crash, " +
      "kill -9 or a full disk): the page shows the readable prefix.");

  var palette = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948",
                 "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];

  // ------------------------------------------------------------ charts
  function axes(g, sc, vfmt) {
    var i, v, y, ticks = sc.ticks;
    for (i = 0; i <= ticks; i++) {
      v = sc.vmax * i / ticks; y = sc.y(v);
      el("svg:line", { x1: sc.x0, x2: sc.x1, y1: px(y), y2: px(y), class: "grid" }, g);
      el("svg:text", { x: sc.x0 - 6, y: px(y) + 4, class: "tick", "text-anchor": "end" }, g,
        vfmt(v));
    }
    var span = sc.t1 - sc.t0, unit = span >= 5e9 ? [1e9, " s"] : span >= 5e6 ? [1e6, " ms"] :
      [1e3, " µs"], digits = span / unit[0] >= 50 ? 0 : span / unit[0] >= 5 ? 1 : 2;
    for (i = 0; i <= 10; i++) {
      var tt = sc.t0 + span * i / 10;
      el("svg:text", { x: px(sc.x(tt)), y: sc.y0 + 16, class: "tick",
        "text-anchor": i === 10 ? "end" : i ? "middle" : "start" }, g,
        (tt / unit[0]).toFixed(digits) + unit[1]);
    }
  }
  // The axis: a top that a round step (1, 2, 2.5 or 5 times a power of ten
  // of the unit, 1024-based for bytes) divides into at most five ticks.
  function niceScale(v, binary) {
    if (v <= 0) return { vmax: 1, ticks: 1 };
    var u = binary ? Math.pow(1024, Math.floor(Math.log(v) / Math.log(1024))) : 1, w = v / u;
    var p = Math.pow(10, Math.floor(Math.log10(w / 5))), steps = [1, 2, 2.5, 5, 10], step = p;
    for (var i = 0; i < steps.length; i++) if (steps[i] * p * 5 >= w) { step = steps[i] * p; break; }
    if (u === 1 && step < 1) step = 1; // counts and bytes are whole
    var ticks = Math.ceil(w / step - 1e-9);
    return { vmax: ticks * step * u, ticks: ticks };
  }
  function chart(parent, id, height, tEnd, vmax, binary) {
    var ns = niceScale(vmax, binary), sc = { x0: 80, x1: 980, y0: height - 28, y1: 12, t0: 0,
      t1: tEnd || 1, vmax: ns.vmax, ticks: ns.ticks };
    sc.x = function (tn) { return sc.x0 + (tn - sc.t0) / (sc.t1 - sc.t0) * (sc.x1 - sc.x0); };
    sc.y = function (v) { return sc.y0 - v / sc.vmax * (sc.y0 - sc.y1); };
    var s = el("svg:svg", { id: id, viewBox: "0 0 1000 " + height, class: "chart",
      "data-t0": sc.t0, "data-t1": sc.t1, "data-x0": sc.x0, "data-x1": sc.x1,
      "data-y0": sc.y0, "data-y1": sc.y1, "data-vmax": sc.vmax }, parent);
    sc.svg = s;
    return sc;
  }
  function points(sc, ts, vs) {
    var p = [];
    for (var i = 0; i < ts.length; i++) p.push(px(sc.x(ts[i])) + "," + px(sc.y(vs[i])));
    return p;
  }

  function timeline(sec, T) {
    var ts = T.times_ns, n = ts.length, tEnd = Math.max(D.duration_ns || 0, ts[n - 1] || 0);
    var vmax = T.bytes.reduce(function (a, b) { return a > b ? a : b; }, T.peak.bytes);
    el("h2", {}, sec, "Memory in use over time");
    el("p", { class: "note" }, sec, "Live bytes of the whole program (the line) and of the " +
      T.series.length + " site names that held the most at the peak (the bands, largest at " +
      "the bottom; the stacks that share a name summed); the rest is \"other\". Hover for " +
      "the values at a time.");
    var sc = chart(sec, "memory", 360, tEnd, vmax, true), g = sc.svg;
    axes(g, sc, bytes);
    var cum = new Array(n).fill(0), legend = el("ul", { class: "legend" }, sec);
    function band(vals, cls, color, ids, label, gi, peakBytes) {
      var lo = cum.slice(), top = [], i;
      for (i = 0; i < n; i++) { cum[i] += vals[i]; top.push(cum[i]); }
      var up = points(sc, ts, top), down = points(sc, ts, lo).reverse();
      var a = { d: "M" + up.concat(down).join(" L") + " Z", class: cls, fill: color,
        "data-values": vals.join(" ") };
      if (ids !== null) { a["data-sites"] = ids.join(" "); a["data-peak"] = peakBytes; }
      el("svg:title", {}, el("svg:path", a, g), label);
      var li = el("li", ids !== null ? { "data-sites": ids.join(" ") } : {}, legend);
      el("span", { class: "swatch", style: "background:" + color }, li);
      el("span", {}, li, label);
      // its row of the peak table, opened on its stacks
      if (ids !== null) li.addEventListener("click", function () {
        var row = document.querySelector('#by-peak tr[data-group="' + gi + '"]');
        if (!row) return;
        row.querySelector("details").open = true;
        row.scrollIntoView({ block: "center" });
      });
    }
    T.series.forEach(function (s, k) {
      band(s.bytes, "band", palette[k % palette.length], s.sites, D.groups[s.group].name, s.group,
        s.peak_bytes);
    });
    var other = T.bytes.map(function (v, i) { return Math.max(0, v - cum[i]); });
    band(other, "band other", "#d9d9d9", null, "other sites");
    el("svg:polyline", { class: "total", points: points(sc, ts, T.bytes).join(" "),
      "data-values": T.bytes.join(" "), "data-times": ts.join(" ") }, g);
    var pk = T.peak, cx = px(sc.x(pk.time_ns)), cy = px(sc.y(pk.bytes));
    el("svg:circle", { class: "peak", cx: cx, cy: cy, r: 5, "data-time": pk.time_ns,
      "data-bytes": pk.bytes }, g);
    el("svg:text", { class: "peak-label", x: cx + (cx > 520 ? -8 : 8), y: Math.max(cy - 8, 12),
      "text-anchor": cx > 520 ? "end" : "start" }, g,
      "peak " + bytes(pk.bytes) + " (" + count(pk.blocks) + " blocks) at " + secs(pk.time_ns));
    hover(sc, ts, function (i) {
      var lines = [secs(ts[i]) + ": " + bytes(T.bytes[i]) + " in " + count(T.blocks[i]) + " blocks"];
      T.series.forEach(function (s) {
        if (s.bytes[i]) lines.push(bytes(s.bytes[i]) + "  " + D.groups[s.group].name);
      });
      return lines;
    });

    el("h2", {}, sec, "Allocations per second");
    var rate = T.allocations.map(function (a, i) {
      var dt = ts[i] - (i ? ts[i - 1] : 0);
      return dt > 0 ? Math.round(a * 1e9 / dt) : 0;
    });
    var rc = chart(sec, "rate", 180, tEnd, rate.reduce(function (a, b) { return a > b ? a : b; }, 0));
    axes(rc.svg, rc, function (v) { return count(Math.round(v)); });
    el("svg:polyline", { class: "rate", points: points(rc, ts, rate).join(" "),
      "data-values": rate.join(" "), "data-times": ts.join(" ") }, rc.svg);
    hover(rc, ts, function (i) {
      return [secs(ts[i]) + ": " + count(rate[i]) + " allocations/s (" +
        count(T.allocations[i]) + " since the previous sample)"];
    });
  }

  // A cursor and the values at the sample nearest the mouse.
  function hover(sc, ts, text) {
    var g = sc.svg, cur = el("svg:line", { class: "cursor", y1: sc.y1, y2: sc.y0 }, g);
    var box = el("svg:text", { class: "tip", y: sc.y1 + 14 }, g);
    el("svg:rect", { class: "hit", x: sc.x0, y: sc.y1, width: sc.x1 - sc.x0,
      height: sc.y0 - sc.y1 }, g).addEventListener("mousemove", function (ev) {
      var r = g.getBoundingClientRect(), vx = (ev.clientX - r.left) * 1000 / r.width;
      var tn = sc.t0 + (vx - sc.x0) / (sc.x1 - sc.x0) * (sc.t1 - sc.t0), lo = 0, hi = ts.length - 1;
      while (lo < hi) { var mid = (lo + hi) >> 1; if (ts[mid] < tn) lo = mid + 1; else hi = mid; }
      if (lo > 0 && tn - ts[lo - 1] < ts[lo] - tn) lo--;
      var x = px(sc.x(ts[lo]));
      cur.setAttribute("x1", x); cur.setAttribute("x2", x); cur.style.display = "inline";
      box.textContent = "";
      var right = x > 600;
      box.setAttribute("text-anchor", right ? "end" : "start");
      text(lo).slice(0, 12).forEach(function (l, k) {
        el("svg:tspan", { x: right ? x - 6 : x + 6, dy: k ? 14 : 0 }, box, l);
      });
    });
  }

  // ------------------------------------------------------------ site tables
  var TABLES = [
    ["peak", "peak_bytes", "Top sites by memory at the peak", "live bytes when the program " +
      "used the most memory"],
    ["leaked", "leaked_bytes", "Top sites by leaked memory", "bytes still allocated at exit"],
    ["allocated", "allocated_bytes", "Top sites by allocated memory", "bytes allocated over " +
      "the whole run, freed or not"],
    ["temporary", "temporary", "Top sites by temporary allocations", "allocations freed soon " +
      "after they were made (within MEMTRACE_RECORD_CULL_MS, or with no allocation in " +
      "between by the same thread)"]];
  var COLS = [["peak_bytes", "at peak", bytes], ["leaked_bytes", "leaked", bytes],
    ["allocations", "allocations", count], ["allocated_bytes", "allocated", bytes],
    ["temporary", "temporary", count]];
  var HAVE = { peak_bytes: "peak", leaked_bytes: "leaked", allocations: "allocated",
    allocated_bytes: "allocated", temporary: "temporary" };

  function table(sec, spec) {
    var key = spec[1], s = el("section", { id: "by-" + spec[0] }, sec);
    el("h3", {}, s, spec[2]);
    el("p", { class: "note" }, s, spec[3] + ". A site is named by the first frame that " +
      "tells its stack from the others' (the frames they share left out) and the function " +
      "that allocates; the stacks of one name are summed. Click a name for its stacks.");
    if (!D.have[spec[0]]) {
      el("p", { class: "absent" }, s, "Not in this input (" + D.source + ").");
      return;
    }
    var rows = D.groups.filter(function (x) { return x[key] > 0; });
    rows.sort(function (a, b) { return b[key] - a[key]; });
    var cols = COLS.filter(function (c) { return D.have[HAVE[c[0]]]; });
    var tb = el("table", {}, s), tr = el("tr", {}, el("thead", {}, tb));
    el("th", {}, tr, "#"); el("th", {}, tr, "site");
    cols.forEach(function (c) { el("th", { class: c[0] === key ? "num key" : "num" }, tr, c[1]); });
    var tbody = el("tbody", {}, tb);
    rows.slice(0, TOP_ROWS).forEach(function (site, k) {
      var members = site.sites.map(function (i) { return D.sites[i]; });
      var r = el("tr", { "data-sites": members.map(function (m) { return m.id; }).join(" "),
        "data-group": D.groups.indexOf(site) }, tbody);
      el("td", { class: "num" }, r, String(k + 1));
      var det = el("details", {}, el("td", {}, r));
      el("summary", {}, det, site.name);
      stacks(det, members, key);
      cols.forEach(function (c) {
        var v = site[c[0]] || 0, txt = c[2](v);
        if (c[0] === "leaked_bytes" && site.leaked_blocks) txt += " (" + count(site.leaked_blocks) + ")";
        el("td", { class: "num", "data-key": c[0], "data-value": v }, r, txt);
      });
    });
    if (!rows.length) el("p", { class: "absent" }, s, "No site.");
    else if (rows.length > TOP_ROWS)
      el("p", { class: "note" }, s, "and " + count(rows.length - TOP_ROWS) + " more site names");
  }

  // The full stacks of a name's sites, the most KEY first (at most five).
  function stacks(parent, members, key) {
    members = members.slice().sort(function (a, b) { return (b[key] || 0) - (a[key] || 0); });
    members.slice(0, 5).forEach(function (m) {
      if (members.length > 1)
        el("div", { class: "stack-head" }, parent, "stack " + m.id + ": " + bytes(m.peak_bytes || 0) +
          " at peak, " + count(m.allocations || 0) + " allocation" + (m.allocations === 1 ? "" : "s"));
      var ol = el("ol", { class: "stack", "data-site": m.id }, parent);
      m.stack.forEach(function (f) {
        var li = el("li", {}, ol, frameText(f));
        li.addEventListener("click", function () { callers(funcKey(f)); });
      });
    });
    if (members.length > 5)
      el("div", { class: "stack-head" }, parent, "and " + (members.length - 5) + " more stacks");
  }

  // ------------------------------------------------------------ callers and callees
  // heaptrack_gui's view of one function: the sites whose stacks hold it
  // (each counted once, however often it recurses), split by the function
  // that called it and by the one it called ("(allocates here)" when it is
  // the innermost frame, the allocation's own caller).
  var CC = [["peak_bytes", "at peak", bytes, "peak"], ["leaked_bytes", "leaked", bytes, "leaked"],
    ["allocations", "allocations", count, "allocated"], ["allocated_bytes", "allocated", bytes,
      "allocated"]];
  var ccSec = null, ccPick = null;
  function ccTotals() {
    var by = {};
    D.sites.forEach(function (site) {
      var seen = {};
      site.stack.forEach(function (f) {
        var k = funcKey(f);
        if (seen[k]) return;
        seen[k] = true;
        var t = by[k] || (by[k] = { peak_bytes: 0, allocations: 0 });
        t.peak_bytes += site.peak_bytes || 0; t.allocations += site.allocations || 0;
      });
    });
    return by;
  }
  function callers(name) {
    if (!ccSec) return;
    var out = ccSec.querySelector(".cc-out");
    if (out) out.remove();
    out = el("div", { class: "cc-out", "data-function": name }, ccSec);
    ccPick.value = name;
    var total = { sites: 0 }, up = {}, down = {};
    CC.forEach(function (c) { total[c[0]] = 0; });
    function add(map, k, site) {
      var t = map[k] || (map[k] = { sites: 0 });
      CC.forEach(function (c) { t[c[0]] = (t[c[0]] || 0) + (site[c[0]] || 0); });
      t.sites++;
    }
    D.sites.forEach(function (site) {
      var st = site.stack, ups = {}, downs = {}, hit = false;
      for (var i = 0; i < st.length; i++) {
        if (funcKey(st[i]) !== name) continue;
        hit = true;
        ups[i + 1 < st.length ? funcKey(st[i + 1]) : "(outermost)"] = true;
        downs[i ? funcKey(st[i - 1]) : "(allocates here)"] = true;
      }
      if (!hit) return;
      add({ t: total }, "t", site);
      Object.keys(ups).forEach(function (k) { add(up, k, site); });
      Object.keys(downs).forEach(function (k) { add(down, k, site); });
    });
    var cols = CC.filter(function (c) { return D.have[c[3]]; });
    el("p", { class: "cc-total" }, out, name + ": " + cols.map(function (c) {
      return c[1] + " " + c[2](total[c[0]] || 0); }).join(", ") + " in " + count(total.sites) +
      " stack" + (total.sites === 1 ? "" : "s"));
    [["cc-callers", "Called from", up], ["cc-callees", "Calls", down]].forEach(function (part) {
      el("h4", {}, out, part[1]);
      var tb = el("table", { id: part[0] }, out), tr = el("tr", {}, el("thead", {}, tb));
      el("th", {}, tr, "function");
      cols.forEach(function (c) { el("th", { class: "num" }, tr, c[1]); });
      var body = el("tbody", {}, tb), key = cols.length ? cols[0][0] : "peak_bytes";
      Object.keys(part[2]).sort(function (a, b) {
        return (part[2][b][key] - part[2][a][key]) || (a < b ? -1 : a > b ? 1 : 0);
      }).forEach(function (k) {
        var v = part[2][k], r = el("tr", { "data-function": k }, body);
        var td = el("td", { class: "fn" }, r, k);
        if (k.charAt(0) !== "(") td.addEventListener("click", function () { callers(k); });
        cols.forEach(function (c) {
          el("td", { class: "num", "data-key": c[0], "data-value": v[c[0]] }, r, c[2](v[c[0]]));
        });
      });
    });
  }
  function callerView(parent) {
    ccSec = el("section", { id: "callers" }, parent);
    el("h2", {}, ccSec, "Callers and callees");
    el("p", { class: "note" }, ccSec, "Pick a function (or click a frame of a stack): the " +
      "sites under it, split by the function that called it and the one it called. A site " +
      "counts once under a function however often the function recurses.");
    var by = ccTotals(), key = D.have.peak ? "peak_bytes" : "allocations";
    var fns = Object.keys(by).sort(function (a, b) {
      return (by[b][key] - by[a][key]) || (a < b ? -1 : a > b ? 1 : 0);
    });
    ccPick = el("select", { id: "callers-pick" }, ccSec);
    fns.forEach(function (k) { el("option", { value: k }, ccPick, k); });
    ccPick.addEventListener("change", function () { callers(ccPick.value); });
    var want = /^#callers=(.*)$/.exec(location.hash);
    want = want ? decodeURIComponent(want[1]) : null;
    if (want !== null && !by[want]) {
      el("p", { class: "warn", id: "callers-none" }, ccSec, "No function " + want + " in this input.");
      want = null;
    }
    if (want === null) want = fns.length ? fns[0] : null;
    if (want !== null) callers(want);
  }

  // ------------------------------------------------------------ a diff of two runs
  // memtrace view NEW --base OLD: per name (the names told apart over both
  // runs' stacks), the change of each number, the most growth first.
  function diffView(parent, X) {
    var s = el("section", { id: "diff" }, parent);
    el("h2", {}, s, "Changes from " + X.base);
    el("p", { class: "facts", id: "diff-peak" }, s, "peak " + bytes(X.peak[0]) + " \u2192 " +
      bytes(X.peak[1]) + " (" + signed(X.peak[1] - X.peak[0], bytes) + ")" +
      (X.base_command ? " · base command: " + X.base_command : ""));
    var cols = [["peak_bytes", "at peak", bytes, "peak"], ["leaked_bytes", "live at exit", bytes,
      "leaked"], ["allocations", "allocations", count, "allocated"], ["allocated_bytes",
      "allocated", bytes, "allocated"]].filter(function (c) { return X.have[c[3]]; });
    el("p", { class: "note" }, s, "Each site name in either run (a name absent from one run is " +
      "0 there): its change, base \u2192 this run, sorted by growth at the peak, then at exit, " +
      "then in allocations.");
    var tb = el("table", { id: "diff-table" }, s), tr = el("tr", {}, el("thead", {}, tb));
    el("th", {}, tr, "#"); el("th", {}, tr, "site");
    cols.forEach(function (c) { el("th", { class: "num" }, tr, c[1] + " \u0394"); });
    var body = el("tbody", {}, tb), shown = 0;
    X.rows.forEach(function (row) {
      var r = row[1], same = cols.every(function (c) { return r[c[0]][0] === r[c[0]][1]; });
      if (same || shown >= 50) return;
      shown++;
      var tr2 = el("tr", { "data-name": row[0] }, body);
      el("td", { class: "num" }, tr2, String(shown));
      el("td", {}, tr2, row[0]);
      cols.forEach(function (c) {
        var v = r[c[0]], d = v[1] - v[0];
        el("td", { class: "num" + (d > 0 ? " grew" : d < 0 ? " shrank" : ""), "data-key": c[0],
          "data-base": v[0], "data-value": v[1], "data-delta": d }, tr2, signed(d, c[2]) +
          " (" + c[2](v[0]) + " \u2192 " + c[2](v[1]) + ")");
      });
    });
    if (!shown) el("p", { class: "absent" }, s, "No site changed.");
  }
  function signed(d, f) { return (d > 0 ? "+" : d < 0 ? "\u2212" : "\u00b1") + f(Math.abs(d)); }

  // ------------------------------------------------------------ flame graphs
  // The sites' stacks merged from the outermost frame in; a cell's width is
  // its bytes. Click a cell to zoom to it, the bottom cell to zoom out.
  function flame(sec, id, key, title, note) {
    var s = el("section", { id: id }, sec);
    el("h3", {}, s, title);
    if (!D.have[key === "peak_bytes" ? "peak" : "leaked"]) {
      el("p", { class: "absent" }, s, "Not in this input (" + D.source + ").");
      return;
    }
    el("p", { class: "note" }, s, note + " Click a frame to zoom in, the bottom bar to zoom out.");
    // Frames are merged by their text, as flamegraph.pl does: one function
    // and line reached at two addresses (two inline copies) is one cell.
    var root = { name: "all", value: 0, kids: {}, depth: 0 }, maxDepth = 0;
    if (!texts) texts = D.frames.map(function (f, i) { return frameText(i); });
    D.sites.forEach(function (site) {
      var v = site[key] || 0, node = root;
      if (v <= 0) return;
      root.value += v;
      for (var i = site.stack.length - 1, d = 1; i >= 0; i--, d++) {
        var f = texts[site.stack[i]], c = node.kids["=" + f];
        if (!c) c = node.kids["=" + f] = { name: f, value: 0, kids: {}, depth: d, up: node };
        c.value += v; node = c;
        if (d > maxDepth) maxDepth = d;
      }
    });
    if (!root.value) { el("p", { class: "absent" }, s, "Nothing: no bytes."); return; }
    var ROW = 17, W = 1000, H = (maxDepth + 1) * ROW + 4;
    var svg = el("svg:svg", { class: "flame", viewBox: "0 0 " + W + " " + H, width: "100%",
      "data-total": root.value }, s);
    function draw(focus) {
      while (svg.firstChild) svg.removeChild(svg.firstChild);
      var scale = W / focus.value;
      for (var a = focus; a; a = a.up) cell(a, 0, W, a === focus ? null : a);
      place(focus, 0);
      function place(node, x) {
        Object.keys(node.kids).map(function (k) { return node.kids[k]; })
          .sort(function (p, q) { return q.value - p.value; }).forEach(function (c) {
            var w = c.value * scale;
            if (w >= 0.5) { cell(c, x, w, null); place(c, x); }
            x += w;
          });
      }
      function cell(node, x, w, ancestor) {
        var y = H - (node.depth + 1) * ROW, g = el("svg:g", { class: "cell",
          "data-name": node.name, "data-value": node.value, "data-depth": node.depth }, svg);
        var pct = (100 * node.value / root.value).toFixed(1);
        el("svg:title", {}, g, node.name + "\n" + bytes(node.value) + " (" + pct + "%)");
        el("svg:rect", { x: px(x), y: y, width: px(Math.max(w - 0.5, 0.1)), height: ROW - 1,
          fill: ancestor ? "#ccc" : "hsl(" + (20 + (hash(node.name) % 40)) + ",85%," +
            (58 + hash(node.name + "l") % 12) + "%)" }, g);
        var chars = Math.floor((w - 6) / 6.6);
        if (chars > 2) el("svg:text", { x: px(x + 3), y: y + ROW - 5 }, g,
          node.name.length > chars ? node.name.slice(0, chars - 1) + "…" : node.name);
        g.addEventListener("click", function () { draw(node.depth ? node : root); });
      }
    }
    draw(root);
  }
  var texts = null; // each frame's text, for the flame graphs
  function hash(str) {
    var h = 0;
    for (var i = 0; i < str.length; i++) h = (h * 31 + str.charCodeAt(i)) | 0;
    return Math.abs(h);
  }

  // ------------------------------------------------------------ the page
  var main = el("main", {}, body), sec = el("section", { id: "timeline" }, main);
  if (D.timeline && D.timeline.times_ns.length) timeline(sec, D.timeline);
  else el("p", { class: "warn", id: "no-timeline" }, sec, "No timeline: " + (D.no_timeline ||
    "the recording has no sample") + ". The site tables and flame graphs below are from " +
    "what it holds; record a timeline with MEMTRACE_RECORD for memory over time.");
  if (D.diff) diffView(main, D.diff);
  var st = el("section", { id: "sites" }, main);
  el("h2", {}, st, "Sites");
  TABLES.forEach(function (spec) { table(st, spec); });
  callerView(main);
  var fl = el("section", { id: "flames" }, main);
  el("h2", {}, fl, "Flame graphs");
  flame(fl, "flame-peak", "peak_bytes", "At the peak", "The stacks holding memory when the " +
    "program used the most; outermost frame at the bottom, width in bytes.");
  flame(fl, "flame-leaks", "leaked_bytes", "Leaked (still allocated at exit)", "The stacks " +
    "of the blocks never freed; outermost frame at the bottom, width in bytes.");
  body.setAttribute("data-rendered", "yes");
})();
