// Zaris web console: plain JavaScript, no dependencies. Every value from
// the server is put into the page as text (el / textContent), never as
// HTML: keys and values are user data.
'use strict';

const POLL_STATS_MS = 1000;
const POLL_CLUSTER_MS = 2000;
const POLL_EVENTS_MS = 2000;
const POLL_SLOWLOG_MS = 3000; // while the slow log is shown
const HISTORY = 120; // chart samples kept (two minutes at 1/s)
const PALETTE = ['#2f6fdf', '#1f9d55', '#d98b00', '#8e44ad', '#c0392b', '#16a085', '#7f8c8d', '#e67e22'];

const state = {
  token: sessionStorage.getItem('zaris.token') || '',
  access: 'none',
  login: false,
  node: '',
  cluster: null,
  leaderCluster: null,
  samples: [],          // raw /stats answers, oldest first
  events: new Map(),    // node -> {after, list}
  timers: [],
  keyRows: [],
};

// ---------- helpers ----------

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'style') e.style.cssText = v; // CSSOM: allowed by the page's CSP, a style attribute is not
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null) continue;
    e.append(c instanceof Node ? c : String(c));
  }
  return e;
}

function $(id) { return document.getElementById(id); }

function fill(tbody, rows) { tbody.replaceChildren(...rows); }

function bytes(n) {
  if (n === undefined || n === null || n < 0) return '–';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i === 0 ? n : n.toFixed(1)) + ' ' + u[i];
}

function duration(ms) {
  if (!ms) return 'none';
  if (ms < 1000) return ms + ' ms';
  const s = ms / 1000;
  if (s < 120) return s.toFixed(s < 10 ? 1 : 0) + ' s';
  if (s < 7200) return Math.round(s / 60) + ' min';
  return Math.round(s / 3600) + ' h';
}

function num(n) {
  if (n >= 1e6) return (n / 1e6).toFixed(2) + ' M';
  if (n >= 1e4) return (n / 1e3).toFixed(1) + ' k';
  if (n >= 100 || Number.isInteger(n)) return String(Math.round(n));
  return n.toFixed(1);
}

function timeOf(iso) {
  const d = new Date(iso);
  return d.toLocaleTimeString([], { hour12: false }) + '.' + String(d.getMilliseconds()).padStart(3, '0');
}

async function api(path, opts) {
  opts = opts || {};
  const headers = {};
  if (state.token) headers['Authorization'] = 'Bearer ' + state.token;
  const r = await fetch('/ui/api' + path, { method: opts.method || 'GET', headers, cache: 'no-store' });
  const type = r.headers.get('content-type') || '';
  const body = type.includes('json') ? await r.json() : await r.text();
  if (!r.ok) {
    const err = new Error((body && body.detail) || r.statusText || ('HTTP ' + r.status));
    err.status = r.status;
    throw err;
  }
  return body;
}

function showError(msg) {
  const b = $('error');
  b.textContent = msg || '';
  b.hidden = !msg;
}

// aliveNodes are the members the page may ask through ?node=.
function aliveNodes() {
  const nodes = (state.cluster && state.cluster.nodes) || [];
  return nodes.filter(n => n.state === 'alive' && (n.httpAddr || n.id === state.node)).map(n => n.id);
}

function nodeColor(id) {
  const nodes = ((state.cluster && state.cluster.nodes) || []).map(n => n.id).sort();
  const i = nodes.indexOf(id);
  return i < 0 ? '#999' : PALETTE[i % PALETTE.length];
}

function q(node) { return node && node !== state.node ? 'node=' + encodeURIComponent(node) : ''; }

function join(path, ...params) {
  const p = params.filter(Boolean).join('&');
  return p ? path + '?' + p : path;
}

// ---------- session ----------

async function loadSession() {
  const s = await api('/session');
  state.access = s.access;
  state.login = s.login;
  state.node = s.node;
  $('node-name').textContent = s.node ? 'node ' + s.node : '';
  const badge = $('access');
  badge.textContent = s.access === 'admin' ? 'admin' : s.access === 'read' ? 'read-only' : 'signed out';
  badge.className = 'badge ' + s.access;
  $('signin').hidden = !s.login || s.access === 'admin';
  $('signout').hidden = !state.token;
  document.body.dataset.access = s.access;
  return s;
}

