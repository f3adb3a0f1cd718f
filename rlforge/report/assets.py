"""The report page's stylesheet and script, inlined into every report (no CDN, no fetch).

The script builds the rollout browser from a JSON block in the page with DOM calls and
`textContent` only: rollout messages are model output and must never become markup.
"""

CSS = """
:root { --bg:#f6f7fb; --card:#fff; --ink:#1f2430; --muted:#6b7280; --line:#e5e7eb;
  --accent:#4f6bed; --pass:#2fa58a; --fail:#d9534f; --timeout:#e8a33a; --invalid:#8a94a6; }
* { box-sizing: border-box; }
body { margin:0; background:var(--bg); color:var(--ink);
  font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif; }
header { background:linear-gradient(120deg,#1f2a5a,#3b4fc4); color:#fff; padding:22px 32px 18px; }
header h1 { margin:0 0 4px; font-size:22px; font-weight:650; letter-spacing:.2px; }
header h1 small { font-weight:400; opacity:.75; font-size:15px; margin-left:8px; }
header .meta { opacity:.85; font-size:13px; display:flex; flex-wrap:wrap; gap:6px 18px; }
header .meta b { font-weight:600; }
main { padding:20px 32px 40px; max-width:1480px; margin:0 auto; }
.notice { background:#fff7e0; border:1px solid #f0d58a; color:#6b5200; padding:10px 14px;
  border-radius:8px; margin-bottom:16px; }
.kpis { display:grid; grid-template-columns:repeat(auto-fit,minmax(150px,1fr)); gap:12px; margin-bottom:18px; }
.kpi { background:var(--card); border:1px solid var(--line); border-radius:10px; padding:12px 14px; }
.kpi .v { font-size:24px; font-weight:650; font-variant-numeric:tabular-nums; }
.kpi .l { color:var(--muted); font-size:12px; text-transform:uppercase; letter-spacing:.5px; }
.kpi .s { color:var(--muted); font-size:12px; }
.kpi.good .v { color:var(--pass); } .kpi.bad .v { color:var(--fail); }
section.card { background:var(--card); border:1px solid var(--line); border-radius:10px;
  padding:16px 18px; margin-bottom:18px; }
section.card h2 { font-size:15px; margin:0 0 2px; font-weight:650; }
section.card p.sub { color:var(--muted); margin:0 0 12px; font-size:12.5px; }
.grid2 { display:grid; grid-template-columns:repeat(auto-fit,minmax(460px,1fr)); gap:18px; }
.grid3 { display:grid; grid-template-columns:repeat(auto-fit,minmax(330px,1fr)); gap:18px; }
.grid2 > section.card, .grid3 > section.card { margin-bottom:0; }
.row-gap { height:18px; }
svg.chart { width:100%; height:auto; display:block; }
svg .tick { font-size:11px; fill:#6b7280; } svg .label { font-size:12px; fill:#374151; }
svg .value { font-size:11.5px; fill:#374151; font-variant-numeric:tabular-nums; }
svg .axis-label { font-size:11.5px; fill:#6b7280; }
svg .grid { stroke:#eef0f3; } svg .axis { stroke:#9ca3af; } svg .track { fill:#f3f4f6; }
svg rect:hover, svg circle:hover { opacity:.8; }
.legend { display:flex; flex-wrap:wrap; gap:6px 14px; font-size:12px; color:#374151; margin:4px 0 8px; }
.legend .key i { display:inline-block; width:10px; height:10px; border-radius:2px; margin-right:5px; vertical-align:-1px; }
table { border-collapse:collapse; width:100%; font-variant-numeric:tabular-nums; }
th, td { text-align:left; padding:6px 8px; border-bottom:1px solid var(--line); vertical-align:middle; }
th { font-size:11.5px; text-transform:uppercase; letter-spacing:.4px; color:var(--muted); font-weight:600;
  background:#fafbfc; position:sticky; top:0; }
td.num, th.num { text-align:right; }
tr.total td { font-weight:650; background:#fafbfe; }
tr.gen td:first-child { font-weight:600; }
.pill { display:inline-block; padding:1px 8px; border-radius:999px; font-size:11.5px; font-weight:600; color:#fff; }
.pill.pass { background:var(--pass); } .pill.fail { background:var(--fail); }
.pill.timeout { background:var(--timeout); } .pill.invalid { background:var(--invalid); }
.pill.fixed { background:var(--pass); } .pill.broken { background:var(--fail); }
.pill.infra { background:var(--invalid); } .pill.policy { background:#c47a2c; }
.up { color:var(--pass); font-weight:600; } .down { color:var(--fail); font-weight:600; }
.muted { color:var(--muted); }
.quant { color:var(--muted); font-size:12px; margin-top:4px; }
.comp-gen { margin-bottom:10px; } .comp-gen h3 { font-size:13px; margin:6px 0 2px; }
.filters { display:flex; flex-wrap:wrap; gap:8px 12px; align-items:center; margin-bottom:10px; }
.filters label { font-size:12px; color:var(--muted); display:flex; gap:6px; align-items:center; }
.filters select, .filters input { font:inherit; font-size:13px; padding:4px 8px; border:1px solid #cfd4dc;
  border-radius:6px; background:#fff; }
.filters input[type=search] { width:240px; }
#count { margin-left:auto; color:var(--muted); font-size:12.5px; }
#rollouts tbody tr.r { cursor:pointer; } #rollouts tbody tr.r:hover { background:#f5f7ff; }
#rollouts tbody tr.open { background:#eef2ff; }
td.id { font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace; font-size:12.5px; }
tr.detail > td { background:#fbfbfd; padding:12px 16px 16px; }
.msg { border:1px solid var(--line); border-radius:8px; margin:8px 0; background:#fff; overflow:hidden; }
.msg .role { font-size:11px; font-weight:700; text-transform:uppercase; letter-spacing:.5px; padding:4px 10px;
  background:#f3f4f6; color:#4b5563; }
.msg.assistant .role { background:#e8edff; color:#3346b5; }
.msg.tool .role { background:#e8f6f1; color:#1f7a63; }
.msg.system .role { background:#f4f1e8; color:#7a5b1f; }
.msg pre { margin:0; padding:8px 10px; white-space:pre-wrap; word-break:break-word; max-height:420px;
  overflow:auto; font:12.5px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace; }
.comps { display:flex; flex-wrap:wrap; gap:8px; margin:4px 0 6px; }
.comp { border:1px solid var(--line); border-radius:8px; padding:6px 10px; background:#fff; font-size:12.5px; }
.comp b { font-variant-numeric:tabular-nums; }
.errbox { background:#fdf0f0; border:1px solid #f3c7c7; border-radius:8px; padding:8px 10px; margin:6px 0; }
button.more { margin:10px auto 0; display:block; font:inherit; padding:6px 16px; border-radius:6px;
  border:1px solid #cfd4dc; background:#fff; cursor:pointer; }
footer { color:var(--muted); font-size:12px; text-align:center; padding:10px 0 30px; }
"""

