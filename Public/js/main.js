// The dashboard's entry point (index.html loads it as a module): wires the panels to the bus
// and starts them. Panels refresh on the server's event log rather than by fast polling; the
// event log, the token prompt, and links between panels reach them only through here.

import { on } from './bus.js';
import { selectTab, isShown } from './tabs.js';
import { checkHealth, syncClock } from './header.js';
import * as clients from './panels/clients.js';
import * as connections from './panels/connections.js';
import * as documents from './panels/documents.js';
import * as tree from './panels/tree.js';
import * as eventLog from './panels/events.js';
import * as rules from './panels/rules.js';
import * as timeline from './panels/timeline.js';

function refreshEverything() {
  checkHealth();
  syncClock();
  clients.refresh();
  connections.refresh();
  documents.loadDatabases();
  tree.loadNamespaces();
}

on('authorized', refreshEverything);
on('missed-events', () => {
  refreshEverything();
  timeline.reload();
});
on('token-changed', eventLog.reconnect);
on('open-document', ({ project, database, path }) => documents.open(project, database, path));
on('open-decision', rules.showTrace);
on('operation', (ev) => {
  clients.onEvent(ev);
  connections.onEvent(ev);
  documents.onEvent(ev);
  tree.onEvent(ev);
  if (ev.kind === 'clock') syncClock();
  if (ev.kind === 'reset') timeline.reload();
});

selectTab(location.hash.slice(1) || 'clients', { updateHash: false });
checkHealth();
// The clock call settles the admin token (asking for it if needed) before the event
// stream, which cannot report a 401 itself, is opened.
syncClock().finally(() => {
  eventLog.open();
  clients.refresh();
  connections.refresh();
  documents.loadDatabases();
  tree.loadNamespaces();
});

// The Rules panel hears of tabs from here on, and loads now if it is on screen: the order
// it had as a script of its own that ran after the rest of the dashboard had started.
on('tab-shown', rules.shown);
if (isShown('rules')) rules.shown('rules');
on('tab-shown', timeline.shown);
if (isShown('timeline')) timeline.shown('timeline');