function showLogin(why) {
  $('login').hidden = false;
  $('login-why').textContent = why || '';
  $('token').focus();
}

async function start() {
  stopPolling();
  showError('');
  let s;
  try {
    s = await loadSession();
  } catch (e) {
    showError('session: ' + e.message);
    return;
  }
  if (s.access === 'none') {
    showLogin('This node requires its token (--token) to show anything.');
    return;
  }
  $('login').hidden = true;
  await refreshCluster();
  state.timers.push(setInterval(refreshCluster, POLL_CLUSTER_MS));
  await pollStats();
  state.timers.push(setInterval(pollStats, POLL_STATS_MS));
  await pollEvents();
  state.timers.push(setInterval(pollEvents, POLL_EVENTS_MS));
  state.timers.push(setInterval(() => { if (!$('view-slowlog').hidden) loadSlowlog(); }, POLL_SLOWLOG_MS));
  route();
  document.body.dataset.ready = 'true';
}

function stopPolling() {
  for (const t of state.timers) clearInterval(t);
  state.timers = [];
}

// ---------- overview ----------

async function refreshCluster() {
  try {
    const c = await api('/cluster');
    state.cluster = c;
    // Each partition's replication is reported by its active owner, the
    // migrations by the control-plane leader: ask every live member.
    const others = aliveNodes().filter(n => n !== state.node);
    const docs = await Promise.allSettled(others.map(n => api(join('/cluster', q(n)))));
    const byNode = new Map([[state.node, c]]);
    docs.forEach((d, i) => { if (d.status === 'fulfilled') byNode.set(others[i], d.value); });
    state.leaderCluster = byNode.get(c.leader) || c;
    for (const p of c.partitions || []) {
      const od = byNode.get(p.activeOwner);
      const op = od && (od.partitions || []).find(x => x.id === p.id);
      if (op && op.replication) { p.replication = op.replication; p.recovery = op.recovery; }
    }
    renderOverview();
    renderNodeSelect();
    showError('');
  } catch (e) {
    showError('cluster: ' + e.message);
  }
}

function card(k, v) { return el('div', { class: 'card' }, el('div', { class: 'k' }, k), el('div', { class: 'v' }, v)); }

