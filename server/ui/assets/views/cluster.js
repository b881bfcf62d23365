// SPDX-License-Identifier: Apache-2.0
// Cluster: in cluster mode (PostgreSQL), the nodes with their heartbeats,
// the shards each owns, every shard's lease (owner, epoch, expiry) and this
// node's fenced writes.
import { get } from '../api.js';
import { h, replace, table } from '../dom.js';
import { formatNumber, timeEl } from '../format.js';

const POLL_MS = 5000;

export async function render(main, ctx) {
  const body = h('div', {});
  replace(main, h('div', { class: 'page-head' }, h('h1', {}, 'Cluster')), body);
  let timer = null;
  const load = async () => {
    try {
      const c = await get('/v1/cluster');
      if (!ctx.live) return;
      replace(body, ...(c.mode === 'cluster' ? view(c) : [h('p', { class: 'card' },
        'This server runs on its embedded store (RocksDB): one node, no shards, no leases. ',
        'Start nodes with --postgres to run a cluster (docs/cluster.md).')]));
    } catch (e) {
      if (ctx.live) replace(body, h('p', { class: 'error' }, e.message));
    }
    if (ctx.live) timer = setTimeout(load, POLL_MS);
  };
  await load();
  return () => clearTimeout(timer);
}

function view(c) {
  const owners = [...new Set(c.leases.filter((l) => l.live).map((l) => l.owner))].sort();
  const colour = (owner) => `owner-${owners.indexOf(owner) % 6}`;
  return [
    h('div', { class: 'stats' },
      h('div', { class: 'stat' }, h('span', { class: 'card-label' }, 'This node'), h('span', { class: 'card-value mono small-value' }, c.node)),
      h('div', { class: 'stat' }, h('span', { class: 'card-label' }, 'Nodes alive'), h('span', { class: 'card-value' }, String(c.nodes.filter((n) => n.alive).length))),
      h('div', { class: 'stat' }, h('span', { class: 'card-label' }, 'Shards'), h('span', { class: 'card-value' }, String(c.shards))),
      h('div', { class: 'stat' }, h('span', { class: 'card-label' }, 'Unowned shards'), h('span', { class: 'card-value' }, String(c.leases.filter((l) => !l.live).length))),
      h('div', { class: `stat ${c.fenced_writes ? 's-failed' : ''}` }, h('span', { class: 'card-label' }, 'Fenced writes'), h('span', { class: 'card-value' }, formatNumber(c.fenced_writes)),
        h('span', { class: 'card-hint muted' }, 'this node\'s, refused after losing a shard'))),
    h('section', { 'aria-labelledby': 'h-nodes' }, h('h2', { id: 'h-nodes' }, 'Nodes'),
      table('Nodes and their heartbeats', [
        ['Node', (n) => h('span', { class: 'mono' }, n.node_id, n.self ? h('span', { class: 'badge' }, 'this node') : null)],
        ['Alive', (n) => h('span', { class: n.alive ? 'ok-text' : 'error-text' }, n.alive ? 'yes' : 'no')],
        ['Shards owned', (n) => h('span', {}, h('span', { class: `swatch ${colour(n.node_id)}` }), String(n.shards))],
        ['Started', (n) => timeEl(n.started_ms)],
        ['Heartbeat expires', (n) => timeEl(n.expires_ms)],
      ], c.nodes, 'No node heartbeats.')),
    h('section', { 'aria-labelledby': 'h-leases' }, h('h2', { id: 'h-leases' }, 'Shard leases'),
      h('ul', { class: 'shards', 'aria-label': 'Shards by owner' }, c.leases.map((l) => h('li', {
        class: `shard ${l.live ? colour(l.owner) : 'free'}`,
        title: `shard ${l.shard}: ${l.live ? l.owner : 'no live lease'}, epoch ${l.epoch}, expires ${new Date(l.expires_ms).toLocaleString()} (Unix ms ${l.expires_ms})`,
      }, String(l.shard)))),
      h('details', {}, h('summary', {}, 'Every lease'),
        table('Shard leases', [
          ['Shard', (l) => String(l.shard)],
          ['Owner', (l) => h('span', { class: 'mono' }, l.owner || '—')],
          ['Epoch', (l) => String(l.epoch)],
          ['Expires', (l) => timeEl(l.expires_ms)],
          ['Live', (l) => (l.live ? 'yes' : 'no')],
        ], c.leases))),
  ];
}
