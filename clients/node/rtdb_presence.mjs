// Presence over a Realtime Database socket, with the device switched off the network by the
// test — the question RTDB users ask most, which no official emulator lets a test answer.
//
//   node --experimental-websocket clients/node/rtdb_presence.mjs http://127.0.0.1:8080
//
// Node 20+'s built-in WebSocket speaks the protocol by hand here (what the SDK sends: the hello,
// an onDisconnect, a set, a listen); a real app would use the SDK with connectDatabaseEmulator.
// Like a browser it cannot set headers, so its app id travels as the URL's `p=`.
const base = (process.argv[2] ?? 'http://127.0.0.1:8080').replace(/\/$/, '');
const ns = `presence-${Math.random().toString(36).slice(2, 10)}`;
const appId = `device-${ns}`;
const wsURL = `${base.replace(/^http/, 'ws')}/.ws?v=5&ns=${ns}&p=${appId}`;

function fail(message) {
  console.error(`FAIL: ${message}`);
  process.exit(1);
}
setTimeout(() => fail('timed out'), 30_000).unref();

const rest = async (method, path, body) => {
  const response = await fetch(`${base}${path}`, {
    method, headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) fail(`${method} ${path}: HTTP ${response.status} ${await response.text()}`);
  return response.json();
};

/** Opens a socket; resolves with {socket, hello, request(action, body), pushes} once the hello came. */
function connect() {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(wsURL);
    const replies = new Map();
    const pushes = [];
    let next = 1;
    const request = (a, b) => new Promise((done) => {
      const r = next++;
      replies.set(r, done);
      socket.send(JSON.stringify({ t: 'd', d: { r, a, b } }));
    });
    socket.onerror = () => reject(new Error('the socket was refused'));
    socket.onmessage = (event) => {
      const message = JSON.parse(event.data);
      if (message.t === 'c' && message.d.t === 'h') resolve({ socket, hello: message.d.d, request, pushes });
      else if (message.t === 'd' && 'r' in message.d) replies.get(message.d.r)?.(message.d.b);
      else if (message.t === 'd') pushes.push(message.d);
    };
  });
}

const device = await connect();
console.log(`connected: session ${device.hello.s}, server time ${new Date(device.hello.ts).toISOString()}`);
const sent = (reply, what) => { if (reply.s !== 'ok') fail(`${what}: ${JSON.stringify(reply)}`); };
sent(await device.request('o', { p: '/status/alice', d: { state: 'offline', at: { '.sv': 'timestamp' } } }), 'onDisconnect');
sent(await device.request('p', { p: '/status/alice', d: { state: 'online' } }), 'set online');
console.log('status/alice:', JSON.stringify(await rest('GET', `/status/alice.json?ns=${ns}`)));

const closed = new Promise((resolve) => { device.socket.onclose = (event) => resolve(event); });
const { dropped } = await rest('PUT', '/emulator/v1/connections/network', { match: { appId }, online: false });
const event = await closed;
console.log(`switched offline: dropped ${dropped.join(', ')}; the socket closed with ${event.code} "${event.reason}"`);

let status;
for (let i = 0; i < 100 && (status = await rest('GET', `/status/alice.json?ns=${ns}`)).state !== 'offline'; i++) {
  await new Promise((r) => setTimeout(r, 20));
}
if (status.state !== 'offline' || typeof status.at !== 'number') fail(`onDisconnect did not run: ${JSON.stringify(status)}`);
console.log('the server ran onDisconnect:', JSON.stringify(status));

const refused = await connect().then(() => false, () => true);
if (!refused) fail('a new socket was accepted while the device is offline');
console.log('reconnecting while offline: refused (the SDK backs off and stays offline)');

await rest('PUT', '/emulator/v1/connections/network', { match: { appId }, online: true });
const again = await connect();
sent(await again.request('q', { p: '/status/alice', h: '' }), 'listen');
if (again.pushes[0]?.b?.d?.state !== 'offline') fail(`the listen saw ${JSON.stringify(again.pushes)}`);
sent(await again.request('p', { p: '/status/alice/state', d: 'online' }), 'set online again');
console.log('back online:', JSON.stringify(await rest('GET', `/status/alice.json?ns=${ns}`)));
again.socket.close();
console.log('OK');
