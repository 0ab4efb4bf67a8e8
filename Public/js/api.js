// HTTP for the dashboard: api() (fetch + JSON, same-origin) with the admin token, which is
// asked for in a dialog on the first 401 and kept in local storage. Emits 'token-changed'
// when the token changes and 'authorized' when one is entered from the header's button.

import { $, showError, store } from './dom.js';
import { emit } from './bus.js';

const TOKEN_KEY = 'firegate.adminToken';
let token = store.get(TOKEN_KEY);

/** The admin token in use ('' for none). */
export function adminToken() {
  return token;
}

export class ApiError extends Error {
  constructor(status, message, body) {
    super(message);
    this.status = status;
    this.body = body;
  }
}

export function errorMessage(status, body) {
  if (body && typeof body === 'object' && body.error) {
    const e = body.error;
    if (typeof e === 'string') return `${status}: ${e}`;
    return `${e.code || status} ${e.status || ''}: ${e.message || ''}`.replace(/\s+:/, ':');
  }
  if (typeof body === 'string' && body) return `${status}: ${body.slice(0, 200)}`;
  return `HTTP ${status}`;
}

// One prompt at a time: every request that meets a 401 waits for the same answer.
let tokenPrompt = null;
let tokenDeclined = false;

function askToken(rejected) {
  if (tokenPrompt) return tokenPrompt;
  if (tokenDeclined) return Promise.resolve(false);
  tokenPrompt = new Promise((resolve) => {
    const dialog = $('token-dialog');
    const input = $('token-input');
    const form = $('token-form');
    showError($('token-error'), rejected ? 'That token was not accepted. Try again.' : '');
    input.value = '';
    $('token-button').hidden = false;
    const done = (ok) => {
      form.removeEventListener('submit', onSubmit);
      dialog.removeEventListener('cancel', onCancel);
      if (dialog.open) dialog.close();
      tokenPrompt = null;
      resolve(ok);
    };
    const onSubmit = (e) => {
      e.preventDefault();
      const value = input.value.trim();
      if (!value) return;
      setToken(value);
      tokenDeclined = false;
      done(true);
    };
    const onCancel = () => {
      tokenDeclined = true;
      done(false);
    };
    form.addEventListener('submit', onSubmit);
    dialog.addEventListener('cancel', onCancel);
    if (typeof dialog.showModal === 'function') dialog.showModal();
    else dialog.setAttribute('open', '');
    input.focus();
  });
  return tokenPrompt;
}

function setToken(value) {
  token = value || '';
  store.set(TOKEN_KEY, token);
  $('token-button').hidden = !token && !tokenDeclined;
  emit('token-changed');
}

/**
 * fetch + JSON, as the admin. `path` is same-origin. On a 401 the admin token is asked for (once, shared by
 * every waiting request) and the request retried with it.
 */
export async function api(path, { method = 'GET', body } = {}) {
  for (let attempt = 0; attempt < 4; attempt += 1) {
    const sent = token;
    const headers = { Accept: 'application/json' };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    // The dashboard is the admin: the token when the server has one, else the emulators' `owner`
    // credential, so the security rules never hide a project's data from it.
    headers.Authorization = 'Bearer ' + (sent || 'owner');
    let res;
    try {
      res = await fetch(path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        cache: 'no-store',
      });
    } catch (err) {
      throw new ApiError(0, 'The server cannot be reached.');
    }
    const text = await res.text();
    let data = null;
    if (text) {
      try { data = JSON.parse(text); } catch { data = text; }
    }
    if (res.status === 401) {
      if (token !== sent) continue; // someone entered a new token meanwhile
      if (await askToken(Boolean(sent))) continue;
    }
    if (!res.ok) throw new ApiError(res.status, errorMessage(res.status, data), data);
    return data;
  }
  throw new ApiError(401, 'An admin token is needed.');
}

$('token-button').addEventListener('click', () => {
  tokenDeclined = false;
  askToken(false).then((ok) => { if (ok) emit('authorized'); });
});
$('token-forget').addEventListener('click', () => {
  setToken('');
  $('token-input').value = '';
  $('token-input').focus();
});
$('token-button').hidden = !token;
