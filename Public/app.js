// Firegate operations dashboard. Plain browser JavaScript, no build step, no dependencies.
//
// Every string that comes from the server is inserted as text (textContent / text nodes /
// setAttribute), never as HTML. Panels refresh on the server's event log
// (/emulator/v1/events, an EventSource) rather than by fast polling.
'use strict';

(() => {
  // ---------------------------------------------------------------------------------------
  // Small DOM helpers

  const $ = (id) => document.getElementById(id);

  /** h('button', {class: 'x', type: 'button', onclick: fn, dataset: {k: v}}, 'text', node…) */
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    if (attrs) {
      for (const [k, v] of Object.entries(attrs)) {
        if (v === null || v === undefined || v === false) continue;
        if (k === 'class') el.className = v;
        else if (k === 'text') el.textContent = v;
        else if (k === 'dataset') Object.assign(el.dataset, v);
        else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
        else if (v === true) el.setAttribute(k, '');
        else el.setAttribute(k, String(v));
      }
    }
    append(el, children);
    return el;
  }

  function append(el, children) {
    for (const c of children) {
      if (c === null || c === undefined || c === false) continue;
      if (Array.isArray(c)) append(el, c);
      else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
  }

  /** Replaces an element's children with the given nodes/strings. */
  function fill(el, ...children) {
    el.replaceChildren();
    append(el, children);
    return el;
  }

  /**
   * Keyed reconciliation: makes `container`'s children the elements for `items`, in order,
   * reusing the element already made for a key (so focus and expansion survive updates).
   * `cache` is a Map key → element kept by the caller; `after`, when given, is a child that
   * stays before the managed ones (a table's <thead>).
   */
  function reconcile(container, cache, items, keyOf, create, update, after = null) {
    const seen = new Set();
    let cursor = after ? after.nextElementSibling : container.firstElementChild;
    for (const item of items) {
      const key = keyOf(item);
      seen.add(key);
      let el = cache.get(key);
      if (!el) {
        el = create(item, key);
        cache.set(key, el);
      }
      update(el, item, key);
      if (el !== cursor) container.insertBefore(el, cursor);
      else cursor = cursor.nextElementSibling;
    }
    for (const [key, el] of cache) {
      if (!seen.has(key)) {
        el.remove();
        cache.delete(key);
      }
    }
  }

  function setText(el, text) {
    const s = String(text);
    if (el.textContent !== s) el.textContent = s;
  }

  function showError(el, message) {
    if (!message) {
      el.hidden = true;
      el.textContent = '';
    } else {
      el.textContent = message;
      el.hidden = false;
    }
  }

  /** Runs `fn` at most once per `wait` ms, never twice at the same time, always after the latest trigger. */
  function coalesce(fn, wait = 200) {
    let timer = null;
    let running = false;
    let again = false;
    const run = async () => {
      timer = null;
      if (running) {
        again = true;
        return;
      }
      running = true;
      try {
        await fn();
      } catch (err) {
        console.error(err);
      } finally {
        running = false;
        if (again) {
          again = false;
          trigger();
        }
      }
    };
    const trigger = () => {
      if (!timer) timer = setTimeout(run, wait);
    };
    return trigger;
  }

  const store = {
    get(key) {
      try { return localStorage.getItem(key) || ''; } catch { return ''; }
    },
    set(key, value) {
      try {
        if (value) localStorage.setItem(key, value);
        else localStorage.removeItem(key);
      } catch { /* storage unavailable: keep it in memory only */ }
    },
  };

  // ---------------------------------------------------------------------------------------
  // Formatting

  function formatBytes(n) {
    if (typeof n !== 'number' || !isFinite(n)) return '—';
    if (n < 0) return 'unlimited';
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    let v = n;
    while (v >= 1024 && i < units.length - 1) {
      v /= 1024;
      i += 1;
    }
    return (i === 0 ? String(v) : v.toFixed(v < 10 ? 1 : 0)) + ' ' + units[i];
  }

  function plural(n, one, many) {
    return `${n} ${n === 1 ? one : (many || one + 's')}`;
  }

  /** "2026-11-22T03:25:33.095227Z" → "03:25:33.095" (UTC, as the server sends it). */
  function shortTime(rfc3339) {
    if (typeof rfc3339 !== 'string') return '';
    const m = /T(\d\d:\d\d:\d\d)(\.\d{1,3})?/.exec(rfc3339);
    if (!m) return rfc3339;
    return m[1] + (m[2] ? m[2].padEnd(4, '0') : '.000');
  }

  function formatClock(ms) {
    const d = new Date(ms);
    if (isNaN(d.getTime())) return '—';
    return d.toISOString().replace('T', ' ').slice(0, 19) + ' UTC';
  }

  function formatOffset(ms) {
    const sign = ms < 0 ? '−' : '+';
    let s = Math.round(Math.abs(ms) / 1000);
    const d = Math.floor(s / 86400); s -= d * 86400;
    const hh = Math.floor(s / 3600); s -= hh * 3600;
    const mm = Math.floor(s / 60); s -= mm * 60;
    const parts = [];
    if (d) parts.push(d + 'd');
    if (hh) parts.push(hh + 'h');
    if (mm) parts.push(mm + 'm');
    if (s || !parts.length) parts.push(s + 's');
    return sign + parts.join(' ');
  }

  // ---------------------------------------------------------------------------------------
  // HTTP with the admin token

  const TOKEN_KEY = 'firegate.adminToken';
  let token = store.get(TOKEN_KEY);
  const tokenListeners = [];

  class ApiError extends Error {
    constructor(status, message, body) {
      super(message);
      this.status = status;
      this.body = body;
    }
  }

  function errorMessage(status, body) {
    if (body && typeof body === 'object' && body.error) {
      const e = body.error;
      if (typeof e === 'string') return `${status}: ${e}`;
      return `${e.code || status} ${e.status || ''}: ${e.message || ''}`.replace(/\s+:/, ':');
    }
    if (typeof body === 'string' && body) return `${status}: ${body.slice(0, 200)}`;
    return `HTTP ${status}`;
  }

  // One prompt at a time: every request that meets a 401 waits for the same answer.
  let tokenPrompt = null;
  let tokenDeclined = false;

  function askToken(rejected) {
    if (tokenPrompt) return tokenPrompt;
    if (tokenDeclined) return Promise.resolve(false);
    tokenPrompt = new Promise((resolve) => {
      const dialog = $('token-dialog');
      const input = $('token-input');
      const form = $('token-form');
      showError($('token-error'), rejected ? 'That token was not accepted. Try again.' : '');
      input.value = '';
      $('token-button').hidden = false;
      const done = (ok) => {
        form.removeEventListener('submit', onSubmit);
        dialog.removeEventListener('cancel', onCancel);
        if (dialog.open) dialog.close();
        tokenPrompt = null;
        resolve(ok);
      };
      const onSubmit = (e) => {
        e.preventDefault();
        const value = input.value.trim();
        if (!value) return;
        setToken(value);
        tokenDeclined = false;
        done(true);
      };
      const onCancel = () => {
        tokenDeclined = true;
        done(false);
      };
      form.addEventListener('submit', onSubmit);
      dialog.addEventListener('cancel', onCancel);
      if (typeof dialog.showModal === 'function') dialog.showModal();
      else dialog.setAttribute('open', '');
      input.focus();
    });
    return tokenPrompt;
  }

  function setToken(value) {
    token = value || '';
    store.set(TOKEN_KEY, token);
    $('token-button').hidden = !token && !tokenDeclined;
    for (const fn of tokenListeners) fn();
  }

  /**
   * fetch + JSON. `path` is same-origin. On a 401 the admin token is asked for (once, shared by
   * every waiting request) and the request retried with it.
   */
  async function api(path, { method = 'GET', body } = {}) {
    for (let attempt = 0; attempt < 4; attempt += 1) {
      const sent = token;
      const headers = { Accept: 'application/json' };
      if (body !== undefined) headers['Content-Type'] = 'application/json';
      if (sent) headers.Authorization = 'Bearer ' + sent;
      let res;
      try {
        res = await fetch(path, {
          method,
          headers,
          body: body === undefined ? undefined : JSON.stringify(body),
          cache: 'no-store',
        });
      } catch (err) {
        throw new ApiError(0, 'The server cannot be reached.');
      }
      const text = await res.text();
      let data = null;
      if (text) {
        try { data = JSON.parse(text); } catch { data = text; }
      }
      if (res.status === 401) {
        if (token !== sent) continue; // someone entered a new token meanwhile
        if (await askToken(Boolean(sent))) continue;
      }
      if (!res.ok) throw new ApiError(res.status, errorMessage(res.status, data), data);
      return data;
    }
    throw new ApiError(401, 'An admin token is needed.');
  }

  $('token-button').addEventListener('click', () => {
    tokenDeclined = false;
    askToken(false).then((ok) => { if (ok) refreshEverything(); });
  });
  $('token-forget').addEventListener('click', () => {
    setToken('');
    $('token-input').value = '';
    $('token-input').focus();
  });
  $('token-button').hidden = !token;

  // ---------------------------------------------------------------------------------------
  // Tabs (arrow keys move between them; the hash remembers the one shown)

  const TABS = ['clients', 'connections', 'documents', 'tree', 'rules', 'events'];
  const wideQuery = window.matchMedia('(min-width: 1200px)');
  let currentTab = 'clients';
  const tabShownListeners = [];

  function isShown(name) {
    if (document.hidden) return false;
    if (name === 'events' && wideQuery.matches) return true;
    return currentTab === name;
  }

  function selectTab(name, { focus = false, updateHash = true } = {}) {
    if (!TABS.includes(name)) name = 'clients';
    if (name === 'events' && wideQuery.matches) name = currentTab === 'events' ? 'clients' : currentTab;
    currentTab = name;
    for (const t of TABS) {
      const tab = $('tab-' + t);
      const selected = t === name;
      tab.setAttribute('aria-selected', String(selected));
      tab.tabIndex = selected ? 0 : -1;
      $('panel-' + t).hidden = !(selected || (t === 'events' && wideQuery.matches));
    }
    document.body.classList.toggle('wide', wideQuery.matches);
    if (focus) $('tab-' + name).focus();
    if (updateHash && location.hash !== '#' + name) history.replaceState(null, '', '#' + name);
    for (const fn of tabShownListeners) fn(name);
  }

  $('tab-clients').parentElement.addEventListener('click', (e) => {
    const tab = e.target.closest('[role=tab]');
    if (tab) selectTab(tab.dataset.tab);
  });
  $('tab-clients').parentElement.addEventListener('keydown', (e) => {
    const visible = TABS.filter((t) => !(t === 'events' && wideQuery.matches));
    let i = visible.indexOf(currentTab);
    if (e.key === 'ArrowRight') i = (i + 1) % visible.length;
    else if (e.key === 'ArrowLeft') i = (i - 1 + visible.length) % visible.length;
    else if (e.key === 'Home') i = 0;
    else if (e.key === 'End') i = visible.length - 1;
    else return;
    e.preventDefault();
    selectTab(visible[i], { focus: true });
  });
  wideQuery.addEventListener('change', () => selectTab(currentTab, { updateHash: false }));
  window.addEventListener('hashchange', () => selectTab(location.hash.slice(1)));

  // ---------------------------------------------------------------------------------------
  // Header: health and the server clock

  let clockOffsetMs = null; // server epoch ms − local epoch ms

  function renderClock() {
    const el = $('clock');
    if (clockOffsetMs === null) return;
    const now = Date.now() + clockOffsetMs;
    setText(el, formatClock(now));
    el.setAttribute('datetime', new Date(now).toISOString());
    const drift = Math.abs(clockOffsetMs) > 2000 ? ` (${formatOffset(clockOffsetMs)} from this computer)` : '';
    el.title = 'Server clock, UTC' + drift;
    el.classList.toggle('shifted', drift !== '');
  }

  async function syncClock() {
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

  async function checkHealth() {
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

  // ---------------------------------------------------------------------------------------
  // Clients

  const clients = (() => {
    const table = $('clients-table');
    const rows = new Map(); // id → <tbody> group holding the row and its detail row
    const expanded = new Set();
    const states = new Map();
    const queues = new Map(); // id → last pendingWrites answer
    let loadedOnce = false;

    const refresh = coalesce(load, 150);
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
          onclick: () => documents.open(settings.project, settings.database, path),
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

    function onEvent(ev) {
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

    return { refresh, onEvent, ids: () => [...states.keys()] };
  })();

  // ---------------------------------------------------------------------------------------
  // Connections: the real SDKs connected to this port, dropped or switched off by match

  const connections = (() => {
    const refresh = coalesce(load, 150);

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

    function onEvent(ev) {
      if (ev.kind === 'connectionOpened' || ev.kind === 'connectionClosed' || ev.kind === 'reset') refresh();
    }

    return { refresh, onEvent };
  })();

  // Client ids offered by the event log's client filter.
  const knownClientIds = new Set();
  function noteClientId(id) {
    if (knownClientIds.has(id)) return;
    knownClientIds.add(id);
    $('events-client-ids').append(h('option', { value: id }));
  }

  function cssId(s) {
    return String(s).replace(/[^A-Za-z0-9_-]/g, (c) => '_' + c.charCodeAt(0).toString(16));
  }

  // ---------------------------------------------------------------------------------------
  // Documents browser

  const VALUE_TYPES = [
    ['nullValue', 'null'], ['booleanValue', 'boolean'], ['integerValue', 'integer'], ['doubleValue', 'double'],
    ['timestampValue', 'timestamp'], ['stringValue', 'string'], ['bytesValue', 'bytes'],
    ['referenceValue', 'reference'], ['geoPointValue', 'geopoint'], ['arrayValue', 'array'], ['mapValue', 'map'],
  ];

  function valueType(v) {
    if (!v || typeof v !== 'object') return ['unknown', 'unknown'];
    for (const [key, name] of VALUE_TYPES) if (key in v) return [key, name];
    return ['unknown', 'unknown'];
  }

  const LONG_STRING = 240;

  /** The typed value of a Firestore field, readable, with its type visible. */
  function renderValue(v, ctx, path, depth) {
    const [key, type] = valueType(v);
    const raw = key === 'unknown' ? v : v[key];
    const typeBadge = h('span', { class: 'type t-' + type, text: type });
    const label = (name) => h('span', { class: 'fname mono', text: name });
    if (type === 'map' || type === 'array') {
      const entries = type === 'map'
        ? Object.entries((raw && raw.fields) || {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        : ((raw && raw.values) || []).map((x, i) => [String(i), x]);
      const vector = type === 'map' && raw && raw.fields && raw.fields.__type__
        && raw.fields.__type__.stringValue === '__vector__';
      const summary = vector ? 'vector' : type === 'map' ? plural(entries.length, 'field') : plural(entries.length, 'element');
      const list = h('ul', { class: 'fields' }, entries.map(([k, x]) => fieldRow(type === 'array' ? `[${k}]` : k, x, ctx,
        type === 'array' ? `${path}[${k}]` : `${path}.${k}`, depth + 1)));
      return { label, typeBadge, summary, list, open: entries.length <= 20 && depth < 3 };
    }
    let text;
    let node = null;
    switch (type) {
      case 'null': text = 'null'; break;
      case 'boolean': text = String(raw); break;
      case 'integer': case 'double': text = String(raw); break;
      case 'timestamp': text = String(raw); break;
      case 'string': {
        const s = String(raw);
        if (s.length > LONG_STRING) {
          const span = h('span', { class: 'val string', text: JSON.stringify(s.slice(0, LONG_STRING)).slice(0, -1) + '…' });
          const more = h('button', { type: 'button', class: 'link small', text: `show all ${s.length} characters` });
          more.addEventListener('click', () => { span.textContent = JSON.stringify(s); more.remove(); });
          node = h('span', null, span, ' ', more);
        } else {
          text = JSON.stringify(s);
        }
        break;
      }
      case 'bytes': {
        const b64 = String(raw);
        const n = Math.floor(b64.replace(/=+$/, '').length * 3 / 4);
        text = `${b64.length > 64 ? b64.slice(0, 64) + '…' : b64} (${plural(n, 'byte')}, base64)`;
        break;
      }
      case 'reference': {
        const ref = String(raw);
        const prefix = `projects/${ctx.project}/databases/${ctx.database}/documents/`;
        if (ref.startsWith(prefix)) {
          node = h('button', {
            type: 'button', class: 'link mono val', text: ref.slice(prefix.length), title: ref,
            onclick: () => documents.open(ctx.project, ctx.database, ref.slice(prefix.length)),
          });
        } else text = ref;
        break;
      }
      case 'geopoint': {
        const lat = raw && raw.latitude !== undefined ? raw.latitude : 0;
        const lng = raw && raw.longitude !== undefined ? raw.longitude : 0;
        text = `${lat}, ${lng} (lat, lng)`;
        break;
      }
      default: text = JSON.stringify(v);
    }
    return { label, typeBadge, value: node || h('span', { class: 'val ' + type, text }) };
  }

  function fieldRow(name, v, ctx, path, depth) {
    const r = renderValue(v, ctx, path, depth);
    const testPath = path.startsWith('.') ? path.slice(1) : path;
    if (r.list) {
      const d = h('details', { class: 'nested', open: r.open },
        h('summary', null, r.label(name), ' ', r.typeBadge, ' ', h('span', { class: 'muted small', text: r.summary })),
        r.list);
      return h('li', { class: 'frow', 'data-testid': 'field-' + testPath }, d);
    }
    return h('li', { class: 'frow', 'data-testid': 'field-' + testPath }, r.label(name), ' ', r.typeBadge, ' ', r.value);
  }

  const documents = (() => {
    const select = $('db-select');
    const colList = $('collections-list');
    const docList = $('documents-list');
    const detail = $('document-detail');
    const PAGE = 50;
    const DB_KEY = 'firegate.database';
    const stacked = window.matchMedia('(max-width: 900px)');

    const st = {
      project: '', database: '',
      parentDoc: '',      // '' = root; else the document whose subcollections column 1 lists
      collection: '',     // the collection whose documents column 2 lists
      doc: '',            // the open document
      collections: [],
      docs: [], nextPageToken: '',
      docsRequest: 0,
      known: [],          // databases listed
    };
    const docEls = new Map();
    const colEls = new Map();

    const base = (p = st.project, d = st.database) =>
      `/v1/projects/${encodeURIComponent(p)}/databases/${encodeURIComponent(d)}/documents`;
    const encPath = (path) => path.split('/').filter(Boolean).map(encodeURIComponent).join('/');
    const segs = (path) => path.split('/').filter(Boolean);
    const parentOf = (path) => segs(path).slice(0, -1).join('/');
    const lastOf = (path) => segs(path).slice(-1)[0] || '';
    const relName = (name) => {
      const prefix = `projects/${st.project}/databases/${st.database}/documents/`;
      return typeof name === 'string' && name.startsWith(prefix) ? name.slice(prefix.length) : name;
    };
    const dbKey = (p, d) => JSON.stringify([p, d]);

    const refreshDatabases = coalesce(loadDatabases, 400);
    const reloadCollections = coalesce(loadCollections, 250);
    const reloadDocs = coalesce(() => loadDocs(false), 250);
    const reloadDocument = coalesce(loadDocument, 250);

    async function loadDatabases() {
      let data;
      try {
        data = await api('/emulator/v1/databases');
      } catch (err) {
        showError($('docs-error'), 'Databases: ' + err.message);
        return;
      }
      const list = (Array.isArray(data && data.databases) ? data.databases : []).slice()
        .sort((a, b) => (a.project + '\0' + a.database < b.project + '\0' + b.database ? -1 : 1));
      st.known = list;
      const current = st.project ? dbKey(st.project, st.database) : store.get(DB_KEY);
      const options = list.map((db) => ({ value: dbKey(db.project, db.database), db }));
      if (current && !options.some((o) => o.value === current)) {
        const [p, d] = JSON.parse(current);
        options.push({ value: current, db: { project: p, database: d, documents: 0 } });
      }
      reconcile(select, new Map([...select.options].map((o) => [o.value, o])), options, (o) => o.value,
        (o) => h('option', { value: o.value }),
        (el, o) => setText(el, `${o.db.project} / ${o.db.database} (${plural(o.db.documents ?? 0, 'doc')})`));
      if (!options.length) {
        select.disabled = true;
        fill(colList, h('li', { class: 'empty', text: 'No databases hold documents yet.' }));
        return;
      }
      select.disabled = false;
      if (!st.project) {
        const pick = options.find((o) => o.value === current)
          || options.find((o) => o.db.project === 'demo-project') || options[0];
        select.value = pick.value;
        selectDatabase(pick.db.project, pick.db.database);
      } else {
        select.value = dbKey(st.project, st.database);
      }
    }

    function selectDatabase(project, database) {
      st.project = project;
      st.database = database;
      store.set(DB_KEY, dbKey(project, database));
      if (select.value !== dbKey(project, database)) {
        if (![...select.options].some((o) => o.value === dbKey(project, database))) {
          select.append(h('option', { value: dbKey(project, database), text: `${project} / ${database}` }));
        }
        select.value = dbKey(project, database);
      }
      st.parentDoc = ''; st.collection = ''; st.doc = '';
      st.docs = []; st.nextPageToken = '';
      renderDocs();
      renderDetail(null);
      renderCrumbs();
      loadCollections();
    }

    async function listCollectionIds(docPath) {
      const ids = [];
      let pageToken = '';
      for (let page = 0; page < 20; page += 1) {
        const body = { pageSize: 100 };
        if (pageToken) body.pageToken = pageToken;
        const url = base() + (docPath ? '/' + encPath(docPath) : '') + ':listCollectionIds';
        const r = await api(url, { method: 'POST', body });
        ids.push(...((r && r.collectionIds) || []));
        pageToken = r && r.nextPageToken;
        if (!pageToken) break;
      }
      return ids;
    }

    async function loadCollections() {
      const want = [st.project, st.database, st.parentDoc].join('\0');
      let ids;
      try {
        ids = await listCollectionIds(st.parentDoc);
      } catch (err) {
        showError($('docs-error'), 'Collections: ' + err.message);
        return;
      }
      if (want !== [st.project, st.database, st.parentDoc].join('\0')) return;
      showError($('docs-error'), '');
      st.collections = ids;
      renderCollections();
    }

    function renderCollections() {
      const prefix = st.parentDoc ? st.parentDoc + '/' : '';
      if (!st.collections.length) {
        colEls.clear();
        fill(colList, h('li', { class: 'empty', text: st.parentDoc ? 'No subcollections.' : 'No collections.' }));
        return;
      }
      if (colList.querySelector('.empty')) colList.replaceChildren();
      reconcile(colList, colEls, st.collections.map((id) => prefix + id), (p) => p,
        (p) => h('li', null, h('button', {
          type: 'button', class: 'item', 'data-testid': 'collection-item-' + p, onclick: () => openCollection(p),
        }, h('span', { class: 'mono', text: lastOf(p) }))),
        (li, p) => {
          const btn = li.firstElementChild;
          if (p === st.collection) btn.setAttribute('aria-current', 'true');
          else btn.removeAttribute('aria-current');
        });
    }

    function openCollection(path, { keepDoc = false } = {}) {
      const parent = parentOf(path);
      const changedParent = parent !== st.parentDoc;
      st.parentDoc = parent;
      st.collection = path;
      if (!keepDoc) {
        st.doc = '';
        renderDetail(null);
      }
      renderCrumbs();
      if (changedParent) {
        st.collections = [];
        colEls.clear();
        fill(colList, h('li', { class: 'empty', text: 'Loading…' }));
        loadCollections();
      } else {
        renderCollections();
      }
      loadDocs(false);
    }

    async function loadDocs(more) {
      const req = ++st.docsRequest;
      const collection = st.collection;
      const params = new URLSearchParams({ pageSize: String(PAGE) });
      if (more && st.nextPageToken) params.set('pageToken', st.nextPageToken);
      if (!more) {
        $('documents-stale').hidden = true;
      }
      $('documents-more').disabled = true;
      let r;
      try {
        r = await api(`${base()}/${encPath(collection)}?${params}`);
      } catch (err) {
        if (req === st.docsRequest) showError($('docs-error'), 'Documents: ' + err.message);
        $('documents-more').disabled = false;
        return;
      }
      if (req !== st.docsRequest) return;
      showError($('docs-error'), '');
      const docs = (r && r.documents) || [];
      st.docs = more ? st.docs.concat(docs) : docs;
      st.nextPageToken = (r && r.nextPageToken) || '';
      renderDocs();
    }

    function renderDocs() {
      const more = $('documents-more');
      more.hidden = !st.nextPageToken;
      more.disabled = false;
      setText(more, `Load ${PAGE} more`);
      if (!st.collection) {
        docEls.clear();
        fill(docList, h('li', { class: 'empty', text: 'Select a collection.' }));
        setText($('col-documents-title'), 'Documents');
        return;
      }
      setText($('col-documents-title'), `Documents in ${lastOf(st.collection)} (${st.docs.length}${st.nextPageToken ? '+' : ''})`);
      if (!st.docs.length) {
        docEls.clear();
        fill(docList, h('li', { class: 'empty', text: 'No documents.' }));
        return;
      }
      if (docList.querySelector('.empty')) docList.replaceChildren();
      reconcile(docList, docEls, st.docs, (d) => relName(d.name),
        (d, path) => {
          const btn = h('button', {
            type: 'button', class: 'item', 'data-testid': 'document-item-' + path, onclick: () => openDocument(path),
          }, h('span', { class: 'mono', text: lastOf(path) }), h('span', { class: 'preview muted small' }));
          return h('li', null, btn);
        },
        (li, d, path) => {
          const btn = li.firstElementChild;
          setText(btn.lastElementChild, preview(d));
          if (path === st.doc) btn.setAttribute('aria-current', 'true');
          else btn.removeAttribute('aria-current');
        });
    }

    function preview(doc) {
      const parts = [];
      for (const [k, v] of Object.entries(doc.fields || {})) {
        const [key, type] = valueType(v);
        let s;
        if (type === 'map') s = '{…}';
        else if (type === 'array') s = '[…]';
        else if (type === 'string') s = String(v[key]);
        else if (type === 'geopoint') s = 'geo';
        else s = String(v[key]);
        parts.push(`${k}: ${s.length > 24 ? s.slice(0, 24) + '…' : s}`);
        if (parts.length === 3) break;
      }
      return parts.join(', ');
    }

    async function openDocument(path) {
      const collection = parentOf(path);
      if (collection !== st.collection || !st.collection) {
        openCollection(collection, { keepDoc: true });
      }
      st.doc = path;
      renderCrumbs();
      renderDocs();
      await loadDocument();
      if (stacked.matches && st.doc === path) detail.scrollIntoView({ block: 'start', behavior: 'smooth' });
    }

    async function loadDocument() {
      const path = st.doc;
      if (!path) return;
      let doc = null;
      let missing = false;
      try {
        doc = await api(`${base()}/${encPath(path)}`);
      } catch (err) {
        if (err.status === 404) missing = true;
        else {
          showError($('docs-error'), 'Document: ' + err.message);
          return;
        }
      }
      if (path !== st.doc) return;
      let subs = [];
      if (!missing) {
        try { subs = await listCollectionIds(path); } catch { subs = []; }
      } else {
        // A missing document can still have subcollections.
        try { subs = await listCollectionIds(path); } catch { subs = []; }
      }
      if (path !== st.doc) return;
      renderDetail({ path, doc, missing, subs });
    }

    function renderDetail(view) {
      if (!view) {
        delete detail.dataset.path;
        fill(detail, h('p', { class: 'empty', text: 'Select a document.' }));
        setText($('col-detail-title'), 'Document');
        return;
      }
      const { path, doc, missing, subs } = view;
      // A reload of the same document keeps what the reader opened or closed.
      const sameDoc = detail.dataset.path === path;
      const openState = new Map();
      if (sameDoc) {
        for (const d of detail.querySelectorAll('details')) openState.set(d.parentElement.dataset.testid || d.className, d.open);
      }
      detail.dataset.path = path;
      setText($('col-detail-title'), 'Document ' + lastOf(path));
      const ctx = { project: st.project, database: st.database };
      const fields = Object.entries((doc && doc.fields) || {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      fill(detail,
        h('div', { class: 'doc-head' },
          h('code', { class: 'path', 'data-testid': 'document-path', text: path }),
          doc ? h('dl', { class: 'kv small' },
            h('div', null, h('dt', { text: 'created' }), h('dd', { class: 'mono', text: doc.createTime || '—' })),
            h('div', null, h('dt', { text: 'updated' }), h('dd', { class: 'mono', text: doc.updateTime || '—' }))) : null),
        missing
          ? h('p', { class: 'notice', 'data-testid': 'document-missing', text: 'This document does not exist (deleted, or never written).' })
          : fields.length
            ? h('ul', { class: 'fields root', 'data-testid': 'document-fields' }, fields.map(([k, v]) => fieldRow(k, v, ctx, '.' + k, 0)))
            : h('p', { class: 'muted', text: 'No fields.' }),
        subs.length ? h('section', { class: 'subs' },
          h('h4', { text: 'Subcollections' }),
          h('ul', { class: 'list inline' }, subs.map((id) => h('li', null, h('button', {
            type: 'button', class: 'item', 'data-testid': 'subcollection-item-' + path + '/' + id,
            onclick: () => openCollection(path + '/' + id),
          }, h('span', { class: 'mono', text: id })))))) : null,
        doc ? h('details', { class: 'raw' }, h('summary', { text: 'Document JSON' }), h('pre', { text: JSON.stringify(doc, null, 2) })) : null);
      for (const d of detail.querySelectorAll('details')) {
        const key = d.parentElement.dataset.testid || d.className;
        if (openState.has(key)) d.open = openState.get(key);
      }
    }

    function renderCrumbs() {
      const nav = $('doc-crumbs');
      if (!st.project) {
        nav.replaceChildren();
        return;
      }
      const crumbs = [h('button', {
        type: 'button', class: 'link', text: 'root', onclick: () => selectDatabase(st.project, st.database),
        'aria-current': !st.collection ? 'location' : null,
      })];
      const path = st.doc || st.collection;
      const parts = segs(path);
      parts.forEach((seg, i) => {
        const p = parts.slice(0, i + 1).join('/');
        const isDoc = i % 2 === 1;
        crumbs.push(h('span', { class: 'sep', 'aria-hidden': 'true', text: '/' }));
        crumbs.push(h('button', {
          type: 'button', class: 'link mono', text: seg,
          'aria-current': i === parts.length - 1 ? 'location' : null,
          onclick: () => (isDoc ? openDocument(p) : openCollection(p)),
        }));
      });
      fill(nav, crumbs);
    }

    /** Open a collection or document path (relative to the database) in the browser. */
    function open(project, database, path) {
      if (project !== st.project || database !== st.database) selectDatabase(project, database);
      const n = segs(path).length;
      if (n === 0) return;
      selectTab('documents');
      if (n % 2 === 1) openCollection(segs(path).join('/'));
      else openDocument(segs(path).join('/'));
    }

    function onEvent(ev) {
      if (ev.kind === 'reset' || ev.kind === 'import') {
        refreshDatabases();
        const mine = ev.kind === 'import' || ev.scope === 'all'
          || (ev.scope === 'documents' && (!ev.project || ev.project === st.project) && (!ev.database || ev.database === st.database));
        if (mine && st.project) {
          reloadCollections();
          if (st.collection) reloadDocs();
          if (st.doc) reloadDocument();
        }
        return;
      }
      if (ev.kind !== 'commit') return;
      refreshDatabases();
      if (ev.project !== st.project || ev.database !== st.database) return;
      const paths = Array.isArray(ev.documents) ? ev.documents : [];
      const partial = typeof ev.changedDocuments === 'number' && ev.changedDocuments > paths.length;
      let collectionTouched = partial;
      let collectionsTouched = partial;
      let docTouched = partial;
      for (const p of paths) {
        const parent = parentOf(p);
        if (parent === st.collection) collectionTouched = true;
        if (p === st.doc || p.startsWith(st.doc + '/')) docTouched = true;
        // A new collection under the parent shown in column 1?
        if (parentOf(parent) === st.parentDoc && !st.collections.includes(lastOf(parent))) collectionsTouched = true;
      }
      if (collectionsTouched) reloadCollections();
      if (docTouched && st.doc) reloadDocument();
      if (collectionTouched && st.collection) {
        if (st.docs.length <= PAGE) reloadDocs();
        else $('documents-stale').hidden = false;
      }
    }

    select.addEventListener('change', () => {
      try {
        const [p, d] = JSON.parse(select.value);
        selectDatabase(p, d);
      } catch { /* not ours */ }
    });
    $('db-refresh').addEventListener('click', () => {
      refreshDatabases();
      if (st.project) {
        loadCollections();
        if (st.collection) loadDocs(false);
        if (st.doc) loadDocument();
      }
    });
    $('documents-more').addEventListener('click', () => loadDocs(true));
    $('documents-reload').addEventListener('click', () => loadDocs(false));
    $('doc-goto').addEventListener('submit', (e) => {
      e.preventDefault();
      const path = segs($('doc-goto-path').value.trim()).join('/');
      if (path && st.project) open(st.project, st.database, path);
    });

    renderDocs();
    return { load: loadDatabases, open, onEvent };
  })();

  // ---------------------------------------------------------------------------------------
  // Tree browser (Realtime Database)

  const tree = (() => {
    const select = $('ns-select');
    const container = $('tree-root');
    const NS_KEY = 'firegate.namespace';
    const CHILD_LIMIT = 200;

    let ns = '';
    let rootPath = '/';
    let es = null;
    /** path → { path, expanded, loaded, children: Map(key → {kind, value}), limit, el, list } */
    const nodes = new Map();

    const segs = (p) => p.split('/').filter(Boolean);
    const join = (a, b) => '/' + segs(a).concat(segs(b)).join('/');
    const url = (p, params) => `/${segs(p).map(encodeURIComponent).join('/')}.json?${new URLSearchParams({ ns, ...params })}`;
    const isUnder = (p, anc) => anc === '/' || p === anc || p.startsWith(anc + '/');
    const rel = (p, anc) => segs(p).slice(segs(anc).length);

    // RTDB key order: integer-like keys numerically first, then the rest as strings.
    const INT = /^-?(0|[1-9]\d{0,9})$/;
    function keyOrder(a, b) {
      const ia = INT.test(a);
      const ib = INT.test(b);
      if (ia && ib) return Number(a) - Number(b);
      if (ia) return -1;
      if (ib) return 1;
      return a < b ? -1 : a > b ? 1 : 0;
    }

    const refreshNamespaces = coalesce(loadNamespaces, 400);

    async function loadNamespaces() {
      let data;
      try {
        data = await api('/emulator/v1/namespaces');
      } catch (err) {
        showError($('tree-error'), 'Namespaces: ' + err.message);
        return;
      }
      const list = (Array.isArray(data && data.namespaces) ? data.namespaces : []).slice().sort();
      const current = ns || store.get(NS_KEY);
      if (current && !list.includes(current)) list.push(current);
      reconcile(select, new Map([...select.options].map((o) => [o.value, o])), list, (n) => n,
        (n) => h('option', { value: n, text: n }), () => {});
      if (!list.length) {
        select.disabled = true;
        fill(container, h('p', { class: 'empty', text: 'No namespace holds data yet.' }));
        return;
      }
      select.disabled = false;
      if (!ns) {
        selectNamespace(list.includes(current) ? current : list[0]);
      } else {
        select.value = ns;
      }
    }

    function selectNamespace(name, path = '/') {
      ns = name;
      store.set(NS_KEY, name);
      select.value = name;
      setRoot(path);
    }

    function setRoot(path) {
      rootPath = '/' + segs(path).join('/');
      nodes.clear();
      renderCrumbs();
      const root = makeNode(rootPath, segs(rootPath).slice(-1)[0] || '/', { kind: 'object' }, true);
      fill(container, h('ul', { class: 'tree-list', role: 'list' }, root.el));
      expand(root.path);
      openStream();
    }

    function renderCrumbs() {
      const parts = segs(rootPath);
      const crumbs = [h('button', { type: 'button', class: 'link mono', text: ns ? `${ns}:/` : '/', onclick: () => setRoot('/'),
        'aria-current': parts.length ? null : 'location' })];
      parts.forEach((seg, i) => {
        const p = '/' + parts.slice(0, i + 1).join('/');
        crumbs.push(h('span', { class: 'sep', 'aria-hidden': 'true', text: '/' }));
        crumbs.push(h('button', { type: 'button', class: 'link mono', text: seg, onclick: () => setRoot(p),
          'aria-current': i === parts.length - 1 ? 'location' : null }));
      });
      fill($('tree-crumbs'), crumbs);
    }

    /** The element for one location; objects get a disclosure button, leaves their value. */
    function makeNode(path, key, entry, isRoot) {
      const li = h('li', { class: 'tnode', 'data-testid': 'tree-node-' + path });
      const node = { path, key, entry, expanded: false, loaded: false, children: new Map(), limit: CHILD_LIMIT, el: li, childEls: new Map(), isRoot };
      node.list = h('ul', { class: 'tree-list', role: 'list', hidden: true });
      node.row = h('div', { class: 'trow' });
      li.append(node.row, node.list);
      node.el._node = node;
      renderRow(node);
      return node;
    }

    function renderRow(node) {
      const { path, key, entry } = node;
      const leaf = entry.kind === 'leaf';
      if (node.rowKind !== (leaf ? 'leaf' : 'object')) {
        node.rowKind = leaf ? 'leaf' : 'object';
        if (leaf) {
          node.valueEl = h('span', { class: 'val mono', 'data-testid': 'tree-value-' + path });
          node.typeEl = h('span', { class: 'type' });
          fill(node.row, h('span', { class: 'tkey mono leaf', text: key }), node.typeEl, node.valueEl);
        } else {
          node.toggleEl = h('button', {
            type: 'button', class: 'expander', 'aria-expanded': 'false', 'data-testid': 'tree-toggle-' + path,
            onclick: () => (node.expanded ? collapse(path) : expand(path)),
          }, h('span', { class: 'chev', 'aria-hidden': 'true' }), h('span', { class: 'tkey mono', text: key }));
          node.countEl = h('span', { class: 'muted small' });
          fill(node.row, node.toggleEl, node.countEl, node.isRoot ? null : h('button', {
            type: 'button', class: 'link small focus-btn', text: 'focus', title: `Show only ${path}`,
            'aria-label': `Focus on ${path}`, onclick: () => setRoot(path),
          }));
        }
      }
      if (leaf) {
        const v = entry.value;
        const type = v === null ? 'null' : typeof v;
        node.typeEl.className = 'type t-' + type;
        setText(node.typeEl, type);
        node.valueEl.className = 'val mono ' + type;
        setText(node.valueEl, JSON.stringify(v));
      } else {
        node.toggleEl.setAttribute('aria-expanded', String(node.expanded));
        let count = '';
        if (node.loaded && node.expanded) count = plural(node.children.size, 'child', 'children');
        else if (typeof entry.count === 'number') count = plural(entry.count, 'child', 'children');
        setText(node.countEl, count);
      }
    }

    async function expand(path) {
      const node = findNode(path);
      if (!node) return;
      node.expanded = true;
      nodes.set(path, node);
      node.list.hidden = false;
      renderRow(node);
      await load(node);
    }

    function collapse(path) {
      const node = nodes.get(path);
      if (!node) return;
      node.expanded = false;
      node.list.hidden = true;
      for (const p of [...nodes.keys()]) if (p !== path && isUnder(p, path)) nodes.delete(p);
      node.childEls.clear();
      node.list.replaceChildren();
      node.loaded = false;
      renderRow(node);
    }

    function findNode(path) {
      if (nodes.has(path)) return nodes.get(path);
      const li = container.querySelector(`[data-testid="tree-node-${CSS.escape(path)}"]`);
      return li ? li._node : null;
    }

    async function load(node) {
      let value;
      try {
        value = await api(url(node.path, { shallow: 'true' }));
      } catch (err) {
        showError($('tree-error'), `${node.path}: ${err.message}`);
        return;
      }
      showError($('tree-error'), '');
      if (!node.expanded || nodes.get(node.path) !== node) return;
      setValue(node, value);
    }

    /** The entry a parent keeps for a child whose full value is known. */
    function entryOf(v) {
      if (v !== null && typeof v === 'object') return { kind: 'object', count: Object.values(v).filter((x) => x !== null).length };
      return { kind: 'leaf', value: v };
    }
    const isEmpty = (v) => v === null || (typeof v === 'object' && !Object.values(v).some((x) => x !== null));

    /**
     * Sets an expanded node's children from its shallow value. A shallow listing says `true`
     * for every child (objects and primitives alike, as the Realtime Database does), so each
     * shown child is then resolved with a shallow read of its own.
     */
    function setValue(node, value) {
      const previous = new Map(node.children);
      node.children.clear();
      if (value !== null && typeof value === 'object') {
        for (const [k, v] of Object.entries(value)) {
          if (v === null) continue;
          if (v === true) {
            const known = previous.get(k);
            node.children.set(k, known && known.kind !== 'unknown' && (known.kind === 'object' || known.value === true) ? known : { kind: 'unknown' });
          } else node.children.set(k, { kind: 'leaf', value: v });
        }
      } else if (value !== null && node.isRoot) {
        node.children.set('.value', { kind: 'leaf', value });
      } else if (value !== null) {
        // Not an object any more: its parent shows the value.
        const parent = nodes.get(parentPath(node.path));
        collapse(node.path);
        if (parent) {
          parent.children.set(node.key, { kind: 'leaf', value });
          renderChildren(parent);
        }
        return;
      }
      node.loaded = true;
      renderChildren(node);
    }

    // Shallow reads of single children, at most four at a time.
    const resolving = new Set();
    const jobs = [];
    let running = 0;

    function resolveChild(parent, key) {
      const path = join(parent.path, key);
      if (resolving.has(path)) return;
      resolving.add(path);
      const namespace = ns;
      jobs.push(async () => {
        try {
          const v = await api(url(path, { shallow: 'true' }));
          if (namespace !== ns || nodes.get(parent.path) !== parent || !parent.expanded) return;
          const cur = parent.children.get(key);
          if (!cur || cur.kind !== 'unknown') return; // the stream said what it is meanwhile
          if (isEmpty(v)) parent.children.delete(key);
          else parent.children.set(key, entryOf(v));
          scheduleRender(parent);
        } catch {
          // Left as an expandable node.
        } finally {
          resolving.delete(path);
        }
      });
      pump();
    }

    function pump() {
      while (running < 4 && jobs.length) {
        const job = jobs.shift();
        running += 1;
        job().finally(() => {
          running -= 1;
          pump();
        });
      }
    }

    const toRender = new Set();
    function scheduleRender(node) {
      if (!toRender.size) {
        setTimeout(() => {
          const list = [...toRender];
          toRender.clear();
          for (const n of list) if (nodes.get(n.path) === n && n.expanded) renderChildren(n);
        }, 0);
      }
      toRender.add(node);
    }

    const parentPath = (p) => '/' + segs(p).slice(0, -1).join('/');

    function sameEntry(a, b) {
      return a.kind === b.kind && (a.kind !== 'leaf' || a.value === b.value) && a.count === b.count;
    }

    function renderChildren(node) {
      renderRow(node);
      const keys = [...node.children.keys()].sort(keyOrder);
      const shown = keys.slice(0, node.limit);
      reconcile(node.list, node.childEls, shown, (k) => k,
        (k) => makeNode(join(node.path, k), k, node.children.get(k), false).el,
        (el, k) => {
          const child = el._node;
          const entry = node.children.get(k);
          const was = child.entry;
          if (sameEntry(was, entry)) return;
          child.entry = entry;
          if (entry.kind === 'leaf' && child.expanded) collapse(child.path);
          renderRow(child);
          if (was.kind !== 'unknown' && entry.kind !== 'unknown') flash(child.row);
        });
      for (const k of shown) if (node.children.get(k).kind === 'unknown') resolveChild(node, k);
      let more = node.list.querySelector(':scope > li.more');
      if (keys.length > shown.length) {
        if (!more) {
          more = h('li', { class: 'more' }, h('button', { type: 'button', class: 'ghost small', onclick: () => { node.limit += CHILD_LIMIT; renderChildren(node); } }));
        }
        setText(more.firstElementChild, `Show ${Math.min(CHILD_LIMIT, keys.length - shown.length)} more of ${keys.length - shown.length}`);
        node.list.append(more);
      } else if (more) more.remove();
      const empty = node.list.querySelector(':scope > li.empty');
      if (!keys.length) {
        if (!empty) node.list.append(h('li', { class: 'empty small', text: node.isRoot ? 'No data here.' : 'empty' }));
      } else if (empty) empty.remove();
    }

    function flash(el) {
      el.classList.remove('flash');
      void el.offsetWidth; // restart the animation
      el.classList.add('flash');
    }

    function dig(value, keys) {
      let v = value;
      for (const k of keys) {
        if (v === null || typeof v !== 'object') return null;
        v = k in v ? v[k] : null;
      }
      return v;
    }

    /** A `put` of `data` at absolute path `at` (from the live stream): update what is shown. */
    function applyPut(at, data) {
      const touched = new Set();
      for (const node of [...nodes.values()]) {
        if (!node.expanded) continue;
        if (isUnder(node.path, at)) {
          // The node is at or below the written location: its whole value is in `data`.
          const sub = dig(data, rel(node.path, at));
          if (sub !== null && typeof sub === 'object') {
            node.children.clear();
            for (const [k, v] of Object.entries(sub)) if (!isEmpty(v)) node.children.set(k, entryOf(v));
            node.loaded = true;
            touched.add(node);
          } else if (node.isRoot) {
            node.children.clear();
            if (sub !== null) node.children.set('.value', entryOf(sub));
            node.loaded = true;
            touched.add(node);
          }
          // Any other node whose value became a primitive or null is updated by its parent.
        } else if (isUnder(at, node.path)) {
          const r = rel(at, node.path);
          const k = r[0];
          if (r.length === 1) {
            if (isEmpty(data)) node.children.delete(k);
            else node.children.set(k, entryOf(data));
            touched.add(node);
          } else if (!nodes.has(join(node.path, k))) {
            // Deeper inside a collapsed child: it exists now, or may be gone, or its count changed.
            const c = node.children.get(k);
            if (!c || c.kind === 'leaf' || isEmpty(data) || r.length === 2) {
              node.children.set(k, { kind: 'unknown' });
              touched.add(node);
            }
          }
        }
      }
      // Expanded objects left without children are gone from their parent too.
      for (const node of [...nodes.values()]) {
        if (node.isRoot || !node.loaded || node.children.size) continue;
        const parent = nodes.get(parentPath(node.path));
        if (parent && parent.children.has(node.key)) {
          parent.children.delete(node.key);
          touched.add(parent);
        }
      }
      for (const node of touched) {
        if (nodes.get(node.path) === node && node.expanded) renderChildren(node);
      }
    }

    function openStream() {
      closeStream();
      if (!ns) return;
      const live = $('tree-live');
      live.dataset.state = 'connecting';
      setText(live, 'connecting…');
      const source = new EventSource(url(rootPath, {}));
      es = source;
      const onData = (type) => (e) => {
        if (es !== source) return;
        let msg;
        try { msg = JSON.parse(e.data); } catch { return; }
        if (!msg || typeof msg.path !== 'string') return;
        const at = join(rootPath, msg.path);
        if (type === 'put') applyPut(at, msg.data);
        else if (msg.data && typeof msg.data === 'object') {
          for (const [k, v] of Object.entries(msg.data)) applyPut(join(at, k), v);
        }
      };
      source.addEventListener('open', () => {
        if (es !== source) return;
        live.dataset.state = 'live';
        setText(live, 'live');
      });
      source.addEventListener('put', onData('put'));
      source.addEventListener('patch', onData('patch'));
      source.addEventListener('cancel', (e) => {
        if (es !== source) return;
        showError($('tree-error'), 'The server ended the live stream: ' + (e.data || 'cancelled'));
        closeStream();
      });
      source.addEventListener('error', () => {
        if (es !== source) return;
        if (source.readyState === EventSource.CLOSED) {
          live.dataset.state = 'down';
          setText(live, 'not live');
          setTimeout(() => { if (es === source) openStream(); }, 5000);
        } else {
          live.dataset.state = 'connecting';
          setText(live, 'reconnecting…');
        }
      });
    }

    function closeStream() {
      if (es) es.close();
      es = null;
      const live = $('tree-live');
      live.dataset.state = 'off';
      setText(live, 'not live');
    }

    function onEvent(ev) {
      if (ev.kind === 'treeWrite' && ev.namespace && ![...select.options].some((o) => o.value === ev.namespace)) refreshNamespaces();
      if (ev.kind === 'reset' || ev.kind === 'import') refreshNamespaces();
    }

    select.addEventListener('change', () => selectNamespace(select.value));
    $('ns-refresh').addEventListener('click', () => {
      refreshNamespaces();
      if (ns) setRoot(rootPath);
    });

    return { load: loadNamespaces, onEvent };
  })();

  // ---------------------------------------------------------------------------------------
  // Live event log

  const eventLog = (() => {
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
        type: 'button', class: 'link mono', text: p, onclick: () => documents.open(ev.project, ev.database, p),
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
              onclick: () => { selectTab('rules'); document.dispatchEvent(new CustomEvent('firegate:decision', { detail: ev.decision })); },
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
          refreshEverything();
        }
        lastSeq = seq;
        seen.set(seq, { time: ev.time, kind: ev.kind });
        if (seen.size > BUFFER) seen.delete(seen.keys().next().value);
      }
      add(ev);
      clients.onEvent(ev);
      connections.onEvent(ev);
      documents.onEvent(ev);
      tree.onEvent(ev);
      if (ev.kind === 'clock') syncClock();
    }

    function setState(state, text) {
      const el = $('stream-state');
      el.dataset.state = state;
      setText(el, text);
    }

    function open() {
      if (es) es.close();
      // A reopened stream asks for the whole kept backlog and drops what it already has:
      // unlike Last-Event-ID this also works across a server restart, which counts from 1.
      const params = new URLSearchParams({ backlog: everOpened ? '1000' : '100' });
      if (token) params.set('admin_token', token);
      const source = new EventSource('/emulator/v1/events?' + params);
      es = source;
      source.addEventListener('open', () => {
        if (es !== source) return;
        retryMs = 1000;
        setState('live', 'live');
        if (everOpened) refreshEverything(); // we may have missed changes while away
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
    tokenListeners.push(() => { if (es) open(); });

    renderAll();
    return { open };
  })();

  // ---------------------------------------------------------------------------------------
  // Start

  function refreshEverything() {
    checkHealth();
    syncClock();
    clients.refresh();
    connections.refresh();
    documents.load();
    tree.load();
  }

  document.addEventListener('visibilitychange', () => {
    if (!document.hidden) {
      checkHealth();
      renderClock();
    }
  });

  // What the other views (rules.js) use: the API with the admin token, and the tabs.
  window.firegate = {
    api,
    isShown,
    onTabShown: (fn) => tabShownListeners.push(fn),
    adminToken: () => token,
  };

  selectTab(location.hash.slice(1) || 'clients', { updateHash: false });
  checkHealth();
  // The clock call settles the admin token (asking for it if needed) before the event
  // stream, which cannot report a 401 itself, is opened.
  syncClock().finally(() => {
    eventLog.open();
    clients.refresh();
    connections.refresh();
    documents.load();
    tree.load();
  });
})();
