// The masthead: the server's health and its clock, shown from the server's time (which can be
// set or frozen through /emulator/v1/clock), not this computer's.

import { $, setText } from './dom.js';
import { formatClock, formatOffset } from './format.js';
import { api } from './api.js';

let clockOffsetMs = null; // server epoch ms − local epoch ms

export function renderClock() {
  const el = $('clock');
  if (clockOffsetMs === null) return;
  const now = Date.now() + clockOffsetMs;
  setText(el, formatClock(now));
  el.setAttribute('datetime', new Date(now).toISOString());
  const drift = Math.abs(clockOffsetMs) > 2000 ? ` (${formatOffset(clockOffsetMs)} from this computer)` : '';
  el.title = 'Server clock, UTC' + drift;
  el.classList.toggle('shifted', drift !== '');
}

export async function syncClock() {
  try {
    const c = await api('/emulator/v1/clock');
    const epoch = typeof c.epochMs === 'number' ? c.epochMs : Date.parse(c.time);
    if (isFinite(epoch)) clockOffsetMs = epoch - Date.now();
    renderClock();
  } catch (err) {
    $('clock').textContent = err.status === 401 ? 'token needed' : 'unavailable';
    $('clock').title = err.message;
  }
}

export async function checkHealth() {
  const el = $('health');
  try {
    const res = await fetch('/healthz', { cache: 'no-store' });
    const body = await res.json().catch(() => null);
    const ok = res.ok && body && body.status === 'ok';
    el.dataset.state = ok ? 'ok' : 'bad';
    setText(el, ok ? 'healthy' : `unhealthy (${res.status})`);
  } catch {
    el.dataset.state = 'bad';
    setText(el, 'unreachable');
  }
}

setInterval(renderClock, 1000);
setInterval(checkHealth, 15000);
setInterval(syncClock, 60000);

document.addEventListener('visibilitychange', () => {
  if (!document.hidden) {
    checkHealth();
    renderClock();
  }
});
