// The tree panel's live stream: the Realtime Database's REST streaming (an EventSource of
// put and patch events) on the shown location, reopened when it drops, and the pill saying
// whether it is live.

import { $, setText, showError } from '../dom.js';
import { join } from './tree-paths.js';

let es = null;

/**
 * Streams the location at `src` (null: none, the pill says not live); `onPut(path, data)`
 * gets every write, `path` relative to that location (a patch is a put per key).
 */
export function openStream(src, onPut) {
  closeStream();
  if (!src) return;
  const live = $('tree-live');
  live.dataset.state = 'connecting';
  setText(live, 'connecting…');
  const source = new EventSource(src);
  es = source;
  const onData = (type) => (e) => {
    if (es !== source) return;
    let msg;
    try { msg = JSON.parse(e.data); } catch { return; }
    if (!msg || typeof msg.path !== 'string') return;
    if (type === 'put') onPut(msg.path, msg.data);
    else if (msg.data && typeof msg.data === 'object') {
      for (const [k, v] of Object.entries(msg.data)) onPut(join(msg.path, k), v);
    }
  };
  source.addEventListener('open', () => {
    if (es !== source) return;
    live.dataset.state = 'live';
    setText(live, 'live');
  });
  source.addEventListener('put', onData('put'));
  source.addEventListener('patch', onData('patch'));
  source.addEventListener('cancel', (e) => {
    if (es !== source) return;
    showError($('tree-error'), 'The server ended the live stream: ' + (e.data || 'cancelled'));
    closeStream();
  });
  source.addEventListener('error', () => {
    if (es !== source) return;
    if (source.readyState === EventSource.CLOSED) {
      live.dataset.state = 'down';
      setText(live, 'not live');
      setTimeout(() => { if (es === source) openStream(src, onPut); }, 5000);
    } else {
      live.dataset.state = 'connecting';
      setText(live, 'reconnecting…');
    }
  });
}

function closeStream() {
  if (es) es.close();
  es = null;
  const live = $('tree-live');
  live.dataset.state = 'off';
  setText(live, 'not live');
}
