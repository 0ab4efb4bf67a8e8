// The documents panel: a database's collections, their documents (paged) and the open
// document, following commits, resets and imports from the event log.

import { $, h, fill, reconcile, setText, showError, coalesce, store } from '../dom.js';
import { plural } from '../format.js';
import { api } from '../api.js';
import { selectTab } from '../tabs.js';
import { preview } from '../values.js';
import { renderDetail } from './document-view.js';

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

export async function loadDatabases() {
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
  renderDetail({ path, doc, missing, subs }, { project: st.project, database: st.database }, openCollection);
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
export function open(project, database, path) {
  if (project !== st.project || database !== st.database) selectDatabase(project, database);
  const n = segs(path).length;
  if (n === 0) return;
  selectTab('documents');
  if (n % 2 === 1) openCollection(segs(path).join('/'));
  else openDocument(segs(path).join('/'));
}

export function onEvent(ev) {
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
