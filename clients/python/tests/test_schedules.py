# SPDX-License-Identifier: Apache-2.0
"""Schedules and flows through the client, against a real tickwheel serve."""
import time
import unittest

from tickwheel import Client, ConflictError, NotFoundError, verify_webhook

from .support import ADMIN, SECRETS, SERVER, ServerTestCase, needs_server, wait_until

HOUR = 3_600_000


@needs_server
class SchedulesTest(ServerTestCase):
    def test_a_schedule_from_create_to_delete(self):
        body = {"id": "py-sched", "every_ms": HOUR, "target": {"url": self.receiver.url("/py-sched")},
                "payload": {"s": 1}}
        s = self.client.create_schedule(body)
        self.assertEqual((s["id"], s["state"], s["every_ms"]), ("py-sched", "active", HOUR))
        self.assertEqual(self.client.create_schedule(body)["created_ms"], s["created_ms"])
        with self.assertRaises(ConflictError) as conflict:
            self.client.create_schedule(dict(body, every_ms=2 * HOUR))
        self.assertEqual(conflict.exception.code, "id_conflict")
        got = self.client.get_schedule("py-sched", next=3)
        self.assertEqual(len(got["next"]), 3)
        self.assertEqual(got["next"][1]["at_ms"] - got["next"][0]["at_ms"], HOUR)
        self.assertEqual(self.client.update_schedule("py-sched", {"jitter_ms": 1000})["jitter_ms"], 1000)
        self.assertEqual(self.client.pause_schedule("py-sched")["state"], "paused")
        self.assertEqual(self.client.resume_schedule("py-sched")["state"], "active")

        occurrence = self.client.trigger_schedule("py-sched")
        self.assertTrue(occurrence["id"].startswith("py-sched@"), occurrence["id"])
        headers, raw = self.receiver.wait_for("/py-sched")
        delivery = verify_webhook(SECRETS, headers, raw)
        self.assertEqual((delivery["schedule"], delivery["payload"]), ("py-sched", {"s": 1}))

        now = int(time.time() * 1000)
        outcome = self.client.backfill_schedule("py-sched", from_ms=now - 3 * HOUR, to_ms=now)
        self.assertEqual((outcome["created"], outcome["existing"], outcome["more"]), (3, 0, False))
        again = self.client.backfill_schedule("py-sched", from_ms=now - 3 * HOUR, to_ms=now)
        self.assertEqual((again["created"], again["existing"]), (0, 3))
        wait_until(lambda: self.client.get_schedule("py-sched")["counts"]["backfilled"] == 3,
                   what="three backfilled occurrences counted")

        self.assertEqual(self.client.delete_schedule("py-sched")["id"], "py-sched")
        with self.assertRaises(NotFoundError):
            self.client.get_schedule("py-sched")

    def test_schedules_are_listed_page_after_page(self):
        for name in ("py-cron-a", "py-cron-b", "py-cron-c"):
            self.client.create_schedule({"id": name, "cron": "0 9 * * 1-5", "time_zone": "Europe/Berlin",
                                         "target": {"url": self.receiver.url()}})
        listed = [s["id"] for s in self.client.list_schedules(prefix="py-cron-", limit=2)]
        self.assertEqual(listed, ["py-cron-a", "py-cron-b", "py-cron-c"])
        page = self.client.list_schedules_page(prefix="py-cron-", limit=2)
        self.assertEqual(len(page["schedules"]), 2)
        self.assertIn("next_after", page)
        self.client.pause_schedule("py-cron-b")
        self.assertEqual([s["id"] for s in self.client.list_schedules(prefix="py-cron-", state="paused")],
                         ["py-cron-b"])


@needs_server
class FlowsTest(unittest.TestCase):
    def test_a_flow_is_set_paused_resumed_and_reset(self):
        client = Client(SERVER, token=ADMIN)
        flow = client.set_flow("py-flow", {"rate_per_s": 5, "burst": 2})
        self.assertEqual((flow["key"], flow["configured"], flow["rate_per_s"], flow["burst"]),
                         ("py-flow", True, 5, 2))
        self.assertEqual(client.get_flow("py-flow")["settings"]["rate_per_s"], 5)
        self.assertIn("py-flow", [f["key"] for f in client.list_flows(limit=1)])
        self.assertTrue(client.pause_flow("py-flow")["paused"])
        self.assertFalse(client.resume_flow("py-flow")["paused"])
        self.assertFalse(client.reset_flow("py-flow")["configured"])
        self.assertFalse(client.get_flow("py-flow")["configured"])
        client.close()


if __name__ == "__main__":
    unittest.main()
