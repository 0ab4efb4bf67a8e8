// Realtime Database locations and values as the tree panel handles them: path arithmetic
// ('/a/b' style, '/' the root), the database's key order, and what a parent keeps of a child.

export const segs = (p) => p.split('/').filter(Boolean);
export const join = (a, b) => '/' + segs(a).concat(segs(b)).join('/');
export const isUnder = (p, anc) => anc === '/' || p === anc || p.startsWith(anc + '/');
export const rel = (p, anc) => segs(p).slice(segs(anc).length);
export const parentPath = (p) => '/' + segs(p).slice(0, -1).join('/');

// RTDB key order: integer-like keys numerically first, then the rest as strings.
const INT = /^-?(0|[1-9]\d{0,9})$/;
export function keyOrder(a, b) {
  const ia = INT.test(a);
  const ib = INT.test(b);
  if (ia && ib) return Number(a) - Number(b);
  if (ia) return -1;
  if (ib) return 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The entry a parent keeps for a child whose full value is known. */
export function entryOf(v) {
  if (v !== null && typeof v === 'object') return { kind: 'object', count: Object.values(v).filter((x) => x !== null).length };
  return { kind: 'leaf', value: v };
}
export const isEmpty = (v) => v === null || (typeof v === 'object' && !Object.values(v).some((x) => x !== null));

export function sameEntry(a, b) {
  return a.kind === b.kind && (a.kind !== 'leaf' || a.value === b.value) && a.count === b.count;
}

/** The value at `keys` below `value` (null when there is none). */
export function dig(value, keys) {
  let v = value;
  for (const k of keys) {
    if (v === null || typeof v !== 'object') return null;
    v = k in v ? v[k] : null;
  }
  return v;
}
