// The clients panel: every edge client with its online switch, network conditions, gates,
// write queue and cache, refreshed on the event log's client events (and, while shown, every
// 5 s, since an offline client's queued writes raise no event).

import { $, h, fill, reconcile, setText, showError, coalesce } from '../dom.js';
import { formatBytes, plural, shortTime, formatOffset } from '../format.js';
import { api, errorMessage } from '../api.js';
import { isShown } from '../tabs.js';
import { emit } from '../bus.js';
import { noteClientId } from './events.js';

const table = $('clients-table');
const rows = new Map(); // id → <tbody> group holding the row and its detail row
const expanded = new Set();
const states = new Map();
const queues = new Map(); // id → last pendingWrites answer
let loadedOnce = false;

export const refresh = coalesce(load, 150);
const refreshLater = coalesce(refresh, 1000);

async function load() {
  let data;
  try {
    data = await api('/clients');
  } catch (err) {
    showError($('clients-error'), 'Clients: ' + err.message);
    return;
  }
  showError($('clients-error'), '');
  loadedOnce = true;
  const list = Array.isArray(data && data.clients) ? data.clients : [];
  states.clear();
  for (const s of list) states.set(s.id, s);
  render();
  for (const id of expanded) {
    if (states.has(id)) loadQueue(id);
    else expanded.delete(id);
  }
  for (const id of states.keys()) noteClientId(id);
}

