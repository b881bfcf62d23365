// SPDX-License-Identifier: Apache-2.0
// Times in the browser's time zone (the Unix ms on hover), numbers, sizes
// and durations.
import { h } from './dom.js';

const dateTime = new Intl.DateTimeFormat(undefined, {
  year: 'numeric', month: 'short', day: '2-digit',
  hour: '2-digit', minute: '2-digit', second: '2-digit',
});
const clock = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });
const number = new Intl.NumberFormat();

export const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
export const formatNumber = (n) => number.format(n);
export const formatClock = (ms) => clock.format(new Date(ms));

// "in 5 s", "3 min ago".
export function relative(ms, now = Date.now()) {
  const d = ms - now;
  const a = Math.abs(d);
  let text;
  if (a < 1000) return 'now';
  if (a < 90e3) text = `${Math.round(a / 1e3)} s`;
  else if (a < 90 * 60e3) text = `${Math.round(a / 60e3)} min`;
  else if (a < 36 * 3600e3) text = `${Math.round(a / 3600e3)} h`;
  else text = `${Math.round(a / 86400e3)} d`;
  return d > 0 ? `in ${text}` : `${text} ago`;
}

// <time> in local time, with the Unix ms (and the zone) on hover.
export function timeEl(ms, { withRelative = true } = {}) {
  if (ms === undefined || ms === null) return '—';
  const date = new Date(ms);
  return h('time', { datetime: date.toISOString(), title: `Unix ms ${ms} (${zone})`, dataset: { ms } },
    dateTime.format(date), withRelative ? h('span', { class: 'rel' }, ` (${relative(ms)})`) : null);
}

export function duration(ms) {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = Math.floor(ms / 1000);
  const d = Math.floor(s / 86400);
  const hh = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (d) return `${d} d ${hh} h`;
  if (hh) return `${hh} h ${m} min`;
  if (m) return `${m} min ${s % 60} s`;
  return `${s} s`;
}

export function bytes(n) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i += 1; }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}

// A count that stopped at `cap`: "100,000+".
export const capped = (n, cap) => (n >= cap ? `${formatNumber(cap)}+` : formatNumber(n));

// The host and path of a target, for tables.
export function targetText(target) {
  if (!target) return '';
  if (target.nats) return `nats: ${target.nats}`;
  try {
    const u = new URL(target.url);
    return `${u.host}${u.pathname}`;
  } catch {
    return target.url;
  }
}

export const STATES = ['pending', 'delivering', 'delivered', 'failed', 'cancelled'];
export const stateBadge = (state) => h('span', { class: `state state-${state}` }, state);
