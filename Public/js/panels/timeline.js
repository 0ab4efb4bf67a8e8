// The Timeline panel: every client's and connection's steps (GET /emulator/v1/timeline), live
// from this server or from a saved trace file (Save trace, Open trace, or a file dropped on the
// chart). Lanes are filtered by name; a clicked mark shows its detail — a snapshot's changed
// documents, a rejected write's rules decision — and links to them.

import { $, h, fill, setText, showError, coalesce } from '../dom.js';
import { api, adminToken } from '../api.js';
import { emit } from '../bus.js';
import { selectTab } from '../tabs.js';
import { TimelineChart } from './timeline-chart.js';

const chart = new TimelineChart($('timeline-canvas'), { onSelect: showDetail });
let lanes = new Map(); // id → lane as the server describes it
let models = new Map(); // id → {marks, offline, writes, open spans and writes, lastMs}
let source = null; // the live EventSource, or null
let lastSeq = 0;
let fromFile = null; // the name of the trace file shown, or null when live
let loaded = false;

function emptyModel() {
  return { marks: [], offline: [], writes: [], openSpan: null, openWrites: new Map(), lastMs: 0 };
}

/** Adds one step to its lane's model: its mark, and the offline span or write bar it opens or ends. */
function add(ev) {
  let model = models.get(ev.lane);
  if (!model) {
    model = emptyModel();
    models.set(ev.lane, model);
  }
  model.marks.push(ev);
  model.lastMs = Math.max(model.lastMs, ev.ms);
  lastSeq = Math.max(lastSeq, ev.seq);
  const ended = ev.kind === 'lifecycle' && ['closed', 'deleted', 'terminated'].includes(ev.action);
  if (ev.kind === 'network' && ev.online === false && !model.openSpan) {
    model.openSpan = [ev.ms, null];
    model.offline.push(model.openSpan);
  } else if ((ev.kind === 'network' && ev.online) || ended) {
    if (model.openSpan) model.openSpan[1] = ev.ms;
    model.openSpan = null;
  }
  if (ev.kind === 'writeQueued' || (ev.kind === 'writeSent' && !model.openWrites.has(ev.writeId))) {
    // Writes pending together stack, each in the lowest row no other pending write holds.
    const taken = new Set([...model.openWrites.values()].map((open) => open.row));
    let row = 0;
    while (taken.has(row)) row += 1;
    const bar = { start: ev.ms, end: null, outcome: null, first: ev, answer: null, row };
    model.writes.push(bar);
    model.openWrites.set(ev.writeId, bar);
  } else if (ev.kind === 'writeAcknowledged' || ev.kind === 'writeRejected') {
    const bar = model.openWrites.get(ev.writeId);
    if (bar) {
      Object.assign(bar, { end: ev.ms, outcome: ev.kind, answer: ev });
      model.openWrites.delete(ev.writeId);
    }
  }
}

function laneTitle(lane) {
  return lane.kind === 'client' ? `client ${lane.name}` : `${lane.protocol} ${lane.name}`;
}

function laneSubtitle(lane) {
  return [lane.appId, lane.project, lane.closed ? 'closed' : ''].filter(Boolean).join(' · ');
}

function matches(lane) {
  const filter = $('timeline-filter').value.trim().toLowerCase();
  if (!filter) return true;
  return [lane.id, lane.name, lane.appId, lane.project, lane.protocol].some((v) => typeof v === 'string' && v.toLowerCase().includes(filter));
}

function render() {
  const shown = [...models.keys()]
    .map((id) => lanes.get(id) ?? { id, kind: id.split(':')[0], name: id.split(':').slice(1).join(':'), protocol: '' })
    .filter(matches)
    .map((lane) => ({ id: lane.id, title: laneTitle(lane), subtitle: laneSubtitle(lane), model: models.get(lane.id), lane }));
  $('timeline-empty').hidden = shown.length > 0;
  chart.setLanes(shown);
}

/** Replaces what is shown with a trace: the server's answer, or a saved file's contents. */
function show(trace) {
  if (!trace || trace.firegate !== 'timeline' || !Array.isArray(trace.events) || !Array.isArray(trace.lanes)) {
    throw new Error('This is not a Firegate timeline trace (GET /emulator/v1/timeline).');
  }
  lanes = new Map(trace.lanes.map((lane) => [lane.id, lane]));
  models = new Map(trace.lanes.map((lane) => [lane.id, emptyModel()]));
  lastSeq = 0;
  for (const ev of trace.events) add(ev);
  chart.selected = null;
  $('timeline-detail').hidden = true;
  chart.following = true;
  render();
}

async function loadLive() {
  stopLive();
  fromFile = null;
  setText($('timeline-source'), 'Live from this server. Drop a saved trace on the chart to open it. Wheel to zoom, drag to pan, click a mark for its detail.');
  try {
    show(await api('/emulator/v1/timeline'));
    showError($('timeline-error'), '');
    if ($('timeline-live').checked) startLive();
  } catch (err) {
    showError($('timeline-error'), err.message);
  }
}

// Bursts of steps are drawn once per frame; new lanes' descriptions are read at most every 300 ms.
let renderPending = false;
function renderSoon() {
  if (renderPending) return;
  renderPending = true;
  requestAnimationFrame(() => {
    renderPending = false;
    render();
  });
}

