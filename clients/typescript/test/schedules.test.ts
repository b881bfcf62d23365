// SPDX-License-Identifier: Apache-2.0
// Schedules and flows through the client, against a real tickwheel serve.
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { Client, ConflictError, NotFoundError, verifyWebhook } from "../src/index.js";
import type { CreateSchedule } from "../src/index.js";
import { ADMIN, SECRETS, SERVER, suiteReceiver, waitUntil } from "./support.js";

const HOUR = 3_600_000;

describe("schedules", () => {
  const receiver = suiteReceiver();
  const client = new Client(SERVER, { token: ADMIN });

  it("goes from create to delete", async () => {
    const body: CreateSchedule = { id: "ts-sched", every_ms: HOUR, target: { url: receiver().url("/ts-sched") }, payload: { s: 1 } };
    const s = await client.createSchedule(body);
    assert.deepEqual([s.id, s.state, s.every_ms], ["ts-sched", "active", HOUR]);
    assert.equal((await client.createSchedule(body)).created_ms, s.created_ms);
    await assert.rejects(client.createSchedule({ ...body, every_ms: 2 * HOUR }),
      (e: unknown) => e instanceof ConflictError && e.code === "id_conflict");
    const got = await client.getSchedule("ts-sched", { next: 3 });
    assert.equal(got.next?.length, 3);
    assert.equal((got.next?.[1]?.at_ms ?? 0) - (got.next?.[0]?.at_ms ?? 0), HOUR);
    assert.equal((await client.updateSchedule("ts-sched", { jitter_ms: 1000 })).jitter_ms, 1000);
    assert.equal((await client.pauseSchedule("ts-sched")).state, "paused");
    assert.equal((await client.resumeSchedule("ts-sched")).state, "active");

    const occurrence = await client.triggerSchedule("ts-sched");
    assert.ok(occurrence.id.startsWith("ts-sched@"), occurrence.id);
    const { headers, body: raw } = await receiver().waitFor("/ts-sched");
    const delivery = await verifyWebhook(SECRETS, headers, raw);
    assert.deepEqual([delivery.schedule, delivery.payload], ["ts-sched", { s: 1 }]);

    const now = Date.now();
    const outcome = await client.backfillSchedule("ts-sched", { from_ms: now - 3 * HOUR, to_ms: now });
    assert.deepEqual([outcome.created, outcome.existing, outcome.more], [3, 0, false]);
    const again = await client.backfillSchedule("ts-sched", { from_ms: now - 3 * HOUR, to_ms: now });
    assert.deepEqual([again.created, again.existing], [0, 3]);
    await waitUntil(async () => (await client.getSchedule("ts-sched")).counts.backfilled === 3,
      "three backfilled occurrences counted");

    assert.equal((await client.deleteSchedule("ts-sched")).id, "ts-sched");
    await assert.rejects(client.getSchedule("ts-sched"), NotFoundError);
  });

  it("are listed page after page", async () => {
    for (const id of ["ts-cron-a", "ts-cron-b", "ts-cron-c"]) {
      await client.createSchedule({ id, cron: "0 9 * * 1-5", time_zone: "Europe/Berlin", target: { url: receiver().url() } });
    }
    const listed: string[] = [];
    for await (const s of client.listSchedules({ prefix: "ts-cron-", limit: 2 })) listed.push(s.id);
    assert.deepEqual(listed, ["ts-cron-a", "ts-cron-b", "ts-cron-c"]);
    const page = await client.listSchedulesPage({ prefix: "ts-cron-", limit: 2 });
    assert.equal(page.schedules.length, 2);
    assert.ok(page.next_after);
    await client.pauseSchedule("ts-cron-b");
    const paused: string[] = [];
    for await (const s of client.listSchedules({ prefix: "ts-cron-", state: "paused" })) paused.push(s.id);
    assert.deepEqual(paused, ["ts-cron-b"]);
  });
});

describe("flows", () => {
  it("are set, paused, resumed and reset", async () => {
    const client = new Client(SERVER, { token: ADMIN });
    const flow = await client.setFlow("ts-flow", { rate_per_s: 5, burst: 2 });
    assert.deepEqual([flow.key, flow.configured, flow.rate_per_s, flow.burst], ["ts-flow", true, 5, 2]);
    assert.equal((await client.getFlow("ts-flow")).settings?.rate_per_s, 5);
    const keys: string[] = [];
    for await (const f of client.listFlows({ limit: 1 })) keys.push(f.key);
    assert.ok(keys.includes("ts-flow"), keys.join(" "));
    assert.equal((await client.pauseFlow("ts-flow")).paused, true);
    assert.equal((await client.resumeFlow("ts-flow")).paused, false);
    assert.equal((await client.resetFlow("ts-flow")).configured, false);
    assert.equal((await client.getFlow("ts-flow")).configured, false);
  });
});