function renderOverview() {
  const c = state.cluster;
  const live = c.nodes.filter(n => n.state === 'alive').length;
  $('summary').replaceChildren(
    card('Cluster', c.clusterId || '(default)'),
    card('Store', c.store),
    card('Members alive', live + ' / ' + c.nodes.length),
    card('Leader', c.leader || 'none'),
    card('Raft term', c.term),
    card('Map version', c.mapVersion),
    card('Traffic', c.trafficGate),
    card('Failovers (as leader)', c.failover ? c.failover.promotions : 0),
  );

  fill($('nodes').tBodies[0], c.nodes.map(n => el('tr', { 'data-node': n.id },
    el('td', {}, el('b', {}, n.id), n.leader ? el('span', { class: 'badge ok', title: 'control-plane leader' }, ' leader') : null,
      n.id === state.node ? el('span', { class: 'muted' }, ' (this node)') : null),
    el('td', {}, el('span', { class: 'badge ' + n.state }, n.state), n.inMap ? null : el('span', { class: 'muted' }, ' not in map')),
    el('td', {}, n.raft || '–'),
    el('td', { class: 'mono' }, (n.partitions || []).join(', ') || '–'),
    el('td', { class: 'mono' }, n.respAddr || '–'),
    el('td', { class: 'mono' }, n.httpAddr ? el('a', { href: 'http://' + n.httpAddr + '/ui/' }, n.httpAddr) : '–'),
  )));

  const parts = c.partitions || [];
  $('pmap').replaceChildren(...parts.map(p => el('div', {
    class: 'cell ' + p.health + (p.moveTo || (p.incoming && p.incoming.length) ? ' moving' : ''),
    style: 'background:' + nodeColor(p.activeOwner),
    title: 'partition ' + p.id + ' · owner ' + p.activeOwner + ' · replicas ' + (p.replicas || []).join(', ') + ' · ' + p.health + ' · epoch ' + p.epoch,
  }, el('b', {}, 'P' + p.id), p.activeOwner)));
  $('legend').replaceChildren(...c.nodes.map(n => el('span', {}, el('i', { style: 'background:' + nodeColor(n.id) }), n.id)),
    el('span', { class: 'muted' }, 'striped = migrating, orange border = degraded'));

  fill($('partitions').tBodies[0], parts.map(p => {
    const repl = (p.replication || []).map(r => r.node + ': ' + r.state + ', lag ' + r.lagRevisions).join('; ');
    let mig = '';
    if (p.moveTo) mig = '→ ' + p.moveTo;
    if (p.incoming && p.incoming.length) mig += (mig ? ' ' : '') + 'copying to ' + p.incoming.join(', ');
    return el('tr', {},
      el('td', {}, 'P' + p.id),
      el('td', { class: 'mono' }, p.firstSlot + '–' + p.lastSlot),
      el('td', {}, el('b', {}, p.activeOwner), p.primary !== p.activeOwner ? el('span', { class: 'muted' }, ' (primary ' + p.primary + ')') : null),
      el('td', {}, (p.replicas || []).join(', ') || 'none'),
      el('td', {}, el('span', { class: 'badge ' + p.health }, p.health)),
      el('td', {}, p.epoch),
      el('td', { class: 'mono' }, repl || ((p.replicas || []).length ? 'not reported' : 'no replica')),
      el('td', {}, mig || '–'),
    );
  }));

  const rb = state.leaderCluster && state.leaderCluster.rebalance;
  const box = $('migrations');
  if (!rb || (!rb.active && !rb.pending && !(rb.migrations || []).length)) {
    box.replaceChildren(el('p', { class: 'muted' }, 'No migration in progress.' +
      (rb ? ' Completed moves: ' + rb.completed_moves + ', aborted: ' + rb.aborted_moves + '.' : '')));
  } else {
    const done = rb.segments_total ? (rb.segments_total - rb.segments_left) / rb.segments_total : 0;
    box.replaceChildren(
      el('p', {}, 'Rebalance ' + (rb.active ? 'running' : 'pending') + (rb.reason ? ' (' + rb.reason + ')' : '') + ': ',
        el('span', { class: 'progress', title: Math.round(done * 100) + '%' }, el('div', { style: 'width:' + (done * 100).toFixed(1) + '%' })),
        ' ' + (rb.segments_total - rb.segments_left) + ' / ' + rb.segments_total + ' segments'),
      el('table', {}, el('thead', {}, el('tr', {}, ['Partition', 'From', 'To', 'Phase', 'Keys held', 'Lag', 'Attempts'].map(h => el('th', {}, h)))),
        el('tbody', {}, (rb.migrations || []).map(m => el('tr', {},
          el('td', {}, 'P' + m.partition), el('td', {}, m.source), el('td', {}, m.target || (m.incoming || []).join(', ')),
          el('td', {}, m.phase), el('td', {}, m.keys_held), el('td', {}, m.lag), el('td', {}, m.attempts))))),
    );
  }
  const warn = c.placementWarnings || [];
  $('warnings').replaceChildren(...warn.map(w => el('p', { class: 'badge warn' }, w)));
}

function renderNodeSelect() {
  const sel = $('key-node');
  const want = ['', ...aliveNodes()];
  const have = [...sel.options].map(o => o.value);
  if (want.join() === have.join()) return;
  const cur = sel.value;
  sel.replaceChildren(...want.map(id => el('option', { value: id }, id || 'all nodes')));
  sel.value = want.includes(cur) ? cur : '';
}

// ---------- charts ----------

async function pollStats() {
  try {
    const s = await api('/stats');
    state.samples.push(s);
    if (state.samples.length > HISTORY + 1) state.samples.shift();
    renderCharts();
  } catch (e) {
    showError('stats: ' + e.message);
  }
}

