// A run's results as the page shows them: the table of rows, whether the
// engines agreed, Figs. 6-8 as SVG charts drawn from the JSON lines (each
// point's counters in its <title>, shown on hover), and the downloads.
'use strict';

const SVGNS = 'http://www.w3.org/2000/svg';

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== undefined && v !== null) e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
}

function svg(tag, attrs, ...kids) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
}

// The engine configuration of a row, as the CLI's table names it.
function engineName(r) {
  let s = r.engine;
  if (r.pes != null) s += ` ${r.pes} PEs`;
  if (r.workers != null) s += ` ${r.workers} workers`;
  if (r.freshness && r.freshness !== 'ship') s += ` ${r.freshness}`;
  return s;
}

function num(v, digits) {
  if (v === null || v === undefined) return '';
  return typeof v === 'number' && digits !== undefined ? v.toFixed(digits) : String(v);
}

// The columns of the results table: heading, the row's key, how to print it.
const COLUMNS = [
  ['engine', 'engine', engineName, 'text'],
  ['marker', 'snapshot_position', r => r.snapshot_position, 'text'],
  ['step', 'marker_step', r => num(r.marker_step)],
  ['tuples', 'rows', r => num(r.rows)],
  ['versions/tuple', 'versions_per_tuple', r => num(r.versions_per_tuple, 2)],
  ['op', 'op', r => r.op, 'text'],
  ['result', 'result', r => r.result === null ? 'NULL' : r.result],
  ['wall s', 'wall_s', r => num(r.wall_s, 6)],
  ['modelled s', 'modelled_s', r => num(r.modelled_s, 6)],
  ['link B to host', 'link_bytes_to_host', r => num(r.link_bytes_to_host)],
  ['late/completions', 'completions', r => r.completions == null ? '' : `${r.late_completions}/${r.completions}`],
];

function resultsTable(rows) {
  const head = el('tr', {}, ...COLUMNS.map(c => el('th', { class: c[3] || '' }, c[0])));
  const body = rows.map((r, i) => el('tr', { 'data-row': i },
    ...COLUMNS.map(c => el('td', { 'data-key': c[1], class: c[3] || '' }, c[2](r)))));
  return el('div', { class: 'scroll' }, el('table', { class: 'results' }, el('thead', {}, head), el('tbody', {}, ...body)));
}

// Whether every engine gave the same answer (AVG: to 1e-9 relative) over
// the same rows at every marker; the run itself fails otherwise.
function agreement(rows) {
  const points = new Map();
  for (const r of rows) {
    const k = r.snapshot_position;
    if (!points.has(k)) points.set(k, []);
    points.get(k).push(r);
  }
  const same = (a, b, avg) => {
    if (a.result === b.result) return true;
    if (!avg || a.result === null || b.result === null) return false;
    const x = parseFloat(a.result), y = parseFloat(b.result);
    return Math.abs(x - y) <= 1e-9 * Math.max(Math.abs(x), Math.abs(y), 1);
  };
  const bad = [];
  for (const [k, rs] of points) {
    const avg = rs[0].op.startsWith('avg');
    for (const r of rs.slice(1)) {
      if (!same(rs[0], r, avg) || rs[0].control !== r.control) bad.push(`${k}: ${engineName(r)} says ${r.result}`);
    }
  }
  const engines = new Set(rows.map(engineName)).size;
  if (bad.length) return el('p', { class: 'disagree', id: 'agreement' }, `ENGINES DISAGREE: ${bad.join('; ')}`);
  const text = engines < 2
    ? 'only one engine ran, so no answer was compared with another'
    : `all ${engines} engine configurations agree at all ${points.size} markers (answer, and count(*) and sum(ol_i_id) of the rows read)`;
  return el('p', { class: 'agree', id: 'agreement' }, text);
}

// The x axes: the marker's step in the file (Fig. 8's snapshot position),
// the tuples at the marker (Fig. 6), versions per tuple (Fig. 7).
const X_AXES = [
  ['marker_step', "marker's step (Fig. 8)"],
  ['rows', 'tuples (Fig. 6)'],
  ['versions_per_tuple', 'versions per tuple (Fig. 7)'],
];

