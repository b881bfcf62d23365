// SPDX-License-Identifier: Apache-2.0
// What the tests share: the servers clients/testdata/run_with_server.py
// started (from the environment), a webhook receiver, polling with a
// deadline.
import * as http from "node:http";
import { after, before } from "node:test";
import * as net from "node:net";
import * as tls from "node:tls";
import { readFileSync } from "node:fs";
import type { AddressInfo } from "node:net";

function required(name: string): string {
  const value = process.env[name];
  if (!value) {
    // Fails (not skips) a suite run without run_with_server.py.
    throw new Error(`${name} is not set: run these tests through clients/testdata/run_with_server.py ` +
      "(ctest -R typescript_client)");
  }
  return value;
}

export const SERVER = required("TICKWHEEL_TEST_SERVER");
export const TLS_SERVER = required("TICKWHEEL_TEST_TLS_SERVER");
export const CA_FILE = required("TICKWHEEL_TEST_CA_FILE");
export const ADMIN = required("TICKWHEEL_TEST_ADMIN_TOKEN");
export const READ = required("TICKWHEEL_TEST_READ_TOKEN");
export const SECRETS = required("TICKWHEEL_TEST_WEBHOOK_SECRETS").split(" ");
export const OPENAPI = required("TICKWHEEL_TEST_OPENAPI");
export const VECTORS = required("TICKWHEEL_TEST_VECTORS");

/** Polls `predicate` until it is truthy; fails after `patienceMs`. */
export async function waitUntil<T>(predicate: () => Promise<T> | T, what: string, patienceMs = 30_000): Promise<T> {
  const end = Date.now() + patienceMs;
  for (;;) {
    const value = await predicate();
    if (value) return value;
    if (Date.now() > end) throw new Error(`${what} not met within ${patienceMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export interface Delivered {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** An HTTP receiver on loopback recording deliveries (headers, raw
 * body); paths starting with /fail answer 500. */
export class Receiver {
  readonly deliveries: Delivered[] = [];
  readonly #server: http.Server;
  #waiters: Array<() => void> = [];

  private constructor(server: http.Server) {
    this.#server = server;
  }

  static async start(): Promise<Receiver> {
    const server = http.createServer();
    const receiver = new Receiver(server);
    server.on("request", (req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        receiver.deliveries.push({ path: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks) });
        for (const wake of receiver.#waiters.splice(0)) wake();
        res.writeHead((req.url ?? "").startsWith("/fail") ? 500 : 200, { "Content-Length": "0" });
        res.end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return receiver;
  }

  url(path = "/hook"): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}${path}`;
  }

  /** The first delivery to `path`. */
  async waitFor(path: string, patienceMs = 30_000): Promise<Delivered> {
    const end = Date.now() + patienceMs;
    for (;;) {
      const found = this.deliveries.find((d) => d.path === path);
      if (found) return found;
      const left = end - Date.now();
      if (left <= 0) throw new Error(`no delivery to ${path} within ${patienceMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#waiters.push(() => { clearTimeout(timer); resolve(); });
      });
    }
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise((resolve) => this.#server.close(resolve));
  }
}

/** A receiver started before the suite's tests and closed after them: the
 * function returns it. */
export function suiteReceiver(): () => Receiver {
  let receiver: Receiver | undefined;
  before(async () => { receiver = await Receiver.start(); });
  after(async () => { await receiver?.close(); });
  return () => {
    if (receiver === undefined) throw new Error("the receiver starts before the suite's tests");
    return receiver;
  };
}

/** Opens a TCP connection to the TLS server (started with
 * --max-connections 1) and returns it once the server counts it: a probe
 * on another connection is then answered 503 overloaded. */
export async function holdTheOnlyConnection(url: string): Promise<net.Socket> {
  const { hostname, port } = new URL(url);
  const held = net.connect(Number(port), hostname);
  await new Promise<void>((resolve, reject) => { held.once("connect", resolve); held.once("error", reject); });
  const ca = readFileSync(CA_FILE);
  const probeRefused = () => new Promise<boolean>((resolve) => {
    const s = tls.connect({ host: hostname, port: Number(port), ca }, () => {
      s.write(`GET /v1/whoami HTTP/1.1\r\nHost: ${hostname}\r\nConnection: close\r\n\r\n`);
    });
    s.setTimeout(5000, () => { s.destroy(); resolve(false); });
    s.once("data", (d: Buffer) => { s.destroy(); resolve(d.toString("latin1").startsWith("HTTP/1.1 503")); });
    s.once("error", () => resolve(false));
  });
  await waitUntil(probeRefused, "the held connection counted by the server");
  return held;
}
