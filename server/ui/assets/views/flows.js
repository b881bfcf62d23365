// SPDX-License-Identifier: Apache-2.0
// Flows (docs/flows.md): every configured flow and every flow active in the
// last minute, with its limits, backlog, attempts in flight and last
// minute; for admins, pause, resume, set its limits, or reset it to the
// server's defaults (each confirmed, or a form). GET /v1/flows, PUT and
// DELETE /v1/flows/{key}, POST /v1/flows/{key}:pause and :resume.
import { api, get, post, query, session } from '../api.js';
import { h, replace, table } from '../dom.js';
import { confirmAction, field, formDialog } from '../dialog.js';
import { formatNumber, timeEl } from '../format.js';

const POLL_MS = 3000;

export const flowPath = (key) => `/v1/flows/${encodeURIComponent(key)}`;

export async function render(main, ctx) {
  const after = ctx.params.get('after') || '';
  const body = h('div', {});
  const add = session.canWrite
    ? h('button', { type: 'button', class: 'primary', dataset: { action: 'new-flow' },
      onclick: () => setLimits(ctx, null, load) }, 'Set a flow…')
    : null;
  replace(main, h('div', { class: 'page-head' }, h('h1', {}, 'Flows'), add),
    h('p', { class: 'muted' },
      'Every delivery belongs to a flow: the one its timer names, or its target\'s host:port. ',
      'A flow\'s rate, burst and in-flight cap hold across the whole cluster; a paused flow sends ',
      'nothing and its timers stay pending. Shown: flows with settings, and those active in the last minute.'),
    body);
  let timer = null;
  let shown = '';
  async function load() {
    clearTimeout(timer);
    try {
      const page = await get(`/v1/flows${query({ after })}`);
      if (!ctx.live) return;
      const text = JSON.stringify(page);
      if (text !== shown) {  // redraw only on a change: a dialog or a focus stays put
        shown = text;
        const focused = document.activeElement?.dataset?.action;
        replace(body, ...view(page, ctx, load, after));
        if (focused) body.querySelector(`[data-action="${focused}"]`)?.focus();
      }
    } catch (e) {
      if (ctx.live) replace(body, h('p', { class: 'error' }, e.message));
    }
    if (ctx.live) timer = setTimeout(() => load().catch(() => {}), POLL_MS);
  }
  await load();
  return () => clearTimeout(timer);
}

// "200/s (burst 50)", "8 at once", "no limit".
function limitsText(f) {
  const parts = [];
  if (f.rate_per_s !== null) parts.push(`${formatNumber(f.rate_per_s)}/s (burst ${formatNumber(f.burst)})`);
  if (f.max_in_flight !== null) parts.push(`${formatNumber(f.max_in_flight)} at once`);
  return parts.length ? parts.join(', ') : 'no limit';
}

function stateCell(f) {
  const badges = [];
  if (f.paused) badges.push(h('span', { class: 'state state-failed' }, 'paused'));
  if (f.held_until_ms !== null) {
    badges.push(h('span', { class: 'state state-delivering', title: 'A receiver answered Retry-After: nothing of the flow starts before then' },
      'held until ', timeEl(f.held_until_ms)));
  }
  if (f.lowered_rate_per_s !== null) {
    badges.push(h('span', { class: 'state state-delivering', title: 'Repeated 429s lowered the rate; it recovers by a tenth every 2 s without one' },
      `lowered to ${formatNumber(Math.round(f.lowered_rate_per_s * 10) / 10)}/s`));
  }
  return badges.length ? badges : h('span', { class: 'ok-text' }, 'sending');
}

