// SPDX-License-Identifier: Apache-2.0
// Verifying a signed tickwheel delivery in a receiver (Standard Webhooks,
// https://www.standardwebhooks.com): a server started with
// --webhook-secret-file signs every attempt with each of its secrets. Web
// Crypto only (browsers, Node 18+, Deno, workers).
import type { Delivery } from "./types.js";
import { webCrypto } from "./crypto.js";

/** How far a delivery's timestamp may be from the receiver's clock. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/** Why a delivery was refused: a webhook-* header is missing, its
 * timestamp is stale, from the future or not Unix seconds (a replay), or
 * no signature entry matches a secret. */
export type WebhookRefusal = "missing" | "timestamp" | "signature";

/** The delivery is not to be trusted; `reason` says why. */
export class WebhookVerificationError extends Error {
  readonly reason: WebhookRefusal;

  constructor(reason: WebhookRefusal, message: string) {
    super(message);
    this.name = "WebhookVerificationError";
    this.reason = reason;
  }
}

/** A request's headers: a fetch `Headers`, or a plain object (Node's
 * `IncomingMessage.headers`; names in any case). */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

export interface VerifyOptions {
  /** Default 300: a timestamp further from `now` either way is refused. */
  toleranceSeconds?: number;
  /** The receiver's clock in Unix seconds; default Date.now(). */
  now?: number;
}

function key(secret: string): Uint8Array<ArrayBuffer> {
  let text = secret.trim();
  if (text.startsWith("whsec_")) text = text.slice("whsec_".length);
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.length % 4 !== 0) {
    throw new TypeError("a webhook secret is whsec_ followed by base64");
  }
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as Headers).get === "function") {
    return (headers as Headers).get(name) ?? undefined;
  }
  for (const [k, v] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (k.toLowerCase() === name) return Array.isArray(v) ? v.join(" ") : v;
  }
  return undefined;
}

function bytes(body: string | Uint8Array | ArrayBuffer): Uint8Array {
  if (typeof body === "string") return new TextEncoder().encode(body);
  return body instanceof Uint8Array ? body : new Uint8Array(body);
}

function base64(data: ArrayBuffer): string {
  let binary = "";
  for (const b of new Uint8Array(data)) binary += String.fromCharCode(b);
  return btoa(binary);
}

// Compares in time independent of where the two differ.
function same(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/**
 * Checks a delivery's webhook-id, webhook-timestamp and webhook-signature
 * against `secret` (one "whsec_..." secret, or several while one is
 * rotated: any may have signed) and returns its parsed body. Rejects with
 * WebhookVerificationError if a header is missing, the timestamp is more
 * than `toleranceSeconds` from `now` either way, or no signature matches;
 * with a TypeError for a secret that is not base64. Pass the body exactly
 * as received (`await request.text()`, or the raw bytes): a re-serialized
 * JSON body does not verify.
 *
 *     const delivery = await verifyWebhook(secret, request.headers, await request.text());
 *     handle(delivery.id, delivery.payload);
 */
export async function verifyWebhook(
  secret: string | readonly string[],
  headers: WebhookHeaders,
  body: string | Uint8Array | ArrayBuffer,
  options: VerifyOptions = {},
): Promise<Delivery> {
  const secrets = typeof secret === "string" ? [secret] : [...secret];
  if (secrets.length === 0) throw new TypeError("no webhook secret given");
  const keys = secrets.map(key);
  const id = header(headers, "webhook-id");
  const timestamp = header(headers, "webhook-timestamp");
  const signatures = header(headers, "webhook-signature");
  if (!id || !timestamp || !signatures) {
    throw new WebhookVerificationError(
      "missing", "the delivery lacks webhook-id, webhook-timestamp or webhook-signature");
  }
  if (!/^[0-9]+$/.test(timestamp)) {
    throw new WebhookVerificationError("timestamp", `webhook-timestamp ${JSON.stringify(timestamp)} is not Unix seconds`);
  }
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const now = options.now ?? Date.now() / 1000;
  if (Math.abs(now - Number(timestamp)) > tolerance) {
    throw new WebhookVerificationError(
      "timestamp",
      `webhook-timestamp ${timestamp} is more than ${tolerance} s from now (${Math.floor(now)}): ` +
        "a replay, or a clock that is off");
  }
  const raw = bytes(body);
  const prefix = new TextEncoder().encode(`${id}.${timestamp}.`);
  const signed = new Uint8Array(prefix.length + raw.length);
  signed.set(prefix);
  signed.set(raw, prefix.length);
  const subtle = (await webCrypto()).subtle;
  const expected = await Promise.all(keys.map(async (k) => {
    const hmac = await subtle.importKey("raw", k, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    return base64(await subtle.sign("HMAC", hmac, signed));
  }));
  for (const entry of signatures.split(" ")) {
    const comma = entry.indexOf(",");
    if (comma < 0 || entry.slice(0, comma) !== "v1") continue;
    const value = entry.slice(comma + 1);
    if (expected.some((e) => same(e, value))) {
      return JSON.parse(new TextDecoder().decode(raw)) as Delivery;
    }
  }
  throw new WebhookVerificationError("signature", "no webhook-signature entry matches the secret(s)");
}
