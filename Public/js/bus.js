// The dashboard's event bus: modules that must not import each other (that would be a cycle)
// talk through named events here. Dispatch is synchronous, so listeners run in the order
// they subscribed, before emit() returns.
//
// Events: 'authorized' (a token was entered from the header button), 'token-changed',
// 'tab-shown' (tab name), 'open-document' ({project, database, path}), 'operation' (an
// event-log entry), 'missed-events' (the log may have missed changes: refresh everything),
// 'open-decision' (a rules decision id).

export const bus = new EventTarget();

export function on(name, fn) {
  bus.addEventListener(name, (e) => fn(e.detail));
}

export function emit(name, detail) {
  bus.dispatchEvent(new CustomEvent(name, { detail }));
}
