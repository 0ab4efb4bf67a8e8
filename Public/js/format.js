// Formatting for the dashboard: byte sizes, plurals, and the server's times and clock offsets.

export function formatBytes(n) {
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

export function plural(n, one, many) {
  return `${n} ${n === 1 ? one : (many || one + 's')}`;
}

/** "2026-11-22T03:25:33.095227Z" → "03:25:33.095" (UTC, as the server sends it). */
export function shortTime(rfc3339) {
  if (typeof rfc3339 !== 'string') return '';
  const m = /T(\d\d:\d\d:\d\d)(\.\d{1,3})?/.exec(rfc3339);
  if (!m) return rfc3339;
  return m[1] + (m[2] ? m[2].padEnd(4, '0') : '.000');
}

export function formatClock(ms) {
  const d = new Date(ms);
  if (isNaN(d.getTime())) return '—';
  return d.toISOString().replace('T', ' ').slice(0, 19) + ' UTC';
}

export function formatOffset(ms) {
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
