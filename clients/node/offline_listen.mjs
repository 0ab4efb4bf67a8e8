#!/usr/bin/env node
// Firegate from Node.js: an edge client goes offline, writes, and comes back online,
// watched through an edge listen stream (Server-Sent Events).
//
//   node clients/node/offline_listen.mjs [BASE_URL]      (or FIREGATE_URL=… node …)
//
// Needs Node 20 or later and nothing else: the built-in `fetch`, and the SSE stream parsed by
// hand from the response body, so the code shows every byte that matters. The steps follow the
// walk-through of docs/edge-clients.md:
//
//   1. create an edge client in a fresh project           PUT  /clients/{id}
//   2. listen to a query through it                        GET  /clients/{id}/v1/…/documents:listen?query=…
//   3. force the client offline                            POST /clients/{id}:disableNetwork
//   4. write through the client: applied locally, queued   PATCH /clients/{id}/v1/…/documents/cities/LA
//      → snapshot with fromCache: true, hasPendingWrites: true
//   5. back online                                         POST /clients/{id}:enableNetwork
//      → snapshot with hasPendingWrites: false once the backend acknowledged the write
//   6. the write is on the backend                          GET  /v1/…/documents/cities/LA
//
// Exits 0 when every check holds, 1 otherwise (or after 20 s in all).

import { randomUUID } from 'node:crypto';

const BASE = (process.argv[2] ?? process.env.FIREGATE_URL ?? 'http://127.0.0.1:8080').replace(/\/+$/, '');
const TIMEOUT_MS = 20_000;

// One deadline for the whole run: every request, and every wait on the stream, uses this signal.
const deadline = AbortSignal.timeout(TIMEOUT_MS);

// A fresh project and client id, so the example never sees anybody else's data.
const suffix = randomUUID().slice(0, 8);
const project = `node-example-${suffix}`;
const clientId = `node-${suffix}`;

const DB = `projects/${project}/databases/(default)`;
const backendDocs = `${BASE}/v1/${DB}/documents`;              // the documents backend itself
const clientUrl = `${BASE}/clients/${clientId}`;               // the edge client's control calls
const clientDocs = `${clientUrl}/v1/${DB}/documents`;          // the same REST API, through the client

// ─────────────────────────────── small helpers ───────────────────────────────

const step = (msg) => console.log(`\n▶ ${msg}`);
const info = (msg) => console.log(`  ${msg}`);

class CheckFailed extends Error {}

/** Throws (and so fails the run) unless `condition` holds; `detail` is printed with it. */
function check(condition, message, detail) {
  if (!condition) {
    const extra = detail === undefined ? '' : `\n    ${typeof detail === 'string' ? detail : JSON.stringify(detail)}`;
    throw new CheckFailed(`${message}${extra}`);
  }
  info(`✓ ${message}`);
}

/** A JSON request; checks the HTTP status and returns { res, body }. */
async function request(method, url, { json, expect = 200 } = {}) {
  const res = await fetch(url, {
    method,
    headers: json === undefined ? {} : { 'Content-Type': 'application/json' },
    body: json === undefined ? undefined : JSON.stringify(json),
    signal: deadline,
  });
  const text = await res.text();
  check(res.status === expect, `${method} ${url.slice(BASE.length)} → ${res.status}`,
    res.status === expect ? undefined : `expected ${expect}; body: ${text}`);
  return { res, body: text ? JSON.parse(text) : null };
}

/** Typed Firestore fields from a plain object of strings: { name: 'LA' } → { name: { stringValue: 'LA' } }. */
const fields = (obj) => Object.fromEntries(Object.entries(obj).map(([k, v]) => [k, { stringValue: v }]));

// ─────────────────────────────── Server-Sent Events ───────────────────────────────

/**
 * Parses an SSE byte stream (a fetch Response body) into events, as EventSource does:
 * lines end with CRLF, LF or CR; `field: value` lines build an event; a blank line dispatches
 * it; lines starting with `:` are comments (Firegate sends `: keep-alive` every 15 s).
 * Yields { event, id, data } — `event` defaults to "message", `data` lines are joined by "\n".
 */
