// SPDX-License-Identifier: Apache-2.0
// Web Crypto where it is: globalThis.crypto (browsers, Node 19+, Deno,
// workers), or node:crypto's webcrypto (Node 18, where the global needs a
// flag).

let found: Promise<Crypto> | undefined;

/** The platform's Web Crypto. */
export function webCrypto(): Promise<Crypto> {
  found ??= (async () => {
    const global = (globalThis as { crypto?: Crypto }).crypto;
    if (global?.subtle !== undefined) return global;
    // A name in a variable: bundlers for browsers leave it alone.
    const nodeCrypto = "node:crypto";
    const module = (await import(nodeCrypto)) as { webcrypto: Crypto };
    return module.webcrypto;
  })();
  return found;
}
