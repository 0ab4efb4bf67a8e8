// The documents panel's third column: one document with its times, typed fields,
// subcollections and JSON, or a notice that it does not exist.

import { $, h, fill, setText } from '../dom.js';
import { fieldRow } from '../values.js';

const detail = $('document-detail');

/**
 * Shows `view` ({path, doc, missing, subs}) of the database `ctx` ({project, database}), or
 * the empty column for null. `openCollection(path)` opens a subcollection.
 */
export function renderDetail(view, ctx, openCollection) {
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
  setText($('col-detail-title'), 'Document ' + (path.split('/').filter(Boolean).slice(-1)[0] || ''));
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
