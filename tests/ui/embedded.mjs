// SPDX-License-Identifier: Apache-2.0
// The console against a real `tickwheel serve --ui` on the embedded store,
// with tokens (admin and read) and a real webhook receiver. Run by
// console_browser_test.cc, which sets:
//   TW_URL, TW_ADMIN_TOKEN, TW_READ_TOKEN, TW_RECEIVER (http://127.0.0.1:PORT:
//   /ok answers 200; /flaky answers 500 twice per timer id, then 200),
//   TW_NODE_MODULES, TW_SCREENSHOTS.
import { assert, call, env, launch, newPage, server, shot, signIn, steps, until } from './lib.mjs';

const admin = env('TW_ADMIN_TOKEN');
const read = env('TW_READ_TOKEN');
const receiver = env('TW_RECEIVER');
const run = Date.now().toString(36);
const id = (name) => `${name}-${run}`;

const { context, close } = await launch();
const page = await newPage(context);
const state = async (timer) => (await call('GET', `/v1/timers/${timer}`, undefined, admin)).body?.state;
const create = (timer, delayMs, path, extra = {}) => call('POST', '/v1/timers', {
  id: timer, delay_ms: delayMs, target: { url: `${receiver}${path}` }, payload: { order: 42, timer }, ...extra,
}, admin);

