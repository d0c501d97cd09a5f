// The SQL page: a statement, its result a page at a time, and a query's
// plan as a tree, each operator marked host or device.
'use strict';

let sqlPage = 0;
const SQL_PAGE_ROWS = 50;

async function runSql(page) {
  clearErrors($('sql'));
  sqlPage = page;
  const body = { sql: $('sql-text').value, ndp: $('sql-ndp').value, page, page_size: SQL_PAGE_ROWS };
  $('sql-result').replaceChildren(el('p', { class: 'hint' }, 'running...'));
  const r = await api('POST', '/api/sql', body);
  $('sql-result').replaceChildren();
  $('sql-plan').replaceChildren();
  if (!r.ok) return showErrors(r.data && r.data.errors);
  const d = r.data;
  const head = el('tr', {}, ...d.columns.map(c => el('th', { class: 'text' }, c)));
  const rows = d.rows.map(row => el('tr', {}, ...row.map(v => el('td', { class: 'text' }, v === null ? 'NULL' : v))));
  const pages = Math.max(1, Math.ceil(d.total_rows / d.page_size));
  const prev = el('button', { type: 'button', id: 'sql-prev' }, '← previous');
  const next = el('button', { type: 'button', id: 'sql-next' }, 'next →');
  prev.disabled = page === 0;
  next.disabled = page + 1 >= pages;
  prev.addEventListener('click', () => runSql(sqlPage - 1));
  next.addEventListener('click', () => runSql(sqlPage + 1));
  $('sql-result').append(
    el('p', { id: 'sql-tag' }, `${d.tag}: ${d.total_rows} rows, page ${page + 1} of ${pages}`),
    el('div', { class: 'scroll' }, el('table', {}, el('thead', {}, head), el('tbody', {}, ...rows))),
    el('div', { class: 'actions' }, prev, next));
  if (d.plan) $('sql-plan').append(planView(d.plan));
  else if (d.plan_note) $('sql-plan').append(el('p', { class: 'hint' }, d.plan_note));
}

function bytes(n) {
  return n === null || n === undefined ? '' : Number(n).toLocaleString('en-US') + ' B';
}

function planNode(n) {
  const nums = [`est. rows ${Math.round(n.est_rows)}`, `cost host ${n.cost_host_s.toExponential(2)} s, device ${n.cost_device_s.toExponential(2)} s`];
  if (n.actual_rows !== null && n.actual_rows !== undefined) nums.push(`actual rows ${n.actual_rows}`, `time ${n.actual_time_ms.toFixed(3)} ms`);
  if (n.link_bytes_saved_est !== null && n.link_bytes_saved_est !== undefined) nums.push(`link bytes saved (est.) ${bytes(n.link_bytes_saved_est)}`);
  if (n.counters) nums.push(`link to host ${bytes(n.counters.link_bytes_to_host)}`, `modelled ${n.counters.modelled_ms.toFixed(3)} ms`);
  const box = el('div', { class: `node ${n.runs_on}`, 'data-runs-on': n.runs_on },
    el('span', { class: 'mark' }, n.runs_on), ' ', el('strong', { class: 'title' }, n.title),
    el('div', { class: 'nums' }, nums.join(' · ')),
    el('div', { class: 'details' }, n.details.join('\n')));
  const li = el('li', {}, box);
  if (n.children.length) li.append(el('ul', {}, ...n.children.map(planNode)));
  return li;
}

function planView(p) {
  const summary = [`profile ${p.profile}, ${p.clock} clock`, `planning ${p.planning_ms.toFixed(3)} ms`];
  if (p.execution_ms !== null) summary.push(`execution ${p.execution_ms.toFixed(3)} ms`);
  if (p.device) summary.push(`device: modelled ${p.device.modelled_ms.toFixed(3)} ms, link ${bytes(p.device.link_bytes_to_host)} to host, medium ${bytes(p.device.medium_bytes_read)} read`);
  return el('div', { class: 'plan', id: 'plan' }, el('h3', {}, 'Plan'), el('p', { class: 'nums' }, summary.join(' · ')), el('ul', {}, planNode(p.root)));
}

$('sql-run').addEventListener('click', () => runSql(0));
$('sql-text').addEventListener('keydown', ev => {
  if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); runSql(0); }
});
