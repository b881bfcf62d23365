// SPDX-License-Identifier: Apache-2.0
// One schedule: when it fires, its next fire times in the browser's zone
// and in the schedule's own (with the offset and abbreviation the server
// computed), its last occurrences with their outcome (each a timer, linked
// to its page), its counts and policies; and, for admins, pause, resume and
// "trigger now", each confirmed first.
import { get, post, session } from '../api.js';
import { h, replace, table } from '../dom.js';
import { confirmAction } from '../dialog.js';
import { duration, stateBadge, timeEl, zone } from '../format.js';

const POLL_MS = 2000;
const NEXT = 10;

export const schedulePath = (id) => `/v1/schedules/${encodeURIComponent(id)}`;

// "every 5 min" or "0 9 * * MON-FRI (Europe/Berlin)".
export function recurrenceText(s) {
  if (s.every_ms !== undefined) return `every ${duration(s.every_ms)}`;
  return `${s.cron} (${s.time_zone})`;
}

export const scheduleBadge = (s) => h('span', { class: `state schedule-${s.state}`, title: s.ended_reason ? `ended: ${s.ended_reason}` : null }, s.state);

export async function render(main, ctx) {
  const [id] = ctx.args;
  let timer = null;
  let shown = '';
  const load = async () => {
    try {
      const s = await get(`${schedulePath(id)}?next=${NEXT}`);
      if (!ctx.live) return;
      // Redraw only on a change (next fire times move on their own as
      // occurrences fire): a dialog or a selection stays put.
      const text = JSON.stringify(s);
      if (text !== shown) {
        shown = text;
        const focused = document.activeElement?.dataset?.action;
        replace(main, ...view(s, ctx, load));
        if (focused) main.querySelector(`[data-action="${focused}"]`)?.focus();
      }
    } catch (e) {
      if (!ctx.live) return;
      if (e.status === 404) {
        replace(main, h('h1', {}, 'No such schedule'),
          h('p', {}, 'No schedule has the id ', h('code', {}, id), ' (it may have been deleted).'),
          h('p', {}, h('a', { href: '#/schedules' }, 'All schedules')));
        return;
      }
      throw e;
    }
    if (ctx.live) timer = setTimeout(() => load().catch(() => {}), POLL_MS);
  };
  await load();
  return () => clearTimeout(timer);
}

