"""args_schemas_of: the JSON Schemas of a Pydantic AI agent's tools, so
their cards offer Edit, from Pydantic AI's objects (the real package or the
stand-in, whichever is importable) and from plain dicts. They run with
test_slackbot_client, which imports them.
"""

from __future__ import annotations

import asyncio
import types
import unittest

import slackbot_client as sc
from test_wire import wire_problems

REFUND_SCHEMA = {
    "additionalProperties": False,
    "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
    "required": ["order_id", "amount"],
    "type": "object",
}

REQUESTS = {
    "approvals": [{"tool_name": "issue_refund", "args": {"order_id": "A-1", "amount": 5}, "tool_call_id": "a1"}],
    "calls": [{"tool_name": "lookup", "args": {}, "tool_call_id": "c1"}],
}


class RecordingClient(sc.SlackbotClient):
    """A client whose requests are recorded, and answered as resolved, without a server."""

    def __init__(self):
        super().__init__("http://127.0.0.1:9", "good-key-0123456789abcdef")
        self.bodies = []

    def _request(self, method, path, body=None):
        self.bodies.append(body)
        return {"token": "tok", "status": "resolved",
                "results": {"calls": {}, "approvals": {"a1": True}, "metadata": {}, "answered_by": {}}}


class ArgsSchemasOfDictsTest(unittest.TestCase):
    def test_dicts(self):
        as_def = {"name": "issue_refund", "parameters_json_schema": REFUND_SCHEMA, "description": "Refunds."}
        self.assertEqual(sc.args_schemas_of(as_def), {"issue_refund": REFUND_SCHEMA})
        self.assertEqual(sc.args_schemas_of({"issue_refund": REFUND_SCHEMA}), {"issue_refund": REFUND_SCHEMA})
        got = sc.args_schemas_of([as_def, {"lookup": {"type": "object"}}])
        self.assertEqual(got, {"issue_refund": REFUND_SCHEMA, "lookup": {"type": "object"}})
        got["issue_refund"]["type"] = "changed"
        self.assertEqual(REFUND_SCHEMA["type"], "object", "the caller's schema must not change")

    def test_objects_by_attribute(self):
        # What Pydantic AI's objects hold, as plain objects: a RunContext
        # whose ToolManager holds the step's prepared tools.
        tool_def = types.SimpleNamespace(name="issue_refund", parameters_json_schema=REFUND_SCHEMA)
        manager = types.SimpleNamespace(tools={"issue_refund": types.SimpleNamespace(tool_def=tool_def)}, tool_defs=[tool_def])
        ctx = types.SimpleNamespace(run_id="r", run_step=1, tool_manager=manager, agent=None)
        self.assertEqual(sc.args_schemas_of(ctx), {"issue_refund": REFUND_SCHEMA})

    def test_refusals_name_what_was_wrong(self):
        with self.assertRaisesRegex(TypeError, "a int holds no tool definitions"):
            sc.args_schemas_of(7)
        with self.assertRaisesRegex(TypeError, "the schema of 'issue_refund' is a str"):
            sc.args_schemas_of({"issue_refund": "object"})
        with self.assertRaisesRegex(TypeError, "a tool name must be a non-empty string"):
            sc.args_schemas_of({"name": "", "parameters_json_schema": {}})
        with self.assertRaisesRegex(TypeError, "neither prepared tools nor an agent"):
            sc.args_schemas_of(types.SimpleNamespace(tool_manager=None, agent=None))

    def test_handler_sends_the_steps_schemas(self):
        # make_handler(args_schemas=args_schemas_of) asks each batch's
        # context for its tools' schemas: every approval carries its tool's,
        # an external call none.
        c = RecordingClient()
        tool_def = types.SimpleNamespace(name="issue_refund", parameters_json_schema=REFUND_SCHEMA)
        manager = types.SimpleNamespace(tools={"issue_refund": None}, tool_defs=[tool_def])
        handler = sc.make_handler(c, args_schemas=sc.args_schemas_of)
        asyncio.run(handler(types.SimpleNamespace(run_id="r1", tool_manager=manager), REQUESTS))
        body = c.bodies[-1]
        self.assertEqual(body["metadata"], {"a1": {sc.ARGS_SCHEMA_KEY: REFUND_SCHEMA}})
        self.assertEqual(wire_problems("/v1/approvals", body), [])


def _pai():
    return sc._pydantic_ai()


@unittest.skipUnless(_pai(), "pydantic_ai is not importable: args_schemas_of on its objects is tested in the run "
                             "with it (SLACKBOT_TEST_PYDANTIC_AI=standin, or the real package installed)")
class ArgsSchemasOfPydanticAITest(unittest.TestCase):
    """Against Pydantic AI's own Agent, tools and RunContext."""

    def setUp(self):
        pai = _pai()
        self.agent = pai.Agent(None)

        @self.agent.tool_plain(requires_approval=True)
        def issue_refund(order_id: str, amount: float) -> str:
            return "refunded"

        @self.agent.tool
        def lookup(ctx, order_id: str) -> str:
            return order_id

    def test_agent(self):
        got = sc.args_schemas_of(self.agent)
        self.assertEqual(set(got), {"issue_refund", "lookup"})
        self.assertEqual(got["issue_refund"]["properties"], REFUND_SCHEMA["properties"])
        self.assertEqual(got["issue_refund"]["required"], ["order_id", "amount"])
        self.assertEqual(got["lookup"]["properties"], {"order_id": {"type": "string"}}, "the RunContext is no argument")
        tools = self.agent.toolsets[0].tools
        self.assertEqual(got["issue_refund"], tools["issue_refund"].tool_def.parameters_json_schema)
        self.assertEqual(sc.args_schemas_of(tools["issue_refund"]), {"issue_refund": got["issue_refund"]})
        self.assertEqual(sc.args_schemas_of(self.agent.toolsets[0]), got)

    def test_handler_with_the_agents_schemas(self):
        pai = _pai()
        c = RecordingClient()
        handler = sc.make_handler(c, args_schemas=sc.args_schemas_of(self.agent))
        requests = pai.DeferredToolRequests(
            approvals=[pai.ToolCallPart("issue_refund", {"order_id": "A-1", "amount": 5}, "a1")],
            calls=[pai.ToolCallPart("lookup", {"order_id": "A-1"}, "c1")],
        )
        results = asyncio.run(handler(types.SimpleNamespace(run_id="r1"), requests))
        self.assertIsInstance(results, pai.DeferredToolResults)
        body = c.bodies[-1]
        self.assertEqual(body["metadata"]["a1"][sc.ARGS_SCHEMA_KEY]["properties"], REFUND_SCHEMA["properties"])
        self.assertNotIn("c1", body["metadata"])
        self.assertEqual(wire_problems("/v1/approvals", body), [])


if __name__ == "__main__":
    unittest.main()
