# SPDX-License-Identifier: Apache-2.0
"""The client against a real tickwheel serve (tokens on; HTTPS with a test
CA for one case)."""
import os
import time
import unittest
from unittest import mock

import tickwheel
from tickwheel import (BadRequestError, Client, ConflictError, ForbiddenError, NotFoundError,
                       UnauthorizedError, UnavailableError, verify_webhook)

from .support import (ADMIN, CA_FILE, READ, SECRETS, SERVER, TLS_SERVER, ServerTestCase,
                      hold_the_only_connection, needs_server, wait_until)


@needs_server
class ClientTest(ServerTestCase):
    def test_create_get_reschedule_cancel(self):
        t = self.client.create({"url": self.receiver.url()}, delay_ms=600_000, id="py-1",
                               payload={"order": 42})
        self.assertEqual(t["id"], "py-1")
        self.assertEqual(t["state"], "pending")
        got = self.client.get("py-1")
        self.assertEqual(got["payload"], {"order": 42})
        later = self.client.reschedule("py-1", fire_at_ms=got["fire_at_ms"] + 1000)
        self.assertEqual(later["fire_at_ms"], got["fire_at_ms"] + 1000)
        self.assertEqual(self.client.cancel("py-1")["state"], "cancelled")
        self.assertEqual(self.client.get("py-1")["state"], "cancelled")

    def test_a_create_without_id_gets_one_and_repeats_safely(self):
        t = self.client.create({"url": self.receiver.url()}, delay_ms=600_000)
        self.assertRegex(t["id"], "^[0-9a-f]{32}$")
        again = self.client.create({"url": self.receiver.url()}, delay_ms=600_000, id=t["id"])
        self.assertEqual(again["created_ms"], t["created_ms"])  # 200: the same timer

    def test_errors_are_typed_and_carry_the_servers_code(self):
        with self.assertRaises(BadRequestError) as bad:
            self.client.create({"url": self.receiver.url()}, delay_ms=-5)
        self.assertEqual((bad.exception.status, bad.exception.code, bad.exception.field),
                         (400, "negative_delay", "delay_ms"))
        with self.assertRaises(NotFoundError) as missing:
            self.client.get("py-no-such-timer")
        self.assertEqual(missing.exception.code, "not_found")
        self.client.create({"url": self.receiver.url()}, delay_ms=600_000, id="py-conflict")
        with self.assertRaises(ConflictError) as conflict:
            self.client.create({"url": self.receiver.url()}, delay_ms=600_000, id="py-conflict",
                               payload=1)
        self.assertEqual(conflict.exception.code, "id_conflict")
        self.client.cancel("py-conflict")
        with self.assertRaises(ConflictError) as done:
            self.client.reschedule("py-conflict", delay_ms=1)
        self.assertEqual(done.exception.code, "not_pending")
        self.assertIsInstance(done.exception, tickwheel.TickwheelError)

    def test_ids_with_any_character_are_sent_encoded(self):
        with self.assertRaises(BadRequestError) as bad:
            self.client.get("a b/c")
        self.assertEqual(bad.exception.code, "invalid_id")

    def test_batch_is_all_or_nothing(self):
        created = self.client.create_batch([
            {"id": "py-b1", "delay_ms": 600_000, "target": {"url": self.receiver.url()}},
            {"delay_ms": 600_000, "target": {"url": self.receiver.url()}},
        ])
        self.assertEqual([c["created"] for c in created], [True, True])
        self.assertEqual(created[0]["id"], "py-b1")
        with self.assertRaises(ConflictError):
            self.client.create_batch([
                {"id": "py-b2", "delay_ms": 1, "target": {"url": self.receiver.url()}},
                {"id": "py-b1", "delay_ms": 1, "target": {"url": self.receiver.url()}},
            ])
        with self.assertRaises(NotFoundError):
            self.client.get("py-b2")

    def test_list_pages_through_everything(self):
        ids = {f"py-list-{i}" for i in range(7)}
        for i in ids:
            self.client.create({"url": self.receiver.url()}, delay_ms=600_000, id=i)
        listed = [t["id"] for t in self.client.list("pending", prefix="py-list-", limit=2)]
        self.assertEqual(sorted(listed), sorted(ids))
        page = self.client.list_page("pending", prefix="py-list-", limit=2)
        self.assertEqual(len(page["timers"]), 2)
        self.assertIn("next_after", page)

    def test_dead_letters_are_retried_and_deleted(self):
        for i in range(3):
            self.client.create({"url": self.receiver.url(f"/fail-{i}")}, delay_ms=0, id=f"py-dead-{i}",
                               retry={"max_attempts": 1, "backoff_ms": 1})
        for i in range(3):
            wait_until(lambda: self.client.get(f"py-dead-{i}")["state"] == "failed",
                       what=f"py-dead-{i} failed")
        self.assertEqual(self.client.retry("py-dead-0")["state"], "pending")
        wait_until(lambda: self.client.get("py-dead-0")["state"] == "failed", what="failed again")
        dry = self.client.delete_failed(prefix="py-dead-", dry_run=True)
        self.assertEqual((dry["matched"], dry["done"]), (3, 0))
        self.assertEqual(self.client.retry_all_failed(prefix="py-dead-2"), 1)
        wait_until(lambda: self.client.get("py-dead-2")["state"] == "failed", what="failed again")
        self.assertEqual(self.client.delete_all_failed(prefix="py-dead-"), 3)
        with self.assertRaises(NotFoundError):
            self.client.get("py-dead-1")
        with self.assertRaises(BadRequestError) as no_filter:
            self.client.delete_failed()
        self.assertEqual(no_filter.exception.field, "all")

    def test_the_server(self):
        stats = self.client.stats()
        self.assertEqual(stats["store"]["kind"], "rocksdb")
        self.assertEqual(self.client.whoami(), {"role": "admin"})
        self.assertEqual(self.client.health()["status"], "ok")
        self.assertEqual(self.client.cluster(), {"mode": "node"})
        self.assertIn("points", self.client.stats_series())
        self.assertEqual(self.client.openapi()["openapi"], "3.1.0")

    def test_the_token_comes_from_the_environment(self):
        with mock.patch.dict(os.environ, {"TICKWHEEL_TOKEN": READ}):
            reader = Client(SERVER)
        self.assertEqual(reader.whoami(), {"role": "read"})
        with self.assertRaises(ForbiddenError) as forbidden:
            reader.create({"url": self.receiver.url()}, delay_ms=1)
        self.assertEqual(forbidden.exception.code, "forbidden")
        with mock.patch.dict(os.environ, {}, clear=True):
            nobody = Client(SERVER)
        with self.assertRaises(UnauthorizedError) as unauthenticated:
            nobody.whoami()
        self.assertEqual(unauthenticated.exception.code, "unauthenticated")

    def test_a_delivery_verifies_with_the_servers_secrets(self):
        self.client.create({"url": self.receiver.url("/signed")}, delay_ms=0, id="py-signed",
                           payload={"n": 1})
        headers, body = self.receiver.wait_for("/signed")
        delivery = verify_webhook(SECRETS, headers, body)
        self.assertEqual((delivery["id"], delivery["payload"], delivery["attempt"]), ("py-signed", {"n": 1}, 1))
        self.assertEqual(verify_webhook(SECRETS[1], headers, body)["id"], "py-signed")
        with self.assertRaises(tickwheel.WebhookVerificationError) as forged:
            verify_webhook(SECRETS[0], headers, body.replace(b'"n":1', b'"n":2'))
        self.assertEqual(forged.exception.reason, "signature")
        with self.assertRaises(tickwheel.WebhookVerificationError) as stale:
            verify_webhook(SECRETS, headers, body, now=time.time() + 600)
        self.assertEqual(stale.exception.reason, "timestamp")


    def test_the_callers_trace_context_reaches_the_delivery(self):
        parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        t = self.client.create({"url": self.receiver.url("/traced")}, delay_ms=0, id="py-traced",
                               payload={"n": 1}, traceparent=parent, tracestate="rojo=1")
        self.assertEqual((t["traceparent"], t["tracestate"]), (parent, "rojo=1"))
        headers, body = self.receiver.wait_for("/traced")
        sent = {k.lower(): v for k, v in headers.items()}
        trace_id, span = sent["traceparent"].split("-")[1:3]
        self.assertEqual(trace_id, "0af7651916cd43dd8448eb211c80319c")
        self.assertNotIn(span, ("b7ad6b7169203331", "0" * 16))
        self.assertEqual(sent["tracestate"], "rojo=1")
        self.assertEqual(verify_webhook(SECRETS, headers, body)["id"], "py-traced")
        with self.assertRaises(tickwheel.BadRequestError) as bad:
            self.client.create({"url": self.receiver.url()}, delay_ms=1, traceparent="00-nonsense")
        self.assertEqual(bad.exception.code, "invalid_trace_context")