BROWSER_JS = r"""
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("rollout-data").textContent);
  var tbody = document.querySelector("#rollouts tbody");
  var count = document.getElementById("count");
  var more = document.getElementById("more");
  var f = {
    gen: document.getElementById("f-gen"), split: document.getElementById("f-split"),
    outcome: document.getElementById("f-outcome"), err: document.getElementById("f-err"),
    q: document.getElementById("f-q"), min: document.getElementById("f-min")
  };
  var PAGE = 100, shown = PAGE, sortKey = "task", sortDir = 1, openId = null;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function fill(select, values) {
    values.forEach(function (v) { var o = el("option", null, v); o.value = v; select.appendChild(o); });
  }
  function uniq(key) {
    var seen = {}; data.forEach(function (r) { if (r[key]) seen[r[key]] = 1; });
    return Object.keys(seen).sort();
  }
  fill(f.gen, uniq("gen")); fill(f.split, uniq("split")); fill(f.outcome, uniq("outcome"));
  fill(f.err, uniq("err"));

  function fmt(v, digits) {
    if (v === null || v === undefined) return "–";
    return typeof v === "number" ? v.toFixed(digits === undefined ? 2 : digits) : String(v);
  }
  function haystack(r) {
    if (r._text === undefined) {
      r._text = (r.id + " " + (r.errmsg || "") + " " + r.messages.map(function (m) {
        return (m.content || "") + m.tool_calls.map(function (c) { return c.arguments || ""; }).join(" ");
      }).join(" ")).toLowerCase();
    }
    return r._text;
  }
  function matches(r) {
    if (f.gen.value && r.gen !== f.gen.value) return false;
    if (f.split.value && r.split !== f.split.value) return false;
    if (f.outcome.value && r.outcome !== f.outcome.value) return false;
    if (f.err.value && r.err !== f.err.value) return false;
    var min = parseFloat(f.min.value);
    if (!isNaN(min) && !(r.reward !== null && r.reward >= min)) return false;
    var q = f.q.value.trim().toLowerCase();
    if (q && haystack(r).indexOf(q) < 0) return false;
    return true;
  }
  function compare(a, b) {
    var x = a[sortKey], y = b[sortKey];
    if (x === y) return a.id < b.id ? -1 : 1;
    if (x === null || x === undefined) return 1;
    if (y === null || y === undefined) return -1;
    return (x < y ? -1 : 1) * sortDir;
  }
  function pill(outcome) { return el("span", "pill " + outcome, outcome); }

  function detail(r) {
    var td = el("td"); td.colSpan = 10;
    var comps = el("div", "comps");
    r.comps.forEach(function (c) {
      var box = el("div", "comp");
      box.appendChild(el("span", null, c.name + " "));
      box.appendChild(el("b", null, fmt(c.value)));
      box.appendChild(el("span", "muted", " · " + c.level + (c.gate ? " · gate" : " · weight " + fmt(c.weight, 1))));
      if (c.detail) { box.appendChild(el("div", "muted", c.detail)); }
      comps.appendChild(box);
    });
    if (r.comps.length) { td.appendChild(el("div", "muted", "Reward components")); td.appendChild(comps); }
    if (r.detail) td.appendChild(el("div", "muted", r.detail));
    if (r.err) {
      var eb = el("div", "errbox");
      eb.appendChild(el("b", null, r.err + ": ")); eb.appendChild(el("span", null, r.errmsg || ""));
      td.appendChild(eb);
    }
    td.appendChild(el("div", "muted", "sample " + r.sample + " · seed " + fmt(r.seed, 0) + " · ended by " + (r.ended || "–") +
      " · " + fmt(r.turns, 0) + " turn(s) · advantage " + fmt(r.adv)));
    r.messages.forEach(function (m) {
      var box = el("div", "msg " + (m.role || ""));
      box.appendChild(el("div", "role", m.role));
      if (m.content) box.appendChild(el("pre", null, m.content));
      m.tool_calls.forEach(function (c) { box.appendChild(el("pre", null, "→ " + c.name + " " + (c.arguments || ""))); });
      td.appendChild(box);
    });
    if (!r.messages.length) td.appendChild(el("div", "muted", "no messages recorded"));
    var tr = el("tr", "detail"); tr.appendChild(td);
    return tr;
  }

  function render() {
    var rows = data.filter(matches).sort(compare);
    while (tbody.firstChild) tbody.removeChild(tbody.firstChild);
    rows.slice(0, shown).forEach(function (r) {
      var tr = el("tr", "r" + (openId === r.id ? " open" : ""));
      tr.dataset.id = r.id;
      tr.appendChild(el("td", "id", r.task));
      tr.appendChild(el("td", "num", r.sample));
      tr.appendChild(el("td", null, r.gen));
      tr.appendChild(el("td", null, r.split));
      var o = el("td"); o.appendChild(pill(r.outcome)); tr.appendChild(o);
      tr.appendChild(el("td", "num", fmt(r.reward)));
      tr.appendChild(el("td", "num", fmt(r.adv)));
      tr.appendChild(el("td", "num", (r.ptok === null ? "–" : r.ptok) + " / " + (r.ctok === null ? "–" : r.ctok)));
      tr.appendChild(el("td", "num", fmt(r.sec, 2)));
      tr.appendChild(el("td", null, r.err || ""));
      tr.addEventListener("click", function () { openId = openId === r.id ? null : r.id; render(); });
      tbody.appendChild(tr);
      if (openId === r.id) tbody.appendChild(detail(r));
    });
    count.textContent = "showing " + Math.min(shown, rows.length) + " of " + rows.length +
      (rows.length !== data.length ? " (filtered from " + data.length + ")" : "") + " rollouts";
    more.style.display = rows.length > shown ? "block" : "none";
  }
  Object.keys(f).forEach(function (k) {
    f[k].addEventListener("input", function () { shown = PAGE; render(); });
  });
  more.addEventListener("click", function () { shown += PAGE; render(); });
  document.querySelectorAll("#rollouts th[data-key]").forEach(function (th) {
    th.style.cursor = "pointer";
    th.addEventListener("click", function () {
      var key = th.dataset.key;
      sortDir = sortKey === key ? -sortDir : 1; sortKey = key; render();
    });
  });
  window.rlforgeReport = { data: data, render: render, filters: f };
  render();
})();
"""

COMPARE_JS = r"""
(function () {
  "use strict";
  var pick = document.getElementById("f-dir");
  if (!pick) return;
  pick.addEventListener("input", function () {
    document.querySelectorAll("#flips tbody tr").forEach(function (tr) {
      tr.style.display = !pick.value || tr.dataset.dir === pick.value ? "" : "none";
    });
  });
})();
"""
