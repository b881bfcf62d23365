// SPDX-License-Identifier: Apache-2.0
// The client over HTTPS with a private CA (NODE_EXTRA_CA_CERTS, which
// scripts/run-tests.mjs sets to the test CA), and the retry of a 503 with
// the same id: the TLS server runs with --max-connections 1, so a held
// connection makes the next request 503 overloaded. In this order: the
// client's kept-alive connection holds the only one after the first call.
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { Client, TickwheelError } from "../src/index.js";
import { ADMIN, CA_FILE, TLS_SERVER, holdTheOnlyConnection } from "./support.js";

describe("Client over HTTPS", () => {
  it("refuses a server whose CA it does not trust", async () => {
    assert.equal(process.env.NODE_EXTRA_CA_CERTS, CA_FILE);
    const env = { ...process.env };
    delete env.NODE_EXTRA_CA_CERTS;
    const index = new URL("../src/index.js", import.meta.url).href;
    const script = `import { Client } from ${JSON.stringify(index)};
      try { await new Client(${JSON.stringify(TLS_SERVER)}, { token: "x", retries: 0 }).whoami(); console.log("answered"); }
      catch (e) { console.log(JSON.stringify({ name: e.name, status: e.status, code: e.code })); }`;
    const out = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, ["--input-type=module", "-e", script], { env },
        (error, stdout) => (error ? reject(error) : resolve(stdout))));
    assert.deepEqual(JSON.parse(out), { name: "UnavailableError", status: 0, code: "connection" });
  });

  it("retries a 503 with the same id", async () => {
    const held = await holdTheOnlyConnection(TLS_SERVER);
    const refusals: Array<[number, number, string]> = [];
    const client = new Client(TLS_SERVER, {
      token: ADMIN,
      retries: 3,
      onRetry: (attempt: number, error: TickwheelError) => {
        refusals.push([attempt, error.status, error.code]);
        held.destroy(); // the next attempt finds the server free
      },
    });
    const marker = `ts-retry-${randomUUID()}`;
    const t = await client.create({ target: { url: "http://127.0.0.1:9/never" }, delay_ms: 600_000, payload: marker });
    assert.deepEqual(refusals[0], [1, 503, "overloaded"]);
    assert.equal((await client.get(t.id)).payload, marker);
    let made = 0;
    for await (const p of client.list("pending")) if (p.payload === marker) made++;
    assert.equal(made, 1);
  });

  it("calls over HTTPS with a private CA", async () => {
    const client = new Client(TLS_SERVER, { token: ADMIN });
    assert.deepEqual(await client.whoami(), { role: "admin" });
    const t = await client.create({ target: { url: "http://127.0.0.1:9/never" }, delay_ms: 600_000, id: "ts-tls" });
    assert.equal((await client.get("ts-tls")).id, t.id);
  });
});
