#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""run_with_server.py TICKWHEEL_BINARY -- COMMAND...

Runs a client library's tests (COMMAND) against real `tickwheel serve`
processes on free loopback ports, started here and stopped after (SIGTERM:
each must exit 0), with their data in a temporary directory:

  TICKWHEEL_TEST_SERVER      http://127.0.0.1:PORT: tokens on, deliveries
                             signed with both secrets below
  TICKWHEEL_TEST_TLS_SERVER  https://127.0.0.1:PORT: tokens on, its
                             certificate from a test CA, --max-connections 1
                             (one held connection makes the next answer
                             503 overloaded: the retry case)
  TICKWHEEL_TEST_CA_FILE     the test CA's certificate (PEM)
  TICKWHEEL_TEST_PAGE_ORIGIN http://127.0.0.1:PORT, an origin both servers
                             allow (--allow-origin) for a browser's page;
                             nothing listens there (the browser test
                             hands the page to the browser itself)
  TICKWHEEL_TEST_ADMIN_TOKEN, TICKWHEEL_TEST_READ_TOKEN
  TICKWHEEL_TEST_WEBHOOK_SECRETS  the two whsec_ secrets, space-separated
  TICKWHEEL_TEST_OPENAPI     docs/openapi.json
  TICKWHEEL_TEST_VECTORS     clients/testdata/standard_webhooks.json

The exit status is COMMAND's (or 1 if a server did not start or stop
cleanly)."""
import base64
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
ADMIN = "client-admin-token-0123456789abcdef"
READ = "client-read-token-0123456789abcdef"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(*cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def make_pki(d):
    key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    run("openssl", "req", "-x509", *key, "-keyout", f"{d}/ca.key", "-out", f"{d}/ca.pem",
        "-days", "30", "-subj", "/CN=tickwheel client test CA",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    with open(f"{d}/api.ext", "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
    run("openssl", "req", *key, "-keyout", f"{d}/api.key", "-out", f"{d}/api.csr", "-subj", "/CN=api")
    run("openssl", "x509", "-req", "-in", f"{d}/api.csr", "-CA", f"{d}/ca.pem", "-CAkey", f"{d}/ca.key",
        "-CAcreateserial", "-days", "30", "-extfile", f"{d}/api.ext", "-out", f"{d}/api.pem")


class Server:
    def __init__(self, binary, d, name, args, tls):
        self.port = free_port()
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        self.log_path = f"{d}/{name}.log"
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [binary, "serve", "--listen", f"127.0.0.1:{self.port}", "--data-dir", f"{d}/{name}-data",
             *args], stdout=self.log, stderr=subprocess.STDOUT)
        self.ca = f"{d}/ca.pem" if tls else None

    def wait_healthy(self, patience=60.0):
        context = ssl.create_default_context(cafile=self.ca) if self.ca else None
        end = time.monotonic() + patience
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(self.url + "/healthz", timeout=2, context=context) as r:
                    if r.status == 200:
                        return True
            except OSError:
                time.sleep(0.05)
        return False

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode

    def output(self):
        with open(self.log_path) as f:
            return f.read()


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit(__doc__)
    binary, command = sys.argv[1], sys.argv[3:]
    d = tempfile.mkdtemp(prefix="tickwheel-client-test-")
    servers = []
    status = 1
    try:
        make_pki(d)
        with open(f"{d}/tokens", "w") as f:
            f.write(f"admin {ADMIN}\nread {READ}\n")
        secrets = ["whsec_" + base64.b64encode(os.urandom(32)).decode() for _ in range(2)]
        with open(f"{d}/secrets", "w") as f:
            f.write("\n".join(secrets) + "\n")
        page_origin = f"http://127.0.0.1:{free_port()}"
        common = ["--auth-token-file", f"{d}/tokens", "--webhook-secret-file", f"{d}/secrets",
                  "--backoff", "100ms", "--allow-origin", page_origin]
        plain = Server(binary, d, "plain", common, tls=False)
        servers.append(plain)
        tls = Server(binary, d, "tls", common + ["--tls-cert", f"{d}/api.pem", "--tls-key", f"{d}/api.key",
                                                 "--max-connections", "1"], tls=True)
        servers.append(tls)
        for s in servers:
            if not s.wait_healthy():
                print(f"tickwheel serve did not start:\n{s.output()}", file=sys.stderr)
                return 1
        env = dict(os.environ,
                   TICKWHEEL_TEST_SERVER=plain.url, TICKWHEEL_TEST_TLS_SERVER=tls.url,
                   TICKWHEEL_TEST_CA_FILE=f"{d}/ca.pem", TICKWHEEL_TEST_PAGE_ORIGIN=page_origin,
                   TICKWHEEL_TEST_ADMIN_TOKEN=ADMIN,
                   TICKWHEEL_TEST_READ_TOKEN=READ, TICKWHEEL_TEST_WEBHOOK_SECRETS=" ".join(secrets),
                   TICKWHEEL_TEST_OPENAPI=os.path.join(ROOT, "docs", "openapi.json"),
                   TICKWHEEL_TEST_VECTORS=os.path.join(HERE, "standard_webhooks.json"))
        env.pop("TICKWHEEL_TOKEN", None)
        status = subprocess.call(command, env=env)
    finally:
        for s in servers:
            code = s.stop()
            if code != 0:
                print(f"tickwheel serve ({s.url}) exited {code}:\n{s.output()}", file=sys.stderr)
                status = status or 1
        shutil.rmtree(d, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
