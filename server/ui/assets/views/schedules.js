// SPDX-License-Identifier: Apache-2.0
// Schedules: a table per state (active, paused, ended, or all) in id order
// with paging and an id-prefix search; each row says when the schedule
// fires (its interval, or its cron expression and zone) and its next time.
// The page refreshes itself every few seconds.
import { get, query } from '../api.js';
import { h, replace, table } from '../dom.js';
import { field } from '../dialog.js';
import { targetText, timeEl } from '../format.js';
import { recurrenceText, scheduleBadge } from './schedule.js';

const POLL_MS = 2000;
const PAGE = 50;
const STATES = ['all', 'active', 'paused', 'ended'];

export async function render(main, ctx) {
  const p = ctx.params;
  const state = STATES.includes(p.get('state')) ? p.get('state') : 'all';
  const prefix = p.get('prefix') || '';
  const after = p.get('after') || '';
  const back = p.get('back') ? p.get('back').split(',') : []; // cursors of earlier pages

  const go = (changes) => ctx.navigate('/schedules', { state, prefix, ...changes });
  const tabs = h('div', { class: 'tabs', role: 'tablist', 'aria-label': 'State' },
    STATES.map((s) => h('a', {
      role: 'tab', href: `#/schedules${query({ state: s, prefix })}`,
      'aria-selected': s === state ? 'true' : 'false', class: s === state ? 'tab current' : 'tab',
    }, s)));
  const idInput = h('input', { type: 'search', name: 'prefix', value: prefix, placeholder: 'daily-', autocomplete: 'off', spellcheck: 'false' });
  const search = h('form', { class: 'filters', role: 'search' },
    field('Id prefix', idInput),
    h('div', { class: 'field buttons' }, h('button', { type: 'submit', class: 'primary' }, 'Search'),
      h('button', { type: 'button', class: 'ghost', onclick: () => go({ prefix: '' }) }, 'Clear')));
  search.addEventListener('submit', (event) => {
    event.preventDefault();
    go({ prefix: idInput.value.trim() });
  });
  const results = h('div', { class: 'results' });
  const status = h('p', { class: 'muted small' });
  replace(main, h('div', { class: 'page-head' }, h('h1', {}, 'Schedules')),
    h('p', { class: 'muted' }, 'Recurring schedules: each occurrence is a timer named ',
      h('code', {}, 'schedule@time'), ', delivered like any timer.'),
    tabs, search, status, results);

  let timer = null;
  const load = async () => {
    try {
      const page = await get(`/v1/schedules${query({ state: state === 'all' ? '' : state, limit: PAGE, after, prefix })}`);
      if (!ctx.live) return;
      replace(results, table(`${state === 'all' ? 'All' : state} schedules${prefix ? `, id starting with ${prefix}` : ''}`, [
        ['Id', (s) => h('a', { href: `#/schedule/${encodeURIComponent(s.id)}`, class: 'mono' }, s.id)],
        ['State', (s) => scheduleBadge(s)],
        ['When', (s) => h('span', { class: 'mono' }, recurrenceText(s))],
        ['Next', (s) => timeEl(s.next_ms)],
        ['Fired', (s) => String(s.counts.fired)],
        ['Target', (s) => h('span', { class: 'mono' }, targetText(s.target))],
      ], page.schedules, `No ${state === 'all' ? '' : `${state} `}schedules${prefix ? ' match' : ''} on this page.`),
      pager(page, go, after, back));
      replace(status, `${page.schedules.length} shown · refreshed every ${POLL_MS / 1000} s`);
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
      onclick: () => go({ after: page.next_after, back: [...back, after || '-'].join(',') }) }, 'Next page') : null);
}
