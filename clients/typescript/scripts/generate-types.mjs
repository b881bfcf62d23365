#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// generate-types.mjs OPENAPI_JSON [OUT_TS]: writes the TypeScript types of
// the description's components/schemas (one export per schema, of the same
// name; an object schema with properties is an interface with the same
// keys, the same ones required), to OUT_TS or stdout. src/types.ts is its
// output for docs/openapi.json; test/shapes.test.ts fails when the two
// differ (`npm run generate` after the description changed).
//
// It knows the constructs the description uses: $ref (to a schema, or to a
// property of one), type (one or several), const, enum, oneOf, properties/
// required, additionalProperties, items. Anything else is `unknown`.
import { readFileSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const SCHEMAS = "#/components/schemas/";

function comment(text, indent) {
  if (!text) return "";
  const lines = text.replaceAll("*/", "*\\/").split("\n");
  if (lines.length === 1) return `${indent}/** ${lines[0]} */\n`;
  return `${indent}/**\n${lines.map((l) => `${indent} * ${l}`.trimEnd()).join("\n")}\n${indent} */\n`;
}

function resolve(doc, ref) {
  if (!ref.startsWith("#/")) throw new Error(`$ref ${ref}: only local references are known`);
  let node = doc;
  for (const part of ref.slice(2).split("/")) {
    node = node?.[part.replaceAll("~1", "/").replaceAll("~0", "~")];
  }
  if (node === undefined) throw new Error(`$ref ${ref} names nothing`);
  return node;
}

const SCALARS = { string: "string", integer: "number", number: "number", boolean: "boolean", null: "null" };

function union(parts) {
  const unique = [...new Set(parts)];
  return unique.length === 1 ? unique[0] : unique.map((p) => (p.includes("\n") ? `(${p})` : p)).join(" | ");
}

function typeOf(doc, schema, indent) {
  if (schema.$ref !== undefined) {
    if (schema.$ref.startsWith(SCHEMAS) && !schema.$ref.slice(SCHEMAS.length).includes("/")) {
      return schema.$ref.slice(SCHEMAS.length);
    }
    return typeOf(doc, resolve(doc, schema.$ref), indent);
  }
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (schema.enum !== undefined) return union(schema.enum.map((v) => JSON.stringify(v)));
  if (schema.oneOf !== undefined) return union(schema.oneOf.map((s) => typeOf(doc, s, indent)));
  const types = Array.isArray(schema.type) ? schema.type : schema.type === undefined ? [] : [schema.type];
  if (types.length === 0) return "unknown";
  return union(types.map((t) => {
    if (t === "array") return `Array<${schema.items ? typeOf(doc, schema.items, indent) : "unknown"}>`;
    if (t === "object") return objectLiteral(doc, schema, indent);
    if (!(t in SCALARS)) throw new Error(`type ${t} is not known`);
    return SCALARS[t];
  }));
}

function members(doc, schema, indent) {
  const required = new Set(schema.required ?? []);
  let out = "";
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    const key = /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) ? name : JSON.stringify(name);
    out += comment(property.description, indent);
    out += `${indent}${key}${required.has(name) ? "" : "?"}: ${typeOf(doc, property, indent)};\n`;
  }
  const extra = schema.additionalProperties;
  if (extra !== undefined && extra !== false) {
    out += `${indent}[key: string]: ${extra === true ? "unknown" : typeOf(doc, extra, indent)};\n`;
  }
  return out;
}

function objectLiteral(doc, schema, indent) {
  if (schema.properties === undefined) {
    const extra = schema.additionalProperties;
    if (extra === false) return "Record<string, never>";
    return `Record<string, ${extra === undefined || extra === true ? "unknown" : typeOf(doc, extra, indent)}>`;
  }
  return `{\n${members(doc, schema, indent + "  ")}${indent}}`;
}

export function generate(doc) {
  let out = "// SPDX-License-Identifier: Apache-2.0\n" +
    "// The shapes of tickwheel serve's API: generated from docs/openapi.json by\n" +
    "// scripts/generate-types.mjs (`npm run generate`). Do not edit; change the\n" +
    "// description and generate again (test/shapes.test.ts compares the two).\n";
  for (const [name, schema] of Object.entries(doc.components.schemas)) {
    out += "\n" + comment(schema.description, "");
    if (schema.properties !== undefined && (schema.type === "object" || schema.type === undefined)) {
      out += `export interface ${name} {\n${members(doc, schema, "  ")}}\n`;
    } else {
      out += `export type ${name} = ${typeOf(doc, schema, "")};\n`;
    }
  }
  return out;
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [input, output] = process.argv.slice(2);
  if (!input) {
    process.stderr.write("usage: generate-types.mjs OPENAPI_JSON [OUT_TS]\n");
    process.exit(2);
  }
  const text = generate(JSON.parse(readFileSync(input, "utf8")));
  if (output) writeFileSync(output, text);
  else process.stdout.write(text);
}
