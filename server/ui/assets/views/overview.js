// SPDX-License-Identifier: Apache-2.0
// Overview: counts by state, what is due soon, live charts of the last
// hour (the server's own in-memory series), the store and the node.
import { get } from '../api.js';
import { h, replace } from '../dom.js';
import { lineChart } from '../chart.js';
import { bytes, capped, duration, formatNumber, timeEl } from '../format.js';

const POLL_MS = 5000;

export async function render(main, ctx) {
  const body = h('div', { class: 'overview' });
  const updated = h('p', { class: 'muted small', 'aria-live': 'off' });
  replace(main, h('div', { class: 'page-head' }, h('h1', {}, 'Overview'), updated), body);
  let timer = null;
  const refresh = async () => {
    try {
      const [stats, series] = await Promise.all([get('/v1/stats'), get('/v1/stats/series')]);
      if (!ctx.live) return;
      replace(body, ...content(stats, series));
      replace(updated, 'Updated ', timeEl(stats.now_ms, { withRelative: false }), ', every 5 s');
    } catch (e) {
      if (ctx.live) replace(updated, h('span', { class: 'error' }, `Not updated: ${e.message}`));
    }
    if (ctx.live) timer = setTimeout(refresh, POLL_MS);
  };
  await refresh();
  return () => clearTimeout(timer);
}

function card(label, value, { href, cls = '', hint } = {}) {
  const inner = [h('span', { class: 'card-label' }, label), h('span', { class: 'card-value' }, value),
    hint ? h('span', { class: 'card-hint muted' }, hint) : null];
  return href
    ? h('a', { class: `stat ${cls}`, href }, inner)
    : h('div', { class: `stat ${cls}` }, inner);
}

function content(stats, series) {
  const c = stats.counts;
  const cap = stats.due.cap;
  const pts = series.points;
  const line = (key) => pts.map((p) => [p.t, p[key]]);
  return [
    h('section', { 'aria-labelledby': 'h-states' },
      h('h2', { id: 'h-states' }, 'Timers by state'),
      h('div', { class: 'stats' },
        card('Pending', formatNumber(c.pending), { href: '#/timers?state=pending', cls: 's-pending', hint: 'incl. retries in backoff' }),
        card('In window', formatNumber(stats.in_window), { hint: 'loaded in memory, due soon' }),
        card('Delivering', formatNumber(c.delivering), { href: '#/timers?state=delivering', cls: 's-delivering' }),
        card('Delivered', formatNumber(c.delivered), { href: '#/timers?state=delivered', cls: 's-delivered', hint: 'kept for the retention' }),
        card('Failed', formatNumber(c.failed), { href: '#/dead-letters', cls: 's-failed', hint: 'dead letters' }),
        card('Cancelled', formatNumber(c.cancelled), { href: '#/timers?state=cancelled', cls: 's-cancelled' }))),
    h('section', { 'aria-labelledby': 'h-due' },
      h('h2', { id: 'h-due' }, 'Due'),
      h('div', { class: 'stats' },
        card('Next minute', capped(stats.due.minute, cap), { hint: 'overdue included' }),
        card('Next hour', capped(stats.due.hour, cap)),
        card('Next day', capped(stats.due.day, cap)))),
    h('section', { 'aria-labelledby': 'h-charts' },
      h('h2', { id: 'h-charts' }, 'Last hour'),
      h('div', { class: 'charts' },
        lineChart('Creates', [{ label: 'created', cls: 'c1', values: line('created') }], '/s'),
        lineChart('Deliveries', [{ label: 'delivered', cls: 'c2', values: line('delivered') }], '/s'),
        lineChart('Retries', [{ label: 'retried', cls: 'c3', values: line('retried') },
          { label: 'dead letters', cls: 'c4', values: line('failed') }], '/s'),
        lineChart('Lateness', [{ label: 'p50', cls: 'c1', values: line('p50') },
          { label: 'p99', cls: 'c4', values: line('p99') }], ' ms'))),
    h('section', { 'aria-labelledby': 'h-node' },
      h('h2', { id: 'h-node' }, 'Server'),
      h('dl', { class: 'facts' },
        h('dt', {}, 'Mode'), h('dd', {}, stats.mode === 'cluster'
          ? [`cluster node `, h('code', {}, stats.node), ' · ', h('a', { href: '#/cluster' }, 'cluster view')]
          : 'single node (embedded store)'),
        h('dt', {}, 'Store'), h('dd', {}, `${stats.store.kind === 'postgresql' ? 'PostgreSQL' : 'RocksDB'}, about ${bytes(stats.store.bytes)}`),
        h('dt', {}, 'Version'), h('dd', {}, stats.version),
        h('dt', {}, 'Up for'), h('dd', {}, duration(stats.uptime_ms), ', since ', timeEl(stats.started_ms, { withRelative: false })))),
  ];
}
