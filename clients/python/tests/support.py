# SPDX-License-Identifier: Apache-2.0
"""What the tests share: the servers clients/testdata/run_with_server.py
started (from the environment), a webhook receiver, polling with a
deadline."""
import http.server
import os
import socket
import ssl
import threading
import time
import unittest

SERVER = os.environ.get("TICKWHEEL_TEST_SERVER")
TLS_SERVER = os.environ.get("TICKWHEEL_TEST_TLS_SERVER")
CA_FILE = os.environ.get("TICKWHEEL_TEST_CA_FILE")
ADMIN = os.environ.get("TICKWHEEL_TEST_ADMIN_TOKEN")
READ = os.environ.get("TICKWHEEL_TEST_READ_TOKEN")
SECRETS = (os.environ.get("TICKWHEEL_TEST_WEBHOOK_SECRETS") or "").split()
OPENAPI = os.environ.get("TICKWHEEL_TEST_OPENAPI")
VECTORS = os.environ.get("TICKWHEEL_TEST_VECTORS")


def needs_server(cls):
    """Fails (not skips) a suite run without run_with_server.py."""
    if not SERVER:
        raise RuntimeError("run these tests through clients/testdata/run_with_server.py "
                           "(ctest -R python_client)")
    return cls


def wait_until(predicate, patience=30.0, what="the condition"):
    end = time.monotonic() + patience
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"{what} not met within {patience} s")
        time.sleep(0.02)


class Receiver:
    """An HTTP receiver on loopback recording deliveries (headers, raw
    body); paths starting with /fail answer 500."""

    def __init__(self):
        self.deliveries = []
        self.cond = threading.Condition()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                status = 500 if self.path.startswith("/fail") else 200
                with outer.cond:
                    outer.deliveries.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                    outer.cond.notify_all()
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path="/hook"):
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def wait_for(self, path, patience=30.0):
        """The first delivery to `path`: (headers, body)."""
        end = time.monotonic() + patience
        with self.cond:
            while True:
                for p, headers, body in self.deliveries:
                    if p == path:
                        return headers, body
                left = end - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no delivery to {path} within {patience} s")
                self.cond.wait(left)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class ServerTestCase(unittest.TestCase):
    """A suite with a receiver and an admin client of SERVER, made once for
    its tests."""

    @classmethod
    def setUpClass(cls):
        from tickwheel import Client
        cls.receiver = Receiver()
        cls.client = Client(SERVER, token=ADMIN)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.receiver.close()


def hold_the_only_connection(url):
    """Opens a TCP connection to the TLS server (started with
    --max-connections 1) and returns it once the server counts it: a probe
    on another connection is then answered 503 overloaded (any route but /healthz,
    which is answered even then)."""
    host, port = url.split("://")[1].split(":")
    held = socket.create_connection((host, int(port)))
    context = ssl.create_default_context(cafile=CA_FILE)

    def probe_refused():
        try:
            with socket.create_connection((host, int(port)), timeout=5) as raw, \
                    context.wrap_socket(raw, server_hostname=host) as s:
                s.sendall(f"GET /v1/whoami HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
                return s.recv(64).startswith(b"HTTP/1.1 503")
        except OSError:
            return False

    wait_until(probe_refused, what="the held connection counted by the server")
    return held
