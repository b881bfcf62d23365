# SPDX-License-Identifier: Apache-2.0
"""The operator's routes through the client (backup, export, import, pause
and resume of delivery and of writes), against a real tickwheel serve."""
import os
import shutil
import tempfile
import time
import unittest

from tickwheel import BadRequestError, Client, UnavailableError

from .support import ADMIN, SERVER, ServerTestCase, needs_server


@needs_server
class AdminTest(ServerTestCase):
    def test_a_backup_goes_into_a_new_directory(self):
        d = tempfile.mkdtemp(prefix="tickwheel-py-backup-")
        self.addCleanup(shutil.rmtree, d, ignore_errors=True)
        backup = self.client.backup(os.path.join(d, "b"))
        self.assertEqual(backup["dir"], os.path.join(d, "b"))
        self.assertGreater(backup["files"], 0)
        self.assertTrue(os.path.exists(os.path.join(d, "b", "tickwheel-backup.json")))
        with self.assertRaises(BadRequestError) as exists:
            self.client.backup(os.path.join(d, "b"))
        self.assertEqual(exists.exception.code, "backup_exists")

    def test_an_export_is_read_page_after_page_and_imported_again(self):
        ids = [f"py-exp-{i}" for i in range(3)]
        for i in ids:
            self.client.create({"url": self.receiver.url()}, delay_ms=600_000, id=i)
        lines, cursor = self.client.export_page(states=["pending"], limit=2)
        self.assertEqual(lines[0]["kind"], "export")
        self.assertIsNotNone(cursor)
        exported = list(self.client.export(states=["pending"], limit=2))
        self.assertEqual(exported[0]["kind"], "export")
        timers = [line for line in exported if line.get("kind") == "timer"]
        self.assertEqual(len(timers), exported[0]["timers"])
        self.assertLessEqual(set(ids), {t["id"] for t in timers})

        mine = [t for t in timers if t["id"] in ids]
        self.assertEqual(self.client.import_records(mine)["existing"], 3)  # the same: left alone
        fresh = {"id": "py-imp-1", "state": "pending", "fire_at_ms": int(time.time() * 1000) + 600_000,
                 "target": {"url": self.receiver.url()}, "payload": {"imported": True}}
        result = self.client.import_records([fresh])
        self.assertEqual((result["lines"], result["created"], result["existing"], result["conflicts"]),
                         (1, 1, 0, []))
        self.assertEqual(self.client.get("py-imp-1")["payload"], {"imported": True})
        self.assertEqual(self.client.import_records([fresh])["existing"], 1)

    def test_writes_paused_are_refused_then_taken_again(self):
        self.assertEqual(self.client.pause_writes()["writes"], "paused")
        try:
            with Client(SERVER, token=ADMIN, retries=0) as once, \
                    self.assertRaises(UnavailableError) as paused:
                once.create({"url": self.receiver.url()}, delay_ms=1)
            self.assertEqual(paused.exception.code, "writes_paused")
        finally:
            self.assertEqual(self.client.resume_writes()["writes"], "accepted")
        self.client.create({"url": self.receiver.url()}, delay_ms=600_000, id="py-after-writes")

    def test_delivery_paused_holds_due_timers_until_resumed(self):
        self.assertEqual(self.client.pause_delivery()["delivery"], "paused")
        try:
            self.client.create({"url": self.receiver.url("/py-held")}, delay_ms=0, id="py-held")
            self.assertEqual(self.client.health().get("delivery"), "paused")
            self.assertEqual(self.client.get("py-held")["state"], "pending")
            self.assertNotIn("/py-held", [p for p, _, _ in self.receiver.deliveries])
        finally:
            self.assertEqual(self.client.resume_delivery()["delivery"], "running")
        self.receiver.wait_for("/py-held")


if __name__ == "__main__":
    unittest.main()