async function* parseSSE(body) {
  let buffer = '';
  let event = '';
  let data = [];
  let lastEventId = null;          // like EventSource, the id carries over to later events

  for await (const text of body.pipeThrough(new TextDecoderStream())) {
    buffer += text;
    // A CR at the very end may be the first half of a CRLF split across chunks: keep it.
    const end = buffer.endsWith('\r') ? buffer.length - 1 : buffer.length;
    const lines = buffer.slice(0, end).split(/\r\n|\r|\n/);
    buffer = lines.pop() + buffer.slice(end);   // the last, incomplete line waits for more

    for (const line of lines) {
      if (line === '') {                        // blank line: dispatch the event built so far
        if (data.length > 0) yield { event: event || 'message', id: lastEventId, data: data.join('\n') };
        event = '';
        data = [];
        continue;
      }
      if (line.startsWith(':')) continue;       // a comment (keep-alive)
      const colon = line.indexOf(':');
      const name = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (name === 'event') event = value;
      else if (name === 'data') data.push(value);
      else if (name === 'id' && !value.includes('\0')) lastEventId = value;
      // `retry` and unknown fields do not matter here
    }
  }
}

/**
 * An open listen stream: `waitFor(what, predicate)` reads snapshots until one satisfies the
 * predicate. Every wait is bounded by the run's deadline, so a missing event fails the run
 * with the name of what it waited for instead of hanging.
 */
class Listener {
  static async open(url) {
    const controller = new AbortController();
    const res = await fetch(url, {
      headers: { Accept: 'text/event-stream' },
      signal: AbortSignal.any([deadline, controller.signal]),
    });
    if (res.status !== 200) throw new CheckFailed(`listen → ${res.status}: ${await res.text()}`);
    check(res.headers.get('content-type')?.startsWith('text/event-stream'),
      `listen → 200, Content-Type: ${res.headers.get('content-type')}`);
    return new Listener(res, controller);
  }

  constructor(res, controller) {
    this.events = parseSSE(res.body);
    this.controller = controller;
  }

  async waitFor(what, predicate) {
    info(`… waiting for a snapshot: ${what}`);
    try {
      while (true) {
        // next() rather than `for await`: leaving a for-await loop would close the stream.
        const { value: ev, done } = await this.events.next();
        if (done) throw new CheckFailed(`the stream ended while waiting for: ${what}`);
        if (ev.event === 'error') throw new CheckFailed(`the stream sent an error: ${ev.data}`);
        if (ev.event !== 'snapshot') continue;
        const snapshot = JSON.parse(ev.data);
        const m = snapshot.metadata;
        info(`  event ${ev.id}: fromCache=${m.fromCache} hasPendingWrites=${m.hasPendingWrites} ` +
          `documents=[${snapshot.documents.map((d) => d.name.split('/').slice(-2).join('/')).join(', ')}] ` +
          `changes=[${snapshot.changes.map((c) => c.type).join(', ')}]`);
        if (predicate(snapshot)) return snapshot;
      }
    } catch (err) {
      if (deadline.aborted) throw new CheckFailed(`timed out (${TIMEOUT_MS} ms in all) waiting for: ${what}`);
      throw err;
    }
  }

  close() {
    this.controller.abort();
  }
}

// ─────────────────────────────── the walk-through ───────────────────────────────

