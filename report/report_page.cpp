#include "report/report_page.h"

#include "base/files.h"

namespace tilesmith {
namespace {

// Text inside <script> ends at the first "</": JSON and library text keep theirs escaped.
std::string script_safe(std::string s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<' && i + 1 < s.size() && s[i + 1] == '/') {
      out += "<\\/";
      ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

constexpr const char* kHead = R"HTML(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<title>tilesmith report</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:14px 28px}header h1{margin:0;font-size:20px}
header p{margin:2px 0 0;color:#c9d1e0}
main{max-width:1200px;margin:0 auto;padding:8px 24px 40px}
section{background:#fff;border:1px solid #e1e4ea;border-radius:6px;margin:16px 0;padding:12px 18px}
h2{font-size:17px;margin:4px 0 10px}h3{font-size:14px;margin:12px 0 6px}
table{border-collapse:collapse;font-size:13px}td,th{border-bottom:1px solid #eceef2;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f2f4f7}td.n{text-align:right;font-variant-numeric:tabular-nums}
.kv td:first-child{color:#5a6273;white-space:nowrap}.grid{display:grid;grid-template-columns:1fr 1fr;gap:16px}
.chart{position:relative;height:320px}.small{height:220px}.warn{color:#9a5b00}.muted{color:#6b7280}
code{font-size:12px;word-break:break-all}.pill{display:inline-block;padding:0 6px;border-radius:8px;color:#fff;font-size:12px}
</style></head><body>
<header><h1>tilesmith report</h1><p id="subtitle"></p></header>
<main>
<section id="summary"><h2>1. Summary</h2><div id="summary-body"></div></section>
<section id="convergence"><h2>2. Convergence</h2>
<p class="muted">Best throughput found so far, overall and per proposer; dashed: the vendor library; grey ticks: generation starts; orange crosses: steps set by a throttled measurement.</p>
<div class="grid"><div class="chart"><canvas id="conv-evals"></canvas></div><div class="chart"><canvas id="conv-time"></canvas></div></div></section>
<section id="candidates"><h2>3. Every candidate</h2>
<p class="muted">Each evaluation in order; failed ones sit at 0, coloured by outcome. Hover for the parameters.</p>
<div class="chart"><canvas id="cand-chart"></canvas></div></section>
<section id="power"><h2>4. Clocks and power</h2>
<p class="muted" id="power-note">The device while each evaluation's samples ran (NVML): SM clock (median of the readings), board power (mean) and the highest temperature; orange crosses: throttled (power cap, heat or the board's slowdown signal).</p>
<div id="power-body"></div></section>
<section id="sensitivity"><h2>5. Sensitivity</h2>
<p class="muted">Per tunable (the ones whose values change the best throughput most first): for each value the range of TFLOP/s of its valid candidates (bar), the median (dot) and how many failed (red, right axis).</p>
<div id="sens-body"></div></section>
<section id="roofline"><h2>6. Roofline</h2><div class="grid"><div class="chart"><canvas id="roof-chart"></canvas></div><div id="roof-text"></div></div></section>
<section id="time"><h2>7. Where the time went</h2><div class="grid"><div class="chart small"><canvas id="time-chart"></canvas></div><div id="time-text"></div></div></section>
<section id="llm"><h2>8. LLM</h2><div id="llm-body"></div></section>
<section id="top"><h2>9. Top configurations</h2><div id="top-body"></div></section>
</main>
)HTML";

constexpr const char* kScript = R"JS(
(function () {
const D = JSON.parse(document.getElementById('report-data').textContent);
const C = D.candidates || {};
const N = (C.row || []).length;
const OUTCOME_COLOR = {ok: '#2563eb', invalid: '#9ca3af', compile_error: '#a855f7', resource_error: '#f59e0b',
  launch_error: '#ea580c', wrong_result: '#dc2626', timeout: '#7c2d12', crash: '#111827'};
// Marks a measurement the GPU throttled (runtime/telemetry.h's slowdown reasons).
const THROTTLED = '#f97316';
const PALETTE = ['#2563eb', '#16a34a', '#db2777', '#ea580c', '#7c3aed', '#0891b2', '#65a30d', '#b91c1c'];
const charts = [];
const esc = s => String(s == null ? '' : s).replace(/[&<>"]/g, c => ({'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;'}[c]));
const fmt = (v, d) => v == null || isNaN(v) ? '–' : Number(v).toFixed(d == null ? 2 : d);
const table = (head, rows, numeric) => '<table><tr>' + head.map(h => '<th>' + esc(h) + '</th>').join('') + '</tr>' +
  rows.map(r => '<tr>' + r.map((c, i) => '<td' + (numeric && numeric[i] ? ' class="n"' : '') + '>' + c + '</td>').join('') + '</tr>').join('') + '</table>';
const kv = rows => '<table class="kv">' + rows.map(r => '<tr><td>' + esc(r[0]) + '</td><td>' + r[1] + '</td></tr>').join('') + '</table>';
Chart.defaults.animation = false;
Chart.defaults.responsive = true;
Chart.defaults.maintainAspectRatio = false;
function make(id, cfg) { const c = new Chart(document.getElementById(id), cfg); charts.push(c); return c; }

const P = D.problem || {}, dev = D.device || {};
const flops = 2 * (P.m || 0) * (P.n || 0) * (P.k || 0);
const vendorEval = D.vendor ? D.vendor.evaluation : null;
const vendorTf = vendorEval && vendorEval.outcome === 'ok' ? vendorEval.tflops : null;
const problemText = (P.m ? P.m + '×' + P.n + '×' + P.k + ' ' + (P.dtype || '') + (P.c_dtype && P.c_dtype !== P.dtype ? '→' + P.c_dtype : '') +
  ' ' + (P.layout || '') + (P.c_layout === 'col' ? ' C:col' : '') + (P.epilogue && P.epilogue !== 'none' ? ' +' + P.epilogue : '') : 'unknown problem');
document.getElementById('subtitle').textContent = problemText + ' on ' + (dev.name || '?') + ' — run ' + (D.run_id || '?');

// 1. Summary
(function () {
  let best = null;
  for (let i = 0; i < N; i++) if (C.tflops[i] != null && (best == null || C.tflops[i] > C.tflops[best])) best = i;
  const entry = (D.best_config || [])[0];
  const bestTf = entry && entry.metrics ? entry.metrics.tflops : (best != null ? C.tflops[best] : null);
  const outcomes = Object.entries(D.outcomes || {}).sort((a, b) => b[1] - a[1])
    .map(([o, n]) => '<span class="pill" style="background:' + (OUTCOME_COLOR[o] || '#555') + '">' + esc(o) + ' ' + n + '</span>').join(' ');
  const s = D.settings || {};
  const rows = [
    ['device', esc(dev.name || '?') + ' (' + esc(dev.arch || '?') + (dev.multiprocessors ? ', ' + dev.multiprocessors + ' SMs' : '') + ')'],
    ['fingerprint', '<code>' + esc(dev.fingerprint || '') + '</code>'],
    ['problem', esc(problemText) + (flops ? ' — ' + fmt(flops / 1e9, 1) + ' GFLOP' : '')],
    ['budget', (D.evaluated || 0) + ' candidates evaluated, ' + (D.rejected || 0) + ' proposals rejected before compiling; ' +
      'sessions ' + (D.sessions || 1) + (s.max_evals ? ', --max-evals ' + s.max_evals : '') + (s.proposer ? ', proposer ' + esc(s.proposer) : '') +
      ', wall ' + fmt((D.time || {}).wall_s / 60, 1) + ' min'],
    ['outcomes', outcomes || '–'],
  ];
  if (entry) {
    rows.push(['best configuration', esc(entry.template ? entry.template.name : '') + ' <code>' + esc(JSON.stringify(entry.config)) + '</code>']);
    rows.push(['best throughput', fmt(bestTf) + ' TFLOP/s (' + fmt(entry.metrics.median_ms, 4) + ' ms, ' + esc(entry.metrics.source || '') + ')']);
    rows.push(['error', 'relative error norm ' + fmt(entry.metrics.rel_error_norm, 8) + ', max abs ' + fmt(entry.metrics.max_abs_error, 8)]);
  } else if (best != null) {
    rows.push(['best so far', fmt(C.tflops[best]) + ' TFLOP/s (row ' + C.row[best] + ', no best_config.json yet)']);
  }
  if (vendorTf) rows.push(['vendor library', esc(D.vendor.name) + ': ' + fmt(vendorTf) + ' TFLOP/s' +
      (bestTf ? ' — ours / vendor <b>' + fmt(bestTf / vendorTf, 3) + '×</b>' : '') +
      (vendorEval.message ? ' <span class="muted">(' + esc(vendorEval.message) + ')</span>' : '')]);
  else rows.push(['vendor library', '<span class="muted">not measured in this run</span>']);
  if (D.bench && D.bench.entries) {
    const b = D.bench.entries.map(e => [esc(e.template), e.now ? esc(e.now.outcome) : '–', e.now ? fmt(e.now.tflops) : '–',
      e.vendor ? fmt(e.vendor.tflops) : '–', e.now && e.vendor && e.vendor.timing ? fmt(e.vendor.timing.median_ms / e.now.timing.median_ms, 3) + '×' : '–', esc(e.status || '')]);
    rows.push(['bench-best', table(['template', 'now', 'TFLOP/s', 'vendor TFLOP/s', 'ratio', 'status'], b, [0, 0, 1, 1, 1, 0])]);
  }
  let html = kv(rows);
  if ((D.warnings || []).length) html += '<h3 class="warn">Notes on the data</h3><ul class="warn">' + D.warnings.map(w => '<li>' + esc(w) + '</li>').join('') + '</ul>';
  document.getElementById('summary-body').innerHTML = html;
})();

// Vertical ticks at generation starts (index-based x axis).
const genTicks = {id: 'genTicks', afterDatasetsDraw(chart, args, opts) {
  if (!opts || !opts.at) return;
  const x = chart.scales.x, y = chart.scales.y, ctx = chart.ctx;
  ctx.save(); ctx.strokeStyle = 'rgba(100,100,100,0.25)'; ctx.lineWidth = 1;
  for (const v of opts.at) { const px = x.getPixelForValue(v); if (px < x.left || px > x.right) continue;
    ctx.beginPath(); ctx.moveTo(px, y.top); ctx.lineTo(px, y.bottom); ctx.stroke(); }
  ctx.restore(); }};

// 2. Convergence
(function () {
  const props = [...new Set(C.proposer || [])];
  // A step set by a throttled measurement understates its candidate: mark it, once even
  // where it is a step of the overall line and of its proposer's.
  const throttled = i => !!(C.throttled && C.throttled[i]);
  const series = (xOf) => {
    const all = [], per = {}, marked = []; let best = 0; const pb = {};
    props.forEach(p => { per[p] = []; pb[p] = 0; });
    for (let i = 0; i < N; i++) {
      const x = xOf(i); if (x == null) continue;
      const t = C.tflops[i] || 0, p = C.proposer[i];
      let step = false;
      if (t > best) { best = t; all.push({x, y: best}); step = true; }
      if (t > pb[p]) { pb[p] = t; per[p].push({x, y: t}); step = true; }
      if (step && throttled(i)) marked.push({x, y: t});
    }
    const last = N ? xOf(N - 1) : 0;
    if (all.length) all.push({x: last, y: best});
    props.forEach(p => { if (per[p].length) per[p].push({x: last, y: pb[p]}); });
    const ds = [{label: 'best so far (all)', data: all, borderColor: '#111827', borderWidth: 2.5, stepped: true, pointRadius: 0}];
    props.forEach((p, j) => ds.push({label: 'best by ' + p, data: per[p], borderColor: PALETTE[j % PALETTE.length], borderWidth: 1.5, stepped: true, pointRadius: 2}));
    if (vendorTf) ds.push({label: 'vendor', data: [{x: N ? xOf(0) || 0 : 0, y: vendorTf}, {x: last, y: vendorTf}], borderColor: '#dc2626', borderDash: [6, 4], pointRadius: 0});
    if (marked.length) ds.push({label: 'throttled', data: marked, showLine: false, pointStyle: 'crossRot', pointRadius: 7, borderWidth: 2.5, borderColor: THROTTLED, backgroundColor: THROTTLED});
    return ds;
  };
  const opts = (title, ticks) => ({parsing: false, scales: {x: {type: 'linear', title: {display: true, text: title}}, y: {beginAtZero: true, title: {display: true, text: 'TFLOP/s'}}},
    plugins: {genTicks: {at: ticks}, legend: {position: 'bottom'}}});
  make('conv-evals', {type: 'line', data: {datasets: series(i => i + 1)}, options: opts('evaluation', (D.generations || []).map(g => g.index)), plugins: [genTicks]});
  make('conv-time', {type: 'line', data: {datasets: series(i => C.t[i] == null ? null : C.t[i] / 60)}, options: opts('wall time (min)', (D.generations || []).map(g => C.t[g.index - 1] == null ? null : C.t[g.index - 1] / 60).filter(v => v != null)), plugins: [genTicks]});
})();

// 3. Every candidate
(function () {
  const groups = {};
  for (let i = 0; i < N; i++) {
    const o = C.outcome[i]; (groups[o] = groups[o] || []).push({x: i + 1, y: C.tflops[i] || 0, i});
  }
  const ds = Object.entries(groups).map(([o, pts]) => ({label: o + ' (' + pts.length + ')', data: pts, backgroundColor: OUTCOME_COLOR[o] || '#555', pointRadius: N > 5000 ? 1.5 : 3}));
  make('cand-chart', {type: 'scatter', data: {datasets: ds}, options: {parsing: false, plugins: {legend: {position: 'bottom'}, tooltip: {callbacks: {label: (ctx) => {
    const i = ctx.raw.i; return [C.template[i] + ' row ' + C.row[i] + ' (' + C.proposer[i] + '): ' + C.outcome[i] + (C.tflops[i] ? ', ' + fmt(C.tflops[i]) + ' TFLOP/s' : ''),
      C.config[i] || '(parameters shown for the fastest candidates only)', C.message[i] || ''].filter(Boolean); }}}},
    scales: {x: {title: {display: true, text: 'evaluation'}}, y: {beginAtZero: true, title: {display: true, text: 'TFLOP/s'}}}}});
})();

// 4. Clocks and power
(function () {
  const T = D.telemetry || {}, host = document.getElementById('power-body');
  // No readings: one sentence saying why, in place of the chart and its legend's note.
  if (!T.measured_rows) { document.getElementById('power-note').remove(); host.innerHTML = '<p class="muted">' + esc(T.none) + '</p>'; return; }
  host.innerHTML = '<div class="grid"><div class="chart"><canvas id="power-chart"></canvas></div><div id="power-text"></div></div>';
  const hot = i => !!C.throttled[i], all = () => true, r = N > 5000 ? 1.5 : 3;
  const pts = (col, keep) => { const out = []; for (let i = 0; i < N; i++) if (C[col][i] != null && keep(i)) out.push({x: i + 1, y: C[col][i], i}); return out; };
  // Figures a device does not report (power on some boards) leave their series, and with
  // 'auto' their axis, out.
  const ds = [
    {label: 'SM clock (MHz)', data: pts('sm_clock_mhz', i => !hot(i)), backgroundColor: '#2563eb', pointRadius: r, yAxisID: 'y'},
    {label: 'SM clock, throttled', data: pts('sm_clock_mhz', hot), pointStyle: 'crossRot', pointRadius: r + 3, borderWidth: 2, borderColor: THROTTLED, backgroundColor: THROTTLED, yAxisID: 'y'},
    {label: 'power (W)', data: pts('power_w', all), backgroundColor: '#16a34a', pointRadius: r, yAxisID: 'y1'},
    {label: 'temperature (°C)', data: pts('max_temp_c', all), backgroundColor: '#dc2626', pointStyle: 'triangle', pointRadius: r, yAxisID: 'y2'}].filter(d => d.data.length);
  const side = text => ({position: 'right', display: 'auto', grid: {drawOnChartArea: false}, title: {display: true, text}});
  make('power-chart', {type: 'scatter', data: {datasets: ds}, options: {parsing: false, plugins: {legend: {position: 'bottom', labels: {usePointStyle: true}}, tooltip: {callbacks: {label: (ctx) => {
    const i = ctx.raw.i; return C.template[i] + ' row ' + C.row[i] + ': ' + fmt(C.sm_clock_mhz[i], 0) + ' MHz, ' + fmt(C.power_w[i], 0) + ' W, ' + fmt(C.max_temp_c[i], 0) + ' °C' +
      (C.throttled[i] ? ', throttled (' + C.throttled[i] + ')' : ''); }}}},
    scales: {x: {type: 'linear', title: {display: true, text: 'evaluation'}}, y: {display: 'auto', title: {display: true, text: 'SM clock (MHz)'}}, y1: side('power (W)'), y2: side('temperature (°C)')}}});
  const range = (g, unit, f) => g ? (g.min === g.max ? f(g.min) : f(g.min) + '–' + f(g.max)) + ' ' + unit + ' <span class="muted">(' + g.rows + ' rows)</span>' : '–';
  const whole = v => fmt(v, 0), counts = o => Object.entries(o || {}).sort((a, b) => b[1] - a[1]).map(([k, n]) => esc(k) + ' ' + n).join(', ');
  const rows = [
    ['measured rows', T.measured_rows + ' of ' + N + ' evaluations carry readings (candidates that failed were not timed)'],
    ['throttled', T.throttled_rows ? T.throttled_rows + ' of them (' + counts(T.reasons) + '): their times are slower than the same kernel at full clock' : 'none'],
  ];
  if (Object.keys(T.other_reasons || {}).length)
    rows.push(['other clock events', counts(T.other_reasons) + ' <span class="muted">(not slowdowns: idle between batches, clocks set by the application, sync boost)</span>']);
  rows.push(['SM clock', range(T.sm_clock_mhz, 'MHz', whole)], ['memory clock', range(T.mem_clock_mhz, 'MHz', whole)],
    ['power', range(T.power_w, 'W', whole)], ['highest temperature', range(T.max_temp_c, '°C', whole)],
    ['energy per launch', T.joules_per_launch ? range(T.joules_per_launch, 'J', v => Number(v).toPrecision(3))
      : '<span class="muted">not in this history (a tuning run does not measure it; bench-best does)</span>']);
  document.getElementById('power-text').innerHTML = kv(rows);
})();

// 5. Sensitivity
(function () {
  const host = document.getElementById('sens-body'); let k = 0;
  for (const [tmpl, params] of Object.entries(D.sensitivity || {})) {
    const h = document.createElement('h3'); h.textContent = tmpl; host.appendChild(h);
    const grid = document.createElement('div'); grid.className = 'grid'; host.appendChild(grid);
    for (const p of params.slice(0, 8)) {
      const box = document.createElement('div'); box.className = 'chart small';
      const cv = document.createElement('canvas'); cv.id = 'sens-' + (k++); box.appendChild(cv); grid.appendChild(box);
      const labels = p.values.map(v => String(v.value));
      make(cv.id, {type: 'bar', data: {labels, datasets: [
        {label: 'TFLOP/s range', data: p.values.map(v => v.min == null ? null : [v.min, v.max]), backgroundColor: 'rgba(37,99,235,0.35)', yAxisID: 'y'},
        {type: 'line', label: 'median', data: p.values.map(v => v.median), borderColor: '#1d4ed8', backgroundColor: '#1d4ed8', showLine: false, pointRadius: 4, yAxisID: 'y'},
        {label: 'failed', data: p.values.map(v => v.failed), backgroundColor: 'rgba(220,38,38,0.6)', yAxisID: 'y1'}]},
        options: {plugins: {title: {display: true, text: p.name + ' (spread of best per value ' + fmt(p.spread_tflops) + ' TFLOP/s)'}, legend: {display: false}},
          scales: {y: {beginAtZero: true, title: {display: true, text: 'TFLOP/s'}}, y1: {position: 'right', beginAtZero: true, grid: {drawOnChartArea: false}, title: {display: true, text: 'failed'}}}}});
    }
  }
  if (!k) host.innerHTML = '<p class="muted">No tunable took more than one value among the evaluated candidates.</p>';
})();

// 6. Roofline
(function () {
  const bytes = (P.m && P.n && P.k) ? (P.m * P.k + P.k * P.n) * (P.dtype === 'fp32' ? 4 : 2) + P.m * P.n * (P.c_dtype === 'fp32' || !P.c_dtype && P.dtype === 'fp32' ? 4 : 2) * (P.beta ? 2 : 1) : 0;
  const ai = bytes ? flops / bytes : null;
  const peak = D.peak_tflops, bw = D.bandwidth_gbps;
  const ds = [];
  if (peak && bw) {
    const roof = []; for (let e = -1; e <= 4.01; e += 0.05) { const x = Math.pow(10, e); roof.push({x, y: Math.min(peak, bw * x / 1000)}); }
    ds.push({type: 'line', label: 'roof (' + fmt(peak, 0) + ' TFLOP/s, ' + fmt(bw / 1000, 2) + ' TB/s)', data: roof, borderColor: '#111827', pointRadius: 0, borderWidth: 2});
  }
  const entry = (D.best_config || [])[0];
  let bestTf = entry && entry.metrics ? entry.metrics.tflops : null;
  if (bestTf == null) for (let i = 0; i < N; i++) if (C.tflops[i] != null) bestTf = Math.max(bestTf || 0, C.tflops[i]);
  if (ai && bestTf) ds.push({type: 'scatter', label: 'best candidate', data: [{x: ai, y: bestTf}], backgroundColor: '#2563eb', pointRadius: 7});
  if (ai && vendorTf) ds.push({type: 'scatter', label: 'vendor', data: [{x: ai, y: vendorTf}], backgroundColor: '#dc2626', pointRadius: 7, pointStyle: 'triangle'});
  make('roof-chart', {type: 'scatter', data: {datasets: ds}, options: {parsing: false, plugins: {legend: {position: 'bottom'}},
    scales: {x: {type: 'logarithmic', title: {display: true, text: 'arithmetic intensity (FLOP/byte)'}}, y: {type: 'logarithmic', title: {display: true, text: 'TFLOP/s'}}}}});
  const bound = peak && bw && ai ? Math.min(peak, bw * ai / 1000) : null;
  document.getElementById('roof-text').innerHTML = kv([
    ['arithmetic intensity', ai ? fmt(ai, 1) + ' FLOP/byte (A and B read once, C written once)' : '–'],
    ['compute peak', peak ? fmt(peak, 1) + ' TFLOP/s (' + esc(P.dtype === 'fp32' ? 'FP32 FMA' : 'matrix units, ' + P.dtype) + ', from the device facts)' : '<span class="muted">unknown for this device</span>'],
    ['bandwidth', bw ? fmt(bw, 0) + ' GB/s, ' + esc(D.bandwidth_source || '') : '<span class="muted">unknown (run bench-best --json into bench-best.json for a measured one)</span>'],
    ['attainable here', bound ? fmt(bound, 1) + ' TFLOP/s' : '–'],
    ['best candidate', bestTf ? fmt(bestTf) + ' TFLOP/s' + (bound ? ' = ' + fmt(100 * bestTf / bound, 1) + '% of the roof' : '') : '–'],
    ['vendor', vendorTf ? fmt(vendorTf) + ' TFLOP/s' + (bound ? ' = ' + fmt(100 * vendorTf / bound, 1) + '% of the roof' : '') : '–']]);
})();

// 7. Where the time went
(function () {
  const t = D.time || {};
  const busy = (t.compile_s || 0) + (t.evaluate_s || 0) + (t.llm_wait_s || 0);
  const other = Math.max(0, (t.wall_s || 0) - busy);
  make('time-chart', {type: 'bar', data: {labels: ['compile', 'compile+measure (eval)', 'waiting for the LLM', 'other / idle'],
    datasets: [{label: 'seconds', data: [t.compile_s || 0, t.evaluate_s || 0, t.llm_wait_s || 0, other], backgroundColor: ['#a855f7', '#2563eb', '#16a34a', '#9ca3af']}]},
    options: {indexAxis: 'y', plugins: {legend: {display: false}}, scales: {x: {beginAtZero: true, title: {display: true, text: 'seconds (summed over devices and threads)'}}}}});
  document.getElementById('time-text').innerHTML = kv([
    ['wall time', fmt(t.wall_s, 1) + ' s (first to last row, summed over sessions)'],
    ['compiling', fmt(t.compile_s, 1) + ' s over ' + (t.compiled || 0) + ' compiles (compile-ahead overlaps measuring)' +
      (t.recorded_compile_s ? '; replayed rows carry ' + fmt(t.recorded_compile_s, 1) + ' s of compile time recorded on the measuring GPU, not spent here' : '')],
    ['compile-cache hits', String(t.compile_cache_hits || 0)],
    ['evaluation calls', fmt(t.evaluate_s, 1) + ' s (compile or cache load, validation, timing)'],
    ['waiting for the LLM', fmt(t.llm_wait_s, 1) + ' s'],
    ['other / idle', fmt(other, 1) + ' s (proposers, vendor baseline, re-timing, bookkeeping; negative overlap shown as 0)']]);
})();

// 8. LLM
(function () {
  const L = D.llm || {};
  let html = kv([['requests', String(L.requests || 0) + (L.models && L.models.length ? ' to ' + esc(L.models.join(', ')) : '')],
    ['failed', String(L.failed || 0) + ' (retried ' + (L.retried || 0) + ')'],
    ['tokens', (L.input_tokens || 0) + ' in, ' + (L.output_tokens || 0) + ' out'],
    ['time waiting', fmt((L.latency_ms || 0) / 1000, 1) + ' s']]);
  const by = Object.entries(L.by_proposer || {});
  if (by.length) html += '<h3>Proposals by proposer</h3>' + table(['proposer', 'proposed', 'rejected before compiling', 'evaluated', 'ok'],
    by.map(([p, v]) => [esc(p), v.proposed, v.rejected, v.evaluated, v.ok]), [0, 1, 1, 1, 1]);
  if ((L.rationales || []).length) html += '<h3>Why the fastest candidates were proposed</h3>' + table(['row', 'proposer', 'TFLOP/s', 'config', 'rationale'],
    L.rationales.map(r => [r.row, esc(r.proposer), fmt(r.tflops), '<code>' + esc(r.config) + '</code>', esc(r.rationale)]), [1, 0, 1, 0, 0]);
  if (!L.requests) html += '<p class="muted">No LLM requests in this run (an offline proposer, or no llm_log.jsonl).</p>';
  document.getElementById('llm-body').innerHTML = html;
})();

// 9. Top configurations
(function () {
  const rows = (D.top || []).map((i, r) => [r + 1, C.row[i], esc(C.template[i]), esc(C.proposer[i]), fmt(C.median_ms[i], 4),
    fmt(C.p20_ms[i], 4) + '–' + fmt(C.p80_ms[i], 4), fmt(C.tflops[i]), C.rel_error[i] == null ? '–' : Number(C.rel_error[i]).toExponential(2), '<code>' + esc(C.config[i] || '') + '</code>']);
  document.getElementById('top-body').innerHTML = rows.length ? table(['#', 'row', 'template', 'proposer', 'median ms', 'p20–p80 ms', 'TFLOP/s', 'rel. error', 'parameters'], rows, [1, 1, 0, 0, 1, 1, 1, 1, 0])
    : '<p class="muted">No valid candidate yet.</p>';
})();

// What was drawn, for tests: non-blank pixels per canvas.
const drawn = charts.map(c => {
  const cv = c.canvas, ctx = cv.getContext('2d'); const img = ctx.getImageData(0, 0, cv.width, cv.height).data; let n = 0;
  for (let i = 3; i < img.length; i += 4) if (img[i] !== 0) n++;
  return {id: cv.id, datasets: c.data.datasets.length, series: c.data.datasets.map(d => [d.label, d.data ? d.data.length : 0]), points: c.data.datasets.reduce((a, d) => a + (d.data ? d.data.length : 0), 0), pixels: n};
});
// Every resource the page loaded after itself (none are expected: it is self-contained).
const resources = performance.getEntriesByType('resource').map(e => e.name);
// Where each section lies on the page (for cropping screenshots of it).
const sections = {};
document.querySelectorAll('section').forEach(s => { const r = s.getBoundingClientRect(); sections[s.id] = [Math.round(r.top + window.scrollY), Math.round(r.height)]; });
document.body.setAttribute('data-report-check', JSON.stringify({charts: charts.length, drawn, resources, sections}));
})();
)JS";

}  // namespace

Result<std::string> load_chart_library(const std::filesystem::path& path) {
  const std::filesystem::path p = path.empty() ? std::filesystem::path(kDebianChartJs) : path;
  auto text = read_file(p);
  if (!text.ok())
    return Status::not_found("the report inlines Chart.js, and " + p.string() +
                             " cannot be read: install Debian's libjs-chart.js (apt-get install libjs-chart.js, "
                             "or scripts/setup.sh) or name the file with --chart-js");
  if (text->find("Chart") == std::string::npos)
    return Status::invalid(p.string() + " does not look like Chart.js (no 'Chart' in it)");
  return text;
}

std::string render_report_page(const nlohmann::json& data, const std::string& chart_js) {
  std::string page = kHead;
  // The library is code: only a literal closing tag (none in Chart.js) needs breaking up.
  std::string lib = chart_js;
  for (std::size_t at = 0; (at = lib.find("</script", at)) != std::string::npos;) lib.replace(at, 2, "<\\/");
  page += "<script>\n" + lib + "\n</script>\n";
  page += "<script type=\"application/json\" id=\"report-data\">" +
          script_safe(data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)) + "</script>\n";
  page += "<script>" + std::string(kScript) + "</script>\n</body></html>\n";
  return page;
}

}  // namespace tilesmith
