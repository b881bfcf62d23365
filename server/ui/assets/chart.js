// SPDX-License-Identifier: Apache-2.0
// A small SVG line chart of a time series: no library, scales to its box,
// described for screen readers by its latest values.
import { s, h } from './dom.js';
import { formatClock } from './format.js';

const W = 320;
const H = 120;
const PAD = { l: 40, r: 8, t: 8, b: 20 };

// series: [{label, cls, values: [[t_ms, v], ...]}]; unit: "/s" or " ms".
export function lineChart(title, series, unit) {
  const points = series.flatMap((x) => x.values);
  const latest = series.map((x) => {
    const last = x.values[x.values.length - 1];
    return `${x.label} ${last ? round(last[1]) : '—'}${unit}`;
  }).join(', ');
  const figure = h('figure', { class: 'chart' },
    h('figcaption', {}, h('span', {}, title), h('span', { class: 'chart-latest' }, latest)));
  if (Math.max(...series.map((x) => x.values.length)) < 2) {
    figure.append(h('p', { class: 'muted chart-empty' },
      'Collecting: a point every 10 s; the last hour is kept.'));
    return figure;
  }
  const t0 = Math.min(...points.map((p) => p[0]));
  const t1 = Math.max(...points.map((p) => p[0]));
  const vmax = niceMax(Math.max(...points.map((p) => p[1])));
  const x = (t) => PAD.l + ((t - t0) / Math.max(1, t1 - t0)) * (W - PAD.l - PAD.r);
  const y = (v) => H - PAD.b - (v / vmax) * (H - PAD.t - PAD.b);
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': `${title}: ${latest}`,
    preserveAspectRatio: 'none' },
    s('line', { class: 'axis', x1: PAD.l, y1: H - PAD.b, x2: W - PAD.r, y2: H - PAD.b }),
    s('line', { class: 'grid', x1: PAD.l, y1: y(vmax / 2), x2: W - PAD.r, y2: y(vmax / 2) }),
    s('line', { class: 'grid', x1: PAD.l, y1: PAD.t, x2: W - PAD.r, y2: PAD.t }),
    s('text', { class: 'tick', x: PAD.l - 4, y: PAD.t + 4, 'text-anchor': 'end' }, round(vmax)),
    s('text', { class: 'tick', x: PAD.l - 4, y: H - PAD.b, 'text-anchor': 'end' }, '0'),
    s('text', { class: 'tick', x: PAD.l, y: H - 4 }, formatClock(t0)),
    s('text', { class: 'tick', x: W - PAD.r, y: H - 4, 'text-anchor': 'end' }, formatClock(t1)),
    series.map((line) => s('polyline', {
      class: `line ${line.cls}`,
      points: line.values.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(' '),
    })));
  figure.append(svg);
  if (series.length > 1) {
    figure.append(h('ul', { class: 'legend' },
      series.map((line) => h('li', {}, h('span', { class: `swatch ${line.cls}` }), line.label))));
  }
  return figure;
}

function round(v) {
  if (v >= 100) return Math.round(v).toString();
  if (v >= 10) return v.toFixed(1);
  return v.toFixed(2).replace(/\.?0+$/, '') || '0';
}

function niceMax(v) {
  if (v <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (v <= m * p) return m * p;
  return 10 * p;
}