let listener;
try {
  console.log(`Firegate at ${BASE}, project ${project}, edge client ${clientId}`);

  step('1. Create the edge client (memory persistence, in our fresh project)');
  const { body: created } = await request('PUT', clientUrl, { json: { project, persistence: 'memory' } });
  check(created.network.online === true, 'the client starts online', created);

  step('2. Listen to the query "cities, ordered by name" through the client');
  const query = {
    from: [{ collectionId: 'cities' }],
    orderBy: [{ field: { fieldPath: 'name' } }],
  };
  const params = new URLSearchParams({ query: JSON.stringify(query), includeMetadataChanges: 'true' });
  listener = await Listener.open(`${clientDocs}:listen?${params}`);
  const first = await listener.waitFor('the server\'s first answer', () => true);
  check(first.metadata.fromCache === false && first.documents.length === 0,
    'first snapshot: from the server, no documents yet', first.metadata);

  step('3. Force the client offline');
  const { body: offline } = await request('POST', `${clientUrl}:disableNetwork`);
  check(offline.network.online === false, 'the client reports online: false', offline.network);
  // With includeMetadataChanges the listener hears about it: a snapshot with fromCache true.
  await listener.waitFor('fromCache: true', (s) => s.metadata.fromCache === true);

  step('4. Write cities/LA through the offline client');
  const { res: writeRes, body: written } = await request('PATCH', `${clientDocs}/cities/LA`,
    { json: { fields: fields({ name: 'Los Angeles', state: 'CA' }) } });
  const writeId = writeRes.headers.get('firegate-write-id');
  check(writeRes.headers.get('firegate-write-state') === 'pending',
    `answered at once with the local result, write ${writeId} pending`, Object.fromEntries(writeRes.headers));
  check(written.fields.name.stringValue === 'Los Angeles', 'the answer is the locally applied document', written);

  const laName = `${DB}/documents/cities/LA`;
  const pending = await listener.waitFor('cities/LA with pending writes',
    (s) => s.documents.some((d) => d.name === laName));
  const laPending = pending.documents.find((d) => d.name === laName);
  check(pending.metadata.fromCache === true, 'snapshot metadata.fromCache is true', pending.metadata);
  check(pending.metadata.hasPendingWrites === true, 'snapshot metadata.hasPendingWrites is true', pending.metadata);
  check(laPending.metadata.hasPendingWrites === true, 'cities/LA itself has hasPendingWrites: true', laPending);
  check(pending.changes.some((c) => c.type === 'added' && c.document.name === laName),
    'the change is "added"', pending.changes);

  // Not on the backend yet: the write waits in the client's queue.
  await request('GET', `${backendDocs}/cities/LA`, { expect: 404 });

  step('5. Back online: the queued write is sent');
  const { body: online } = await request('POST', `${clientUrl}:enableNetwork`);
  check(online.network.online === true, 'the client reports online: true', online.network);
  const synced = await listener.waitFor('hasPendingWrites: false',
    (s) => s.metadata.hasPendingWrites === false && s.documents.some((d) => d.name === laName));
  const laSynced = synced.documents.find((d) => d.name === laName);
  check(synced.metadata.fromCache === false, 'snapshot metadata.fromCache is false', synced.metadata);
  check(laSynced.metadata.hasPendingWrites === false, 'cities/LA has hasPendingWrites: false', laSynced);
  check(laSynced.fields.name.stringValue === 'Los Angeles', 'cities/LA still reads "Los Angeles"', laSynced);

  const { body: status } = await request('GET', `${clientUrl}/pendingWrites/${writeId}`);
  check(status.state === 'acknowledged', `write ${writeId} is acknowledged`, status);

  step('6. The write reached the backend');
  const { body: onBackend } = await request('GET', `${backendDocs}/cities/LA`);
  check(onBackend.fields?.name?.stringValue === 'Los Angeles' && onBackend.fields?.state?.stringValue === 'CA',
    'GET on the backend returns cities/LA with the written fields', onBackend);
  check(onBackend.updateTime === laSynced.updateTime, 'the listener shows the backend\'s updateTime',
    { backend: onBackend.updateTime, listener: laSynced.updateTime });

  console.log('\nPASS offline_listen');
} catch (err) {
  const message = err instanceof CheckFailed ? err.message
    : deadline.aborted ? `timed out after ${TIMEOUT_MS} ms (${err.message})`
      : err.cause ? `${err.message}: ${err.cause.message ?? err.cause}`   // e.g. fetch failed: connect ECONNREFUSED
        : err.stack ?? String(err);
  console.error(`\nFAIL offline_listen: ${message}`);
  process.exitCode = 1;
} finally {
  listener?.close();
  // Clean up what we made on the server (best effort: the server may be gone): the client,
  // then the project's documents.
  const cleanup = { method: 'DELETE', signal: AbortSignal.timeout(2_000) };
  await fetch(clientUrl, cleanup).catch(() => {});
  await fetch(`${BASE}/emulator/v1/${DB}/documents`, cleanup).catch(() => {});
}
