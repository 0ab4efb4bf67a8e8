// The tree panel (Realtime Database): a namespace's data as an expandable tree, read with
// shallow reads and kept current by its live stream (tree-live.js).

import { $, h, fill, reconcile, setText, showError, coalesce, store } from '../dom.js';
import { plural } from '../format.js';
import { api } from '../api.js';
import { segs, join, isUnder, rel, parentPath, keyOrder, entryOf, isEmpty, sameEntry, dig } from './tree-paths.js';
import { openStream } from './tree-live.js';

const select = $('ns-select');
const container = $('tree-root');
const NS_KEY = 'firegate.namespace';
const CHILD_LIMIT = 200;

let ns = '';
let rootPath = '/';
/** path → { path, expanded, loaded, children: Map(key → {kind, value}), limit, el, list } */
const nodes = new Map();

const url = (p, params) => `/${segs(p).map(encodeURIComponent).join('/')}.json?${new URLSearchParams({ ns, ...params })}`;

const refreshNamespaces = coalesce(loadNamespaces, 400);

export async function loadNamespaces() {
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
  openStream(ns ? url(rootPath, {}) : null, (path, data) => applyPut(join(rootPath, path), data));
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

export function onEvent(ev) {
  if (ev.kind === 'treeWrite' && ev.namespace && ![...select.options].some((o) => o.value === ev.namespace)) refreshNamespaces();
  if (ev.kind === 'reset' || ev.kind === 'import') refreshNamespaces();
}

select.addEventListener('change', () => selectNamespace(select.value));
$('ns-refresh').addEventListener('click', () => {
  refreshNamespaces();
  if (ns) setRoot(rootPath);
});
