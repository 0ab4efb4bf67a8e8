// The connections panel: the real SDKs connected to this port (gRPC, WebSocket), each of
// which can be dropped, and the network switches that take matching ones offline.

import { $, h, fill, setText, showError, coalesce } from '../dom.js';
import { api } from '../api.js';
import { isShown } from '../tabs.js';

export const refresh = coalesce(load, 150);

async function load() {
  let data;
  let switches;
  try {
    [data, switches] = await Promise.all([api('/emulator/v1/connections'), api('/emulator/v1/connections/network')]);
  } catch (err) {
    showError($('connections-error'), 'Connections: ' + err.message);
    return;
  }
  showError($('connections-error'), '');
  render(Array.isArray(data && data.connections) ? data.connections : [],
    Array.isArray(switches && switches.switches) ? switches.switches : []);
}

function render(list, switches) {
  setText($('connections-count'), list.length ? String(list.length) : '');
  $('connections-table').hidden = list.length === 0;
  $('connections-empty').hidden = list.length !== 0;
  fill($('connections-body'), list.map((c) => h('tr', { 'data-testid': 'connection-' + c.id },
    h('td', { class: 'mono', text: c.id }),
    h('td', { text: c.protocol }),
    h('td', { class: 'mono small', text: [c.project, c.database || c.namespace].filter(Boolean).join(' / ') }),
    h('td', { class: 'small', text: [c.appId, c.auth && c.auth.uid].filter(Boolean).join(' · ') || '—' }),
    h('td', { class: 'num', text: String(c.listens) }),
    h('td', { class: 'small', 'data-testid': 'connection-calls-' + c.id, text: describeCalls(c.calls) }),
    h('td', null, h('button', {
      type: 'button', class: 'ghost small', 'data-testid': 'connection-drop-' + c.id, text: 'Drop',
      title: 'Drop this connection once; the SDK reconnects at once', onclick: () => drop(c.id),
    }), c.protocol === 'rtdb-websocket' && c.auth && c.auth.uid ? h('button', {
      type: 'button', class: 'ghost small', 'data-testid': 'connection-revoke-' + c.id, text: 'Revoke auth',
      title: 'Revoke the credential this socket authenticated with: the SDK gets "ac" and reconnects',
      onclick: () => revokeAuth(c.id),
    }) : null))));
  fill($('switches-list'), switches.map((sw) => {
    const match = Object.entries(sw.match).map(([k, v]) => `${k}=${v}`).join(', ');
    return h('li', { 'data-testid': 'switch-' + match },
      h('span', { class: 'mono small', text: match }), ' ',
      h('span', { class: sw.online ? 'badge' : 'badge warn', text: sw.online ? 'online' : 'offline' }),
      sw.latencyMs ? h('span', { class: 'muted small', text: ` +${sw.latencyMs} ms` }) : null, ' ',
      h('button', { type: 'button', class: 'ghost small', text: 'Clear', onclick: () => setSwitch(sw.match, true, 0) }));
  }));
}

// gRPC calls by method, busiest first: "GetDocument 12 · Commit 3".
function describeCalls(calls) {
  const entries = Object.entries(calls || {}).sort((a, b) => b[1] - a[1]);
  return entries.length ? entries.map(([method, n]) => `${method} ${n}`).join(' · ') : '—';
}

async function drop(id) {
  try {
    await api(`/emulator/v1/connections/${encodeURIComponent(id)}:drop`, { method: 'POST' });
  } catch (err) {
    showError($('connections-error'), 'Drop: ' + err.message);
  }
  refresh();
}

async function revokeAuth(id) {
  try {
    await api(`/emulator/v1/connections/${encodeURIComponent(id)}:revokeAuth`, { method: 'POST', body: {} });
  } catch (err) {
    showError($('connections-error'), 'Revoke auth: ' + err.message);
  }
  refresh();
}

async function setSwitch(match, online, latencyMs) {
  try {
    await api('/emulator/v1/connections/network', { method: 'PUT', body: { match, online, latencyMs } });
  } catch (err) {
    showError($('connections-error'), 'Network: ' + err.message);
  }
  refresh();
}

$('switch-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const value = $('switch-value').value.trim();
  if (!value) return;
  const online = e.submitter ? e.submitter.value === 'true' : true;
  setSwitch({ [$('switch-key').value]: value }, online, Number($('switch-latency').value) || 0);
});
$('connections-refresh').addEventListener('click', refresh);
setInterval(() => { if (isShown('connections')) refresh(); }, 5000);

export function onEvent(ev) {
  if (ev.kind === 'connectionOpened' || ev.kind === 'connectionClosed' || ev.kind === 'reset') refresh();
}