function render() {
  const filter = $('clients-filter').value.trim().toLowerCase();
  const all = [...states.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const shown = filter
    ? all.filter((s) => s.id.toLowerCase().includes(filter)
      || String((s.settings || {}).project || '').toLowerCase().includes(filter))
    : all;
  $('clients-table').hidden = shown.length === 0;
  const empty = $('clients-empty');
  empty.hidden = !loadedOnce || shown.length !== 0;
  if (!all.length) fill(empty, 'No clients yet. Any call to ', h('code', { text: '/clients/{id}…' }), ' creates one.');
  else fill(empty, `No client matches “${filter}”.`);
  setText($('clients-count'), all.length ? String(all.length) : '');
  // The table body holds one <tbody> per client (its row and its detail row), keyed by id.
  reconcile(table, rows, shown, (s) => s.id, createGroup, updateGroup, table.tHead);
}

function createGroup(state, id) {
  const g = h('tbody', { class: 'client', 'data-testid': 'client-group-' + id });
  const detailsId = 'client-details-' + cssId(id);
  const els = {
    expand: h('button', {
      type: 'button', class: 'expander', 'aria-expanded': 'false', 'aria-controls': detailsId,
      'data-testid': 'client-expand-' + id, title: 'Show details and the write queue',
      onclick: () => toggleDetails(id),
    }, h('span', { class: 'chev', 'aria-hidden': 'true' }), h('span', { class: 'mono id', text: id })),
    meta: h('div', { class: 'meta small' }),
    badges: h('div', { class: 'badges' }),
    toggle: h('button', {
      type: 'button', role: 'switch', class: 'switch', 'aria-checked': 'true',
      'aria-label': `Client ${id} online`, 'data-testid': 'client-online-toggle-' + id,
      onclick: () => toggleNetwork(id),
    }, h('span', { class: 'knob', 'aria-hidden': 'true' })),
    online: h('span', { class: 'net-state', 'data-testid': 'client-online-state-' + id }),
    conditions: h('div', { class: 'meta small', 'data-testid': 'client-network-' + id }),
    gates: h('div', { class: 'badges', 'data-testid': 'client-gates-' + id }),
    pending: h('span', { class: 'num', 'data-testid': 'client-pending-count-' + id }),
    cache: h('span', { 'data-testid': 'client-cache-' + id }),
    listeners: h('span', { class: 'num', 'data-testid': 'client-listeners-' + id }),
    detailRow: h('tr', { class: 'details', id: detailsId, hidden: true }),
    detailCell: h('td', { colspan: '6', 'data-testid': 'client-details-' + id }),
  };
  els.detailRow.append(els.detailCell);
  const row = h('tr', { class: 'row', 'data-testid': 'client-row-' + id },
    h('td', { 'data-label': 'Client' }, els.expand, els.meta, els.badges),
    h('td', { 'data-label': 'Network' }, h('div', null,
      h('div', { class: 'net' }, els.toggle, els.online), els.conditions)),
    h('td', { 'data-label': 'Gates' }, els.gates),
    h('td', { 'data-label': 'Pending writes' }, els.pending),
    h('td', { 'data-label': 'Cache' }, els.cache),
    h('td', { 'data-label': 'Listeners' }, els.listeners));
  g.append(row, els.detailRow);
  g._els = els;
  return g;
}

function updateGroup(g, s) {
  const els = g._els;
  const settings = s.settings || {};
  const network = s.network || {};
  const online = network.online !== false;
  setText(els.meta, [
    `${settings.project || '?'} / ${settings.database || '?'}`,
    settings.namespace && settings.namespace !== settings.project ? `ns ${settings.namespace}` : null,
    settings.persistence,
    settings.garbageCollector ? `${String(settings.garbageCollector).toUpperCase()} GC` : null,
    settings.platform,
  ].filter(Boolean).join(' · '));
  const badges = [];
  if (s.terminated) badges.push(badge('terminated', 'bad'));
  if (settings.clockOffsetMs) badges.push(badge(`clock ${formatOffset(settings.clockOffsetMs)}`, 'warn'));
  if (s.primary === false) badges.push(badge('secondary tab', 'muted'));
  if (s.auth && s.auth.writesPaused) badges.push(badge('writes paused (auth)', 'warn'));
  fill(els.badges, badges);

  els.toggle.setAttribute('aria-checked', String(online));
  g.dataset.online = String(online);
  setText(els.online, online ? 'online' : 'offline');
  els.online.dataset.state = online ? 'online' : 'offline';
  fill(els.conditions, networkConditions(network));
  fill(els.gates, gateBadges(s.gates || {}));
  setText(els.pending, String(s.pendingWrites ?? 0));
  els.pending.classList.toggle('hot', (s.pendingWrites || 0) > 0);
  const cache = s.cache || {};
  setText(els.cache, `${formatBytes(cache.bytes)} · ${plural(cache.documents ?? 0, 'doc')}`);
  setText(els.listeners, String(s.listeners ?? 0));
  if (expanded.has(s.id)) renderDetails(s.id);
}

function badge(text, tone) {
  return h('span', { class: 'badge ' + (tone || ''), text });
}

function networkConditions(n) {
  const out = [];
  if (n.latencyMs) out.push(badge(`latency ${n.latencyMs} ms`, 'warn'));
  if (n.rejectWrites && n.rejectWrites.count) {
    out.push(badge(`rejects next ${plural(n.rejectWrites.count, 'write')} (${n.rejectWrites.status || 'PERMISSION_DENIED'})`, 'bad'));
  }
  for (const [k, v] of Object.entries(n)) {
    if (['online', 'latencyMs', 'rejectWrites'].includes(k) || v === null || v === false || v === 0) continue;
    out.push(badge(`${k}: ${typeof v === 'object' ? JSON.stringify(v) : v}`, 'muted'));
  }
  return out;
}

function gateBadges(gates) {
  const names = { holdWatch: 'watch held', holdWrites: 'writes held', scriptedWatch: 'scripted watch' };
  const out = [];
  for (const [k, v] of Object.entries(gates)) {
    if (v === true) out.push(badge(names[k] || k, 'warn'));
    else if (v !== false && v !== null && v !== undefined) out.push(badge(`${k}: ${JSON.stringify(v)}`, 'muted'));
  }
  if (!out.length) out.push(h('span', { class: 'muted', text: 'open' }));
  return out;
}

async function toggleNetwork(id) {
  const g = rows.get(id);
  if (!g) return;
  const btn = g._els.toggle;
  const goOnline = btn.getAttribute('aria-checked') !== 'true';
  btn.disabled = true;
  btn.setAttribute('aria-busy', 'true');
  try {
    const state = await api(`/clients/${encodeURIComponent(id)}:${goOnline ? 'enableNetwork' : 'disableNetwork'}`, { method: 'POST' });
    showError($('clients-error'), '');
    if (state && state.id === id) {
      states.set(id, state);
      updateGroup(g, state);
    } else {
      refresh();
    }
  } catch (err) {
    showError($('clients-error'), `Could not take ${id} ${goOnline ? 'online' : 'offline'}: ${err.message}`);
  } finally {
    btn.disabled = false;
    btn.removeAttribute('aria-busy');
  }
}

function toggleDetails(id) {
  const g = rows.get(id);
  if (!g) return;
  const open = !expanded.has(id);
  if (open) expanded.add(id); else expanded.delete(id);
  g._els.expand.setAttribute('aria-expanded', String(open));
  g._els.detailRow.hidden = !open;
  if (open) {
    renderDetails(id);
    loadQueue(id);
  }
}

async function loadQueue(id) {
  try {
    const q = await api(`/clients/${encodeURIComponent(id)}/pendingWrites`);
    queues.set(id, { writes: Array.isArray(q && q.writes) ? q.writes : [] });
  } catch (err) {
    queues.set(id, { error: err.message });
  }
  if (expanded.has(id)) renderDetails(id);
}

function renderDetails(id) {
  const g = rows.get(id);
  const s = states.get(id);
  if (!g || !s) return;
  const q = queues.get(id);
  // Only rebuild what changed (a refresh must not close what the reader opened).
  const signature = JSON.stringify([s, q || null]);
  if (g._detailsSignature === signature) return;
  g._detailsSignature = signature;
  const rawOpen = Boolean(g._els.detailCell.querySelector('details.raw')?.open);
  const settings = s.settings || {};
  let queue;
  if (!q) queue = h('p', { class: 'muted', text: 'Loading…' });
  else if (q.error) queue = h('p', { class: 'notice', text: q.error });
  else if (!q.writes.length) queue = h('p', { class: 'muted', text: 'No queued writes.' });
  else {
    queue = h('ol', { class: 'writes', 'data-testid': 'client-writes-' + id },
      q.writes.map((w) => h('li', { class: 'write', 'data-testid': 'pending-write', 'data-write-id': w.id, 'data-state': w.state },
        h('div', { class: 'write-head' },
          h('span', { class: 'mono', text: '#' + w.id }),
          h('span', { class: 'badge state-' + (w.state || 'unknown'), text: w.state || '?' }),
          w.localWriteTime ? h('time', { class: 'muted small', datetime: w.localWriteTime, title: w.localWriteTime, text: 'queued ' + shortTime(w.localWriteTime) }) : null,
          w.error ? h('span', { class: 'small bad-text', text: errorMessage(w.error.code, { error: w.error }) }) : null),
        h('ul', { class: 'ops' }, (w.writes || []).map((op) => h('li', null, describeWrite(op, settings))))))
    );
  }
  const settingRows = Object.entries(settings).map(([k, v]) => h('div', null,
    h('dt', { text: k }),
    h('dd', { class: 'mono', text: k === 'cacheSizeBytes' && typeof v === 'number' ? `${v} (${formatBytes(v)})` : typeof v === 'string' ? v : JSON.stringify(v) })));
  const gc = s.gc && typeof s.gc === 'object' ? Object.entries(s.gc).map(([k, v]) => h('div', null,
    h('dt', { text: k }), h('dd', { class: 'mono', text: typeof v === 'object' ? JSON.stringify(v) : String(v) }))) : [];
  const cacheRows = Object.entries(s.cache || {}).map(([k, v]) => h('div', null,
    h('dt', { text: k }), h('dd', { class: 'mono', text: k === 'bytes' && typeof v === 'number' && v >= 1024 ? `${v} (${formatBytes(v)})` : k === 'bytes' ? formatBytes(v) : String(v) })));
  const listenerRows = [h('div', null, h('dt', { text: 'listeners' }), h('dd', { class: 'mono', text: String(s.listeners ?? 0) })),
    h('div', null, h('dt', { text: 'lastEventId' }), h('dd', { class: 'mono', text: String(s.lastEventId ?? '—') }))];
  cacheRows.push(...listenerRows);
  fill(g._els.detailCell,
    h('div', { class: 'detail-grid' },
      h('section', { class: 'queue' },
        h('h4', null, 'Write queue ', h('span', { class: 'muted', text: `(${s.pendingWrites ?? 0} pending)` })),
        queue),
      h('section', null, h('h4', { text: 'Settings' }), h('dl', { class: 'kv' }, settingRows)),
      h('section', null, h('h4', { text: 'Cache' }), h('dl', { class: 'kv' }, cacheRows)),
      gc.length ? h('section', null, h('h4', { text: 'Garbage collection' }), h('dl', { class: 'kv' }, gc)) : null,
      h('details', { class: 'raw', open: rawOpen }, h('summary', { text: 'State JSON' }), h('pre', { text: JSON.stringify(s, null, 2) }))));
}

function describeWrite(op, settings) {
  const prefix = `projects/${settings.project}/databases/${settings.database}/documents/`;
  const rel = (name) => (typeof name === 'string' && name.startsWith(prefix) ? name.slice(prefix.length) : name);
  const link = (name) => {
    const path = rel(name);
    return h('button', {
      type: 'button', class: 'link mono', text: path, title: 'Open the backend version in Documents',
      onclick: () => emit('open-document', { project: settings.project, database: settings.database, path }),
    });
  };
  if (op.update) {
    const fields = Object.keys(op.update.fields || {});
    const mask = op.updateMask && op.updateMask.fieldPaths;
    return [h('span', { class: 'op', text: mask ? 'patch' : 'set' }), ' ', link(op.update.name), ' ',
      h('span', { class: 'muted small', text: mask ? `fields ${mask.join(', ')}` : plural(fields.length, 'field') })];
  }
  if (op.delete) return [h('span', { class: 'op', text: 'delete' }), ' ', link(op.delete)];
  if (op.transform) {
    return [h('span', { class: 'op', text: 'transform' }), ' ', link(op.transform.document), ' ',
      h('span', { class: 'muted small', text: (op.transform.fieldTransforms || []).map((t) => t.fieldPath).join(', ') })];
  }
  return h('span', { class: 'mono small', text: JSON.stringify(op) });
}

export function onEvent(ev) {
  switch (ev.kind) {
    case 'client':
      if (ev.action === 'deleted') {
        states.delete(ev.client);
        expanded.delete(ev.client);
        queues.delete(ev.client);
        render();
      }
      refresh();
      break;
    case 'network':
    case 'writeAcknowledged':
    case 'writeRejected':
    case 'gc':
    case 'onDisconnect':
    case 'reset':
    case 'import':
      refresh();
      break;
    case 'commit': // may change the caches of clients listening to it; commits can come in floods
      refreshLater();
      break;
    default:
      break;
  }
}

// Writes queued by an offline client raise no event: while the panel is on screen a slow
// backstop refresh keeps the counts honest.
setInterval(() => { if (isShown('clients')) refresh(); }, 5000);

$('clients-filter').addEventListener('input', render);
$('clients-refresh').addEventListener('click', refresh);

// An id usable in an element id (the aria-controls of a client's expander).
function cssId(s) {
  return String(s).replace(/[^A-Za-z0-9_-]/g, (c) => '_' + c.charCodeAt(0).toString(16));
}
