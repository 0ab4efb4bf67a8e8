// A complete example of firegate-test.mjs under node:test: `node clients/node/firegate_test_example.mjs`
// (with FIREGATE_URL, FIREGATE_BIN or firegate on PATH). vitest and mocha take the same calls.
import { after, afterEach, before, beforeEach, test } from "node:test";
import assert from "node:assert/strict";
import { startFiregate } from "./firegate-test.mjs";

let firegate;
before(async () => { firegate = await startFiregate({ url: process.argv[2] ?? process.env.FIREGATE_URL }); });
beforeEach(() => firegate.reset());
afterEach((t) => firegate.saveTimelineIfFailed(t));
after(() => firegate.stop());

test("a write made offline waits in the client's queue until it reconnects", async () => {
  const client = await firegate.client();
  await client.offline(async () => {
    const written = await client.set("cities/LA", { name: "Los Angeles", population: 3_900_000 });
    assert.equal(written.headers.get("firegate-write-state"), "pending");
    const cached = await client.get("cities/LA", { source: "cache" });
    assert.equal(cached.headers.get("firegate-has-pending-writes"), "true");
    assert.equal((await firegate.get("cities/LA")).status, 404, "the server has not seen it");
    assert.equal((await client.pendingWrites()).length, 1);
  });
  await client.waitForPendingWrites();
  const stored = await (await firegate.get("cities/LA")).json();
  assert.deepEqual(stored.fields.name, { stringValue: "Los Angeles" });
  await client.delete();
});

test("each test starts empty", async () => {
  assert.equal((await firegate.get("cities/LA")).status, 404);
});

test("a real connection switched off is refused until it is switched back", async () => {
  // A REST call stands for a real SDK's: the switch matches connections by project, appId, uid.
  await firegate.set("cities/SF", { name: "San Francisco" });
  const listen = await fetch(`${firegate.url}/emulator/v1/connections/network`);
  assert.equal(listen.status, 200);
  await firegate.offline({ project: firegate.project }, async () => {
    const switches = await (await fetch(`${firegate.url}/emulator/v1/connections/network`)).json();
    assert.equal(JSON.stringify(switches).includes('"online":false'), true, JSON.stringify(switches));
  });
  const after = await (await fetch(`${firegate.url}/emulator/v1/connections/network`)).json();
  assert.equal(JSON.stringify(after).includes('"online":false'), false, JSON.stringify(after));
});
