// SPDX-License-Identifier: Apache-2.0
// Timers: a table per state with paging; search by id or id prefix, filter
// by target host; "New test timer" for admins. The page refreshes itself
// every few seconds, so timers are seen to appear and fire.
import { get, post, query, session, timerPath } from '../api.js';
import { h, replace, table } from '../dom.js';
import { field, formDialog } from '../dialog.js';
import { STATES, stateBadge, targetText, timeEl } from '../format.js';

const POLL_MS = 2000;
const PAGE = 50;

export async function render(main, ctx) {
  const p = ctx.params;
  const state = STATES.includes(p.get('state')) ? p.get('state') : 'pending';
  const prefix = p.get('prefix') || '';
  const host = p.get('host') || '';
  const after = p.get('after') || '';
  const back = p.get('back') ? p.get('back').split(',') : []; // cursors of earlier pages

  const go = (changes) => ctx.navigate('/timers', { state, prefix, host, ...changes });
  const tabs = h('div', { class: 'tabs', role: 'tablist', 'aria-label': 'State' },
    STATES.map((s) => h('a', {
      role: 'tab', href: `#/timers${query({ state: s, prefix, host })}`,
      'aria-selected': s === state ? 'true' : 'false', class: s === state ? 'tab current' : 'tab',
    }, s)));

  const idInput = h('input', { type: 'search', name: 'id', value: prefix, placeholder: 'order-42 or order-', autocomplete: 'off', spellcheck: 'false' });
  const hostInput = h('input', { type: 'search', name: 'host', value: host, placeholder: 'hooks.example.com', autocomplete: 'off', spellcheck: 'false' });
  const found = h('div', { class: 'found', 'aria-live': 'polite' });
  const search = h('form', { class: 'filters', role: 'search' },
    field('Id or id prefix', idInput), field('Target host', hostInput),
    h('div', { class: 'field buttons' }, h('button', { type: 'submit', class: 'primary' }, 'Search'),
      h('button', { type: 'button', class: 'ghost', onclick: () => go({ prefix: '', host: '' }) }, 'Clear')));
  search.addEventListener('submit', (event) => {
    event.preventDefault();
    go({ prefix: idInput.value.trim(), host: hostInput.value.trim() });
  });

  const head = h('div', { class: 'page-head' }, h('h1', {}, 'Timers'),
    session.canWrite ? h('button', { type: 'button', class: 'primary', onclick: () => createTimer(ctx) }, 'New test timer') : null);
  const results = h('div', { class: 'results' });
  const status = h('p', { class: 'muted small' });
  replace(main, head, tabs, search, found, status, results);

  // An exact id is shown whatever its state, above the prefix listing.
  if (prefix) {
    try {
      const t = await get(timerPath(prefix));
      replace(found, h('p', { class: 'card exact' }, 'Timer ', h('a', { href: `#/timer/${encodeURIComponent(t.id)}` }, t.id), ' is ', stateBadge(t.state), '.'));
    } catch {
      // Not an exact id (404), or not an id at all (400: the listing says why).
    }
  }

  let timer = null;
  const load = async () => {
    try {
      const page = await get(`/v1/timers${query({ state, limit: PAGE, after, prefix, host })}`);
      if (!ctx.live) return;
      replace(results, table(`${state} timers${prefix ? `, id starting with ${prefix}` : ''}${host ? `, to ${host}` : ''}`, [
        ['Id', (t) => h('a', { href: `#/timer/${encodeURIComponent(t.id)}`, class: 'mono' }, t.id)],
        ['State', (t) => stateBadge(t.state)],
        [state === 'pending' || state === 'delivering' ? 'Next attempt' : 'Finished',
          (t) => timeEl(t.next_attempt_ms ?? t.updated_ms)],
        ['Attempts', (t) => `${t.attempts} / ${t.retry.max_attempts}`],
        ['Target', (t) => h('span', { class: 'mono' }, targetText(t.target))],
        [state === 'failed' ? 'Last error' : 'Created', (t) => (state === 'failed' ? h('span', { class: 'error-text' }, t.last_error || '') : timeEl(t.created_ms))],
      ], page.timers, `No ${state} timers${prefix || host ? ' match' : ''} on this page.`),
      pager(page, go, after, back));
      replace(status, `${page.timers.length} shown · refreshed every ${POLL_MS / 1000} s`);
    } catch (e) {
      if (ctx.live) replace(status, h('span', { class: 'error' }, e.message));
    }
    if (ctx.live) timer = setTimeout(load, POLL_MS);
  };
  await load();
  return () => clearTimeout(timer);
}

function pager(page, go, after, back) {
  const prev = back.length ? back[back.length - 1] : null;
  return h('nav', { class: 'pager', 'aria-label': 'Pages' },
    after ? h('button', { type: 'button', class: 'ghost', onclick: () => go({}) }, 'First page') : null,
    after ? h('button', { type: 'button', class: 'ghost',
      onclick: () => go({ after: prev === '-' ? '' : prev || '', back: back.slice(0, -1).join(',') }) }, 'Previous page') : null,
    page.next_after ? h('button', { type: 'button', class: 'ghost',
      onclick: () => go({ after: page.next_after, back: [...back, after || '-'].join(',') }) }, 'Next page') : null,
    page.next_after && !page.timers.length ? h('span', { class: 'muted small' }, 'This page looked at 10,000 entries without a match; there may be more.') : null);
}

export function createTimer(ctx) {
  const id = h('input', { name: 'id', placeholder: 'generated if empty', autocomplete: 'off', spellcheck: 'false' });
  const delay = h('input', { name: 'delay', type: 'number', min: '0', step: '1', value: '10', required: true });
  const url = h('input', { name: 'url', type: 'url', value: '', placeholder: 'http://127.0.0.1:9000/hook', required: true, spellcheck: 'false' });
  const payload = h('textarea', { name: 'payload', rows: '4', spellcheck: 'false' }, '{"test": true}');
  const attempts = h('input', { name: 'attempts', type: 'number', min: '1', max: '100', value: '3' });
  formDialog({
    title: 'New test timer',
    submit: 'Create',
    fields: [field('Id', id), field('Fire in (seconds)', delay), field('Target URL', url),
      field('Payload (JSON)', payload), field('Attempts at most', attempts)],
    onSubmit: async () => {
      let body;
      try { body = JSON.parse(payload.value || 'null'); } catch (e) { throw new Error(`The payload is not JSON: ${e.message}`); }
      const created = await post('/v1/timers', {
        ...(id.value.trim() ? { id: id.value.trim() } : {}),
        delay_ms: Math.round(Number(delay.value) * 1000),
        target: { url: url.value.trim() },
        payload: body,
        retry: { max_attempts: Number(attempts.value) || 3 },
      });
      ctx.toast(`Created ${created.id}, due ${new Date(created.fire_at_ms).toLocaleTimeString()}.`);
      ctx.navigate(`/timer/${encodeURIComponent(created.id)}`);
    },
  });
}