function view(s, ctx, reload) {
  const run = (fn) => async () => {
    try {
      await fn();
      await reload();
    } catch (e) {
      ctx.toast(e.message, 'error');
    }
  };
  const action = (name, label, title, message, confirm, call, cls = 'primary') =>
    h('button', { type: 'button', class: cls, dataset: { action: name },
      onclick: run(async () => {
        if (!await confirmAction({ title, message, confirm })) return;
        await call();
      }) }, label);
  const actions = !session.canWrite || s.state === 'ended' ? [] : [
    s.state === 'active' && action('pause', 'Pause…', `Pause ${s.id}?`,
      'Nothing fires until it is resumed. The times that pass meanwhile follow its catch-up policy on resume.',
      'Pause', async () => { await post(`${schedulePath(s.id)}:pause`); ctx.toast(`Paused ${s.id}.`); }, 'danger'),
    s.state === 'paused' && action('resume', 'Resume…', `Resume ${s.id}?`,
      `It fires again from its next time; times missed while paused: catch-up “${s.catch_up}”.`,
      'Resume', async () => { await post(`${schedulePath(s.id)}:resume`); ctx.toast(`Resumed ${s.id}.`); }),
    action('trigger', 'Trigger now…', `Trigger ${s.id} now?`,
      'One extra occurrence is delivered now, outside the recurrence; the next times are unchanged.',
      'Trigger now', async () => {
        const o = await post(`${schedulePath(s.id)}:trigger`);
        ctx.toast(`Triggered ${o.id}.`);
      }),
  ].filter(Boolean);

  const zoneName = s.time_zone || 'UTC';
  const c = s.counts;
  const policies = [
    h('dt', {}, 'When'), h('dd', { class: 'mono' }, recurrenceText(s)),
    s.every_ms !== undefined && s.anchor_ms ? [h('dt', {}, 'Anchor'), h('dd', {}, timeEl(s.anchor_ms, { withRelative: false }))] : null,
    s.cron !== undefined ? [h('dt', {}, 'Time zone'), h('dd', {}, zoneName),
      h('dt', {}, 'DST'), h('dd', {}, `gap: ${s.dst_gap}, overlap: ${s.dst_overlap}`)] : null,
    h('dt', {}, 'Overlap'), h('dd', {}, s.overlap),
    h('dt', {}, 'Catch-up'), h('dd', {}, `${s.catch_up} within ${duration(s.catch_up_window_ms)} (at most ${s.catch_up_max})`),
    s.jitter_ms ? [h('dt', {}, 'Jitter'), h('dd', {}, `up to ${duration(s.jitter_ms)}`)] : null,
    s.start_ms !== undefined ? [h('dt', {}, 'Starts'), h('dd', {}, timeEl(s.start_ms))] : null,
    s.end_ms !== undefined ? [h('dt', {}, 'Ends'), h('dd', {}, timeEl(s.end_ms))] : null,
    s.max_occurrences !== undefined ? [h('dt', {}, 'Occurrences'), h('dd', {}, `${s.occurrences} of at most ${s.max_occurrences}`)] : null,
    s.paused_ms !== undefined ? [h('dt', {}, 'Paused'), h('dd', {}, timeEl(s.paused_ms))] : null,
    h('dt', {}, 'Created'), h('dd', {}, timeEl(s.created_ms)),
  ];
  const counts = [
    h('dt', {}, 'Planned'), h('dd', {}, String(c.planned)),
    h('dt', {}, 'Fired'), h('dd', {}, String(c.fired)),
    h('dt', {}, 'Skipped'), h('dd', {}, `${c.skipped.overlap} overlap, ${c.skipped.catch_up} catch-up, ${c.skipped.dst} DST`),
    h('dt', {}, 'Triggered'), h('dd', {}, String(c.triggered)),
    h('dt', {}, 'Backfilled'), h('dd', {}, String(c.backfilled)),
  ];
  const target = s.target.nats
    ? [h('dt', {}, 'NATS subject'), h('dd', { class: 'mono' }, s.target.nats)]
    : [h('dt', {}, 'URL'), h('dd', { class: 'mono break' }, s.target.url)];
  return [
    h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, h('a', { href: `#/schedules?state=${s.state}` }, `${s.state} schedules`), ' / '),
    h('div', { class: 'page-head' }, h('h1', { class: 'mono break' }, s.id), scheduleBadge(s)),
    actions.length ? h('div', { class: 'toolbar' }, actions) : null,
    s.state === 'ended' ? h('p', { class: 'card' }, `Ended: ${s.ended_reason}.`) : null,
    h('div', { class: 'columns' },
      h('section', { 'aria-labelledby': 'h-when' }, h('h2', { id: 'h-when' }, 'Recurrence'), h('dl', { class: 'facts' }, policies)),
      h('section', { 'aria-labelledby': 'h-counts' }, h('h2', { id: 'h-counts' }, 'Counts'), h('dl', { class: 'facts' }, counts),
        h('h2', {}, 'Target'), h('dl', { class: 'facts' }, target))),
    h('section', { 'aria-labelledby': 'h-next' }, h('h2', { id: 'h-next' }, s.state === 'paused' ? 'Next fire times (once resumed)' : 'Next fire times'),
      table(`The next ${NEXT} times, in your zone (${zone}) and in the schedule's (${zoneName})`, [
        [`Here (${zone})`, (n) => timeEl(n.at_ms)],
        [`In ${zoneName}`, (n) => h('span', { class: 'mono' }, n.local ? `${n.local} ${n.abbreviation}` : n.utc)],
        ['UTC', (n) => h('span', { class: 'mono' }, n.utc)],
        ['Occurrence', (n) => h('span', { class: 'mono' }, n.occurrence)],
      ], s.next || [], s.state === 'ended' ? 'None: the schedule has ended.' : 'No time left: the schedule is about to end.')),
    h('section', { 'aria-labelledby': 'h-last' }, h('h2', { id: 'h-last' }, 'Last occurrences'),
      table('The last occurrences, newest first, with their outcome', [
        ['Occurrence', (o) => h('a', { href: `#/timer/${encodeURIComponent(o.id)}`, class: 'mono' }, o.id)],
        ['Nominal time', (o) => timeEl(o.nominal_ms)],
        ['State', (o) => stateBadge(o.state)],
        ['Attempts', (o) => String(o.attempts)],
        ['Outcome', (o) => (o.last_error ? h('span', { class: 'error-text' }, o.last_error) : (o.status ? String(o.status) : '—'))],
      ], s.last_occurrences || [], 'None yet.')),
    h('section', { 'aria-labelledby': 'h-payload' }, h('h2', { id: 'h-payload' }, 'Payload'),
      h('pre', { class: 'json', tabindex: '0' }, JSON.stringify(s.payload, null, 2))),
  ];
}
