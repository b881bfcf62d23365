#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// run-tests.mjs NODE_DIR [--browser]: the TypeScript client's tests (ctest
// typescript_client_test, under clients/testdata/run_with_server.py; with
// --browser only test/browser.test.ts, which the others leave out: ctest
// typescript_client_browser_test, Chromium). With
// the TypeScript compiler that `npm ci` installed into NODE_DIR (from
// package-lock.json), it type-checks src/ alone against the browser's
// library (no Node types: the client runs in browsers), compiles src/ and
// test/ into NODE_DIR/out, and runs each test file with Node's test runner,
// one file after another (the admin tests pause the shared server's
// writes). NODE_EXTRA_CA_CERTS is the test CA (test/tls.test.ts).
import { execFileSync, spawnSync } from "node:child_process";
import { readdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(dirname(fileURLToPath(import.meta.url)));
const nodeDir = process.argv[2];
const browser = process.argv[3] === "--browser";
if (!nodeDir) {
  process.stderr.write("usage: run-tests.mjs NODE_DIR [--browser]\n");
  process.exit(2);
}
const tsc = join(nodeDir, "node_modules", "typescript", "bin", "tsc");
const out = join(nodeDir, browser ? "out-browser" : "out"); // the two ctest tests may run at once
rmSync(out, { recursive: true, force: true });
const compile = (...args) => execFileSync(process.execPath, [tsc, ...args], { stdio: "inherit", cwd: here });
compile("-p", "tsconfig.json", "--noEmit");
compile("-p", "test/tsconfig.json", "--outDir", out, "--typeRoots", join(nodeDir, "node_modules", "@types"));
writeFileSync(join(out, "package.json"), '{"type": "module"}\n');
const files = readdirSync(join(out, "test"))
  .filter((f) => f.endsWith(".test.js") && (f === "browser.test.js") === browser).sort();
if (files.length === 0) throw new Error(`no tests in ${out}/test`);
let failed = 0;
for (const f of files) {
  const run = spawnSync(process.execPath, ["--test", join(out, "test", f)], {
    stdio: "inherit", cwd: here,
    env: { ...process.env, NODE_EXTRA_CA_CERTS: process.env.TICKWHEEL_TEST_CA_FILE, TICKWHEEL_TEST_NODE_DIR: nodeDir },
  });
  if (run.status !== 0) {
    process.stderr.write(`${f}: failed (${run.status ?? run.signal})\n`);
    failed++;
  }
}
process.exit(failed === 0 ? 0 : 1);
