// SPDX-License-Identifier: Apache-2.0
// The client against a real tickwheel serve (tokens on): timers, dead
// letters, errors, tokens, the server's counts, a signed delivery.
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import {
  BadRequestError, Client, ConflictError, ForbiddenError, NotFoundError, TickwheelError, UnauthorizedError,
  WebhookVerificationError, verifyWebhook,
} from "../src/index.js";
import { ADMIN, READ, SECRETS, SERVER, suiteReceiver, waitUntil } from "./support.js";

describe("Client", () => {
  const receiver = suiteReceiver();
  const client = new Client(SERVER, { token: ADMIN });

  it("creates, gets, reschedules and cancels", async () => {
    const t = await client.create({ target: { url: receiver().url() }, delay_ms: 600_000, id: "ts-1", payload: { order: 42 } });
    assert.equal(t.id, "ts-1");
    assert.equal(t.state, "pending");
    const got = await client.get("ts-1");
    assert.deepEqual(got.payload, { order: 42 });
    const later = await client.reschedule("ts-1", { fire_at_ms: got.fire_at_ms + 1000 });
    assert.equal(later.fire_at_ms, got.fire_at_ms + 1000);
    assert.equal((await client.cancel("ts-1")).state, "cancelled");
    assert.equal((await client.get("ts-1")).state, "cancelled");
  });

  it("gives a create without id one, and repeats it safely", async () => {
    const t = await client.create({ target: { url: receiver().url() }, delay_ms: 600_000 });
    assert.match(t.id, /^[0-9a-f]{32}$/);
    const again = await client.create({ target: { url: receiver().url() }, delay_ms: 600_000, id: t.id });
    assert.equal(again.created_ms, t.created_ms); // 200: the same timer
  });

  it("rejects with typed errors carrying the server's code", async () => {
    await assert.rejects(client.create({ target: { url: receiver().url() }, delay_ms: -5 }),
      (e: unknown) => e instanceof BadRequestError && e.status === 400 && e.code === "negative_delay" &&
        e.field === "delay_ms");
    await assert.rejects(client.get("ts-no-such-timer"),
      (e: unknown) => e instanceof NotFoundError && e.code === "not_found");
    await client.create({ target: { url: receiver().url() }, delay_ms: 600_000, id: "ts-conflict" });
    await assert.rejects(client.create({ target: { url: receiver().url() }, delay_ms: 600_000, id: "ts-conflict", payload: 1 }),
      (e: unknown) => e instanceof ConflictError && e.code === "id_conflict");
    await client.cancel("ts-conflict");
    await assert.rejects(client.reschedule("ts-conflict", { delay_ms: 1 }),
      (e: unknown) => e instanceof ConflictError && e.code === "not_pending" && e instanceof TickwheelError);
  });

  it("sends ids with any character encoded", async () => {
    await assert.rejects(client.get("a b/c"), (e: unknown) => e instanceof BadRequestError && e.code === "invalid_id");
  });

  it("creates a batch all or nothing", async () => {
    const created = await client.createBatch([
      { id: "ts-b1", delay_ms: 600_000, target: { url: receiver().url() } },
      { delay_ms: 600_000, target: { url: receiver().url() } },
    ]);
    assert.deepEqual(created.map((c) => c.created), [true, true]);
    assert.equal(created[0]?.id, "ts-b1");
    assert.match(created[1]?.id ?? "", /^[0-9a-f]{32}$/);
    await assert.rejects(client.createBatch([
      { id: "ts-b2", delay_ms: 1, target: { url: receiver().url() } },
      { id: "ts-b1", delay_ms: 1, target: { url: receiver().url() } },
    ]), ConflictError);
    await assert.rejects(client.get("ts-b2"), NotFoundError);
  });

  it("lists page after page", async () => {
    const ids = Array.from({ length: 7 }, (_, i) => `ts-list-${i}`);
    for (const id of ids) await client.create({ target: { url: receiver().url() }, delay_ms: 600_000, id });
    const listed: string[] = [];
    for await (const t of client.list("pending", { prefix: "ts-list-", limit: 2 })) listed.push(t.id);
    assert.deepEqual(listed.sort(), ids);
    const page = await client.listPage("pending", { prefix: "ts-list-", limit: 2 });
    assert.equal(page.timers.length, 2);
    assert.ok(page.next_after);
  });

  it("retries and deletes dead letters", async () => {
    for (let i = 0; i < 3; i++) {
      await client.create({ target: { url: receiver().url(`/fail-${i}`) }, delay_ms: 0, id: `ts-dead-${i}`,
        retry: { max_attempts: 1, backoff_ms: 1 } });
    }
    for (let i = 0; i < 3; i++) {
      await waitUntil(async () => (await client.get(`ts-dead-${i}`)).state === "failed", `ts-dead-${i} failed`);
    }
    assert.equal((await client.retry("ts-dead-0")).state, "pending");
    await waitUntil(async () => (await client.get("ts-dead-0")).state === "failed", "failed again");
    const dry = await client.deleteFailed({ prefix: "ts-dead-", dry_run: true });
    assert.deepEqual([dry.matched, dry.done], [3, 0]);
    assert.equal(await client.retryAllFailed({ prefix: "ts-dead-2" }), 1);
    await waitUntil(async () => (await client.get("ts-dead-2")).state === "failed", "failed again");
    assert.equal(await client.deleteAllFailed({ prefix: "ts-dead-" }), 3);
    await assert.rejects(client.get("ts-dead-1"), NotFoundError);
    await assert.rejects(client.deleteFailed({}), (e: unknown) => e instanceof BadRequestError && e.field === "all");
  });

  it("reads the server's counts", async () => {
    assert.equal((await client.stats()).store.kind, "rocksdb");
    assert.deepEqual(await client.whoami(), { role: "admin" });
    assert.equal((await client.health()).status, "ok");
    assert.deepEqual(await client.cluster(), { mode: "node" });
    assert.ok(Array.isArray((await client.statsSeries()).points));
    assert.equal((await client.openapi()).openapi, "3.1.0");
  });

  it("takes the token from TICKWHEEL_TOKEN", async () => {
    process.env.TICKWHEEL_TOKEN = READ;
    const reader = new Client(SERVER);
    delete process.env.TICKWHEEL_TOKEN;
    assert.deepEqual(await reader.whoami(), { role: "read" });
    await assert.rejects(reader.create({ target: { url: receiver().url() }, delay_ms: 1 }),
      (e: unknown) => e instanceof ForbiddenError && e.code === "forbidden");
    const nobody = new Client(SERVER);
    await assert.rejects(nobody.whoami(), (e: unknown) => e instanceof UnauthorizedError && e.code === "unauthenticated");
  });

  it("verifies a delivery with the server's secrets", async () => {
    await client.create({ target: { url: receiver().url("/signed") }, delay_ms: 0, id: "ts-signed", payload: { n: 1 } });
    const { headers, body } = await receiver().waitFor("/signed");
    const delivery = await verifyWebhook(SECRETS, headers, body);
    assert.deepEqual([delivery.id, delivery.payload, delivery.attempt], ["ts-signed", { n: 1 }, 1]);
    assert.equal((await verifyWebhook(SECRETS[1] ?? "", headers, body.toString())).id, "ts-signed");
    const asFetchHeaders = new Headers(headers as Record<string, string>);
    assert.equal((await verifyWebhook(SECRETS, asFetchHeaders, new Uint8Array(body))).id, "ts-signed");
    await assert.rejects(verifyWebhook(SECRETS[0] ?? "", headers, body.toString().replace('"n":1', '"n":2')),
      (e: unknown) => e instanceof WebhookVerificationError && e.reason === "signature");
    await assert.rejects(verifyWebhook(SECRETS, headers, body, { now: Date.now() / 1000 + 600 }),
      (e: unknown) => e instanceof WebhookVerificationError && e.reason === "timestamp");
  });
});