// series derives the plotted values from consecutive samples.
function series() {
  const out = { ops: [], memUsed: [], memMax: [], hit: [], lag: [], evict: [] };
  const s = state.samples;
  for (let i = 1; i < s.length; i++) {
    const a = s[i - 1], b = s[i];
    const dt = Math.max(0.001, (b.atMillis - a.atMillis) / 1000);
    out.ops.push(Math.max(0, (b.ops - a.ops) / dt));
    out.evict.push(Math.max(0, (b.evictions - a.evictions) / dt));
    const gets = (b.getHits - a.getHits) + (b.getMisses - a.getMisses);
    out.hit.push(gets > 0 ? 100 * (b.getHits - a.getHits) / gets : null);
    out.memUsed.push(b.memoryUsed);
    out.memMax.push(b.memoryMax);
    out.lag.push(b.replLagMax);
  }
  return out;
}

function renderCharts() {
  const d = series();
  const last = a => (a.length ? a[a.length - 1] : null);
  const set = (id, text, v) => { const e = $(id); e.textContent = text; e.dataset.value = v === null || v === undefined ? '' : String(v); e.dataset.samples = String(state.samples.length); };
  set('v-ops', last(d.ops) === null ? '–' : num(last(d.ops)) + ' ops/s', last(d.ops));
  const s = state.samples[state.samples.length - 1];
  set('v-mem', s ? bytes(s.memoryUsed) + ' of ' + (s.memoryMax ? bytes(s.memoryMax) : 'no cap') : '–', s ? s.memoryUsed : null);
  const lh = last(d.hit);
  set('v-hit', lh === null ? 'no GETs' : lh.toFixed(1) + ' %', lh);
  set('v-lag', s ? num(s.replLagMax) + (s.replicaSeries ? '' : ' (no replica shipped from here)') : '–', s ? s.replLagMax : null);
  set('v-evict', last(d.evict) === null ? '–' : num(last(d.evict)) + ' /s', last(d.evict));
  if ($('view-charts').hidden) return; // keep sampling, draw only when seen
  plot($('c-ops'), [{ data: d.ops, color: PALETTE[0] }], { unit: num });
  plot($('c-mem'), [{ data: d.memUsed, color: PALETTE[0], fill: true }, { data: d.memMax, color: PALETTE[4], dash: true }], { unit: bytes, zero: true });
  plot($('c-hit'), [{ data: d.hit, color: PALETTE[1] }], { unit: v => v.toFixed(0) + '%', max: 100 });
  plot($('c-lag'), [{ data: d.lag, color: PALETTE[2] }], { unit: num });
  plot($('c-evict'), [{ data: d.evict, color: PALETTE[4] }], { unit: num });
}

// plot draws line series on a canvas: y from 0 to the largest value (or
// opts.max), x the last HISTORY samples, gridlines with labels.
function plot(canvas, lines, opts) {
  const ratio = window.devicePixelRatio || 1;
  const w = canvas.clientWidth || canvas.width, h = canvas.clientHeight || canvas.height;
  if (canvas.width !== Math.round(w * ratio)) { canvas.width = Math.round(w * ratio); canvas.height = Math.round(h * ratio); }
  const g = canvas.getContext('2d');
  g.setTransform(ratio, 0, 0, ratio, 0, 0);
  g.clearRect(0, 0, w, h);
  const left = 64, right = 8, top = 8, bottom = 18;
  let top_ = opts.max || 0;
  for (const l of lines) for (const v of l.data) if (v !== null && v > top_) top_ = v;
  if (!opts.max) top_ = top_ > 0 ? top_ * 1.15 : 1;
  const x = i => left + (w - left - right) * (i + HISTORY - lines[0].data.length) / (HISTORY - 1);
  const y = v => top + (h - top - bottom) * (1 - v / top_);
  g.font = '11px system-ui, sans-serif';
  g.strokeStyle = '#e3e6ec'; g.fillStyle = '#6b7385'; g.lineWidth = 1;
  for (let k = 0; k <= 4; k++) {
    const v = top_ * k / 4, yy = Math.round(y(v)) + 0.5;
    g.beginPath(); g.moveTo(left, yy); g.lineTo(w - right, yy); g.stroke();
    g.fillText(opts.unit(v), 4, yy + 4);
  }
  g.fillText('−2 min', left, h - 4);
  g.fillText('now', w - right - 22, h - 4);
  for (const l of lines) {
    g.strokeStyle = l.color; g.lineWidth = 2; g.setLineDash(l.dash ? [6, 4] : []);
    g.beginPath();
    let pen = false, firstX = null, lastX = null;
    l.data.forEach((v, i) => {
      if (v === null) { pen = false; return; }
      const xx = x(i), yy = y(v);
      if (pen) g.lineTo(xx, yy); else { g.moveTo(xx, yy); pen = true; if (firstX === null) firstX = xx; }
      lastX = xx;
    });
    g.stroke();
    if (l.fill && firstX !== null) {
      g.lineTo(lastX, y(0)); g.lineTo(firstX, y(0)); g.closePath();
      g.globalAlpha = 0.12; g.fillStyle = l.color; g.fill(); g.globalAlpha = 1;
    }
  }
  g.setLineDash([]);
}

