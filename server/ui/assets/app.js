// SPDX-License-Identifier: Apache-2.0
// The console's shell: theme, sign-in, navigation, and the router that
// shows one view (views/*.js) at a time. Routes live in the URL's
// fragment (#/timers?state=failed), so a view can be bookmarked; no
// secret is ever put there.
import { ApiError, get, session } from './api.js';
import { h, replace } from './dom.js';
import { toast, field } from './dialog.js';
import * as overview from './views/overview.js';
import * as timers from './views/timers.js';
import * as timer from './views/timer.js';
import * as deadLetters from './views/dead_letters.js';
import * as schedules from './views/schedules.js';
import * as schedule from './views/schedule.js';
import * as cluster from './views/cluster.js';
import * as flows from './views/flows.js';

const ROUTES = [
  { pattern: /^\/?$/, nav: 'overview', view: overview },
  { pattern: /^\/timers$/, nav: 'timers', view: timers },
  { pattern: /^\/timer\/(.+)$/, nav: 'timers', view: timer },
  { pattern: /^\/schedules$/, nav: 'schedules', view: schedules },
  { pattern: /^\/schedule\/(.+)$/, nav: 'schedules', view: schedule },
  { pattern: /^\/dead-letters$/, nav: 'dead-letters', view: deadLetters },
  { pattern: /^\/flows$/, nav: 'flows', view: flows },
  { pattern: /^\/cluster$/, nav: 'cluster', view: cluster },
];

const main = document.getElementById('main');
let cleanup = null;
let generation = 0;

// --- Theme: auto (the system's), light or dark; a preference, not a secret.
const THEMES = ['auto', 'light', 'dark'];
function applyTheme(theme) {
  document.documentElement.dataset.theme = theme;
  document.getElementById('theme').textContent = `Theme: ${theme}`;
}
document.getElementById('theme').addEventListener('click', () => {
  const next = THEMES[(THEMES.indexOf(document.documentElement.dataset.theme || 'auto') + 1) % 3];
  localStorage.setItem('tickwheel.theme', next);
  applyTheme(next);
});
applyTheme(localStorage.getItem('tickwheel.theme') || 'auto');

document.getElementById('signout').addEventListener('click', () => {
  session.token = null;
  session.role = null;
  start();
});

// --- Routing
function parseHash() {
  const raw = decodeURI(location.hash.replace(/^#/, '')) || '/';
  const [path, q = ''] = raw.split('?');
  return { path, params: new URLSearchParams(q) };
}

// Goes to `path` (with a query object); replaces the history entry if asked.
export function navigate(path, params = {}, { replaceState = false } = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, v);
  const hash = `#${path}${q.toString() ? `?${q}` : ''}`;
  if (replaceState) {
    history.replaceState(null, '', hash);
    route();
  } else {
    location.hash = hash;
  }
}

async function route() {
  if (cleanup) { cleanup(); cleanup = null; }
  const mine = ++generation;
  const { path, params } = parseHash();
  const match = ROUTES.map((r) => [r, path.match(r.pattern)]).find(([, m]) => m);
  for (const a of document.querySelectorAll('[data-nav]')) {
    const current = match && a.dataset.nav === match[0].nav;
    if (current) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
  if (!match) {
    replace(main, h('h1', {}, 'Not found'), h('p', {}, h('a', { href: '#/' }, 'Back to the overview')));
    return;
  }
  const [{ view }, m] = match;
  replace(main, h('p', { class: 'muted' }, 'Loading…'));
  const ctx = {
    params,
    args: m.slice(1).map(decodeURIComponent),
    navigate,
    toast,
    // True while this view is the one shown (polls stop when it is not).
    get live() { return mine === generation; },
  };
  try {
    const done = await view.render(main, ctx);
    if (mine === generation) cleanup = done || null; else if (done) done();
  } catch (e) {
    if (mine !== generation) return;
    if (e instanceof ApiError && e.status === 401) { start(); return; }
    replace(main, h('h1', {}, 'Something went wrong'), h('p', { class: 'error' }, e.message));
  }
  if (mine === generation) document.title = `${main.querySelector('h1')?.textContent || 'Console'} · tickwheel`;
}

// --- Sign-in: asks for a token when the server has tokens.
function signIn(message) {
  const input = h('input', { type: 'password', name: 'token', autocomplete: 'off', required: true, spellcheck: 'false' });
  const error = h('p', { class: 'error', role: 'alert', hidden: !message }, message || '');
  const form = h('form', { class: 'card signin', novalidate: true },
    h('h1', {}, 'Sign in'),
    h('p', {}, 'This server has API tokens. Paste one: an admin token can change timers, a read token gets a read-only console.'),
    field('API token', input, 'Kept in this tab only (sessionStorage) and sent as an Authorization header; never in a URL or a cookie.'),
    error,
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Sign in')));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const value = input.value.trim();
    if (!value) { error.textContent = 'Paste a token.'; error.hidden = false; return; }
    session.token = value;
    start();
  });
  replace(main, form);
  input.focus();
}

async function start() {
  if (cleanup) { cleanup(); cleanup = null; }
  generation += 1;
  document.getElementById('signout').hidden = true;
  document.getElementById('role').hidden = true;
  try {
    const who = await get('/v1/whoami');
    session.role = who.role;
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) {
      const had = session.token;
      session.token = null;
      signIn(had ? 'That token was refused (wrong or revoked).' : '');
      return;
    }
    replace(main, h('h1', {}, 'The server cannot be reached'), h('p', { class: 'error' }, e.message));
    return;
  }
  const badge = document.getElementById('role');
  badge.hidden = false;
  badge.textContent = session.role === 'read' ? 'read-only' : session.role;
  badge.title = session.role === 'read'
    ? 'A read token: the console shows, but cannot change, anything'
    : session.role === 'admin' ? 'An admin token: every action' : 'The server has no tokens: every action';
  document.body.classList.toggle('read-only', !session.canWrite);
  document.getElementById('signout').hidden = !session.token;
  route();
}

window.addEventListener('hashchange', () => { if (session.role) route(); });
start();
