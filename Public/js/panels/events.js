// The live event log: the server's operations (/emulator/v1/events, an EventSource), shown
// newest first with filters, pause and clear. Each event is emitted on the bus as 'operation'
// for the other panels; a restarted server or a reopened stream emits 'missed-events'.

import { $, h, fill, setText } from '../dom.js';
import { plural, shortTime } from '../format.js';
import { api, adminToken } from '../api.js';
import { selectTab } from '../tabs.js';
import { checkHealth } from '../header.js';
import { emit } from '../bus.js';

const list = $('event-log');
const BUFFER = 1000; // kept in memory for filtering
const DOM_CAP = 500; // shown at most
const buffer = [];
let lastSeq = 0;
const seen = new Map(); // seq → {time, kind} of the latest events, to drop replays
let paused = false;
let heldWhilePaused = 0;
let es = null;
let retryMs = 1000;
let everOpened = false;

function matches(ev) {
  const kind = $('events-kind').value;
  const client = $('events-client').value.trim().toLowerCase();
  if (kind && ev.kind !== kind) return false;
  if (client && !(typeof ev.client === 'string' && ev.client.toLowerCase().includes(client))) return false;
  return true;
}

function summary(ev) {
  const c = (id) => h('span', { class: 'mono who', text: id });
  const docLink = (p) => h('button', {
    type: 'button', class: 'link mono', text: p, onclick: () => emit('open-document', { project: ev.project, database: ev.database, path: p }),
  });
  switch (ev.kind) {
    case 'commit': {
      const docs = Array.isArray(ev.documents) ? ev.documents : [];
      const total = typeof ev.changedDocuments === 'number' ? Math.max(ev.changedDocuments, docs.length) : docs.length;
      const listed = docs.slice(0, 3);
      const extra = total > listed.length ? ` +${total - listed.length} more` : '';
      return [h('span', { class: 'mono', text: `${ev.project} / ${ev.database}` }), ` · ${plural(total, 'document')}: `,
        listed.map((p, i) => [i ? ', ' : '', docLink(p)]), extra];
    }
    case 'treeWrite':
      return [h('span', { class: 'mono', text: ev.namespace }), ' · ', h('strong', { text: ev.op }), ' ', h('span', { class: 'mono', text: ev.path || '/' })];
    case 'network':
      return ['client ', c(ev.client), ' went ', h('strong', { class: ev.online ? 'good-text' : 'bad-text', text: ev.online ? 'online' : 'offline' })];
    case 'client':
      return [c(ev.client), ' ', h('strong', { text: ev.action })];
    case 'writeAcknowledged':
      return ['client ', c(ev.client), ' · write ', h('span', { class: 'mono', text: '#' + ev.writeId }), ' acknowledged'];
    case 'writeRejected':
      return ['client ', c(ev.client), ' · write ', h('span', { class: 'mono', text: '#' + ev.writeId }), ' ',
        h('strong', { class: 'bad-text', text: `rejected ${ev.status || ''}` }), ev.message ? ` — ${ev.message}` : '',
        ev.decision ? [' · ', h('button', {
          type: 'button', class: 'link', 'data-testid': 'event-decision', text: `rules decision ${ev.decision}`,
          onclick: () => { selectTab('rules'); emit('open-decision', ev.decision); },
        })] : ''];
    case 'reset':
      if (ev.scope === 'documents') return ['documents of ', h('span', { class: 'mono', text: `${ev.project || '*'} / ${ev.database || '*'}` }), ' reset'];
      if (ev.scope === 'tree') return ['tree namespace ', h('span', { class: 'mono', text: ev.namespace || '*' }), ' reset'];
      return [h('strong', { text: 'everything reset' }), ' (documents, tree, clients)'];
    case 'import': {
      const counts = ['documents', 'namespaces', 'clients'].filter((k) => typeof ev[k] === 'number')
        .map((k) => plural(ev[k], k.slice(0, -1)));
      return ['archive imported', counts.length ? ` (${counts.join(', ')})` : ''];
    }
    case 'clock':
      return ['server clock set to ', h('span', { class: 'mono', text: ev.time }), ev.frozen ? ' (frozen)' : ''];
    case 'gc':
      return ['client ', c(ev.client), ` · GC removed ${plural(ev.documentsRemoved ?? 0, 'document')}, ${plural(ev.targetsRemoved ?? 0, 'target')}`];
    case 'onDisconnect':
      return ['client ', c(ev.client), ' · onDisconnect ', h('strong', { text: ev.op }), ' ', h('span', { class: 'mono', text: ev.path })];
    case 'connectionOpened':
    case 'connectionClosed':
      return [`${ev.protocol} connection `, c(ev.connection), ' ', h('strong', { text: ev.kind === 'connectionOpened' ? 'opened' : 'closed' }),
        ev.reason ? ` — ${ev.reason}` : ''];
    default: {
      const rest = { ...ev };
      delete rest.seq; delete rest.time; delete rest.kind;
      return [h('span', { class: 'mono small', text: JSON.stringify(rest) })];
    }
  }
}

function item(ev) {
  const li = h('li', {
    class: 'event k-' + String(ev.kind).replace(/[^A-Za-z]/g, ''), 'data-testid': 'event-item',
    'data-kind': ev.kind, 'data-client': typeof ev.client === 'string' ? ev.client : null, 'data-seq': ev.seq,
    'data-online': typeof ev.online === 'boolean' ? String(ev.online) : null,
  });
  const pre = h('pre', { hidden: true });
  const toggle = h('button', {
    type: 'button', class: 'link small seq', 'aria-expanded': 'false', text: `#${ev.seq}`,
    title: 'Show the event as JSON', 'aria-label': `Event ${ev.seq} as JSON`,
    onclick: () => {
      const open = pre.hidden;
      if (open && !pre.textContent) pre.textContent = JSON.stringify(ev, null, 2);
      pre.hidden = !open;
      toggle.setAttribute('aria-expanded', String(open));
    },
  });
  li.append(
    h('div', { class: 'event-head' },
      h('time', { class: 'mono small muted', datetime: ev.time, title: ev.time, text: shortTime(ev.time) }),
      h('span', { class: 'kind', text: ev.kind }), toggle),
    h('div', { class: 'event-body' }, summary(ev)),
    pre);
  return li;
}

