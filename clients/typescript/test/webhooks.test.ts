// SPDX-License-Identifier: Apache-2.0
// verifyWebhook against the Standard Webhooks cases of
// clients/testdata/standard_webhooks.json (the specification's example and
// one change of it per case).
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { WebhookVerificationError, verifyWebhook } from "../src/index.js";
import { VECTORS } from "./support.js";

interface Case {
  name: string;
  secrets: string[];
  headers: Record<string, string>;
  body: string;
  now: number;
  valid: boolean;
  reason?: string;
}

const doc = JSON.parse(readFileSync(VECTORS, "utf8")) as { tolerance_seconds: number; cases: Case[] };

describe("verifyWebhook and the Standard Webhooks cases", () => {
  it("has the cases", () => assert.ok(doc.cases.length >= 15));
  for (const c of doc.cases) {
    it(c.name, async () => {
      const call = verifyWebhook(c.secrets, c.headers, new TextEncoder().encode(c.body),
        { now: c.now, toleranceSeconds: doc.tolerance_seconds });
      if (c.valid) {
        assert.deepEqual(await call, JSON.parse(c.body));
      } else {
        await assert.rejects(call, (e: unknown) => e instanceof WebhookVerificationError && e.reason === c.reason);
      }
    });
  }
  it("takes a bad secret for a TypeError, not a refusal", async () => {
    await assert.rejects(verifyWebhook("whsec_%%%", {}, "{}"), TypeError);
    await assert.rejects(verifyWebhook([], {}, "{}"), TypeError);
  });
});
