# SPDX-License-Identifier: Apache-2.0
"""The client's types against docs/openapi.json: every object schema of
components/schemas has a TypedDict of its name with the same keys, the
same ones required."""
import json
import typing
import unittest

import tickwheel.types as types

from .support import OPENAPI, needs_server


@needs_server
class ShapesTest(unittest.TestCase):
    def test_every_object_schema_has_a_typed_dict_with_its_keys(self):
        with open(OPENAPI) as f:
            schemas = json.load(f)["components"]["schemas"]
        objects = {name: s for name, s in schemas.items() if "properties" in s}
        self.assertGreater(len(objects), 20)
        for name, schema in objects.items():
            with self.subTest(schema=name):
                self.assertTrue(hasattr(types, name), f"tickwheel.types has no {name}")
                cls = getattr(types, name)
                self.assertEqual(set(typing.get_type_hints(cls)), set(schema["properties"]),
                                 f"the keys of {name}")
                self.assertEqual(set(cls.__required_keys__), set(schema.get("required", [])),
                                 f"the required keys of {name}")

    def test_the_enums_match(self):
        with open(OPENAPI) as f:
            schemas = json.load(f)["components"]["schemas"]
        self.assertEqual(set(typing.get_args(types.TimerState)), set(schemas["TimerState"]["enum"]))
        self.assertEqual(set(typing.get_args(typing.get_type_hints(types.Whoami)["role"])),
                         set(schemas["Whoami"]["properties"]["role"]["enum"]))


if __name__ == "__main__":
    unittest.main()
