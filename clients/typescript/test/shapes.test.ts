// SPDX-License-Identifier: Apache-2.0
// The client's types against docs/openapi.json: src/types.ts is what
// scripts/generate-types.mjs makes of the description now, and (read with
// the TypeScript compiler's parser, apart from the generator) every object
// schema of components/schemas is an interface of its name with the same
// keys, the same ones required; every other schema a type of its name.
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { OPENAPI } from "./support.js";

interface Schema {
  properties?: Record<string, unknown>;
  required?: string[];
  enum?: unknown[];
}

// The compiler's parser, as much of it as this test reads.
interface Node {
  kind: number;
  name?: { text: string };
  questionToken?: unknown;
  members?: Node[];
  type?: Node;
  types?: Node[];
  literal?: { text: string };
}
interface Compiler {
  createSourceFile(name: string, text: string, target: number, setParents: boolean): { statements: Node[] };
  ScriptTarget: { Latest: number };
  SyntaxKind: Record<string, number>;
}

const source = process.cwd(); // clients/typescript (scripts/run-tests.mjs)
const doc = JSON.parse(readFileSync(OPENAPI, "utf8")) as { components: { schemas: Record<string, Schema> } };
const schemas = doc.components.schemas;
const typesTs = readFileSync(join(source, "src", "types.ts"), "utf8");

describe("the types and docs/openapi.json", () => {
  it("src/types.ts is generated from the description as it is", async () => {
    const generator = (await import(pathToFileURL(join(source, "scripts", "generate-types.mjs")).href)) as {
      generate(doc: unknown): string;
    };
    assert.ok(generator.generate(doc) === typesTs,
      "src/types.ts differs from what docs/openapi.json makes: run `npm run generate` in clients/typescript");
  });

  it("every object schema is an interface with its keys, the same ones required", () => {
    const nodeDir = process.env.TICKWHEEL_TEST_NODE_DIR;
    assert.ok(nodeDir, "TICKWHEEL_TEST_NODE_DIR (scripts/run-tests.mjs) names the npm ci directory");
    const ts = createRequire(join(nodeDir, "node_modules", "x.js"))("typescript") as Compiler;
    const file = ts.createSourceFile("types.ts", typesTs, ts.ScriptTarget.Latest, true);
    const declared = new Map<string, Node>();
    for (const s of file.statements) if (s.name) declared.set(s.name.text, s);
    const objects = Object.entries(schemas).filter(([, s]) => s.properties !== undefined);
    assert.ok(objects.length > 40);
    for (const [name, schema] of objects) {
      const node = declared.get(name);
      assert.equal(node?.kind, ts.SyntaxKind.InterfaceDeclaration, `src/types.ts has no interface ${name}`);
      const members = (node?.members ?? []).filter((m) => m.kind === ts.SyntaxKind.PropertySignature);
      assert.deepEqual(members.map((m) => m.name?.text).sort(), Object.keys(schema.properties ?? {}).sort(),
        `the keys of ${name}`);
      assert.deepEqual(members.filter((m) => !m.questionToken).map((m) => m.name?.text).sort(),
        [...(schema.required ?? [])].sort(), `the required keys of ${name}`);
    }
    for (const name of Object.keys(schemas)) assert.ok(declared.has(name), `src/types.ts has no ${name}`);
    const state = declared.get("TimerState");
    assert.deepEqual(state?.type?.types?.map((t) => t.literal?.text).sort(), [...(schemas.TimerState?.enum ?? [])].sort());
  });
});
