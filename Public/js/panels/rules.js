// The Rules panel: a project's ruleset with its issues and what each line evaluated to
// (coverage), and the decisions as they are made (like the Emulator UI's Requests monitor),
// each opening its trace. main.js tells it when a tab is shown and which decision the event
// log asks to open.

import { $, h, showError } from '../dom.js';
import { api, adminToken } from '../api.js';

const MAX_DECISIONS = 200;
let stream = null;
let opened = false;
let selected = null;

/** The value of an ExpressionValue (`{"stringValue": "x"}`), as rules source would write it. */
function valueText(v) {
  if (!v || typeof v !== 'object') return String(v);
  if ('nullValue' in v) return 'null';
  if ('boolValue' in v) return String(v.boolValue);
  if ('intValue' in v) return v.intValue;
  if ('floatValue' in v) return String(v.floatValue);
  if ('stringValue' in v) return JSON.stringify(v.stringValue);
  if ('timestampValue' in v) return `timestamp(${v.timestampValue})`;
  if ('pathValue' in v) return '/' + v.pathValue.segments.join('/');
  if ('listValue' in v) return '[' + (v.listValue.values || []).map(valueText).join(', ') + ']';
  if ('setValue' in v) return 'set[' + (v.setValue.values || []).map(valueText).join(', ') + ']';
  if ('mapValue' in v) {
    const fields = v.mapValue.fields || {};
    return '{' + Object.keys(fields).map((k) => `${k}: ${valueText(fields[k])}`).join(', ') + '}';
  }
  if ('error' in v) return 'error: ' + v.error;
  return JSON.stringify(v);
}

// -------------------------------------------------------------------------------------
// The ruleset, its issues and coverage

async function showRuleset(project) {
  showError($('rules-error'), '');
  const base = '/emulator/v1/projects/' + encodeURIComponent(project);
  let rules;
  try {
    rules = await api(base + ':securityRules');
  } catch (err) {
    $('rules-source').replaceChildren();
    $('rules-issues').replaceChildren();
    $('rules-loaded').textContent = '';
    showError($('rules-error'), err.status === 404 ? `No rules are loaded for ${project}: every request is allowed.` : err.message);
    return;
  }
  let coverage = { report: [] };
  try { coverage = await api(base + ':ruleCoverage'); } catch { /* no coverage yet */ }
  const file = rules.rules.files[0];
  $('rules-loaded').textContent = `${file.name}, loaded ${new Date(rules.loadTime).toLocaleTimeString()}`;
  $('rules-issues').replaceChildren(...(rules.issues || []).map((issue) =>
    h('li', { class: 'issue ' + String(issue.severity).toLowerCase(), 'data-testid': 'rules-issue',
      text: `L${issue.sourcePosition.line}:${issue.sourcePosition.column} ${issue.severity}: ${issue.description}` })));
  // Each line: what the expressions on it evaluated to, with counts.
  const byLine = new Map();
  const visit = (report) => {
    const line = report.sourcePosition.line;
    for (const v of report.values || []) {
      const list = byLine.get(line) || [];
      list.push(`${valueText(v.value)} ×${v.count}`);
      byLine.set(line, list);
    }
    for (const child of report.children || []) visit(child);
  };
  for (const report of coverage.report || []) visit(report);
  const lines = file.content.split('\n');
  $('rules-source').replaceChildren(...lines.map((text, i) => {
    const values = byLine.get(i + 1);
    const li = h('li', { id: 'rules-line-' + (i + 1), class: values ? 'hit' : '' }, h('code', { text: text || ' ' }));
    if (values) {
      li.title = values.join('\n');
      li.dataset.testid = 'rules-covered-line';
    }
    return li;
  }));
}

$('rules-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const project = $('rules-project').value.trim();
  if (project) showRuleset(project);
});

// -------------------------------------------------------------------------------------
// Decisions, live

function decisionItem(d) {
  const what = (d.evaluations || []).map((e) => `${e.method} ${e.path}`).join(', ');
  const who = d.uid ? d.uid : 'unauthenticated';
  const button = h('button', { type: 'button', class: 'decision ' + d.outcome, 'data-testid': 'rules-decision', 'data-id': d.id },
    h('span', { class: 'outcome', text: d.outcome }),
    h('span', { class: 'what', text: what }),
    h('span', { class: 'muted', text: ` ${d.service === 'firestore' ? d.project : d.namespace} · ${d.surface}${d.client ? ' ' + d.client : ''} · ${who}` }));
  button.addEventListener('click', () => showTrace(d.id));
  return h('li', {}, button);
}

