// SPDX-License-Identifier: Apache-2.0
// Shared by the browser scripts: Debian's Chromium driven by playwright-core
// (installed by `npm ci` into $TW_NODE_MODULES/.., no browser download),
// the API called directly, polling, and screenshots.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set (the test driver sets it)`);
  return v;
};

export const server = process.env.TW_URL;
export const screenshots = process.env.TW_SCREENSHOTS || join(tmpdir(), 'ui-screenshots');
mkdirSync(screenshots, { recursive: true });

// A persistent context on a fresh profile directory: Chromium with nothing
// that would reach for the network (the machine has none but loopback).
export async function launch() {
  const require = createRequire(join(env('TW_NODE_MODULES'), 'noop.js'));
  const { chromium } = require('playwright-core');
  const profile = mkdtempSync(join(tmpdir(), 'tickwheel-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.TW_CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--disable-dev-shm-usage'],
    viewport: { width: 1280, height: 860 },
    timezoneId: 'Europe/Berlin',
    locale: 'en-GB',
  });
  context.setDefaultTimeout(15000);
  const close = async () => {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  };
  return { context, close };
}

// A new tab with its own sessionStorage; fails the test on a page error or
// a Content-Security-Policy violation.
export async function newPage(context) {
  const page = await context.newPage();
  page.on('pageerror', (e) => { throw new Error(`page error: ${e.message}`); });
  page.on('console', (m) => {
    if (m.type() === 'error' && !/Failed to load resource/.test(m.text())) {
      console.error(`browser console: ${m.text()}`);
      if (/Content.Security.Policy/i.test(m.text())) process.exitCode = 1;
    }
  });
  return page;
}

export async function signIn(page, token) {
  await page.goto(`${server}/ui/`);
  await page.getByLabel('API token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Overview' }).waitFor();
}

// The API, as a client program would call it.
export async function call(method, path, body, token) {
  const res = await fetch(`${server}${path}`, {
    method,
    headers: { 'Content-Type': 'application/json', ...(token ? { Authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

export async function until(what, fn, ms = 20000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

export async function shot(page, name, options = {}) {
  const path = join(screenshots, `${name}.png`);
  await page.screenshot({ path, ...options });
  console.log(`screenshot ${path}`);
}

// Runs the named steps in order, printing each; the first failure ends the
// process with status 1.
export async function steps(list) {
  for (const [name, fn] of list) {
    const start = Date.now();
    try {
      await fn();
      console.log(`ok   ${name} (${Date.now() - start} ms)`);
    } catch (e) {
      console.error(`FAIL ${name}: ${e.stack || e}`);
      process.exitCode = 1;
      return false;
    }
  }
  return true;
}

export { assert, env };
