// SPDX-License-Identifier: Apache-2.0
// The cluster view against a real cluster node on PostgreSQL (no tokens:
// loopback). Run by console_browser_test.cc with TW_URL, TW_NODE,
// TW_RECEIVER (a webhook URL; the test checks what it received),
// TW_NODE_MODULES, TW_SCREENSHOTS.
import { assert, call, env, launch, newPage, server, shot, steps, until } from './lib.mjs';

const node = env('TW_NODE');
const receiver = env('TW_RECEIVER');
const { context, close } = await launch();
const page = await newPage(context);

await steps([
  ['without tokens the console opens at once, every action allowed', async () => {
    await page.goto(`${server}/ui/`);
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    assert.equal(await page.locator('#role').textContent(), 'anonymous');
    await page.getByText(`cluster node ${node}`).waitFor();
    await page.getByText(/PostgreSQL, about/).waitFor();
  }],

  ['the cluster view shows the node, its shards, their leases and fenced writes', async () => {
    await page.getByRole('link', { name: 'Cluster', exact: true }).click();
    await page.getByRole('heading', { name: 'Nodes', exact: true }).waitFor();
    await page.getByRole('cell', { name: new RegExp(`${node}\\s*this node`) }).waitFor();
    await page.getByRole('cell', { name: '16', exact: true }).waitFor(); // it owns all 16 shards
    assert.equal(await page.locator('.shards .shard').count(), 16);
    assert.equal(await page.locator('.shards .shard.free').count(), 0);
    const c = (await call('GET', '/v1/cluster')).body;
    assert.equal(c.mode, 'cluster');
    assert.equal(c.fenced_writes, 0);
    assert.ok(c.leases.every((l) => l.owner === node && l.live && l.epoch >= 1));
    await page.getByText('Every lease').click();
    await page.getByRole('cell', { name: '15', exact: true }).waitFor();
    await shot(page, 'cluster', { fullPage: true });
  }],

  ['timers on PostgreSQL are listed and fire', async () => {
    const r = await call('POST', '/v1/timers', { id: 'pg-1', delay_ms: 3600e3, target: { url: 'http://127.0.0.1:9/x' } });
    assert.equal(r.status, 201);
    const soon = await call('POST', '/v1/timers', { id: 'pg-2', delay_ms: 500, target: { url: receiver } });
    assert.equal(soon.status, 201);
    await page.goto(`${server}/ui/#/timers?state=pending&prefix=pg-`);
    await page.getByRole('link', { name: 'pg-1' }).first().waitFor();
    await until('pg-2 delivered', async () => (await call('GET', '/v1/timers/pg-2')).body?.state === 'delivered');
    await page.goto(`${server}/ui/#/timer/pg-2`);
    await page.locator('.page-head .state-delivered').waitFor();
    await page.getByRole('cell', { name: '200', exact: true }).waitFor();
  }],
]);

await close();
