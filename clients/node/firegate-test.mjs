// Test helpers for Firegate in Node (node:test, vitest, mocha): the verbs of pytest-firegate
// (docs/test-helpers.md). No dependencies: Node 20's fetch and child_process.
//
//   import { startFiregate } from "./firegate-test.mjs";
//   const firegate = await startFiregate();          // FIREGATE_URL's server, or one started from
//                                                      // FIREGATE_BIN / `firegate` on PATH
//   beforeEach(() => firegate.reset());
//   const client = await firegate.client();           // an edge client (emulated SDK with a cache)
//   await client.offline(async () => { await client.set("cities/LA", { name: "LA" }); });
//   await firegate.offline({ appId: "1:1:web:a" }, async () => { /* real SDKs' connections off */ });
//   afterEach((t) => firegate.saveTimelineIfFailed(t));   // the trace of a failing test, to open in the dashboard
//   after(() => firegate.stop());
import { spawn } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createServer } from "node:net";
import { randomUUID } from "node:crypto";

export function encodeValue(value) {
  if (value === null || value === undefined) return { nullValue: null };
  if (typeof value === "boolean") return { booleanValue: value };
  if (typeof value === "number") return Number.isInteger(value) ? { integerValue: String(value) } : { doubleValue: value };
  if (typeof value === "string") return { stringValue: value };
  if (Array.isArray(value)) return { arrayValue: { values: value.map(encodeValue) } };
  if (typeof value === "object") return { mapValue: { fields: encodeFields(value) } };
  throw new TypeError(`no Firestore value for ${typeof value}`);
}

export function encodeFields(fields) {
  return Object.fromEntries(Object.entries(fields).map(([name, value]) => [name, encodeValue(value)]));
}

async function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

export class Firegate {
  constructor(url, { project = "demo-project", adminToken, process } = {}) {
    this.url = url.replace(/\/$/, "");
    this.project = project;
    this.headers = adminToken ? { authorization: `Bearer ${adminToken}` } : {};
    this.process = process;
  }

  get documentsUrl() {
    return `${this.url}/v1/projects/${this.project}/databases/(default)/documents`;
  }

  async request(method, path, body, query) {
    const url = new URL(this.url + path);
    for (const [key, value] of Object.entries(query ?? {})) url.searchParams.set(key, String(value));
    const headers = { ...this.headers, ...(body === undefined ? {} : { "content-type": "application/json" }) };
    return fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(30_000) });
  }

  async ok(method, path, body, query) {
    const answer = await this.request(method, path, body, query);
    if (!answer.ok) throw new Error(`${method} ${path}: ${answer.status} ${await answer.text()}`);
    return answer;
  }

  /** GET a document from the server itself (the fetch Response). */
  get(document) {
    return fetch(`${this.documentsUrl}/${document}`, { headers: this.headers, signal: AbortSignal.timeout(30_000) });
  }

  /** Writes a document's fields (plain values) on the server. */
  set(document, fields) {
    return fetch(`${this.documentsUrl}/${document}`, {
      method: "PATCH", headers: { ...this.headers, "content-type": "application/json" },
      body: JSON.stringify({ fields: encodeFields(fields) }), signal: AbortSignal.timeout(30_000),
    });
  }

  /** Everything back to empty: documents, tree, rules, clients, switches. */
  async reset() {
    await this.ok("POST", "/emulator/v1/reset");
    // The server's own clock: a trace starts here even when the server was set to another time.
    this.testStartedMs = (await (await this.ok("GET", "/emulator/v1/clock")).json()).epochMs;
  }

  /** Every client's and connection's steps (GET /emulator/v1/timeline) since `since` (epoch ms or RFC 3339). */
  async timeline({ since = this.testStartedMs } = {}) {
    return (await this.ok("GET", "/emulator/v1/timeline", undefined, since === undefined ? {} : { since })).json();
  }

  /** Saves the timeline since the last reset as a trace file the dashboard opens; returns its path. */
  async saveTimeline(path, options) {
    await writeFile(path, JSON.stringify(await this.timeline(options)));
    return path;
  }

  /** In an afterEach hook: when the test `t` failed, saves its trace under `dir`
   * (FIREGATE_TRACES, else firegate-traces/) and says where. */
  async saveTimelineIfFailed(t, dir = process.env.FIREGATE_TRACES ?? "firegate-traces") {
    if (t.passed !== false) return null;
    await mkdir(dir, { recursive: true });
    const path = await this.saveTimeline(join(dir, `${t.name.replace(/[^A-Za-z0-9._-]+/g, "_").slice(0, 120)}.json`));
    console.error(`firegate: the timeline of the failed test "${t.name}" is in ${path} (open it in the dashboard's Timeline tab)`);
    return path;
  }

  async switch(match, online, latencyMs = 0) {
    await this.ok("PUT", "/emulator/v1/connections/network", { match, online, ...(latencyMs ? { latencyMs } : {}) });
  }

  /** The real clients' connections that match ({project}, {appId}, {uid}, …) offline while `fn` runs. */
  async offline(match, fn) {
    await this.switch(match, false);
    try {
      return await fn();
    } finally {
      await this.switch(match, true);
    }
  }

  /** A new edge client; `settings` as PUT /clients/{id} takes them. */
  async client(id = `c-${randomUUID().slice(0, 10)}`, settings = {}) {
    await this.ok("PUT", `/clients/${id}`, { project: this.project, ...settings });
    return new EdgeClient(this, id);
  }

  async stop() {
    if (!this.process || this.process.exitCode !== null) return;
    const exited = new Promise((resolve) => this.process.once("exit", resolve));
    this.process.kill("SIGTERM");
    await exited;
  }
}