// ---------- keys ----------

async function scanKeys(ev) {
  if (ev) ev.preventDefault();
  const prefix = $('key-prefix').value;
  const only = $('key-node').value;
  const nodes = only ? [only] : aliveNodes();
  $('key-status').textContent = 'scanning…';
  const rows = [];
  let more = false;
  const answers = await Promise.allSettled(nodes.map(n =>
    api(join('/keys', 'prefix=' + encodeURIComponent(prefix), 'limit=100', q(n)))));
  const failed = [];
  answers.forEach((a, i) => {
    if (a.status === 'fulfilled') {
      for (const it of a.value.items) rows.push({ ...it, node: a.value.node || nodes[i] });
      more = more || a.value.more;
    } else failed.push(nodes[i] + ': ' + a.reason.message);
  });
  rows.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  state.keyRows = rows;
  renderKeys();
  $('key-status').textContent = rows.length + ' key' + (rows.length === 1 ? '' : 's') + (more ? ' (first 100 per node)' : '') +
    (failed.length ? ' · not answered: ' + failed.join('; ') : '');
  $('key-status').dataset.done = String(Date.now());
}

function renderKeys() {
  const admin = state.access === 'admin';
  fill($('keys').tBodies[0], state.keyRows.map(k => el('tr', { 'data-key': k.key },
    el('td', { class: 'mono' }, k.key),
    el('td', {}, k.node),
    el('td', {}, k.type),
    el('td', {}, k.size < 0 ? '–' : bytes(k.size)),
    el('td', {}, duration(k.ttlMs)),
    el('td', {}, k.version),
    el('td', { class: 'mono' }, k.type !== 'string' ? el('span', { class: 'muted' }, '(' + k.type + ': read it with its own commands)') :
      k.binary ? el('span', { title: 'hex' }, '0x' + k.preview) : k.preview, k.size > k.preview.length && !k.binary ? '…' : ''),
    el('td', {}, admin ? el('button', { type: 'button', class: 'danger delete', onclick: () => confirmDelete(k) }, 'Delete') : null),
  )));
  const ro = $('key-readonly');
  ro.hidden = admin;
  ro.textContent = state.login ? 'Read-only: sign in as admin to delete keys.' :
    'Read-only: deleting keys needs an admin; this node has no --token, so no one can sign in as one.';
}

let pendingDelete = null;

function confirmDelete(k) {
  pendingDelete = k;
  $('confirm-text').replaceChildren('Delete ', el('b', { class: 'mono' }, k.key), ' (' + k.type + ') on node ' + k.node + '? This cannot be undone.');
  $('confirm').hidden = false;
}

async function doDelete() {
  const k = pendingDelete;
  $('confirm').hidden = true;
  pendingDelete = null;
  if (!k) return;
  try {
    const r = await api(join('/keys', 'key64=' + k.key64, q(k.node)), { method: 'DELETE' });
    $('key-status').textContent = r.deleted ? 'deleted ' + k.key : k.key + ' was already gone';
    await scanKeys();
  } catch (e) {
    showError('delete: ' + e.message);
  }
}

// ---------- slow log ----------