function view(page, ctx, reload, after) {
  const run = (fn) => async () => {
    try {
      await fn();
      await reload();
    } catch (e) {
      ctx.toast(e.message, 'error');
    }
  };
  const columns = [
    ['Flow', (f) => h('span', { class: 'mono' }, f.key, f.configured ? null : h('span', { class: 'badge', title: 'No settings of its own: the server\'s defaults' }, 'defaults'))],
    ['Limits', (f) => limitsText(f)],
    ['State', (f) => stateCell(f)],
    ['Due, waiting', (f) => `${formatNumber(f.due)}${f.due_capped ? '+' : ''}`],
    ['In flight', (f) => formatNumber(f.in_flight)],
    ['Sent (1 min)', (f) => formatNumber(f.sent_last_minute)],
    ['Delivered (1 min)', (f) => formatNumber(f.delivered_last_minute)],
    ['Throttled (1 min)', (f) => formatNumber(f.throttled_last_minute)],
  ];
  if (session.canWrite) {
    columns.push(['', (f) => h('div', { class: 'row-actions' },
      f.paused
        ? h('button', { type: 'button', class: 'primary small', dataset: { action: `resume-${f.key}` }, 'aria-label': `Resume ${f.key}`,
          onclick: run(async () => {
            await post(`${flowPath(f.key)}:resume`);
            ctx.toast(`Resumed ${f.key}: its timers go out in due order.`);
          }) }, 'Resume')
        : h('button', { type: 'button', class: 'ghost small', dataset: { action: `pause-${f.key}` }, 'aria-label': `Pause ${f.key}`,
          onclick: run(async () => {
            if (!await confirmAction({ title: `Pause ${f.key}?`, message: 'Nothing of it is sent until it is resumed; its timers stay pending (attempts in flight finish).', confirm: 'Pause' })) return;
            await post(`${flowPath(f.key)}:pause`);
            ctx.toast(`Paused ${f.key}.`);
          }) }, 'Pause'),
      h('button', { type: 'button', class: 'ghost small', dataset: { action: `set-${f.key}` }, 'aria-label': `Set the limits of ${f.key}`,
        onclick: () => setLimits(ctx, f, reload) }, 'Set…'),
      f.configured ? h('button', { type: 'button', class: 'ghost small', dataset: { action: `reset-${f.key}` }, 'aria-label': `Reset ${f.key} to the defaults`,
        onclick: run(async () => {
          if (!await confirmAction({ title: `Reset ${f.key}?`, message: 'Its settings are removed: the server\'s defaults apply again, and it is not paused.', confirm: 'Reset', danger: true })) return;
          await api('DELETE', flowPath(f.key));
          ctx.toast(`${f.key} is back to the defaults.`);
        }) }, 'Reset') : null)]);
  }
  return [
    table('Flows by key', columns, page.flows, after ? 'No more flows.' : 'No flow has settings or was active in the last minute.'),
    page.next_after ? h('nav', { class: 'pager', 'aria-label': 'Pages' },
      h('button', { type: 'button', class: 'ghost', onclick: () => ctx.navigate('/flows', { after: page.next_after }) }, 'Next page')) : null,
  ];
}

// The settings form: a flow's key (for a new one), rate, burst, in-flight
// cap, paused. Empty means "the server's default"; "none" means no limit.
function setLimits(ctx, f, reload) {
  const stored = (f && f.settings) || {};
  const text = (v) => (v === undefined ? '' : v === null ? 'none' : String(v));
  const key = h('input', { name: 'key', value: f ? f.key : '', required: true, autocomplete: 'off', spellcheck: 'false', readonly: f ? true : null, placeholder: 'payments-api or hooks.example.com:443' });
  const rate = h('input', { name: 'rate_per_s', value: text(stored.rate_per_s), inputmode: 'decimal', autocomplete: 'off', placeholder: 'default' });
  const burst = h('input', { name: 'burst', value: text(stored.burst), inputmode: 'numeric', autocomplete: 'off', placeholder: 'a tenth of a second of the rate' });
  const cap = h('input', { name: 'max_in_flight', value: text(stored.max_in_flight), inputmode: 'numeric', autocomplete: 'off', placeholder: 'default' });
  const paused = h('input', { type: 'checkbox', name: 'paused', checked: stored.paused ? true : null });
  formDialog({
    title: f ? `Limits of ${f.key}` : 'Set a flow',
    fields: [
      field('Flow', key, 'A name timers give ("flow": ...), or a target\'s host:port.'),
      field('Rate (attempts a second)', rate, 'Empty: the server\'s default; "none": no rate limit; 0.5 is one every 2 s.'),
      field('Burst', burst, 'How many may start at once after a quiet spell. Empty: a tenth of a second\'s worth.'),
      field('Max in flight', cap, 'Attempts sent and not yet answered, at once. Empty: the default; "none": no cap.'),
      h('div', { class: 'field checkbox' }, h('label', {}, paused, ' Paused')),
    ],
    submit: 'Save',
    onSubmit: async () => {
      const name = key.value.trim();
      if (!name) throw new Error('Give the flow\'s key.');
      const body = { paused: paused.checked };
      const number = (input, label, integer) => {
        const v = input.value.trim();
        if (v === '') return undefined;
        if (v.toLowerCase() === 'none') return null;
        const n = Number(v);
        if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) {
          throw new Error(`${label} must be ${integer ? 'a whole number' : 'a number'} above 0, "none" or empty.`);
        }
        return n;
      };
      const r = number(rate, 'The rate', false);
      const b = number(burst, 'The burst', true);
      const c = number(cap, 'Max in flight', true);
      if (r !== undefined) body.rate_per_s = r;
      if (b !== undefined) {
        if (b === null) throw new Error('The burst cannot be "none": leave it empty for the default.');
        body.burst = b;
      }
      if (c !== undefined) body.max_in_flight = c;
      await api('PUT', flowPath(name), body);
      ctx.toast(`Saved the limits of ${name}.`);
      await reload();
    },
  });
}
