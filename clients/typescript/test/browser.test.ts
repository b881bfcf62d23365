// SPDX-License-Identifier: Apache-2.0
// The client in a browser: Debian's Chromium, driven by playwright-core
// (tests/ui's, installed by its `npm ci`; TICKWHEEL_TEST_PLAYWRIGHT names
// that node_modules), runs the compiled client as ES modules in a page of
// the server's own origin (the page and the modules are served to the
// browser by playwright from the compiled output, every /v1 request goes
// to the real server) and calls the API with a token, as a page would:
// no Node API, fetch and Web Crypto only. scripts/run-tests.mjs runs this
// file only for typescript_client_browser_test.
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { ADMIN, SERVER, VECTORS } from "./support.js";

// playwright-core, as much of it as this test uses.
interface Route {
  request(): { url(): string };
  fulfill(answer: { status: number; contentType: string; body: string }): Promise<void>;
}
interface Page {
  route(pattern: string, handler: (route: Route) => Promise<void>): Promise<void>;
  goto(url: string): Promise<unknown>;
  evaluate<R, A>(fn: (arg: A) => Promise<R>, arg: A): Promise<R>;
  on(event: "pageerror", handler: (e: Error) => void): void;
}
interface Context {
  newPage(): Promise<Page>;
  close(): Promise<void>;
}
interface Playwright {
  chromium: { launchPersistentContext(dir: string, options: Record<string, unknown>): Promise<Context> };
}

interface InPage {
  server: string;
  token: string;
  vectors: string;
  module: string;
}

interface Seen {
  created: string;
  state: string;
  cancelled: string;
  missing: [string, string, number];
  listed: string[];
  anonymous: [string, string];
  vectors: Array<[string, boolean]>;
  noProcess: boolean;
}

// Runs in the page: the client as a page's script would use it.
async function inPage(arg: InPage): Promise<Seen> {
  type M = typeof import("../src/index.js");
  const m = (await import(arg.module)) as M;
  const client = new m.Client(arg.server, { token: arg.token });
  const t = await client.create({ id: "br-1", delay_ms: 600_000, target: { url: "http://127.0.0.1:9/never" },
    payload: { from: "browser" } });
  const state = (await client.get("br-1")).state;
  const cancelled = (await client.cancel("br-1")).state;
  let missing: [string, string, number] = ["", "", 0];
  try {
    await client.get("br-no-such-timer");
  } catch (e) {
    if (e instanceof m.NotFoundError) missing = [e.name, e.code, e.status];
  }
  for (let i = 0; i < 5; i++) {
    await client.create({ id: `br-list-${i}`, delay_ms: 600_000, target: { url: "http://127.0.0.1:9/never" } });
  }
  const listed: string[] = [];
  for await (const timer of client.list("pending", { prefix: "br-list-", limit: 2 })) listed.push(timer.id);
  let anonymous: [string, string] = ["", ""];
  try {
    await new m.Client(arg.server).whoami(); // no TICKWHEEL_TOKEN in a page
  } catch (e) {
    if (e instanceof m.TickwheelError) anonymous = [e.name, e.code];
  }
  const doc = (await (await fetch(arg.vectors)).json()) as {
    tolerance_seconds: number;
    cases: Array<{ name: string; secrets: string[]; headers: Record<string, string>; body: string; now: number }>;
  };
  const vectors: Array<[string, boolean]> = [];
  for (const c of doc.cases) {
    try {
      await m.verifyWebhook(c.secrets, new Headers(c.headers), c.body, { now: c.now, toleranceSeconds: doc.tolerance_seconds });
      vectors.push([c.name, true]);
    } catch (e) {
      if (!(e instanceof m.WebhookVerificationError)) throw e;
      vectors.push([c.name, false]);
    }
  }
  return { created: t.id, state, cancelled, missing, listed, anonymous, vectors,
    noProcess: typeof (globalThis as { process?: unknown }).process === "undefined" };
}

describe("the client in Chromium", () => {
  it("calls the server and verifies deliveries from a page", async () => {
    const modules = process.env.TICKWHEEL_TEST_PLAYWRIGHT;
    assert.ok(modules, "TICKWHEEL_TEST_PLAYWRIGHT names tests/ui's node_modules (ctest -R typescript_client_browser)");
    const { chromium } = createRequire(join(modules, "x.js"))("playwright-core") as Playwright;
    const out = dirname(dirname(fileURLToPath(import.meta.url))); // the compiled src/ and test/
    const prefix = `${SERVER}/tickwheel-client-test/`;
    const profile = mkdtempSync(join(tmpdir(), "tickwheel-client-chromium-"));
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: process.env.TW_CHROMIUM || "/usr/bin/chromium",
      headless: true,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"],
    });
    try {
      const page = await context.newPage();
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(e.message));
      await page.route(`${prefix}**`, async (route) => {
        const path = route.request().url().slice(prefix.length);
        if (path === "page.html") {
          await route.fulfill({ status: 200, contentType: "text/html", body: "<!doctype html><title>client</title>" });
        } else if (path === "vectors.json") {
          await route.fulfill({ status: 200, contentType: "application/json", body: readFileSync(VECTORS, "utf8") });
        } else {
          const file = normalize(join(out, path));
          if (!file.startsWith(join(out, "src")) || !file.endsWith(".js")) {
            await route.fulfill({ status: 404, contentType: "text/plain", body: "" });
            return;
          }
          await route.fulfill({ status: 200, contentType: "text/javascript", body: readFileSync(file, "utf8") });
        }
      });
      await page.goto(`${prefix}page.html`);
      const seen = await page.evaluate(inPage, {
        server: SERVER, token: ADMIN, vectors: `${prefix}vectors.json`, module: `${prefix}src/index.js`,
      });
      assert.deepEqual(errors, []);
      assert.equal(seen.noProcess, true);
      assert.deepEqual([seen.created, seen.state, seen.cancelled], ["br-1", "pending", "cancelled"]);
      assert.deepEqual(seen.missing, ["NotFoundError", "not_found", 404]);
      assert.deepEqual(seen.listed.sort(), ["br-list-0", "br-list-1", "br-list-2", "br-list-3", "br-list-4"]);
      assert.deepEqual(seen.anonymous, ["UnauthorizedError", "unauthenticated"]);
      const expected = (JSON.parse(readFileSync(VECTORS, "utf8")) as { cases: Array<{ name: string; valid: boolean }> })
        .cases.map((c): [string, boolean] => [c.name, c.valid]);
      assert.deepEqual(seen.vectors, expected);
    } finally {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    }
  });
});
