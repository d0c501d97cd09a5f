// The composer and runs pages. The form is the state: steps are read from
// the DOM when the page posts, and errors come back as {field, message},
// shown in the element whose data-for names the field.
'use strict';

const $ = id => document.getElementById(id);

async function api(method, url, body) {
  const opts = { method, headers: {} };
  if (body !== undefined) {
    opts.headers['content-type'] = 'application/json';
    opts.body = JSON.stringify(body);
  }
  const resp = await fetch(url, opts);
  let data = null;
  try { data = await resp.json(); } catch (_) { data = null; }
  return { ok: resp.ok, status: resp.status, data };
}

// ---- tabs ----
for (const t of document.querySelectorAll('.tab')) {
  t.addEventListener('click', () => showTab(t.dataset.tab));
}
function showTab(name) {
  for (const t of document.querySelectorAll('.tab')) t.setAttribute('aria-pressed', String(t.dataset.tab === name));
  for (const p of document.querySelectorAll('.page')) p.hidden = p.id !== name;
  if (name === 'runs') loadRuns();
}

// ---- errors beside fields ----
function clearErrors(scope) {
  for (const e of (scope || document).querySelectorAll('.err')) e.textContent = '';
  for (const e of (scope || document).querySelectorAll('.invalid')) e.classList.remove('invalid');
}
function showErrors(errors) {
  for (const { field, message } of errors || []) {
    let slot = document.querySelector(`.err[data-for="${CSS.escape(field)}"]`);
    // A step's field without its own slot: the step's.
    if (!slot) slot = document.querySelector(`.err[data-for="${CSS.escape(field.split('.').slice(0, 2).join('.'))}"]`);
    if (!slot) slot = document.querySelector('.err[data-for="run"]');
    slot.textContent = (slot.textContent ? slot.textContent + ' ' : '') + message;
    const input = document.querySelector(`[data-field="${CSS.escape(field)}"]`);
    if (input) input.classList.add('invalid');
  }
}

// ---- steps ----
const ACTIONS = ['load', 'insert', 'update', 'delete', 'snapshot'];

function stepRow(step) {
  const li = el('li', {});
  const action = el('select', { 'aria-label': 'action', class: 'action' }, ...ACTIONS.map(a => el('option', { value: a }, a)));
  action.value = step.action;
  const count = el('input', { type: 'text', class: 'count', 'aria-label': 'tuples', size: 8, value: step.count ?? '' });
  const choice = el('select', { class: 'choice', 'aria-label': 'choice' },
    el('option', { value: 'uniform' }, 'uniform'), el('option', { value: 'zipfian' }, 'zipfian'));
  choice.value = step.choice || 'uniform';
  const level = el('select', { class: 'level', 'aria-label': 'isolation level' },
    el('option', { value: '' }, '(no transaction)'), el('option', { value: 'repeatable read' }, 'repeatable read'),
    el('option', { value: 'serializable' }, 'serializable'));
  level.value = step.level ?? 'repeatable read';
  const label = el('input', { type: 'text', class: 'label', 'aria-label': 'marker label', size: 14, value: step.label || '' });
  const up = el('button', { type: 'button', class: 'up', 'aria-label': 'move step up' }, '↑');
  const down = el('button', { type: 'button', class: 'down', 'aria-label': 'move step down' }, '↓');
  const del = el('button', { type: 'button', class: 'remove', 'aria-label': 'remove step' }, '✕');
  const err = el('span', { class: 'err step-err' });
  const parts = {
    count: el('label', {}, 'tuples ', count),
    choice: el('label', {}, 'choice ', choice),
    level: el('label', {}, 'isolation ', level),
    label: el('label', {}, 'label ', label),
  };
  const sync = () => {
    const a = action.value;
    parts.count.hidden = a === 'snapshot';
    parts.choice.hidden = a !== 'update';
    parts.level.hidden = parts.label.hidden = a !== 'snapshot';
  };
  action.addEventListener('change', sync);
  up.addEventListener('click', () => { if (li.previousElementSibling) li.parentNode.insertBefore(li, li.previousElementSibling); renumber(); up.focus(); });
  down.addEventListener('click', () => { if (li.nextElementSibling) li.parentNode.insertBefore(li.nextElementSibling, li); renumber(); down.focus(); });
  del.addEventListener('click', () => {
    const next = li.nextElementSibling || li.previousElementSibling;
    li.remove(); renumber();
    (next ? next.querySelector('select') : $('add-step')).focus();
  });
  li.append(action, parts.count, parts.choice, parts.level, parts.label, up, down, del, err);
  sync();
  return li;
}

