#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The API contract: every exchange the API tests recorded, checked against
docs/openapi.json (JSON Schema draft 2020-12, python3-jsonschema).

    check_exchanges.py OPENAPI_JSON LOG_DIR PROGRAM...

LOG_DIR holds <program>-<pid>.jsonl files written by the tests when
TICKWHEEL_EXCHANGE_LOG_DIR is set (tests/server/support/exchange_log.h);
each PROGRAM must have written at least one. It fails on:
  - an answer whose status the operation does not document, whose body
    does not match the documented schema (every object is closed:
    additionalProperties false, so a field the server sends and the
    description lacks fails), or which lacks a required header;
  - a request the server accepted (2xx) that the description would not
    allow: an unknown or invalid query parameter, path parameter or body
    field, a body where none is taken, a described request header (one
    the test added: traceparent, tracestate) with a value its schema
    refuses;
  - a body of JSON Lines (a media type marked x-json-lines: the import's
    request, the export's answer) one of whose lines does not match the
    schema (each line's);
  - a path the description lacks answered by anything but 404 (or 401 for
    a caller without a valid token), a method it lacks answered by
    anything but 405 with `Allow` naming exactly the documented methods;
  - a delivery (webhook) whose body or headers do not match `webhooks`;
  - a documented operation that no exchange exercised with a 2xx;
  - a code of docs/server.md's error table that ErrorDetail lacks.
"""
import base64
import collections
import glob
import json
import os
import re
import sys
import urllib.parse

import jsonschema

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def body_bytes(record, name):
    if name + "_base64" in record:
        return base64.b64decode(record[name + "_base64"])
    return record.get(name, "").encode()


class Contract:
    def __init__(self, doc):
        self.doc = doc
        self.resolver = jsonschema.RefResolver.from_schema(doc)
        self.validators = {}
        self.failures = collections.OrderedDict()  # message -> (count, example)
        self.hits = collections.Counter()  # "METHOD template" -> 2xx answers seen
        self.statuses = collections.defaultdict(set)
        self.checked = 0
        self.deliveries = 0
        # Templates, most literal characters first: "/v1/timers/{id}:retry"
        # before "/v1/timers/{id}" (an id never ends in ":retry"; the
        # server routes the same way).
        self.paths = []
        for template, item in doc["paths"].items():
            pattern = "^" + re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(template)) + "$"
            literal = len(re.sub(r"\{\w+\}", "", template))
            self.paths.append((literal, template, re.compile(pattern), item))
        self.paths.sort(key=lambda p: -p[0])

    def fail(self, message, example):
        count, first = self.failures.get(message, (0, example))
        self.failures[message] = (count + 1, first)

    def errors(self, schema, value):
        key = json.dumps(schema, sort_keys=True)
        v = self.validators.get(key)
        if v is None:
            v = jsonschema.Draft202012Validator(schema, resolver=self.resolver)
            self.validators[key] = v
        return [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
                for e in sorted(v.iter_errors(value), key=lambda e: list(map(str, e.path)))]

    def resolve(self, obj):
        while "$ref" in obj:
            _, obj = self.resolver.resolve(obj["$ref"])
        return obj

    def match(self, path):
        for _, template, pattern, item in self.paths:
            m = pattern.match(path)
            if m:
                return template, item, {k: urllib.parse.unquote(v) for k, v in m.groupdict().items()}
        return None, None, None

    def parameters(self, item, op):
        params = {}
        for p in item.get("parameters", []) + op.get("parameters", []):
            p = self.resolve(p)
            params[(p["in"], p["name"].lower() if p["in"] == "header" else p["name"])] = p
        return params

    @staticmethod
    def typed(value, schema):
        t = schema.get("type")
        if t == "integer" and re.fullmatch(r"-?[0-9]+", value):
            return int(value)
        if t == "boolean" and value in ("true", "false"):
            return value == "true"
        return value

    def check_exchange(self, e):
        self.checked += 1
        method = e["method"].lower()
        target = e["target"]
        path, _, query = target.partition("?")
        status = e["status"]
        where = f"{e['method']} {target} -> {status}"
        template, item, path_args = self.match(path)
        if item is None:
            if status == 404 or (status == 401 and path.startswith("/v1")):
                self.check_error_body(e, where)
            else:
                self.fail(f"{e['method']} {path}: no such path in the description, answered {status}", where)
            return
        documented = sorted(m.upper() for m in item if m in METHODS)
        op = item.get(method)
        if op is None:
            if status == 405:
                allow = sorted(a.strip() for a in e["headers"].get("allow", "").split(","))
                if allow != documented:
                    self.fail(f"{template}: Allow {allow} but the description has {documented}", where)
                self.check_error_body(e, where)
            elif status == 401 and path.startswith("/v1"):
                self.check_error_body(e, where)
            else:
                self.fail(f"{e['method']} {template}: not in the description, answered {status}", where)
            return
        name = f"{e['method']} {template}"
        self.statuses[name].add(status)
        responses = op["responses"]
        response = responses.get(str(status)) or responses.get(f"{str(status)[0]}XX") or responses.get("default")
        if response is None:
            self.fail(f"{name}: status {status} is not in the description", where)
            return
        response = self.resolve(response)
        self.check_response(name, response, e, where)
        if 200 <= status < 300:
            self.hits[name] += 1
            self.check_request(name, item, op, path_args, query, e, where)

    def check_error_body(self, e, where):
        try:
            body = json.loads(body_bytes(e, "body"))
        except ValueError:
            self.fail("an error answer that is not JSON", where)
            return
        for err in self.errors({"$ref": "#/components/schemas/Error"}, body):
            self.fail(f"error body: {err}", where)

    def check_response(self, name, response, e, where):
        headers = e["headers"]
        for header_name, header in response.get("headers", {}).items():
            header = self.resolve(header)
            value = headers.get(header_name.lower())
            if value is None:
                if header.get("required"):
                    self.fail(f"{name} {e['status']}: header {header_name} missing", where)
                continue
            for err in self.errors(header.get("schema", {}), value):
                self.fail(f"{name} {e['status']}: header {header_name}: {err}", where)
        content = response.get("content")
        raw = body_bytes(e, "body")
        if not content:
            if raw:
                self.fail(f"{name} {e['status']}: a body where the description has none", where)
            return
        media = headers.get("content-type", "").split(";")[0].strip()
        if media not in content:
            self.fail(f"{name} {e['status']}: Content-Type {media!r} is not in {sorted(content)}", where)
            return
        schema = content[media].get("schema", {})
        if content[media].get("x-json-lines"):
            for err in self.json_lines_errors(schema, raw):
                self.fail(f"{name} {e['status']}: {err}", where)
            return
        if media == "application/json":
            try:
                value = json.loads(raw)
            except ValueError as x:
                self.fail(f"{name} {e['status']}: the body is not JSON ({x})", where)
                return
        else:
            value = raw.decode("utf-8", "replace")
        for err in self.errors(schema, value):
            self.fail(f"{name} {e['status']}: {err}", where)

    def json_lines_errors(self, schema, raw):
        """A body of JSON Lines (a media type with x-json-lines: true, whose
        schema is each line's): the errors of its non-blank lines, each
        named by its line number."""
        out = []
        for number, line in enumerate(raw.decode("utf-8", "replace").split("\n"), 1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except ValueError as x:
                out.append(f"line {number} is not JSON ({x})")
                continue
            out.extend(f"line {number}: {err}" for err in self.errors(schema, value))
        return out

    def check_request(self, name, item, op, path_args, query, e, where):
        params = self.parameters(item, op)
        for arg, value in path_args.items():
            p = params.get(("path", arg))
            if p is None:
                self.fail(f"{name}: path parameter {arg} is not described", where)
                continue
            for err in self.errors(p.get("schema", {}), value):
                self.fail(f"{name}: path parameter {arg}: {err}", where)
        given = urllib.parse.parse_qsl(query, keep_blank_values=True)
        for key, value in given:
            p = params.get(("query", key))
            if p is None:
                self.fail(f"{name}: query parameter {key!r} accepted but not in the description", where)
                continue
            schema = self.resolve(p.get("schema", {}))
            for err in self.errors(schema, self.typed(value, schema)):
                self.fail(f"{name}: query parameter {key}={value!r} accepted but invalid: {err}", where)
        for hname, value in e.get("request_headers", []):
            p = params.get(("header", hname.lower()))
            if p is None:
                continue  # a header the API does not read (only described ones are checked)
            for err in self.errors(self.resolve(p).get("schema", {}), value):
                self.fail(f"{name}: header {hname}: {value!r} accepted but invalid: {err}", where)
        names = {k for k, _ in given}
        for (kind, pname), p in params.items():
            if kind == "query" and p.get("required") and pname not in names:
                self.fail(f"{name}: required query parameter {pname} missing, yet answered 2xx", where)
        raw = body_bytes(e, "request_body")
        body = op.get("requestBody")
        if body is None:
            if raw.strip():
                self.fail(f"{name}: a request body accepted where the description takes none", where)
            return
        body = self.resolve(body)
        if not raw.strip():
            if body.get("required"):
                self.fail(f"{name}: no request body, yet answered 2xx (the description requires one)", where)
            return
        media = body["content"]["application/json"]
        if media.get("x-json-lines"):
            for err in self.json_lines_errors(media["schema"], raw):
                self.fail(f"{name}: request accepted but not valid by the description: {err}", where)
            return
        try:
            value = json.loads(raw)
        except ValueError:
            self.fail(f"{name}: a request body that is not JSON answered 2xx", where)
            return
        for err in self.errors(media["schema"], value):
            self.fail(f"{name}: request accepted but not valid by the description: {err}", where)

    def check_delivery(self, d):
        self.deliveries += 1
        where = f"delivery {d.get('body', '')[:80]}"
        for hook_name, hook in self.doc.get("webhooks", {}).items():
            op = hook["post"]
            for (kind, pname), p in self.parameters({}, op).items():
                value = d["headers"].get(pname)
                if value is None:
                    if p.get("required"):
                        self.fail(f"webhook {hook_name}: header {pname} missing", where)
                    continue
                for err in self.errors(p.get("schema", {}), value):
                    self.fail(f"webhook {hook_name}: header {pname}: {err}", where)
            try:
                value = json.loads(body_bytes(d, "body"))
            except ValueError:
                self.fail(f"webhook {hook_name}: the body is not JSON", where)
                continue
            schema = op["requestBody"]["content"]["application/json"]["schema"]
            for err in self.errors(schema, value):
                self.fail(f"webhook {hook_name}: body: {err}", where)

    def operations(self):
        for template, item in self.doc["paths"].items():
            for m in item:
                if m in METHODS:
                    yield f"{m.upper()} {template}"


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    spec, log_dir, programs = sys.argv[1], sys.argv[2], sys.argv[3:]
    with open(spec) as f:
        contract = Contract(json.load(f))
    for schema in contract.doc["components"]["schemas"].values():
        jsonschema.Draft202012Validator.check_schema(schema)
    # The error table of docs/server.md (beside the description): each of
    # its codes is one the description names.
    with open(os.path.join(os.path.dirname(spec), "server.md")) as f:
        prose = f.read().split("### Errors", 1)[1].split("\n## ", 1)[0]
    table = set()
    for row in re.findall(r"^\| (`[a-z_]+`(?:, `[a-z_]+`)*) \|", prose, re.M):
        table.update(re.findall(r"`([a-z_]+)`", row))
    described = set(contract.doc["components"]["schemas"]["ErrorDetail"]["properties"]["code"]["enum"])
    for code in sorted(table - described):
        contract.fail(f"error code {code} of docs/server.md's error table is not in ErrorDetail", code)
    if len(table) < 25:
        contract.fail(f"only {len(table)} codes read from docs/server.md's error table", spec)
    missing = []
    for program in programs:
        files = sorted(glob.glob(os.path.join(log_dir, f"{program}-*.jsonl")))
        if not files:
            missing.append(program)
        for path in files:
            with open(path) as f:
                for line in f:
                    record = json.loads(line)
                    if record["kind"] == "delivery":
                        contract.check_delivery(record)
                    else:
                        contract.check_exchange(record)
    for program in missing:
        contract.fail(f"{program} recorded nothing in {log_dir} (did it run with "
                      "TICKWHEEL_EXCHANGE_LOG_DIR set?)", program)
    for op in contract.operations():
        if contract.hits[op] == 0:
            contract.fail(f"{op}: documented, but no test exercised it with a 2xx answer", op)
    if contract.deliveries == 0 and contract.doc.get("webhooks"):
        contract.fail("no delivery was recorded to check the webhooks against", log_dir)
    covered = sum(1 for op in contract.operations() if contract.hits[op])
    total = sum(1 for _ in contract.operations())
    print(f"{contract.checked} exchanges and {contract.deliveries} deliveries checked; "
          f"{covered} of {total} operations exercised")
    for op in contract.operations():
        documented = set()
        template = op.split(" ", 1)[1]
        for code in contract.doc["paths"][template][op.split(" ")[0].lower()]["responses"]:
            if code.isdigit():
                documented.add(int(code))
        unseen = sorted(documented - contract.statuses[op])
        if unseen:
            print(f"  note: {op}: documented statuses no test saw: {unseen}")
    if contract.failures:
        print(f"\n{len(contract.failures)} contract failures:")
        for message, (count, example) in contract.failures.items():
            print(f"FAIL {message}  [{count}x; e.g. {example}]")
        sys.exit(1)
    print("the exchanges match docs/openapi.json")


if __name__ == "__main__":
    main()
