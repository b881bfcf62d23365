// SPDX-License-Identifier: Apache-2.0
// One timer: its record, payload (pretty JSON), target (header values
// redacted by the server), attempts; and, for admins, the actions its
// state allows, each confirmed first: cancel, reschedule, retry.
import { api, get, post, session, timerPath } from '../api.js';
import { h, replace, table } from '../dom.js';
import { confirmAction, field, formDialog } from '../dialog.js';
import { stateBadge, timeEl, zone } from '../format.js';

const POLL_MS = 2000;

export async function render(main, ctx) {
  const [id] = ctx.args;
  let timer = null;
  let shown = '';
  const load = async () => {
    try {
      const t = await get(timerPath(id));
      if (!ctx.live) return;
      const text = JSON.stringify(t);
      // Redraw only on a change: a dialog or a selection stays put.
      if (text !== shown) {
        shown = text;
        const focused = document.activeElement?.dataset?.action;
        replace(main, ...view(t, ctx, load));
        if (focused) main.querySelector(`[data-action="${focused}"]`)?.focus();
      }
    } catch (e) {
      if (!ctx.live) return;
      if (e.status === 404) {
        replace(main, h('h1', {}, 'No such timer'),
          h('p', {}, 'No timer has the id ', h('code', {}, id), ' (it may have been deleted after its retention).'),
          h('p', {}, h('a', { href: '#/timers' }, 'All timers')));
        return;
      }
      throw e;
    }
    if (ctx.live) timer = setTimeout(() => load().catch(() => {}), POLL_MS);
  };
  await load();
  return () => clearTimeout(timer);
}

function view(t, ctx, reload) {
  const scheduled = t.state === 'pending' || t.state === 'delivering';
  const run = (fn) => async () => {
    try {
      await fn();
      await reload();
    } catch (e) {
      ctx.toast(e.message, 'error');
    }
  };
  const actions = !session.canWrite ? [] : [
    t.state === 'pending' && h('button', { type: 'button', class: 'primary', dataset: { action: 'reschedule' },
      onclick: () => reschedule(t, ctx, reload) }, 'Reschedule…'),
    t.state === 'pending' && h('button', { type: 'button', class: 'danger', dataset: { action: 'cancel' },
      onclick: run(async () => {
        if (!await confirmAction({ title: `Cancel ${t.id}?`, message: 'It will not fire. A cancelled timer cannot be re-armed.', confirm: 'Cancel timer', danger: true })) return;
        await api('DELETE', timerPath(t.id));
        ctx.toast(`Cancelled ${t.id}.`);
      }) }, 'Cancel…'),
    t.state === 'failed' && h('button', { type: 'button', class: 'primary', dataset: { action: 'retry' },
      onclick: run(async () => {
        if (!await confirmAction({ title: `Retry ${t.id}?`, message: 'It is attempted again now, with a fresh count of attempts.', confirm: 'Retry now' })) return;
        await post(`${timerPath(t.id)}:retry`);
        ctx.toast(`Retrying ${t.id}.`);
      }) }, 'Retry now…'),
  ].filter(Boolean);
  const target = t.target.nats
    ? [h('dt', {}, 'NATS subject'), h('dd', { class: 'mono' }, t.target.nats)]
    : [h('dt', {}, 'URL'), h('dd', { class: 'mono break' }, t.target.url),
      ...Object.entries(t.target.headers || {}).map(([k, v]) => [h('dt', {}, `Header ${k}`), h('dd', { class: 'mono' }, v)])];
  return [
    h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, h('a', { href: `#/timers?state=${t.state}` }, `${t.state} timers`), ' / '),
    h('div', { class: 'page-head' }, h('h1', { class: 'mono break' }, t.id), stateBadge(t.state)),
    actions.length ? h('div', { class: 'toolbar' }, actions) : null,
    t.last_error ? h('p', { class: 'card error-card' }, h('strong', {}, 'Last error: '), t.last_error) : null,
    h('div', { class: 'columns' },
      h('section', { 'aria-labelledby': 'h-record' }, h('h2', { id: 'h-record' }, 'Record'),
        h('dl', { class: 'facts' },
          h('dt', {}, 'State'), h('dd', {}, stateBadge(t.state)),
          h('dt', {}, 'Fire at'), h('dd', {}, timeEl(t.fire_at_ms)),
          scheduled ? [h('dt', {}, 'Next attempt'), h('dd', {}, timeEl(t.next_attempt_ms))] : null,
          h('dt', {}, 'Attempts'), h('dd', {}, `${t.attempts} of ${t.retry.max_attempts}`),
          h('dt', {}, 'Backoff'), h('dd', {}, `${t.retry.backoff_ms} ms, doubling`),
          h('dt', {}, 'Created'), h('dd', {}, timeEl(t.created_ms)),
          h('dt', {}, 'Updated'), h('dd', {}, timeEl(t.updated_ms)))),
      h('section', { 'aria-labelledby': 'h-target' }, h('h2', { id: 'h-target' }, 'Target'),
        h('dl', { class: 'facts' }, target),
        t.target.headers ? h('p', { class: 'muted small' }, 'Header values are not shown here.') : null)),
    h('section', { 'aria-labelledby': 'h-payload' }, h('h2', { id: 'h-payload' }, 'Payload'),
      h('pre', { class: 'json', tabindex: '0' }, JSON.stringify(t.payload, null, 2))),
    h('section', { 'aria-labelledby': 'h-attempts' }, h('h2', { id: 'h-attempts' }, 'Attempts'),
      table('The last attempts, newest first', [
        ['Started', (a) => timeEl(a.started_ms)],
        ['Duration', (a) => `${a.duration_ms} ms`],
        ['Status', (a) => (a.status ? String(a.status) : '—')],
        ['Error', (a) => (a.error ? h('span', { class: 'error-text' }, a.error) : (a.status ? 'ok' : '—'))],
      ], [...(t.attempt_log || [])].reverse(), 'No attempt yet.')),
  ];
}

// A date-time picker (in the browser's zone) with quick "+5 min" / "+1 h".
function reschedule(t, ctx, reload) {
  const base = Math.max(Date.now(), t.fire_at_ms);
  const input = h('input', { type: 'datetime-local', step: '1', value: local(base), required: true });
  const plus = (ms) => h('button', { type: 'button', class: 'ghost', onclick: () => { input.value = local(Date.now() + ms); } },
    ms === 300000 ? '+5 min' : '+1 h');
  formDialog({
    title: `Reschedule ${t.id}`,
    submit: 'Reschedule',
    fields: [field(`Fire at (${zone})`, input), h('div', { class: 'quick' }, 'From now: ', plus(300000), plus(3600000))],
    onSubmit: async () => {
      const ms = new Date(input.value).getTime();
      if (!Number.isFinite(ms)) throw new Error('Pick a date and time.');
      await api('PATCH', timerPath(t.id), { fire_at_ms: ms });
      ctx.toast(`Rescheduled ${t.id} to ${new Date(ms).toLocaleString()}.`);
      await reload();
    },
  });
}

// "2026-11-23T10:47:40" in the browser's zone, as datetime-local wants.
function local(ms) {
  const d = new Date(ms);
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}
