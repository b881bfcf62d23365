// SPDX-License-Identifier: Apache-2.0
// The client in a browser: Debian's Chromium, driven by playwright-core
// (tests/ui's, installed by its `npm ci`; TICKWHEEL_TEST_PLAYWRIGHT names
// that node_modules), runs the compiled client as ES modules in a page and
// calls the API with a token, as a page would: no Node API, fetch and Web
// Crypto only. The page and the modules are handed to the browser by
// playwright from the compiled output; every API request goes to the real
// server: from a page of the server's own origin, and from one of an origin
// the server allows (--allow-origin, run_with_server.py's page origin:
// CORS preflights) or does not. scripts/run-tests.mjs runs this file only
// for typescript_client_browser_test.
import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import * as http from "node:http";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { ADMIN, SERVER, VECTORS } from "./support.js";

const PAGE_ORIGIN = process.env.TICKWHEEL_TEST_PAGE_ORIGIN ?? "";

// playwright-core, as much of it as this test uses.
interface Route {
  request(): { url(): string };
  fulfill(answer: { status: number; contentType: string; body: string }): Promise<void>;
}
interface Page {
  close(): Promise<void>;
  route(pattern: string, handler: (route: Route) => Promise<void>): Promise<void>;
  goto(url: string): Promise<unknown>;
  evaluate<R, A>(fn: (arg: A) => Promise<R>, arg: A): Promise<R>;
  on(event: "pageerror", handler: (e: Error) => void): void;
  on(event: "console", handler: (m: { type(): string; text(): string }) => void): void;
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

interface CrossOrigin {
  timer: string;
  flow: [boolean, number | null];
  reset: boolean;
  schedule: string;
  deleted: string;
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

// Runs in a page of an origin the server allows: every method the client
// uses (GET, POST, PUT, PATCH, DELETE) through CORS preflights.
async function crossOriginPage(arg: InPage): Promise<CrossOrigin> {
  type M = typeof import("../src/index.js");
  const m = (await import(arg.module)) as M;
  const client = new m.Client(arg.server, { token: arg.token, retries: 0 });
  let step = "";
  const call = <T>(name: string, p: () => Promise<T>): Promise<T> => {
    step = name;
    return p();
  };
  try {
    await call("create", () => client.create({ id: "br-cors", delay_ms: 600_000, target: { url: "http://127.0.0.1:9/never" } }));
    await call("reschedule", () => client.reschedule("br-cors", { delay_ms: 700_000 }));
    const timer = (await call("cancel", () => client.cancel("br-cors"))).state;
    const set = await call("setFlow", () => client.setFlow("br-flow", { rate_per_s: 7 }));
    const reset = (await call("resetFlow", () => client.resetFlow("br-flow"))).configured;
    await call("createSchedule", () => client.createSchedule({ id: "br-sched", every_ms: 3_600_000,
      target: { url: "http://127.0.0.1:9/never" } }));
    const schedule = (await call("updateSchedule", () => client.updateSchedule("br-sched", { jitter_ms: 10 }))).id;
    const deleted = (await call("deleteSchedule", () => client.deleteSchedule("br-sched"))).id;
    return { timer, flow: [set.configured, set.rate_per_s], reset, schedule, deleted };
  } catch (e) {
    throw new Error(`${step}: ${String(e)}`);
  }
}

// Runs in a page of an origin the server does not allow: the browser is
// refused (no answer it may read).
async function refusedPage(arg: InPage): Promise<[string, string, number]> {
  type M = typeof import("../src/index.js");
  const m = (await import(arg.module)) as M;
  try {
    await new m.Client(arg.server, { token: arg.token, retries: 0 }).whoami();
    return ["answered", "", 0];
  } catch (e) {
    if (!(e instanceof m.TickwheelError)) throw e;
    return [e.name, e.code, e.status];
  }
}

describe("the client in Chromium", () => {
  let context: Context;
  let profile: string;
  const out = dirname(dirname(fileURLToPath(import.meta.url))); // the compiled src/ and test/

  before(async () => {
    const modules = process.env.TICKWHEEL_TEST_PLAYWRIGHT;
    assert.ok(modules, "TICKWHEEL_TEST_PLAYWRIGHT names tests/ui's node_modules (ctest -R typescript_client_browser)");
    assert.ok(PAGE_ORIGIN, "TICKWHEEL_TEST_PAGE_ORIGIN (run_with_server.py)");
    const { chromium } = createRequire(join(modules, "x.js"))("playwright-core") as Playwright;
    profile = mkdtempSync(join(tmpdir(), "tickwheel-client-chromium-"));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: process.env.TW_CHROMIUM || "/usr/bin/chromium",
      headless: true,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"],
    });
  });
  after(async () => {
    await context?.close();
    rmSync(profile, { recursive: true, force: true });
  });