async function loadSlowlog() {
  const nodes = aliveNodes();
  const answers = await Promise.allSettled(nodes.map(n => api(join('/slowlog', q(n)))));
  const rows = [];
  answers.forEach((a, i) => {
    if (a.status === 'fulfilled') for (const e of a.value.entries) rows.push({ ...e, node: a.value.node || nodes[i] });
  });
  // Newest first: by time (whole seconds), then by each node's entry id.
  rows.sort((a, b) => (Date.parse(b.at) - Date.parse(a.at)) || (a.node === b.node ? b.id - a.id : a.node < b.node ? -1 : 1));
  fill($('slowlog').tBodies[0], rows.length ? rows.map(e => el('tr', {},
    el('td', {}, new Date(e.at).toLocaleTimeString([], { hour12: false })), el('td', {}, e.node),
    el('td', {}, e.micros >= 1000 ? (e.micros / 1000).toFixed(e.micros >= 100000 ? 0 : 1) + ' ms' : e.micros + ' µs'),
    el('td', { class: 'mono' }, e.args.join(' ')), el('td', { class: 'mono' }, e.client + (e.clientName ? ' (' + e.clientName + ')' : '')),
  )) : [el('tr', {}, el('td', { colspan: 5, class: 'muted' }, 'No slow command recorded.'))]);
}

// ---------- events ----------

async function pollEvents() {
  const nodes = aliveNodes();
  await Promise.allSettled(nodes.map(async n => {
    const seen = state.events.get(n) || { after: 0, list: [] };
    const r = await api(join('/events', 'after=' + seen.after, q(n)));
    for (const e of r.events) { seen.list.push(e); seen.after = Math.max(seen.after, e.seq); }
    if (seen.list.length > 1000) seen.list.splice(0, seen.list.length - 1000);
    state.events.set(n, seen);
  }));
  renderEvents();
}

function renderEvents() {
  const all = [];
  for (const v of state.events.values()) all.push(...v.list);
  all.sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : 0));
  const shown = all.slice(0, 300);
  $('timeline').replaceChildren(...(shown.length ? shown.map(e => el('li', { class: e.kind },
    el('span', { class: 'when' }, timeOf(e.at)),
    el('span', { class: 'badge ' + (e.level === 'WARN' ? 'warn' : e.level === 'ERROR' ? 'bad' : '') }, e.kind),
    ' ', el('b', {}, e.node), ' ', e.message, ' ',
    el('span', { class: 'attrs' }, Object.entries(e.attrs || {}).filter(([k]) => k !== 'node_id' && k !== 'store').map(([k, v]) => k + '=' + v).join(' ')),
  )) : [el('li', { class: 'muted' }, 'No event recorded yet.')]));
}

// ---------- routing and wiring ----------

function route() {
  const view = (location.hash || '#overview').slice(1);
  for (const s of document.querySelectorAll('.view')) s.hidden = s.id !== 'view-' + view;
  for (const a of document.querySelectorAll('#tabs a')) a.classList.toggle('active', a.dataset.view === view);
  document.body.dataset.view = view;
  if (state.access === 'none') return;
  if (view === 'charts') renderCharts();
  if (view === 'keys') renderKeys();
  if (view === 'slowlog') loadSlowlog();
  if (view === 'events') renderEvents();
}

window.addEventListener('hashchange', route);
window.addEventListener('DOMContentLoaded', () => {
  $('signin').addEventListener('click', () => showLogin(''));
  $('login-cancel').addEventListener('click', () => { $('login').hidden = true; });
  $('login-form').addEventListener('submit', ev => {
    ev.preventDefault();
    state.token = $('token').value.trim();
    sessionStorage.setItem('zaris.token', state.token);
    $('token').value = '';
    start();
  });
  $('signout').addEventListener('click', () => {
    state.token = '';
    sessionStorage.removeItem('zaris.token');
    start();
  });
  $('key-form').addEventListener('submit', scanKeys);
  $('slow-refresh').addEventListener('click', loadSlowlog);
  $('confirm-cancel').addEventListener('click', () => { $('confirm').hidden = true; pendingDelete = null; });
  $('confirm-ok').addEventListener('click', doDelete);
  route();
  start();
});
