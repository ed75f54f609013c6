"""What the client sends and reads, held to Pydantic AI's wire format as
DESIGN.md ("Data model") writes it: the checker of those rules
(wire_problems, used on every body the stub server in test_slackbot_client
receives), its own tests, and the format against literal examples. They run
with test_slackbot_client, which imports them.
"""

from __future__ import annotations

import dataclasses
import json
import unittest

import slackbot_client as sc

# Pydantic AI's DeferredToolResults as JSON, in the key order Pydantic AI
# and slackbot write it.
RESULTS_LITERAL = (
    '{"calls":{},"approvals":{"call_1":true,"call_3":{"message":"Refunds over $100 need a manager.",'
    '"kind":"tool-denied"}},"metadata":{},"answered_by":{}}'
)

# A DeferredToolRequests as a Pydantic AI run ends with it, its tool calls
# serialized with every field Pydantic AI writes.
REQUESTS_LITERAL = """{
  "calls": [
    {"tool_name": "fetch_report", "args": "{\\"id\\": 7}", "tool_call_id": "call_2",
     "id": null, "provider_name": null, "provider_details": null, "part_kind": "tool-call"}
  ],
  "approvals": [
    {"tool_name": "issue_refund", "args": {"order_id": "A-1002", "amount": 250}, "tool_call_id": "call_1",
     "id": null, "provider_name": null, "provider_details": null, "part_kind": "tool-call"},
    {"tool_name": "issue_refund", "args": {"order_id": "A-1003", "amount": 900}, "tool_call_id": "call_3",
     "id": null, "provider_name": null, "provider_details": null, "part_kind": "tool-call"}
  ],
  "metadata": {"call_2": {"task_id": "task_0"}}
}"""


def compact(v) -> str:
    return json.dumps(v, separators=(",", ":"))


CREATE_FIELDS = {"calls", "approvals", "metadata", "route", "requester", "context", "timeout", "callback_url", "idempotency_key"}


def wire_problems(path: str, body) -> list[str]:
    """What breaks Pydantic AI's wire rules as DESIGN.md writes them ("Data
    model"), in a body the client sent to path: ToolCallPart,
    DeferredToolRequests (plus slackbot's create fields), DeferredToolResults."""
    out = []
    if not isinstance(body, dict):
        return [f"{path}: the body is not a JSON object"]
    if path == "/v1/approvals":
        out += [f"unknown create field {k!r}" for k in body if k not in CREATE_FIELDS]
        for key in ("calls", "approvals"):
            for part in body.get(key) or []:
                if not isinstance(part, dict):
                    out.append(f"{key}: {part!r} is not a ToolCallPart")
                    continue
                if not isinstance(part.get("tool_name"), str) or not part["tool_name"]:
                    out.append(f"{key}: tool_name {part.get('tool_name')!r}")
                if not isinstance(part.get("tool_call_id"), str) or not part["tool_call_id"]:
                    out.append(f"{key}: tool_call_id {part.get('tool_call_id')!r}")
                if not isinstance(part.get("args"), (dict, str, type(None))):
                    out.append(f"{key}: args {part.get('args')!r} is not an object, a string or null")
        ids = {p.get("tool_call_id") for key in ("calls", "approvals") for p in body.get(key) or [] if isinstance(p, dict)}
        approvals = {p.get("tool_call_id") for p in body.get("approvals") or [] if isinstance(p, dict)}
        for k, v in (body.get("metadata") or {}).items():
            if not isinstance(v, dict):
                out.append(f"metadata[{k}] is not an object")
            elif k not in ids:
                out.append(f"metadata[{k}] names no tool_call_id of the request")
            elif sc.ARGS_SCHEMA_KEY in v and (k not in approvals or not isinstance(v[sc.ARGS_SCHEMA_KEY], dict)):
                out.append(f"metadata[{k}].{sc.ARGS_SCHEMA_KEY} must be a JSON Schema object, on an approval")
        return out
    if path.endswith("/results"):
        out += [f"unknown results field {k!r}" for k in body if k not in {"calls", "approvals", "metadata", "answered_by"}]
        for k, v in (body.get("approvals") or {}).items():
            ok = isinstance(v, bool) or (
                isinstance(v, dict)
                and (
                    (v.get("kind") == "tool-approved" and set(v) <= {"kind", "override_args"}
                     and isinstance(v.get("override_args"), (dict, str, type(None))))
                    or (v.get("kind") == "tool-denied" and set(v) <= {"kind", "message"} and isinstance(v.get("message", ""), str))
                )
            )
            if not ok:
                out.append(f"approvals[{k}] = {v!r}")
        for k, v in (body.get("calls") or {}).items():
            if isinstance(v, dict) and v.get("kind") in ("tool-failed", "model-retry") and not isinstance(v.get("message"), str):
                out.append(f"calls[{k}] = {v!r}: {v['kind']} needs a message")
        for k, v in (body.get("metadata") or {}).items():
            if not isinstance(v, dict):
                out.append(f"metadata[{k}] is not an object")
        for k, v in (body.get("answered_by") or {}).items():
            if not isinstance(v, str):
                out.append(f"answered_by[{k}] is not a string")
    return out