// Each step's error slot and inputs carry its current index.
function renumber() {
  [...$('steps').children].forEach((li, i) => {
    li.querySelector('.step-err').dataset.for = `steps.${i}`;
    for (const k of ['action', 'count', 'choice', 'level', 'label']) li.querySelector('.' + k).dataset.field = `steps.${i}.${k}`;
  });
}

function setForm(f) {
  $('name').value = f.name || '';
  $('steps').replaceChildren(...(f.steps || []).map(stepRow));
  renumber();
  const q = f.query || {};
  $('q-op').value = q.op || 'sum';
  $('q-column').value = q.column || '';
  $('q-where').value = q.where || '';
}

function getForm() {
  const steps = [...$('steps').children].map(li => {
    const action = li.querySelector('.action').value;
    const s = { action };
    if (action === 'snapshot') {
      s.level = li.querySelector('.level').value;
      const l = li.querySelector('.label').value.trim();
      if (l) s.label = l;
    } else {
      const c = li.querySelector('.count').value.trim();
      s.count = /^-?\d+$/.test(c) ? Number(c) : c;
      if (action === 'update') s.choice = li.querySelector('.choice').value;
    }
    return s;
  });
  const query = { op: $('q-op').value };
  if ($('q-column').value.trim()) query.column = $('q-column').value.trim();
  if ($('q-where').value.trim()) query.where = $('q-where').value.trim();
  return { name: $('name').value, steps, query };
}

function getEngines() {
  return {
    pes: $('e-pes').value, workers: $('e-workers').value,
    pg_workers: $('e-postgres').checked ? $('e-pg-workers').value : '',
    profile: $('e-profile').value, clock: $('e-clock').value,
    repeat: Number($('e-repeat').value) || 0, seed: 1,
  };
}

$('add-step').addEventListener('click', () => {
  const a = $('add-action').value;
  const li = stepRow({ action: a, count: a === 'update' ? 'all' : (a === 'snapshot' ? undefined : 100) });
  $('steps').append(li);
  renumber();
  li.querySelector('select').focus();
});

for (const n of [1, 2, 3]) {
  $(`scn-${n}`).addEventListener('click', async () => {
    clearErrors();
    const r = await api('GET', `/api/scenario/${n}?rows=${encodeURIComponent($('scn-rows').value)}&rounds=${encodeURIComponent($('scn-rounds').value)}`);
    if (r.ok) setForm(r.data); else showErrors(r.data && r.data.errors);
  });
}

$('file').addEventListener('change', async () => {
  clearErrors();
  const f = $('file').files[0];
  if (!f) return;
  const text = await f.text();
  const r = await api('POST', '/api/composer/parse', { text, filename: f.name });
  if (r.ok) setForm(r.data); else showErrors(r.data && r.data.errors);
});

$('save').addEventListener('click', async () => {
  clearErrors();
  const r = await api('POST', '/api/composer/check', { composer: getForm() });
  if (!r.ok) return showErrors(r.data && r.data.errors);
  const a = el('a', { href: URL.createObjectURL(new Blob([r.data.toml], { type: 'text/plain' })), download: ($('name').value || 'workload').replace(/[^A-Za-z0-9_-]+/g, '-') + '.toml' });
  document.body.append(a); a.click(); a.remove();
});