  // What the page's origin serves: the page, the compiled modules, the
  // webhook cases.
  function content(path: string): { status: number; contentType: string; body: string } {
    if (path === "page.html") {
      return { status: 200, contentType: "text/html", body: "<!doctype html><title>client</title>" };
    }
    if (path === "vectors.json") {
      return { status: 200, contentType: "application/json", body: readFileSync(VECTORS, "utf8") };
    }
    const file = normalize(join(out, path));
    if (!file.startsWith(join(out, "src")) || !file.endsWith(".js")) {
      return { status: 404, contentType: "text/plain", body: "" };
    }
    return { status: 200, contentType: "text/javascript", body: readFileSync(file, "utf8") };
  }

  // Runs fn in a page at origin and returns what it returned and what the
  // browser's console said (a refused request is told there); fails on a
  // page error. The server's own origin is played by playwright (its
  // routing); another is a real server on loopback, since Chromium lets
  // only a page on loopback reach a loopback address unasked.
  async function inPageAt<R>(origin: string, fn: (arg: InPage) => Promise<R>): Promise<[R, string[]]> {
    const prefix = `${origin}/tickwheel-client-test/`;
    const page = await context.newPage();
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    const consoleErrors: string[] = [];
    page.on("console", (m) => { if (m.type() === "error") consoleErrors.push(m.text()); });
    let pageServer: http.Server | undefined;
    if (origin === SERVER) {
      await page.route(`${prefix}**`, (route) => route.fulfill(content(route.request().url().slice(prefix.length))));
    } else {
      pageServer = http.createServer((req, res) => {
        const answer = content((req.url ?? "").slice("/tickwheel-client-test/".length));
        res.writeHead(answer.status, { "Content-Type": answer.contentType }).end(answer.body);
      });
      await new Promise<void>((resolve, reject) => {
        pageServer?.once("error", reject).listen(Number(new URL(PAGE_ORIGIN).port), "127.0.0.1", resolve);
      });
    }
    try {
      await page.goto(`${prefix}page.html`);
      const result = await page.evaluate(fn, {
        server: SERVER, token: ADMIN, vectors: `${prefix}vectors.json`, module: `${prefix}src/index.js`,
      }).catch((e: Error) => { throw new Error(`${e.message}\nthe browser's console:\n${consoleErrors.join("\n")}`); });
      assert.deepEqual(errors, []);
      return [result, consoleErrors];
    } finally {
      await page.close();
      pageServer?.closeAllConnections();
      await new Promise((resolve) => (pageServer ? pageServer.close(resolve) : resolve(undefined)));
    }
  }

  it("calls the server and verifies deliveries from a page of the server's origin", async () => {
    const [seen] = await inPageAt(SERVER, inPage);
    assert.equal(seen.noProcess, true);
    assert.deepEqual([seen.created, seen.state, seen.cancelled], ["br-1", "pending", "cancelled"]);
    assert.deepEqual(seen.missing, ["NotFoundError", "not_found", 404]);
    assert.deepEqual(seen.listed.sort(), ["br-list-0", "br-list-1", "br-list-2", "br-list-3", "br-list-4"]);
    assert.deepEqual(seen.anonymous, ["UnauthorizedError", "unauthenticated"]);
    const expected = (JSON.parse(readFileSync(VECTORS, "utf8")) as { cases: Array<{ name: string; valid: boolean }> })
      .cases.map((c): [string, boolean] => [c.name, c.valid]);
    assert.deepEqual(seen.vectors, expected);
  });

  it("calls the server with every method from a page of an allowed origin", async () => {
    const [seen] = await inPageAt(PAGE_ORIGIN, crossOriginPage);
    assert.deepEqual(seen, { timer: "cancelled", flow: [true, 7], reset: false, schedule: "br-sched", deleted: "br-sched" });
  });

  it("is refused from a page of another origin", async () => {
    const other = new URL(PAGE_ORIGIN);
    other.hostname = "localhost"; // another origin, the same page server
    const [seen, console] = await inPageAt(other.origin, refusedPage);
    assert.deepEqual(seen, ["UnavailableError", "connection", 0]);
    // Refused by the server's origin check (its preflight is a 403), not
    // by the browser's own rules.
    assert.ok(console.some((m) => m.includes("CORS policy") && m.includes("preflight")), console.join("\n"));
  });
});