// One chart: y (seconds) against x, a line per engine configuration.
function chart(rows, xKey, xLabel, yKey, title) {
  const W = 560, H = 300, L = 62, R = 12, T = 28, B = 42;
  const series = new Map();
  for (const r of rows) {
    const y = yKey === 'modelled_s' ? r.modelled_s : r.wall_s;
    if (y === null || y === undefined || r[xKey] === null || r[xKey] === undefined) continue;
    const name = engineName(r) + (yKey === 'modelled_s' ? ' (modelled)' : '');
    if (!series.has(name)) series.set(name, []);
    series.get(name).push([r[xKey], y, r]);
  }
  const pts = [...series.values()].flat();
  const box = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': title });
  box.append(svg('text', { x: W / 2, y: 16, 'text-anchor': 'middle', 'font-size': 13 }, title));
  if (!pts.length) {
    box.append(svg('text', { x: W / 2, y: H / 2, 'text-anchor': 'middle' }, 'no values to draw'));
    return box;
  }
  let [x0, x1] = [Math.min(...pts.map(p => p[0])), Math.max(...pts.map(p => p[0]))];
  if (x0 === x1) { x0 -= 1; x1 += 1; }
  const y1 = Math.max(...pts.map(p => p[1])) * 1.1 || 1;
  const sx = x => L + (x - x0) / (x1 - x0) * (W - L - R);
  const sy = y => H - B - y / y1 * (H - T - B);
  box.append(svg('line', { x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: '#333' }));
  box.append(svg('line', { x1: L, y1: T, x2: L, y2: H - B, stroke: '#333' }));
  for (let i = 0; i <= 4; i++) {
    const y = y1 * i / 4;
    box.append(svg('text', { x: L - 4, y: sy(y) + 4, 'text-anchor': 'end', 'font-size': 10 }, y.toPrecision(2)));
    const x = x0 + (x1 - x0) * i / 4;
    box.append(svg('text', { x: sx(x), y: H - B + 14, 'text-anchor': 'middle', 'font-size': 10 }, +x.toPrecision(3)));
  }
  box.append(svg('text', { x: (L + W - R) / 2, y: H - 8, 'text-anchor': 'middle', 'font-size': 11 }, xLabel));
  box.append(svg('text', { x: 12, y: (T + H - B) / 2, 'font-size': 11, transform: `rotate(-90 12 ${(T + H - B) / 2})`, 'text-anchor': 'middle' }, 'seconds'));
  const colors = ['#e76f51', '#1d3557', '#2a9d8f', '#8d5fd3', '#e9c46a', '#6c757d'];
  [...series.entries()].forEach(([name, ps], i) => {
    const c = colors[i % colors.length];
    ps.sort((a, b) => a[0] - b[0]);
    box.append(svg('polyline', { points: ps.map(p => `${sx(p[0])},${sy(p[1])}`).join(' '), fill: 'none', stroke: c, 'stroke-width': 2 }));
    for (const [x, y, r] of ps) {
      const dot = svg('circle', { cx: sx(x), cy: sy(y), r: 4, fill: c, class: 'point' });
      dot.append(svg('title', {}, counters(name, r, y)));
      box.append(dot);
    }
    box.append(svg('text', { x: L + 8, y: T + 12 + 13 * i, fill: c, 'font-size': 11 }, name));
  });
  return box;
}

function counters(name, r, y) {
  const parts = [`${name} at ${r.snapshot_position}: ${y} s`, `result ${r.result}`];
  for (const k of ['link_bytes_to_host', 'link_bytes_to_device', 'medium_bytes_read', 'versions_visited', 'completions', 'late_completions', 'host_cpu_s', 'control']) {
    if (r[k] !== null && r[k] !== undefined) parts.push(`${k} ${r[k]}`);
  }
  return parts.join('\n');
}

function charts(rows) {
  const first = rows[0] || {};
  const wrap = el('div', {});
  const pick = el('select', { 'aria-label': 'x axis' }, ...X_AXES.map(([k, l]) => el('option', { value: k }, l)));
  const area = el('div', { class: 'charts' });
  const draw = () => {
    const label = X_AXES.find(a => a[0] === pick.value)[1];
    area.replaceChildren(
      el('div', { class: 'chart' }, el('h4', {}, 'wall time'), chart(rows, pick.value, label, 'wall_s', `wall time (${first.profile}, ${first.clock} clock)`)),
      el('div', { class: 'chart' }, el('h4', {}, 'modelled time'), chart(rows, pick.value, label, 'modelled_s', `modelled time (${first.profile}, ${first.clock} clock)`)));
  };
  pick.addEventListener('change', draw);
  draw();
  wrap.append(el('label', {}, 'x axis ', pick), area);
  return wrap;
}

function downloads(d) {
  const links = d.files.filter(f => /\.(jsonl|json|svg|png|txt|toml)$/.test(f))
    .map(f => el('a', { href: `/files/${encodeURIComponent(d.id)}/${encodeURIComponent(f)}?download=1` }, f));
  return el('p', { class: 'downloads' }, 'download: ', ...links);
}

// The whole view of one run.
function renderRun(d) {
  const first = d.rows[0] || {};
  return el('div', { class: 'run', 'data-run': d.id },
    el('h3', {}, `${d.name} `, el('small', {}, d.id)),
    el('p', { class: 'hint' }, `profile ${first.profile}, ${first.clock} clock: wall s is measured, modelled s is the device model's time`),
    resultsTable(d.rows), agreement(d.rows), charts(d.rows), downloads(d));
}
