// SPDX-License-Identifier: Apache-2.0
// Dead letters: the failed timers with their last error, one retry each,
// and bulk retry or delete of all that match a filter, the count shown
// before confirming (POST /v1/timers:retry-failed, :delete-failed).
import { get, post, query, session, timerPath } from '../api.js';
import { h, replace, table } from '../dom.js';
import { confirmAction, field } from '../dialog.js';
import { formatNumber, targetText, timeEl } from '../format.js';

const PAGE = 50;

export async function render(main, ctx) {
  const prefix = ctx.params.get('prefix') || '';
  const host = ctx.params.get('host') || '';
  const after = ctx.params.get('after') || '';
  const filter = { ...(prefix ? { prefix } : {}), ...(host ? { host } : {}) };

  const idInput = h('input', { type: 'search', value: prefix, placeholder: 'order-', autocomplete: 'off', spellcheck: 'false' });
  const hostInput = h('input', { type: 'search', value: host, placeholder: 'hooks.example.com', autocomplete: 'off', spellcheck: 'false' });
  const form = h('form', { class: 'filters', role: 'search' },
    field('Id prefix', idInput), field('Target host', hostInput),
    h('div', { class: 'field buttons' }, h('button', { type: 'submit', class: 'primary' }, 'Filter'),
      h('button', { type: 'button', class: 'ghost', onclick: () => ctx.navigate('/dead-letters') }, 'Clear')));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    ctx.navigate('/dead-letters', { prefix: idInput.value.trim(), host: hostInput.value.trim() });
  });

  const summary = h('div', { class: 'card bulk', 'aria-live': 'polite' });
  const list = h('div', {});
  replace(main, h('div', { class: 'page-head' }, h('h1', {}, 'Dead letters')),
    h('p', { class: 'muted' }, 'Timers that failed every attempt. Retrying one attempts it again now with a fresh count; deleting one removes it for good.'),
    form, summary, list);

  const reload = () => render(main, ctx);
  if (session.canWrite) {
    // A dry run counts what a bulk action would change (up to 100,000).
    let count;
    try {
      count = await post('/v1/timers:retry-failed', { ...filter, dry_run: true });
    } catch (e) {
      replace(summary, h('p', { class: 'error' }, e.message));
      return;
    }
    const n = `${formatNumber(count.matched)}${count.more ? '+' : ''}`;
    const one = count.matched === 1 && !count.more;
    const what = `${n} dead letter${one ? '' : 's'}${prefix ? ` with an id starting with “${prefix}”` : ''}${host ? ` to ${host}` : ''}`;
    replace(summary, h('p', { class: 'bulk-count' }, h('strong', {}, n), ` dead letter${one ? '' : 's'} match${one ? 'es' : ''}${prefix || host ? ' the filter' : ''}.`),
      count.matched > 0 ? h('div', { class: 'actions left' },
        h('button', { type: 'button', class: 'primary', dataset: { action: 'retry-all' },
          onclick: () => bulk(ctx, 'retry', filter, what, reload) }, `Retry all ${n}…`),
        h('button', { type: 'button', class: 'danger', dataset: { action: 'delete-all' },
          onclick: () => bulk(ctx, 'delete', filter, what, reload) }, `Delete all ${n}…`)) : null);
  } else {
    const stats = await get('/v1/stats');
    replace(summary, h('p', { class: 'bulk-count' }, h('strong', {}, formatNumber(stats.counts.failed)),
      ' dead letters in all. A read token can look, not retry or delete.'));
  }

  const page = await get(`/v1/timers${query({ state: 'failed', limit: PAGE, after, ...filter })}`);
  replace(list, table('Dead letters, oldest failure first', [
    ['Id', (t) => h('a', { href: `#/timer/${encodeURIComponent(t.id)}`, class: 'mono' }, t.id)],
    ['Failed', (t) => timeEl(t.updated_ms)],
    ['Attempts', (t) => String(t.attempts)],
    ['Target', (t) => h('span', { class: 'mono' }, targetText(t.target))],
    ['Last error', (t) => h('span', { class: 'error-text' }, t.last_error || '')],
    ...(session.canWrite ? [['', (t) => h('button', { type: 'button', class: 'ghost small',
      'aria-label': `Retry ${t.id}`, onclick: () => retryOne(ctx, t, reload) }, 'Retry')]] : []),
  ], page.timers, 'No dead letters here.'),
  page.next_after ? h('nav', { class: 'pager', 'aria-label': 'Pages' },
    h('button', { type: 'button', class: 'ghost', onclick: () => ctx.navigate('/dead-letters', { ...filter, after: page.next_after }) }, 'Next page')) : null);
}

async function retryOne(ctx, t, reload) {
  if (!await confirmAction({ title: `Retry ${t.id}?`, message: 'It is attempted again now, with a fresh count of attempts.', confirm: 'Retry now' })) return;
  try {
    await post(`${timerPath(t.id)}:retry`);
    ctx.toast(`Retrying ${t.id}.`);
  } catch (e) {
    ctx.toast(e.message, 'error');
  }
  await reload();
}

// Confirms with the count, then calls until the server says there is no
// more (each call changes at most 10,000, in chunks, each timer re-checked).
async function bulk(ctx, action, filter, what, reload) {
  const retry = action === 'retry';
  const ok = await confirmAction({
    title: retry ? 'Retry dead letters?' : 'Delete dead letters?',
    message: [h('p', {}, `${retry ? 'Retry' : 'Delete'} ${what}.`),
      h('p', { class: 'muted' }, retry
        ? 'Each is attempted again now with a fresh count of attempts. Dead letters that fail after this moment are not included.'
        : 'They are removed from the store for good; this cannot be undone.')],
    confirm: retry ? 'Retry all' : 'Delete all',
    danger: !retry,
  });
  if (!ok) return;
  let done = 0;
  let before;
  try {
    for (;;) {
      // Without a filter the action is meant for every dead letter: the
      // server wants that said ("all": true) rather than an empty body.
      const scope = filter.prefix || filter.host ? filter : { all: true };
      const answer = await post(`/v1/timers:${retry ? 'retry' : 'delete'}-failed`,
        { ...scope, ...(before ? { failed_before_ms: before } : {}) });
      before = answer.failed_before_ms;
      done += answer.done;
      if (!answer.more) break;
      ctx.toast(`${retry ? 'Retried' : 'Deleted'} ${formatNumber(done)} so far…`);
    }
    ctx.toast(`${retry ? 'Retried' : 'Deleted'} ${formatNumber(done)} dead letter${done === 1 ? '' : 's'}.`);
  } catch (e) {
    ctx.toast(`${e.message} (${formatNumber(done)} done before it)`, 'error');
  }
  await reload();
}