function addDecision(d) {
  const filter = $('rules-outcome').value;
  if (filter && d.outcome !== filter) return;
  const list = $('rules-decisions');
  // The stream opens before the first load: a decision may come both ways.
  if (list.querySelector('[data-id="' + CSS.escape(String(d.id)) + '"]')) return;
  list.prepend(decisionItem(d));
  while (list.children.length > MAX_DECISIONS) list.lastElementChild.remove();
  $('rules-decisions-empty').hidden = list.children.length > 0;
}

async function loadDecisions(keepStreamed = false) {
  try {
    const outcome = $('rules-outcome').value;
    const data = await api('/emulator/v1/rules/decisions' + (outcome ? '?outcome=' + outcome : ''));
    const list = $('rules-decisions');
    // Decisions streamed while the list loaded are newer than it: they stay on top.
    const streamed = keepStreamed ? [...list.children] : [];
    list.replaceChildren();
    for (const d of (data.decisions || []).slice(-MAX_DECISIONS)) addDecision(d);
    for (const item of streamed.reverse()) {
      if (!list.querySelector('[data-id="' + CSS.escape(item.firstElementChild.dataset.id) + '"]')) list.prepend(item);
    }
    $('rules-decisions-empty').hidden = $('rules-decisions').children.length > 0;
  } catch (err) {
    showError($('rules-error'), err.message);
  }
}

function openStream() {
  if (stream) stream.close();
  const token = adminToken();
  stream = new EventSource('/emulator/v1/rules/decisions' + (token ? '?admin_token=' + encodeURIComponent(token) : ''));
  stream.addEventListener('decision', (e) => addDecision(JSON.parse(e.data)));
}

/** A decision's trace: every rule tried with its result and bindings, accesses, debug output. */
export async function showTrace(id) {
  selected = id;
  const box = $('rules-trace');
  let d;
  try {
    d = await api('/emulator/v1/rules/decisions/' + encodeURIComponent(id));
  } catch (err) {
    showError($('rules-error'), err.message);
    return;
  }
  if (selected !== id) return;
  const parts = [h('h4', { text: `Decision ${d.id}: ${d.outcome}` })];
  if (d.message) parts.push(h('pre', { class: 'message', text: d.message.trim() }));
  for (const e of d.evaluations || []) {
    parts.push(h('h5', { text: `${e.method} ${e.path} — ${e.allowed ? 'allowed' : 'denied'}` }));
    const rules = h('ul', { class: 'trace-rules' });
    for (const r of e.rules || []) {
      const where = r.line ? `L${r.line}` : `${r.kind} ${r.location}`;
      const bindings = r.bindings ? ' ' + Object.entries(r.bindings).map(([k, v]) => `${k}=${v}`).join(' ') : '';
      rules.append(h('li', { 'data-testid': 'rules-trace-rule', text: `${where}: ${r.source || ''} → ${r.result}${bindings}` }));
    }
    parts.push(rules);
    if ((e.accesses || []).length) {
      parts.push(h('p', { class: 'muted', text: 'Reads: ' + e.accesses.map((a) => `${a.call}(${a.path}) ${a.found ? 'found' : 'missing'}`).join(', ') }));
    }
    if ((e.debug || []).length) parts.push(h('pre', { text: 'debug():\n' + e.debug.join('\n') }));
    if ((e.expressions || []).length) {
      parts.push(h('details', {}, h('summary', { text: `${e.expressions.length} subexpressions evaluated` }),
        h('pre', { text: e.expressions.map((x) => `L${x.line}:${x.column} ${x.error ? 'error: ' + x.error : valueText(x.value)}`).join('\n') })));
    }
  }
  box.replaceChildren(...parts);
  box.hidden = false;
}

$('rules-outcome').addEventListener('change', () => loadDecisions());

/** Told when a tab is shown: the decisions start streaming, then the earlier ones load, the
 *  first time this one is (streaming first, so none made meanwhile is missed). */
export function shown(name) {
  if (name !== 'rules' || opened) return;
  opened = true;
  openStream();
  loadDecisions(true);
}