@needs_server
class TlsClientTest(unittest.TestCase):
    def test_https_with_a_private_ca(self):
        with Client(TLS_SERVER, token=ADMIN, ca_file=CA_FILE) as client:
            self.assertEqual(client.whoami(), {"role": "admin"})
            t = client.create({"url": "http://127.0.0.1:9/never"}, delay_ms=600_000, id="py-tls")
            self.assertEqual(client.get("py-tls")["id"], t["id"])
        with self.assertRaises(UnavailableError) as untrusted:
            Client(TLS_SERVER, token=ADMIN, retries=0).whoami()
        self.assertEqual(untrusted.exception.code, "connection")

    def test_a_503_is_retried_with_the_same_id(self):
        client = Client(TLS_SERVER, token=ADMIN, ca_file=CA_FILE, retries=3)
        before = client.stats()["counts"]["pending"]
        client.close()
        held = hold_the_only_connection(TLS_SERVER)
        refusals = []

        def on_retry(attempt, error):
            refusals.append((attempt, error.status, error.code))
            held.close()  # the next attempt finds the server free

        client = Client(TLS_SERVER, token=ADMIN, ca_file=CA_FILE, retries=3, on_retry=on_retry)
        t = client.create({"url": "http://127.0.0.1:9/never"}, delay_ms=600_000, payload="x")
        self.assertEqual(refusals[0], (1, 503, "overloaded"))
        self.assertEqual(client.get(t["id"])["payload"], "x")
        self.assertEqual(client.stats()["counts"]["pending"], before + 1)
        client.close()


if __name__ == "__main__":
    unittest.main()
