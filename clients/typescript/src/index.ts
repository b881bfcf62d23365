// SPDX-License-Identifier: Apache-2.0
// tickwheel: a client of tickwheel serve's HTTP API and the verification
// of its signed deliveries.
export * from "./client.js";
export * from "./errors.js";
export * from "./webhooks.js";
export type * from "./types.js";
