// SPDX-License-Identifier: Apache-2.0
// The operator's routes through the client (backup, export, import, pause
// and resume of delivery and of writes), against a real tickwheel serve.
// scripts/run-tests.mjs runs this file alone: pausing writes would refuse
// the other files' creates.
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BadRequestError, Client, UnavailableError } from "../src/index.js";
import type { ExportLine, ExportTimer, ImportTimer } from "../src/index.js";
import { ADMIN, SERVER, suiteReceiver } from "./support.js";

describe("the operator's routes", () => {
  const receiver = suiteReceiver();
  const client = new Client(SERVER, { token: ADMIN });

  it("backs up into a new directory", async () => {
    const d = mkdtempSync(join(tmpdir(), "tickwheel-ts-backup-"));
    try {
      const backup = await client.backup(join(d, "b"));
      assert.equal(backup.dir, join(d, "b"));
      assert.ok(backup.files > 0);
      assert.ok(existsSync(join(d, "b", "tickwheel-backup.json")));
      await assert.rejects(client.backup(join(d, "b")),
        (e: unknown) => e instanceof BadRequestError && e.code === "backup_exists");
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });

  it("reads an export page after page and imports it again", async () => {
    const ids = ["ts-exp-0", "ts-exp-1", "ts-exp-2"];
    for (const id of ids) await client.create({ id, delay_ms: 600_000, target: { url: receiver().url() } });
    const first = await client.exportPage({ states: ["pending"], limit: 2 });
    assert.equal(first.lines[0]?.kind, "export");
    assert.ok(first.cursor);
    const lines: ExportLine[] = [];
    for await (const line of client.exportRecords({ states: ["pending"], limit: 2 })) lines.push(line);
    const header = lines[0];
    assert.equal(header?.kind, "export");
    const timers = lines.filter((l): l is ExportTimer => l.kind === "timer");
    assert.equal(timers.length, header?.kind === "export" ? header.timers : -1);
    const mine = timers.filter((t) => ids.includes(t.id));
    assert.deepEqual(mine.map((t) => t.id), ids);
    assert.equal((await client.importRecords(mine)).existing, 3); // the same: left alone

    const fresh: ImportTimer = { id: "ts-imp-1", state: "pending", fire_at_ms: Date.now() + 600_000,
      target: { url: receiver().url() }, payload: { imported: true } };
    const result = await client.importRecords([fresh]);
    assert.deepEqual([result.lines, result.created, result.existing, result.conflicts], [1, 1, 0, []]);
    assert.deepEqual((await client.get("ts-imp-1")).payload, { imported: true });
    assert.equal((await client.importRecords([fresh])).existing, 1);
  });

  it("refuses writes while they are paused, and takes them again", async () => {
    assert.equal((await client.pauseWrites()).writes, "paused");
    try {
      await assert.rejects(new Client(SERVER, { token: ADMIN, retries: 0 }).create({ delay_ms: 1, target: { url: receiver().url() } }),
        (e: unknown) => e instanceof UnavailableError && e.code === "writes_paused");
    } finally {
      assert.equal((await client.resumeWrites()).writes, "accepted");
    }
    await client.create({ id: "ts-after-writes", delay_ms: 600_000, target: { url: receiver().url() } });
  });

  it("holds due timers while delivery is paused, until resumed", async () => {
    assert.equal((await client.pauseDelivery()).delivery, "paused");
    try {
      await client.create({ id: "ts-held", delay_ms: 0, target: { url: receiver().url("/ts-held") } });
      assert.equal((await client.health()).delivery, "paused");
      assert.equal((await client.get("ts-held")).state, "pending");
      assert.ok(!receiver().deliveries.some((d) => d.path === "/ts-held"));
    } finally {
      assert.equal((await client.resumeDelivery()).delivery, "running");
    }
    await receiver().waitFor("/ts-held");
  });
});