const refreshLanes = coalesce(async () => {
  const known = await api('/emulator/v1/timeline?limit=0');
  for (const lane of known.lanes) lanes.set(lane.id, lane);
  renderSoon();
}, 300);

function startLive() {
  const params = new URLSearchParams({ live: 'true', afterSeq: String(lastSeq) });
  const token = adminToken();
  if (token) params.set('admin_token', token);
  source = new EventSource('/emulator/v1/timeline?' + params);
  source.addEventListener('timeline', (message) => {
    const ev = JSON.parse(message.data);
    if (ev.seq <= lastSeq) return;
    // Added at once, in the order they come (a write's bar pairs its steps in order); a lane
    // opened since is shown by its id until its description is read.
    add(ev);
    if (!lanes.has(ev.lane)) refreshLanes();
    renderSoon();
  });
  source.onerror = () => {
    // The server went away or reset: read everything again once it answers.
    stopLive();
    setTimeout(() => { if (!fromFile && $('timeline-live').checked && isVisible()) loadLive(); }, 1500);
  };
}

function stopLive() {
  if (source) source.close();
  source = null;
}

function isVisible() {
  return !$('panel-timeline').hidden;
}

function detailRow(name, value) {
  return [h('dt', { text: name }), h('dd', {}, value)];
}

function showDetail(ev, shown) {
  const lane = shown.lane;
  const rows = [detailRow('lane', lane.id), detailRow('time', ev.time), detailRow('seq', String(ev.seq))];
  const skip = new Set(['seq', 'lane', 'time', 'ms', 'kind', 'changed']);
  for (const [key, value] of Object.entries(ev)) {
    if (!skip.has(key)) rows.push(detailRow(key, typeof value === 'string' ? value : JSON.stringify(value)));
  }
  const extra = [];
  if (ev.kind === 'writeRejected' && ev.decision) {
    extra.push(h('button', {
      type: 'button', class: 'ghost small', 'data-testid': 'timeline-decision', text: `Open rules decision ${ev.decision}`,
      onclick: () => { selectTab('rules'); emit('open-decision', ev.decision); },
    }));
  }
  const bar = shown.model.writes.find((b) => b.first === ev || b.answer === ev);
  if (bar && bar.end != null) rows.push(detailRow('queued → answered', `${(bar.end - bar.start).toFixed(1)} ms`));
  if (Array.isArray(ev.changed) && ev.changed.length) {
    const documentLane = lane.project && !ev.changed[0].path.startsWith('/');
    extra.push(h('h4', { text: 'Changed documents' }), h('ul', { 'data-testid': 'timeline-changed' }, ev.changed.map((change) => h('li', {},
      `${change.type} `,
      documentLane && !fromFile
        ? h('button', { type: 'button', class: 'link mono', text: change.path,
          onclick: () => emit('open-document', { project: lane.project, database: '(default)', path: change.path }) })
        : h('span', { class: 'mono', text: change.path })))));
  }
  const detail = $('timeline-detail');
  fill(detail, h('h3', { text: ev.kind }), h('dl', {}, rows), extra);
  detail.hidden = false;
}

async function openFile(file) {
  try {
    show(JSON.parse(await file.text()));
    stopLive();
    fromFile = file.name;
    setText($('timeline-source'), `From the trace file ${file.name}. Turn Live on to return to this server.`);
    $('timeline-live').checked = false;
    showError($('timeline-error'), '');
  } catch (err) {
    showError($('timeline-error'), `${file.name}: ${err.message}`);
  }
}

function saveTrace() {
  const trace = {
    firegate: 'timeline', version: 1, exportedAt: new Date().toISOString(),
    lanes: [...lanes.values()], events: [...models.values()].flatMap((m) => m.marks).sort((a, b) => a.seq - b.seq),
  };
  const link = h('a', {
    href: URL.createObjectURL(new Blob([JSON.stringify(trace)], { type: 'application/json' })),
    download: fromFile ?? `firegate-timeline-${trace.exportedAt.replace(/[:.]/g, '-')}.json`,
  });
  link.click();
  setTimeout(() => URL.revokeObjectURL(link.href), 1000);
}

$('timeline-filter').addEventListener('input', render);
$('timeline-fit').addEventListener('click', () => chart.fit());
$('timeline-save').addEventListener('click', saveTrace);
$('timeline-open').addEventListener('click', () => $('timeline-file').click());
$('timeline-file').addEventListener('change', (e) => { if (e.target.files[0]) openFile(e.target.files[0]); e.target.value = ''; });
$('timeline-live').addEventListener('change', (e) => (e.target.checked ? loadLive() : stopLive()));
const area = $('timeline-chart');
area.addEventListener('dragover', (e) => { e.preventDefault(); area.classList.add('dropping'); });
area.addEventListener('dragleave', () => area.classList.remove('dropping'));
area.addEventListener('drop', (e) => {
  e.preventDefault();
  area.classList.remove('dropping');
  const file = e.dataTransfer.files[0];
  if (file) openFile(file);
});

/** The tab was shown: the first time, the server's timeline is read (and followed when Live). */
export function shown(name) {
  if (name !== 'timeline') return;
  if (!loaded) {
    loaded = true;
    loadLive();
  } else {
    chart.draw();
  }
}

/** The server was reset or restarted: read it again. */
export function reload() {
  if (loaded && !fromFile) loadLive();
}
