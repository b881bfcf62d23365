# SPDX-License-Identifier: Apache-2.0
"""verify_webhook against the Standard Webhooks cases of
clients/testdata/standard_webhooks.json (the specification's example and
one change of it per case)."""
import json
import unittest

from tickwheel import WebhookVerificationError, verify_webhook

from .support import VECTORS, needs_server


@needs_server
class VectorsTest(unittest.TestCase):
    def test_every_case(self):
        with open(VECTORS) as f:
            doc = json.load(f)
        self.assertGreaterEqual(len(doc["cases"]), 15)
        for case in doc["cases"]:
            with self.subTest(case=case["name"]):
                call = lambda: verify_webhook(case["secrets"], case["headers"], case["body"].encode(),
                                              now=case["now"], tolerance_seconds=doc["tolerance_seconds"])
                if case["valid"]:
                    self.assertEqual(call(), json.loads(case["body"]))
                else:
                    with self.assertRaises(WebhookVerificationError) as refused:
                        call()
                    self.assertEqual(refused.exception.reason, case["reason"])

    def test_a_bad_secret_is_a_value_error_not_a_refusal(self):
        with self.assertRaises(ValueError):
            verify_webhook("whsec_%%%", {}, b"{}")


if __name__ == "__main__":
    unittest.main()
