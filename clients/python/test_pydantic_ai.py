"""slackbot_client with Pydantic AI's objects: the conversion for a
pydantic_ai-like module without pydantic (FakePydanticAITest), and the
TypeAdapter path against the importable pydantic_ai, the real package or the
stand-in (RealPydanticAITest). They run with test_slackbot_client, which
imports them.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import sys
import types
import unittest

import slackbot_client as sc
from test_wire import compact, wire_problems


class FakePydanticAITest(unittest.TestCase):
    """results_from_json builds Pydantic AI's objects when it is installed.
    pydantic_ai cannot be installed here, so a stand-in with the same names
    and fields plays it."""

    def setUp(self):
        fake = types.ModuleType("pydantic_ai")

        @dataclasses.dataclass
        class ToolApproved:
            override_args: dict | None = None
            kind: str = "tool-approved"

        @dataclasses.dataclass
        class ToolDenied:
            message: str = "The tool call was denied."
            kind: str = "tool-denied"

        class ModelRetry(Exception):
            def __init__(self, message):
                super().__init__(message)
                self.message = message

        class ToolFailed(Exception):
            def __init__(self, message):
                super().__init__(message)
                self.message = message

        @dataclasses.dataclass
        class DeferredToolResults:
            calls: dict = dataclasses.field(default_factory=dict)
            approvals: dict = dataclasses.field(default_factory=dict)
            metadata: dict = dataclasses.field(default_factory=dict)

        for cls in (ToolApproved, ToolDenied, ModelRetry, ToolFailed, DeferredToolResults):
            setattr(fake, cls.__name__, cls)
        self.fake = fake
        self.saved = sys.modules.get("pydantic_ai")
        sys.modules["pydantic_ai"] = fake

    def tearDown(self):
        if self.saved is None:
            del sys.modules["pydantic_ai"]
        else:
            sys.modules["pydantic_ai"] = self.saved

    def test_objects_and_back(self):
        literal = (
            '{"calls":{"c1":{"rows":3},"c2":{"message":"timeout","kind":"tool-failed"},'
            '"c3":{"message":"ask again","kind":"model-retry"}},'
            '"approvals":{"a1":true,"a3":{"override_args":{"path":"/tmp/b"},"kind":"tool-approved"},'
            '"a4":{"message":"No.","kind":"tool-denied"}},"metadata":{"a1":{"ticket":42}},"answered_by":{}}'
        )
        res = sc.results_from_json(json.loads(literal))
        self.assertIsInstance(res, self.fake.DeferredToolResults)
        self.assertIs(res.approvals["a1"], True)
        self.assertEqual(res.approvals["a3"], self.fake.ToolApproved(override_args={"path": "/tmp/b"}))
        self.assertEqual(res.approvals["a4"], self.fake.ToolDenied("No."))
        self.assertIsInstance(res.calls["c2"], self.fake.ToolFailed)
        self.assertIsInstance(res.calls["c3"], self.fake.ModelRetry)
        self.assertEqual(res.calls["c1"], {"rows": 3})
        self.assertEqual(compact(sc.results_to_json(res)), literal)


def _real_pydantic_ai():
    try:
        import pydantic_ai
    except ImportError:
        return None
    return pydantic_ai if getattr(pydantic_ai, "__version__", None) else None


PAI = _real_pydantic_ai()


@unittest.skipUnless(PAI, "pydantic_ai is not importable: the TypeAdapter path is NOT TESTED in this run "
                          "(SLACKBOT_TEST_PYDANTIC_AI=standin runs it against the stand-in)")
class RealPydanticAITest(unittest.TestCase):
    """Against the importable Pydantic AI (the real package, or the stand-in
    copied from it): results go both ways through its
    TypeAdapter(DeferredToolResults), so every kind round-trips as the
    object it was."""

    def test_every_kind_round_trips(self):
        from pydantic import TypeAdapter

        adapter = TypeAdapter(PAI.DeferredToolResults)
        when = datetime.datetime(2026, 12, 1, 11, 30, tzinfo=datetime.timezone.utc)
        original = PAI.DeferredToolResults(
            calls={"c1": PAI.ToolReturn(return_value={"rows": 3, "at": when}), "c2": PAI.ModelRetry("ask again"), "c3": {"rows": 3}},
            approvals={"a1": True, "a2": PAI.ToolApproved(override_args={"path": "/tmp/b"}), "a3": PAI.ToolDenied("No.")},
            metadata={"a1": {"ticket": 42}},
        )
        wire = sc.results_to_json(original)
        json.dumps(wire)  # JSON as it is sent
        self.assertEqual(wire_problems("/v1/approvals/t/results", wire), [])
        back = sc.results_from_json(wire)
        self.assertIsInstance(back, PAI.DeferredToolResults)
        self.assertIsInstance(back.calls["c1"], PAI.ToolReturn)
        self.assertIsInstance(back.calls["c2"], PAI.ModelRetry)
        self.assertIsInstance(back.approvals["a2"], PAI.ToolApproved)
        self.assertIsInstance(back.approvals["a3"], PAI.ToolDenied)
        self.assertEqual(adapter.dump_python(back, mode="json"), adapter.dump_python(original, mode="json"))

    def test_results_from_json_takes_the_objects(self):
        # What a handler returned (objects) may be handed on as it is.
        original = PAI.DeferredToolResults(approvals={"a1": PAI.ToolApproved(override_args={"path": "/tmp/b"})},
                                           metadata={"a1": {"slackbot_receipt": "r"}})
        back = sc.results_from_json(original)
        self.assertIsInstance(back, PAI.DeferredToolResults)
        self.assertEqual(back.approvals["a1"], PAI.ToolApproved(override_args={"path": "/tmp/b"}))
        self.assertEqual(sc.results_from_json(original, pydantic=False)["metadata"], {"a1": {"slackbot_receipt": "r"}})

    def test_a_tool_return_dump_is_a_tool_return(self):
        dumped = sc.results_to_json(PAI.DeferredToolResults(calls={"c1": PAI.ToolReturn(return_value="ok")}))
        back = sc.results_from_json(dumped)
        self.assertIsInstance(back.calls["c1"], PAI.ToolReturn, "the model would see the wrapper dict")