$('check').addEventListener('click', async () => {
  clearErrors();
  const r = await api('POST', '/api/composer/check', { composer: getForm(), engines: getEngines() });
  $('run-msg').textContent = r.ok ? 'the workload and the engines are valid' : '';
  if (!r.ok) showErrors(r.data && r.data.errors);
});

// ---- runs ----
$('run').addEventListener('click', async () => {
  clearErrors();
  $('run-msg').textContent = '';
  const r = await api('POST', '/api/runs', { composer: getForm(), engines: getEngines() });
  if (!r.ok) return showErrors(r.data && r.data.errors);
  $('run-msg').textContent = `started ${r.data.started}`;
  $('result').replaceChildren();
  follow();
});

let source = null;
// Follows the run's progress over server-sent events until it ends.
function follow() {
  if (source) source.close();
  $('progress-box').hidden = false;
  source = new EventSource('/api/events');
  source.addEventListener('status', async ev => {
    const s = JSON.parse(ev.data);
    if (s.state === 'running') {
      $('progress').max = Math.max(1, s.total);
      $('progress').value = s.done;
      $('progress-text').textContent = `${s.workload}: ${s.phase || 'starting'} ${s.done}/${s.total}`;
    } else if (s.state === 'done' || s.state === 'failed') {
      source.close(); source = null;
      $('progress-box').hidden = true;
      if (s.state === 'failed') {
        $('run-msg').textContent = '';
        showErrors([{ field: 'run', message: `the run failed: ${s.error}` }]);
      } else {
        $('run-msg').textContent = `done: ${s.run}`;
        const d = await api('GET', `/api/runs/${encodeURIComponent(s.run)}`);
        if (d.ok) $('result').replaceChildren(renderRun(d.data));
      }
    }
  });
}

async function loadRuns() {
  const r = await api('GET', '/api/runs');
  const list = (r.data && r.data.runs) || [];
  $('run-list').replaceChildren(...list.map(x => {
    const box = el('input', { type: 'checkbox', value: x.id, 'aria-label': `compare ${x.id}` });
    const open = el('button', { type: 'button', class: 'open-run' }, `${x.name} (${x.id}, ${x.points} rows)`);
    open.addEventListener('click', () => showRuns([x.id]));
    return el('li', {}, box, ' ', open);
  }));
}

async function showRuns(ids) {
  const views = [];
  for (const id of ids) {
    const d = await api('GET', `/api/runs/${encodeURIComponent(id)}`);
    if (d.ok) views.push(el('div', {}, renderRun(d.data)));
  }
  $('run-view').replaceChildren(...views);
}

$('refresh-runs').addEventListener('click', loadRuns);
$('compare').addEventListener('click', () => {
  const ids = [...document.querySelectorAll('#run-list input:checked')].map(b => b.value);
  if (ids.length !== 2) {
    $('run-view').replaceChildren(el('p', { class: 'err' }, 'tick exactly two runs to compare'));
    return;
  }
  showRuns(ids);
});

// ---- start ----
(async () => {
  const m = await api('GET', '/api/meta');
  if (m.ok) {
    $('e-profile').replaceChildren(...m.data.profiles.map(p => el('option', { value: p }, p)));
    $('e-profile').value = m.data.default_profile;
    $('results-dir').textContent = m.data.results;
    if (m.data.db) $('db-name').textContent = `database ${m.data.db}`;
  }
  const s = await api('GET', '/api/status');
  if (s.ok && s.data.state === 'running') follow();
  setForm({
    name: 'my workload',
    steps: [{ action: 'load', count: 1000 }, { action: 'snapshot', level: 'repeatable read', label: 'before' },
      { action: 'update', count: 'all', choice: 'uniform' }, { action: 'snapshot', level: 'repeatable read', label: 'after' }],
    query: { op: 'sum', column: 'ol_amount' },
  });
})();