await steps([
  ['the console is served with a strict CSP, content types and revalidation', async () => {
    const res = await fetch(`${server}/ui/`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-security-policy'), /script-src 'self'/);
    assert.doesNotMatch(res.headers.get('content-security-policy'), /unsafe-inline|unsafe-eval/);
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(res.headers.get('cache-control'), 'no-cache');
    const js = await fetch(`${server}/ui/app.js`);
    assert.equal(js.headers.get('content-type'), 'text/javascript; charset=utf-8');
    const again = await fetch(`${server}/ui/app.js`, { headers: { 'If-None-Match': js.headers.get('etag') } });
    assert.equal(again.status, 304);
    assert.equal((await fetch(`${server}/ui/nope.js`)).status, 404);
  }],

  ['without a token the console asks for one; a wrong one is refused', async () => {
    await page.goto(`${server}/ui/`);
    await page.getByLabel('API token').fill('not-a-token-of-this-server');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('That token was refused').waitFor();
    assert.ok(!page.url().includes('token'), 'no token in the URL');
  }],

  ['an admin token signs in; the token stays out of URLs and cookies', async () => {
    await signIn(page, admin);
    assert.equal(await page.locator('#role').textContent(), 'admin');
    assert.ok(!page.url().includes(admin));
    assert.deepEqual(await context.cookies(), []);
    assert.equal(await page.evaluate(() => sessionStorage.getItem('tickwheel.token')), admin);
  }],

  ['timers created through the API appear, then fire', async () => {
    await page.goto(`${server}/ui/#/timers?state=pending`);
    await page.getByRole('heading', { name: 'Timers' }).waitFor();
    for (let i = 1; i <= 3; i += 1) assert.equal((await create(id(`fire${i}`), 2500, '/ok')).status, 201);
    for (const name of ['later', 'cancel', 'resched', 'esc']) {
      assert.equal((await create(id(name), 3600e3, '/ok')).status, 201);
    }
    await page.getByRole('link', { name: id('fire1') }).waitFor();
    await page.getByRole('link', { name: id('later') }).waitFor();
    await shot(page, 'timers');
    await page.getByRole('link', { name: id('fire1') }).waitFor({ state: 'detached' });
    await page.getByRole('tab', { name: 'delivered' }).click();
    await page.getByRole('link', { name: id('fire1') }).waitFor();
    await page.getByRole('link', { name: id('fire1') }).click();
    await page.getByRole('heading', { name: id('fire1') }).waitFor();
    await page.locator('.state-delivered').first().waitFor();
    await page.getByRole('cell', { name: '200', exact: true }).waitFor();
    assert.match(await page.locator('time').first().getAttribute('title'), /^Unix ms \d+ \(Europe\/Berlin\)$/);
    assert.match(await page.locator('pre.json').textContent(), /"order": 42/);
    await shot(page, 'timer');
  }],

  ['a pending timer is cancelled from its page, after confirming', async () => {
    await page.goto(`${server}/ui/#/timer/${id('cancel')}`);
    await page.getByRole('button', { name: 'Cancel…' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByText('It will not fire').waitFor();
    await dialog.getByRole('button', { name: 'Cancel timer' }).click();
    await page.locator('.page-head .state-cancelled').waitFor();
    assert.equal(await state(id('cancel')), 'cancelled');
  }],

  ['Escape dismisses a confirmation and nothing changes', async () => {
    await page.goto(`${server}/ui/#/timer/${id('esc')}`);
    await page.getByRole('button', { name: 'Cancel…' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('dialog').waitFor();
    await page.keyboard.press('Escape');
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    assert.equal(await state(id('esc')), 'pending');
  }],

  ['a pending timer is rescheduled with the picker and "+5 min"', async () => {
    await page.goto(`${server}/ui/#/timer/${id('resched')}`);
    await page.getByRole('button', { name: 'Reschedule…' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByRole('button', { name: '+5 min' }).click();
    const before = Date.now();
    await dialog.getByRole('button', { name: 'Reschedule', exact: true }).click();
    await dialog.waitFor({ state: 'detached' });
    const t = (await call('GET', `/v1/timers/${id('resched')}`, undefined, admin)).body;
    assert.equal(t.state, 'pending');
    assert.ok(Math.abs(t.fire_at_ms - (before + 300e3)) < 30e3, `fire_at_ms ${t.fire_at_ms} is about 5 min from now`);
    // The picker itself: an exact local time.
    await page.getByRole('button', { name: 'Reschedule…' }).click();
    await dialog.getByLabel(/Fire at/).fill('2035-06-01T12:30:00');
    await dialog.getByRole('button', { name: 'Reschedule', exact: true }).click();
    await dialog.waitFor({ state: 'detached' });
    const t2 = (await call('GET', `/v1/timers/${id('resched')}`, undefined, admin)).body;
    assert.equal(t2.fire_at_ms, Date.UTC(2035, 5, 1, 10, 30), '12:30 in Berlin (CEST) is 10:30 UTC');
  }],

  ['a test timer is created from the console and fires', async () => {
    await page.goto(`${server}/ui/#/timers`);
    await page.getByRole('button', { name: 'New test timer' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Id').fill(id('made'));
    await dialog.getByLabel('Fire in (seconds)').fill('1');
    await dialog.getByLabel('Target URL').fill(`${receiver}/ok`);
    await dialog.getByRole('button', { name: 'Create' }).click();
    await page.getByRole('heading', { name: id('made') }).waitFor();
    const made = (await call('GET', `/v1/timers/${id('made')}`, undefined, admin)).body;
    assert.equal(made.fire_at_ms - made.created_ms, 1000, 'due 1 s after its create');
    assert.equal(made.retry.max_attempts, 3);
    assert.deepEqual(made.payload, { test: true });
    await page.locator('.page-head .state-delivered').waitFor();
  }],

  ['schedules: listed; a schedule page shows its next times here and in its zone and its last occurrences; an admin pauses, resumes and triggers it', async () => {
    const ny = id('ny-report');
    const tick = id('tick');
    assert.equal((await call('POST', '/v1/schedules', {
      id: ny, cron: '0 9 * * MON-FRI', time_zone: 'America/New_York', target: { url: `${receiver}/ok` }, payload: { report: 'daily' },
    }, admin)).status, 201);
    assert.equal((await call('POST', '/v1/schedules', { id: tick, every_ms: 1000, target: { url: `${receiver}/ok` } }, admin)).status, 201);
    await page.goto(`${server}/ui/#/schedules`);
    await page.getByRole('heading', { name: 'Schedules' }).waitFor();
    await page.getByRole('link', { name: ny }).waitFor();
    await page.getByRole('cell', { name: '0 9 * * MON-FRI (America/New_York)' }).waitFor();
    await page.getByRole('cell', { name: 'every 1 s' }).waitFor();
    await shot(page, 'schedules');
    await page.getByRole('link', { name: ny }).click();
    await page.getByRole('heading', { name: ny }).waitFor();
    // Ten weekday 09:00s in New York, each shown in Berlin (the browser's zone) too.
    const local = await page.locator('#h-next + * tbody tr td:nth-child(2)').allTextContents();
    assert.equal(local.length, 10);
    for (const text of local) assert.match(text, /^\d{4}-\d\d-\d\dT09:00:00-0[45]:00 E[SD]T$/);
    const here = await page.locator('#h-next + * tbody tr td:nth-child(1) time').first().getAttribute('title');
    assert.match(here, /\(Europe\/Berlin\)$/);
    const first = (await call('GET', `/v1/schedules/${ny}?next=1`, undefined, admin)).body.next[0];
    assert.equal(await page.locator('#h-next + * tbody tr td:nth-child(3)').first().textContent(), first.utc);
    // Pause and resume, each confirmed.
    await page.getByRole('button', { name: 'Pause…' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Pause', exact: true }).click();
    await page.locator('.page-head .schedule-paused').waitFor();
    assert.equal((await call('GET', `/v1/schedules/${ny}`, undefined, admin)).body.state, 'paused');
    await page.getByText('Next fire times (once resumed)').waitFor();
    await page.getByRole('button', { name: 'Resume…' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Resume', exact: true }).click();
    await page.locator('.page-head .schedule-active').waitFor();
    assert.equal((await call('GET', `/v1/schedules/${ny}`, undefined, admin)).body.state, 'active');
    // Trigger now: one occurrence, delivered, shown among the last ones.
    await page.getByRole('button', { name: 'Trigger now…' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Trigger now', exact: true }).click();
    const toast = page.getByText(new RegExp(`^Triggered ${ny}@\\d+\\.$`));
    await toast.waitFor();
    const triggered = (await toast.textContent()).slice('Triggered '.length, -1);
    // Among the last occurrences (the planned one, a weekday 09:00, is newer).
    const occurrence = page.locator('#h-last + * tbody tr', { has: page.getByRole('link', { name: triggered, exact: true }) });
    await occurrence.waitFor();
    await occurrence.locator('.state-delivered').waitFor();
    await occurrence.getByRole('cell', { name: '200', exact: true }).waitFor();
    const after = (await call('GET', `/v1/schedules/${ny}`, undefined, admin)).body;
    assert.equal(after.counts.triggered, 1);
    assert.equal(after.counts.fired, 1);
    assert.equal(after.occurrences, 0, 'the recurrence itself has not fired');
    await shot(page, 'schedule');
    // The every-second schedule: its occurrences appear as they fire, and
    // each one's page is a timer's.
    await page.goto(`${server}/ui/#/schedule/${tick}`);
    await page.getByRole('heading', { name: tick }).waitFor();
    await until('3 delivered occurrences', async () => (await page.locator('#h-last + * tbody .state-delivered').count()) >= 3);
    const link = page.locator('#h-last + * tbody tr', { has: page.locator('.state-delivered') }).first().getByRole('link');
    const href = await link.getAttribute('href');
    assert.match(href, new RegExp(`^#/timer/${tick}%40\\d+$`));
    await page.goto(`${server}/ui/${href}`);
    await page.getByRole('heading', { name: new RegExp(`^${tick}@\\d+$`) }).waitFor();
    await page.locator('.page-head .state-delivered').waitFor();
    assert.equal((await call('DELETE', `/v1/schedules/${tick}`, undefined, admin)).status, 200);
  }],

  ['search by id, id prefix and target host', async () => {
    await page.goto(`${server}/ui/#/timers?state=delivered`);
    await page.getByLabel('Id or id prefix').fill('fire');
    await page.getByRole('button', { name: 'Search' }).click();
    await until('3 rows starting with fire', async () => (await page.getByRole('link', { name: /^fire\d-/ }).count()) === 3);
    await page.getByLabel('Id or id prefix').fill('nothing-starts-so');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByText('No delivered timers match').waitFor();
    await page.getByLabel('Id or id prefix').fill(id('fire2'));
    await page.getByRole('button', { name: 'Search' }).click();
    await page.locator('.exact').getByRole('link', { name: id('fire2') }).waitFor();
    await page.goto(`${server}/ui/#/timers?state=delivered&host=127.0.0.1`);
    await until('3 rows to 127.0.0.1', async () => (await page.getByRole('link', { name: /^fire\d-/ }).count()) === 3);
    await page.goto(`${server}/ui/#/timers?state=delivered&host=elsewhere.example`);
    await page.getByText('No delivered timers match').waitFor();
  }],

  ['dead letters: counted by filter, bulk-retried from the console, then delivered', async () => {
    const flaky = ['dl1', 'dl2', 'dl3', 'dl4'].map(id);
    for (const t of [...flaky, id('other')]) {
      assert.equal((await create(t, 0, '/flaky', { retry: { max_attempts: 2, backoff_ms: 50 } })).status, 201);
    }
    await until('5 dead letters', async () => (await Promise.all([...flaky, id('other')].map(state))).every((s) => s === 'failed'));
    await page.goto(`${server}/ui/#/dead-letters`);
    await page.getByRole('link', { name: id('dl1') }).waitFor();
    await page.getByRole('cell', { name: /HTTP 500|500/ }).first().waitFor();
    await shot(page, 'dead-letters');
    // Only this run's dl* timers: their ids start with "dl", the other's with "other".
    await page.getByLabel('Id prefix').fill('dl');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('4 dead letters match the filter.').waitFor();
    await page.getByRole('button', { name: 'Retry all 4…' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByText('Retry 4 dead letters with an id starting with “dl”.').waitFor();
    await dialog.getByRole('button', { name: 'Retry all' }).click();
    await page.getByText('Retried 4 dead letters.').waitFor();
    await until('the retried ones delivered', async () => (await Promise.all(flaky.map(state))).every((s) => s === 'delivered'));
    assert.equal(await state(id('other')), 'failed', 'the filter left the other dead letter alone');
  }],

  ['flows: listed with their last minute; an admin sets limits, pauses, resumes and resets', async () => {
    const flow = id('ui-flow');
    const row = () => page.getByRole('row').filter({ hasText: flow });
    for (let i = 0; i < 3; i += 1) {
      assert.equal((await create(id(`flowed${i}`), 300, '/ok', { flow })).status, 201);
    }
    await until('the flow\'s timers delivered', async () => (await state(id('flowed2'))) === 'delivered');
    await page.goto(`${server}/ui/#/flows`);
    await page.getByRole('heading', { name: 'Flows' }).waitFor();
    // Columns: flow, limits, state, due, in flight, sent, delivered, throttled.
    const cell = (n) => row().getByRole('cell').nth(n).textContent();
    await until('the flow listed with 3 delivered', async () =>
      (await row().count()) === 1 && (await cell(6)) === '3');
    assert.match(await cell(0), /defaults/);
    assert.equal(await cell(1), 'no limit');
    assert.equal(await cell(2), 'sending');
    await row().getByRole('button', { name: `Set the limits of ${flow}` }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Rate (attempts a second)').fill('5');
    await dialog.getByLabel('Max in flight').fill('2');
    await dialog.getByRole('button', { name: 'Save' }).click();
    await row().getByText('5/s (burst 1), 2 at once').waitFor();
    const stored = (await call('GET', `/v1/flows/${flow}`, undefined, admin)).body;
    assert.equal(stored.settings.rate_per_s, 5);
    assert.equal(stored.max_in_flight, 2);
    await row().getByRole('button', { name: `Pause ${flow}` }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Pause' }).click();
    await row().getByText('paused').waitFor();
    for (let i = 0; i < 2; i += 1) {
      assert.equal((await create(id(`held${i}`), 0, '/ok', { flow })).status, 201);
    }
    await until('the held timers counted as due', async () => (await cell(3)) === '2');
    assert.equal(await state(id('held0')), 'pending');
    await shot(page, 'flows');
    await row().getByRole('button', { name: `Resume ${flow}` }).click();
    await until('the held timers delivered after the resume', async () =>
      (await state(id('held0'))) === 'delivered' && (await state(id('held1'))) === 'delivered');
    await row().getByRole('button', { name: `Reset ${flow} to the defaults` }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Reset' }).click();
    await row().getByText('no limit').waitFor();
    assert.equal((await call('GET', `/v1/flows/${flow}`, undefined, admin)).body.configured, false);
  }],

  ['flows: a bad limit is refused in the form, naming it', async () => {
    await page.goto(`${server}/ui/#/flows`);
    await page.getByRole('button', { name: 'Set a flow…' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Flow', { exact: true }).fill(id('ui-bad'));
    await dialog.getByLabel('Rate (attempts a second)').fill('-3');
    await dialog.getByRole('button', { name: 'Save' }).click();
    await dialog.getByText('The rate must be a number above 0').waitFor();
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    assert.equal((await call('GET', `/v1/flows/${id('ui-bad')}`, undefined, admin)).body.configured, false);
  }],

  ['a read token gets a read-only console, and the server refuses its writes', async () => {
    const ro = await newPage(context); // a new tab: its own sessionStorage
    await signIn(ro, read);
    assert.equal(await ro.locator('#role').textContent(), 'read-only');
    await ro.goto(`${server}/ui/#/timer/${id('other')}`);
    await ro.locator('.page-head .state-failed').waitFor();
    assert.equal(await ro.getByRole('button', { name: /Retry|Cancel|Reschedule/ }).count(), 0);
    await ro.goto(`${server}/ui/#/dead-letters`);
    await ro.getByText(/dead letters in all/).waitFor();
    assert.equal(await ro.getByRole('button', { name: /Retry|Delete/ }).count(), 0);
    await ro.goto(`${server}/ui/#/schedule/${id('ny-report')}`);
    await ro.getByRole('heading', { name: id('ny-report') }).waitFor();
    await ro.locator('#h-next + * tbody tr').first().waitFor();
    assert.equal(await ro.getByRole('button', { name: /Pause|Resume|Trigger/ }).count(), 0);
    assert.equal((await call('POST', `/v1/schedules/${id('ny-report')}:pause`, {}, read)).status, 403);
    await ro.goto(`${server}/ui/#/timers`);
    await ro.getByRole('heading', { name: 'Timers' }).waitFor();
    assert.equal(await ro.getByRole('button', { name: 'New test timer' }).count(), 0);
    await shot(ro, 'read-only');
    // The buttons are hidden; the server is what enforces it.
    const status = await ro.evaluate(async (t) => (await fetch(`/v1/timers/${t}:retry`, {
      method: 'POST', headers: { Authorization: `Bearer ${sessionStorage.getItem('tickwheel.token')}` },
    })).status, id('other'));
    assert.equal(status, 403);
    assert.equal(await state(id('other')), 'failed');
    const bulk = await call('POST', '/v1/timers:delete-failed', {}, read);
    assert.equal(bulk.status, 403);
    await ro.goto(`${server}/ui/#/flows`);
    await ro.getByRole('heading', { name: 'Flows' }).waitFor();
    assert.equal(await ro.getByRole('button', { name: /Pause|Resume|Set|Reset/ }).count(), 0);
    assert.equal((await call('PUT', `/v1/flows/${id('ui-flow')}`, { rate_per_s: 1 }, read)).status, 403);
    await ro.close();
  }],

  ['the keyboard reaches every view', async () => {
    await page.goto(`${server}/ui/#/`);
    await page.reload(); // focus starts at the top of a fresh page
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    await page.keyboard.press('Tab'); // the skip link first
    assert.equal(await page.evaluate(() => document.activeElement.textContent), 'Skip to content');
    await page.locator('a[data-nav="dead-letters"]').focus();
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Dead letters' }).waitFor();
  }],

  ['the overview counts states and charts the last hour', async () => {
    await page.goto(`${server}/ui/#/`);
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    await until('a chart point', async () => {
      await page.reload();
      await page.getByRole('heading', { name: 'Overview' }).waitFor();
      return (await page.locator('.chart svg').count()) === 4; // two points or more in each
    }, 40000);
    // Nothing is due by now (what is pending fires in an hour or in 2035):
    // the page, reloaded after /v1/stats answered, shows the same figures.
    const stats = (await call('GET', '/v1/stats', undefined, admin)).body;
    await page.reload();
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    for (const s of ['pending', 'delivering', 'delivered', 'failed', 'cancelled']) {
      assert.equal(await page.locator(`a.stat.s-${s} .card-value`).textContent(), String(stats.counts[s]), s);
    }
    const due = page.locator('section[aria-labelledby="h-due"] .card-value');
    assert.deepEqual(await due.allTextContents(),
      [stats.due.minute, stats.due.hour, stats.due.day].map(String), 'due in a minute, an hour, a day');
    await shot(page, 'overview', { fullPage: true });
  }],

  ['dark mode and a phone screen', async () => {
    await page.getByRole('button', { name: /Theme/ }).click(); // auto -> light
    await page.getByRole('button', { name: /Theme/ }).click(); // light -> dark
    assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), 'dark');
    const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    assert.equal(bg, 'rgb(15, 18, 23)');
    await shot(page, 'overview-dark');
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${server}/ui/#/timer/${id('fire1')}`);
    await page.getByRole('heading', { name: id('fire1') }).waitFor();
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 1, `no sideways scrolling on a phone (${overflow} px)`);
    await shot(page, 'timer-phone-dark', { fullPage: true });
    await page.getByRole('button', { name: /Theme/ }).click(); // dark -> auto
    await page.goto(`${server}/ui/#/`);
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    await shot(page, 'overview-phone', { fullPage: true });
  }],
]);

await close();