function renderAll() {
  incoming = [];
  const shown = [];
  for (let i = buffer.length - 1; i >= 0 && shown.length < DOM_CAP; i -= 1) {
    if (matches(buffer[i])) shown.push(item(buffer[i]));
  }
  fill(list, shown);
  if (!shown.length) list.append(h('li', { class: 'empty', text: buffer.length ? 'No event matches the filters.' : 'No events yet.' }));
  updateSummary();
}

function updateSummary() {
  const filtered = $('events-kind').value || $('events-client').value.trim();
  const shown = list.querySelectorAll('[data-testid=event-item]').length;
  let text = `${plural(buffer.length, 'event')} received`;
  if (filtered) text += `, ${shown} shown`;
  if (paused) text += ` · paused, ${heldWhilePaused} new`;
  setText($('events-summary'), text);
}

function add(ev) {
  buffer.push(ev);
  if (buffer.length > BUFFER) buffer.splice(0, buffer.length - BUFFER);
  if (typeof ev.client === 'string') noteClientId(ev.client);
  if (paused) {
    heldWhilePaused += 1;
    updateSummary();
    return;
  }
  if (matches(ev)) {
    incoming.push(ev);
    if (incoming.length > DOM_CAP) incoming.splice(0, incoming.length - DOM_CAP);
  }
  if (!flushTimer) flushTimer = setTimeout(flush, 50);
}

// New events reach the DOM in batches, so a flood of commits stays cheap.
let incoming = [];
let flushTimer = null;
function flush() {
  flushTimer = null;
  const batch = incoming;
  incoming = [];
  if (batch.length) {
    list.querySelector(':scope > li.empty')?.remove();
    const frag = document.createDocumentFragment();
    for (let i = batch.length - 1; i >= 0; i -= 1) frag.append(item(batch[i]));
    list.prepend(frag);
    while (list.childElementCount > DOM_CAP) list.lastElementChild.remove();
  }
  updateSummary();
}

function onOperation(e) {
  let ev;
  try { ev = JSON.parse(e.data); } catch { return; }
  if (!ev || typeof ev !== 'object') return;
  const seq = typeof ev.seq === 'number' ? ev.seq : Number(e.lastEventId);
  if (isFinite(seq)) {
    ev.seq = seq;
    if (seq <= lastSeq) {
      // The backlog of a reopened stream repeats events we have. An unknown event at an
      // old number means the server restarted and counts from 1 again.
      const had = seen.get(seq);
      if (had && had.time === ev.time && had.kind === ev.kind) return;
      seen.clear();
      emit('missed-events');
    }
    lastSeq = seq;
    seen.set(seq, { time: ev.time, kind: ev.kind });
    if (seen.size > BUFFER) seen.delete(seen.keys().next().value);
  }
  add(ev);
  emit('operation', ev);
}

function setState(state, text) {
  const el = $('stream-state');
  el.dataset.state = state;
  setText(el, text);
}

/** Opens (or reopens) the stream of the server's operations. */
export function open() {
  if (es) es.close();
  // A reopened stream asks for the whole kept backlog and drops what it already has:
  // unlike Last-Event-ID this also works across a server restart, which counts from 1.
  const params = new URLSearchParams({ backlog: everOpened ? '1000' : '100' });
  const token = adminToken();
  if (token) params.set('admin_token', token);
  const source = new EventSource('/emulator/v1/events?' + params);
  es = source;
  source.addEventListener('open', () => {
    if (es !== source) return;
    retryMs = 1000;
    setState('live', 'live');
    if (everOpened) emit('missed-events'); // we may have missed changes while away
    everOpened = true;
  });
  source.addEventListener('operation', onOperation);
  source.addEventListener('message', onOperation);
  source.addEventListener('error', () => {
    if (es !== source) return;
    source.close();
    setState('connecting', 'reconnecting…');
    checkHealth();
    const wait = retryMs;
    retryMs = Math.min(retryMs * 2, 15000);
    setTimeout(async () => {
      if (es !== source) return;
      // EventSource cannot tell a 401 from other failures: fetch can, and asks for the token.
      try { await api('/emulator/v1/clock'); } catch { /* the next attempt will tell */ }
      if (es === source) open();
    }, wait);
  });
}

$('events-kind').addEventListener('change', renderAll);
$('events-client').addEventListener('input', renderAll);
$('events-pause').addEventListener('click', () => {
  paused = !paused;
  $('events-pause').setAttribute('aria-pressed', String(paused));
  setText($('events-pause'), paused ? 'Resume' : 'Pause');
  if (!paused) {
    heldWhilePaused = 0;
    renderAll();
  } else updateSummary();
});
$('events-clear').addEventListener('click', () => {
  buffer.length = 0;
  heldWhilePaused = 0;
  renderAll();
});

/** A new admin token: an open stream is reopened with it. */
export function reconnect() {
  if (es) open();
}

// Client ids offered by the event log's client filter.
const knownClientIds = new Set();
export function noteClientId(id) {
  if (knownClientIds.has(id)) return;
  knownClientIds.add(id);
  $('events-client-ids').append(h('option', { value: id }));
}

renderAll();