export class EdgeClient {
  constructor(server, id) {
    this.server = server;
    this.id = id;
  }

  get documentsUrl() {
    return `${this.server.url}/clients/${this.id}/v1/projects/${this.server.project}/databases/(default)/documents`;
  }

  get(document, { source } = {}) {
    const url = new URL(`${this.documentsUrl}/${document}`);
    if (source) url.searchParams.set("source", source);
    return fetch(url, { headers: this.server.headers, signal: AbortSignal.timeout(30_000) });
  }

  set(document, fields) {
    return fetch(`${this.documentsUrl}/${document}`, {
      method: "PATCH", headers: { ...this.server.headers, "content-type": "application/json" },
      body: JSON.stringify({ fields: encodeFields(fields) }), signal: AbortSignal.timeout(30_000),
    });
  }

  /** The client's network off (disableNetwork) while `fn` runs, back on after. */
  async offline(fn) {
    await this.server.ok("POST", `/clients/${this.id}:disableNetwork`);
    try {
      return await fn();
    } finally {
      await this.server.ok("POST", `/clients/${this.id}:enableNetwork`);
    }
  }

  async waitForPendingWrites(timeoutMs = 10_000) {
    await this.server.ok("POST", `/clients/${this.id}:waitForPendingWrites`, undefined, { timeoutMs });
  }

  async pendingWrites() {
    const answer = await this.server.ok("GET", `/clients/${this.id}/pendingWrites`);
    return (await answer.json()).writes ?? [];
  }

  async delete() {
    await this.server.request("DELETE", `/clients/${this.id}`);
  }
}

/** FIREGATE_URL's server (as under `firegate exec`), or one started in memory from `bin`,
 * FIREGATE_BIN or `firegate` on PATH. */
export async function startFiregate({ url = process.env.FIREGATE_URL, bin = process.env.FIREGATE_BIN ?? "firegate",
                                      project = process.env.GCLOUD_PROJECT ?? "demo-project" } = {}) {
  const adminToken = process.env.FIREGATE_ADMIN_TOKEN;
  if (url) return new Firegate(url, { project, adminToken });
  const port = await freePort();
  const child = spawn(bin, ["serve", "--in-memory", "--host", "127.0.0.1", "--port", String(port), "--project", project,
                            "--log-level", "warning"], { stdio: ["ignore", "ignore", "inherit"] });
  const started = new Firegate(`http://127.0.0.1:${port}`, { project, process: child });
  const failed = new Promise((_, reject) => child.once("error", reject));
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`firegate exited with ${child.exitCode}`);
    try {
      const answer = await Promise.race([fetch(`${started.url}/healthz`, { signal: AbortSignal.timeout(1000) }), failed]);
      if (answer.status === 200) return started;
    } catch (error) {
      if (error?.code === "ENOENT") throw new Error(`no firegate binary at ${bin}: set FIREGATE_BIN or FIREGATE_URL`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await started.stop();
  throw new Error("firegate did not answer /healthz within 30 s");
}