class WireRulesTest(unittest.TestCase):
    """The checker itself: it must refuse what DESIGN.md's rules refuse."""

    def test_refuses(self):
        for path, body in [
            ("/v1/approvals", {"approvals": [{"tool_name": "", "args": {}, "tool_call_id": "a"}]}),
            ("/v1/approvals", {"approvals": [{"tool_name": "x", "args": [1], "tool_call_id": "a"}]}),
            ("/v1/approvals", {"approvals": [], "extra": 1}),
            ("/v1/approvals", {"approvals": [], "metadata": {"c9": {}}}),
            ("/v1/approvals", {"calls": [{"tool_name": "x", "args": {}, "tool_call_id": "a"}],
                               "metadata": {"a": {"slackbot_args_schema": {"type": "object"}}}}),
            ("/v1/approvals", {"approvals": [{"tool_name": "x", "args": {}, "tool_call_id": "a"}],
                               "metadata": {"a": {"slackbot_args_schema": "object"}}}),
            ("/v1/approvals/t/results", {"approvals": {"a": {"kind": "tool-denied", "message": 3}}}),
            ("/v1/approvals/t/results", {"approvals": {"a": {"return_value": 1, "kind": "tool-return"}}}),
            ("/v1/approvals/t/results", {"calls": {"c": {"kind": "model-retry"}}}),
            ("/v1/approvals/t/results", {"answered_by": {"c": 1}}),
        ]:
            self.assertTrue(wire_problems(path, body), f"{path} {body} passed")
        self.assertEqual(wire_problems("/v1/approvals", json.loads(REQUESTS_LITERAL)), [])
        self.assertEqual(wire_problems("/v1/approvals/t/results", json.loads(RESULTS_LITERAL)), [])


class WireFormatTest(unittest.TestCase):
    def test_results_round_trip(self):
        got = sc.results_to_json(sc.results_from_json(json.loads(RESULTS_LITERAL), pydantic=False))
        self.assertEqual(compact(got), RESULTS_LITERAL)

    def test_results_every_form(self):
        literal = (
            '{"calls":{"c1":{"rows":3},"c2":{"message":"timeout","kind":"tool-failed"},'
            '"c3":{"message":"ask again","kind":"model-retry"},"c4":null,"c5":"text"},'
            '"approvals":{"a1":true,"a2":false,"a3":{"override_args":{"path":"/tmp/b"},"kind":"tool-approved"},'
            '"a4":{"message":"No.","kind":"tool-denied"}},"metadata":{"a1":{"ticket":42}},"answered_by":{"a1":"U0ALICE"}}'
        )
        got = sc.results_to_json(sc.results_from_json(json.loads(literal), pydantic=False))
        self.assertEqual(compact(got), literal)

    def test_results_optional_keys(self):
        got = sc.results_to_json({"approvals": {"call_1": True}})
        self.assertEqual(compact(got), '{"calls":{},"approvals":{"call_1":true},"metadata":{},"answered_by":{}}')

    def test_results_from_an_approval(self):
        approval = {"token": "t" * 43, "status": "resolved", "results": json.loads(RESULTS_LITERAL)}
        self.assertEqual(compact(sc.results_from_json(approval, pydantic=False)), RESULTS_LITERAL)
        with self.assertRaises(ValueError):
            sc.results_from_json({"token": "t" * 43, "status": "pending", "results": None}, pydantic=False)

    def test_requests_pass_through(self):
        wire = sc.requests_to_json(json.loads(REQUESTS_LITERAL))
        self.assertEqual(wire, json.loads(REQUESTS_LITERAL))

    def test_requests_from_objects(self):
        @dataclasses.dataclass
        class ToolCallPart:
            tool_name: str
            args: object
            tool_call_id: str
            part_kind: str = "tool-call"

        @dataclasses.dataclass
        class DeferredToolRequests:
            calls: list
            approvals: list
            metadata: dict

        reqs = DeferredToolRequests(
            calls=[],
            approvals=[ToolCallPart("delete_file", {"path": "/tmp/a"}, "call_1")],
            metadata={"call_1": {"reason": "protected"}},
        )
        self.assertEqual(
            compact(sc.requests_to_json(reqs)),
            '{"calls":[],"approvals":[{"tool_name":"delete_file","args":{"path":"/tmp/a"},"tool_call_id":"call_1"}],'
            '"metadata":{"call_1":{"reason":"protected"}}}',
        )
