// DOM helpers for the Firegate dashboard (plain browser JavaScript, ES modules, no build
// step, no dependencies): element building, keyed reconciliation, coalesced refreshes and
// local storage.
//
// Every string that comes from the server is inserted as text (textContent / text nodes /
// setAttribute), never as HTML, in every module. Panels refresh on the server's event log
// (/emulator/v1/events, an EventSource) rather than by fast polling.

export const $ = (id) => document.getElementById(id);

/** h('button', {class: 'x', type: 'button', onclick: fn, dataset: {k: v}}, 'text', node…) */
export function h(tag, attrs, ...children) {
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

export function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** Replaces an element's children with the given nodes/strings. */
export function fill(el, ...children) {
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
export function reconcile(container, cache, items, keyOf, create, update, after = null) {
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

export function setText(el, text) {
  const s = String(text);
  if (el.textContent !== s) el.textContent = s;
}

export function showError(el, message) {
  if (!message) {
    el.hidden = true;
    el.textContent = '';
  } else {
    el.textContent = message;
    el.hidden = false;
  }
}

/** Runs `fn` at most once per `wait` ms, never twice at the same time, always after the latest trigger. */
export function coalesce(fn, wait = 200) {
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

export const store = {
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
