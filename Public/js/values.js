// Firestore's typed values as the documents panel shows them: every value with its type
// visible, maps and arrays as nested lists, references as links (emitting 'open-document').

import { h } from './dom.js';
import { plural } from './format.js';
import { emit } from './bus.js';

const VALUE_TYPES = [
  ['nullValue', 'null'], ['booleanValue', 'boolean'], ['integerValue', 'integer'], ['doubleValue', 'double'],
  ['timestampValue', 'timestamp'], ['stringValue', 'string'], ['bytesValue', 'bytes'],
  ['referenceValue', 'reference'], ['geoPointValue', 'geopoint'], ['arrayValue', 'array'], ['mapValue', 'map'],
];

export function valueType(v) {
  if (!v || typeof v !== 'object') return ['unknown', 'unknown'];
  for (const [key, name] of VALUE_TYPES) if (key in v) return [key, name];
  return ['unknown', 'unknown'];
}

const LONG_STRING = 240;

/** The typed value of a Firestore field, readable, with its type visible. */
export function renderValue(v, ctx, path, depth) {
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
          onclick: () => emit('open-document', { project: ctx.project, database: ctx.database, path: ref.slice(prefix.length) }),
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

/** One field as a list item: its name, type and value (maps and arrays open as nested lists). */
export function fieldRow(name, v, ctx, path, depth) {
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

/** A document's first fields in short, for its line in a list. */
export function preview(doc) {
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
