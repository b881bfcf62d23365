// SPDX-License-Identifier: Apache-2.0
// The /v1 API as the console calls it. The token lives in this tab's
// sessionStorage only: never in a URL, never in a cookie, gone when the
// tab closes. It is sent as `Authorization: Bearer`, which a cross-site
// page cannot make a browser add (no cookie is ever used: credentials
// 'omit'), so the API needs no CSRF token.

const TOKEN_KEY = 'tickwheel.token';

export class ApiError extends Error {
  constructor(status, code, message, field) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field;
  }
}

export const session = {
  role: null, // admin | read | anonymous, from GET /v1/whoami
  get canWrite() { return this.role === 'admin' || this.role === 'anonymous'; },
  get token() { return sessionStorage.getItem(TOKEN_KEY); },
  set token(value) {
    if (value) sessionStorage.setItem(TOKEN_KEY, value);
    else sessionStorage.removeItem(TOKEN_KEY);
  },
};

// Calls the API; the parsed JSON answer, or throws ApiError with the
// server's error code and message.
export async function api(method, path, body) {
  const headers = { Accept: 'application/json' };
  const token = session.token;
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
      credentials: 'omit',
      redirect: 'error',
    });
  } catch (e) {
    throw new ApiError(0, 'network', `The server cannot be reached (${e.message}).`);
  }
  let data = null;
  try { data = await res.json(); } catch { /* not JSON */ }
  if (!res.ok) {
    const err = (data && data.error) || {};
    throw new ApiError(res.status, err.code || `http_${res.status}`,
      err.message || `${res.status} ${res.statusText}`, err.field);
  }
  return data;
}

export const get = (path) => api('GET', path);
export const post = (path, body) => api('POST', path, body ?? {});

// A query string of the set values of `params`.
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, v);
  const text = q.toString();
  return text ? `?${text}` : '';
}

// A schedule's occurrence ("<schedule>@<ms>") keeps its '@', which may
// stand in a path as it is: the server compares path ids as sent.
export const timerPath = (id) => `/v1/timers/${encodeURIComponent(id).replace(/%40/g, '@')}`;
