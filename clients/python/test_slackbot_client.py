"""Tests of slackbot_client: the wire format against literal examples, the
client against a stub server, and — when SLACKBOT_URL and SLACKBOT_API_KEY
are set — the whole flow against a live slackbot.

    python3 -m unittest -v test_slackbot_client

The live tests wait for someone to click Approve on the cards they post
(slackbot's Go test, httpapi/python_test.go, clicks as the approver).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import http.server
import json
import os
import sys
import threading
import types
import unittest
import uuid

import pai_mode  # first: it decides which pydantic_ai the client meets

import slackbot_client as sc
import slackbot_receipt as sr
from test_pydantic_ai import *  # noqa: F401,F403 -- the conversions with Pydantic AI's objects (TestPythonExample)
from test_py310 import *  # noqa: F401,F403 -- the Python 3.10 checks run with these (TestPythonExample)
from test_schemas import *  # noqa: F401,F403 -- args_schemas_of's tests run with these (TestPythonExample)
from test_readme import *  # noqa: F401,F403 -- the READMEs' Python snippets compile (TestPythonExample)
from test_receipt import *  # noqa: F401,F403 -- the receipt verifier's tests run with these (TestPythonExample)
from test_wire import *  # noqa: F401,F403 -- the wire rules' tests run with these (TestPythonExample)
from test_wire import REQUESTS_LITERAL, RESULTS_LITERAL, compact, wire_problems

print(pai_mode.describe(), flush=True)


def results_form(test: unittest.TestCase, results) -> dict:
    """results as JSON, after checking they come in the form a run takes:
    Pydantic AI's DeferredToolResults when pydantic_ai is importable (the
    real package or the stand-in), the wire dict otherwise. The JSON of the
    objects goes through the client's own conversion (results_to_json);
    Pydantic AI's objects have no answered_by, so theirs is empty."""
    pai = sc._pydantic_ai()
    if pai is None:
        test.assertIsInstance(results, dict)
        return results
    test.assertIsInstance(results, pai.DeferredToolResults)
    return sc.results_to_json(results)


def wire_of(results) -> dict:
    """results as JSON, whichever form they come in."""
    return results if isinstance(results, dict) else sc.results_to_json(results)


class CallbackTest(unittest.TestCase):
    # Computed by slackbot's Go code (httpapi.Key.CallbackSecret, httpapi.Sign).
    KEY = "billing-key-0123456789abcdef"
    SECRET = "f5f6fd2247975f53e9e9baa1f03c50c5fe3960400cba7922a73a5017dd595849"
    BODY = b'{"token":"t","status":"resolved"}'
    SIGNATURE = "v1=90e6ef9600d2e805d0ad3531fc5a7f971f2ab5c3b5ec284f23281839d2c2fc25"

    def test_secret(self):
        self.assertEqual(sc.callback_secret(self.KEY), self.SECRET)

    def test_verify(self):
        headers = {"X-Slackbot-Timestamp": "1800000000", "X-Slackbot-Signature": self.SIGNATURE}
        self.assertTrue(sc.verify_callback(self.KEY, headers, self.BODY, now=1800000060))
        self.assertFalse(sc.verify_callback(self.KEY, headers, self.BODY, now=1800000400), "replayed late")
        self.assertFalse(sc.verify_callback(self.KEY, headers, self.BODY + b" ", now=1800000060), "body changed")
        self.assertFalse(sc.verify_callback("other-key-0123456789abcdef", headers, self.BODY, now=1800000060))


class StubServerTest(unittest.TestCase):
    """The client's requests and error handling, against a stub of slackbot."""

    def setUp(self):
        self.seen = []
        # Every body the client sends is checked against the wire rules.
        self.wire = []
        test = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _reply(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _handle(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n)) if n else None
                test.seen.append((self.command, self.path, self.headers.get("Authorization"), self.headers.get("Content-Type"), body))
                if self.command == "POST":
                    test.wire.extend(wire_problems(self.path, body))
                if self.headers.get("Authorization") != "Bearer good-key-0123456789abcdef":
                    return self._reply(401, {"error": {"code": "unauthorized", "message": "a valid bearer key is required"}})
                if self.path.startswith("/v1/approvals/missing"):
                    return self._reply(404, {"error": {"code": "not_found", "message": "no approval request with this token"}})
                self._reply(200, {"token": "tok", "status": "resolved", "results": json.loads(RESULTS_LITERAL)})

            do_GET = do_POST = do_DELETE = _handle

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def tearDown(self):
        self.server.shutdown()
        self.server.server_close()
        self.assertEqual(self.wire, [], "bodies that break Pydantic AI's wire rules")

    def test_requests(self):
        c = sc.SlackbotClient(self.url + "/", "good-key-0123456789abcdef")
        c.create(json.loads(REQUESTS_LITERAL), context="why", timeout="30m", idempotency_key="k1")
        c.get("tok", wait=90)
        c.results("tok", {"approvals": {"call_1": True}})
        c.cancel("tok")
        method, path, auth, ctype, body = self.seen[0]
        self.assertEqual((method, path, auth, ctype), ("POST", "/v1/approvals", "Bearer good-key-0123456789abcdef", "application/json"))
        self.assertEqual(body["context"], "why")
        self.assertEqual(body["timeout"], "30m")
        self.assertEqual(body["idempotency_key"], "k1")
        self.assertEqual(body["approvals"], json.loads(REQUESTS_LITERAL)["approvals"])
        self.assertNotIn("route", body)
        self.assertEqual(self.seen[1][:2], ("GET", "/v1/approvals/tok?wait=60"))
        self.assertEqual(self.seen[2][:2], ("POST", "/v1/approvals/tok/results"))
        self.assertEqual(self.seen[2][4], {"calls": {}, "approvals": {"call_1": True}, "metadata": {}, "answered_by": {}})
        self.assertEqual(self.seen[3][:2], ("DELETE", "/v1/approvals/tok"))
        self.assertNotIn("good-key", repr(c))

    def test_every_body_on_the_wire(self):
        # Every kind of body the client sends goes through the stub, whose
        # wire check (tearDown) holds each to DESIGN.md's rules.
        c = sc.SlackbotClient(self.url, "good-key-0123456789abcdef")

        @dataclasses.dataclass
        class ToolCallPart:  # Pydantic AI's fields, as objects
            tool_name: str
            args: object
            tool_call_id: str
            part_kind: str = "tool-call"

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

        class ToolFailed(ModelRetry):
            pass

        reqs = types.SimpleNamespace(
            calls=[ToolCallPart("fetch_report", '{"id": 7}', "c1")],
            approvals=[ToolCallPart("delete_file", {"path": "/tmp/a"}, "a1"), ToolCallPart("delete_file", None, "a2")],
            metadata={"c1": {"task_id": "t0"}},
        )
        c.create(reqs, route="files", requester="r", context="why", timeout=90, callback_url="https://example.com/cb",
                 idempotency_key="k", args_schemas={"delete_file": {"type": "object"}})
        c.create(json.loads(REQUESTS_LITERAL))
        objects = types.SimpleNamespace(
            calls={"c1": {"rows": 3}, "c2": ModelRetry("ask again"), "c3": ToolFailed("timeout"), "c4": None, "c5": "text"},
            approvals={"a1": True, "a2": False, "a3": ToolApproved({"path": "/tmp/b"}), "a4": ToolApproved(), "a5": ToolDenied("No.")},
            metadata={"a1": {"ticket": 42}},
        )
        c.results("tok", objects)
        c.results("tok", json.loads(RESULTS_LITERAL))
        c.results("tok", {})
        sent = [s[4] for s in self.seen]
        self.assertEqual(sent[2], {
            "calls": {"c1": {"rows": 3}, "c2": {"message": "ask again", "kind": "model-retry"},
                      "c3": {"message": "timeout", "kind": "tool-failed"}, "c4": None, "c5": "text"},
            "approvals": {"a1": True, "a2": False, "a3": {"override_args": {"path": "/tmp/b"}, "kind": "tool-approved"},
                          "a4": True, "a5": {"message": "No.", "kind": "tool-denied"}},
            "metadata": {"a1": {"ticket": 42}}, "answered_by": {},
        })
        self.assertEqual(sent[4], {"calls": {}, "approvals": {}, "metadata": {}, "answered_by": {}})
        self.assertEqual(len(sent), 5)

    def test_args_schemas(self):
        c = sc.SlackbotClient(self.url, "good-key-0123456789abcdef")
        requests = json.loads(REQUESTS_LITERAL)
        schema = {"type": "object", "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}}}
        c.create(requests, args_schemas={"issue_refund": schema, "fetch_report": {"type": "object"}})
        body = self.seen[0][4]
        # Every approval of a tool with a schema carries it; a call (not an
        # approval) does not, and its own metadata stays as it was.
        self.assertEqual(body["metadata"], {
            "call_1": {"slackbot_args_schema": schema},
            "call_2": {"task_id": "task_0"},
            "call_3": {"slackbot_args_schema": schema},
        })
        self.assertEqual(requests["metadata"], {"call_2": {"task_id": "task_0"}})  # the caller's dicts are not changed
        # The handler passes them on.
        handler = sc.make_handler(c, args_schemas={"issue_refund": schema})
        asyncio.run(handler(types.SimpleNamespace(run_id="r1"), requests))
        self.assertEqual(self.seen[1][4]["metadata"]["call_1"], {"slackbot_args_schema": schema})

    def test_errors(self):
        with self.assertRaises(sc.SlackbotError) as cm:
            sc.SlackbotClient(self.url, "bad-key-0123456789abcdef").get("tok")
        self.assertEqual((cm.exception.status, cm.exception.code), (401, "unauthorized"))
        with self.assertRaises(sc.SlackbotError) as cm:
            sc.SlackbotClient(self.url, "good-key-0123456789abcdef").get("missing")
        self.assertEqual((cm.exception.status, cm.exception.code), (404, "not_found"))

    def test_waiter_resolves_future(self):
        c = sc.SlackbotClient(self.url, "good-key-0123456789abcdef")
        fut = sc.Waiter(c).watch("tok")
        self.assertEqual(fut.result(timeout=10)["status"], "resolved")

    def test_ask_returns_results(self):
        c = sc.SlackbotClient(self.url, "good-key-0123456789abcdef")
        handler = sc.make_handler(c, context="why")
        reqs = json.loads(REQUESTS_LITERAL)
        got = asyncio.run(handler(types.SimpleNamespace(run_id="run-1"), reqs))
        self.assertEqual(compact(results_form(self, got)), RESULTS_LITERAL)
        keys = {s[4]["idempotency_key"] for s in self.seen if s[0] == "POST"}
        asyncio.run(handler(types.SimpleNamespace(run_id="run-1"), reqs))
        again = {s[4]["idempotency_key"] for s in self.seen if s[0] == "POST"}
        self.assertEqual(keys, again, "the same run and calls must reuse the idempotency key")


    def test_idempotency_key_per_run(self):
        # A model may reuse call ids (mock models, some OpenAI-compatible
        # servers): the key names the run and its step with the calls, so
        # only a retry of the same round finds the same request. The
        # contexts stand in for Pydantic AI's RunContext (run_id since 1.15,
        # run_step), which is not installed here.
        c = sc.SlackbotClient(self.url, "good-key-0123456789abcdef")
        handler = sc.make_handler(c)
        reqs = json.loads(REQUESTS_LITERAL)

        def key(ctx):
            asyncio.run(handler(ctx, reqs))
            return [s for s in self.seen if s[0] == "POST"][-1][4]["idempotency_key"]

        first = key(types.SimpleNamespace(run_id="run-a", run_step=1))
        self.assertEqual(key(types.SimpleNamespace(run_id="run-a", run_step=1)), first, "a retried round")
        self.assertNotEqual(key(types.SimpleNamespace(run_id="run-a", run_step=3)), first, "a later round of the run")
        self.assertNotEqual(key(types.SimpleNamespace(run_id="run-b", run_step=1)), first, "another run")
        # A context naming no run names no round: each call is its own request.
        self.assertNotEqual(key(types.SimpleNamespace()), key(types.SimpleNamespace(run_id=None)))
        # Stop the world: the run's id (AgentRunResult.run_id) keys its submit.
        sc.submit(c, reqs, run_id="run-c")
        sc.submit(c, reqs, run_id="run-c")
        sc.submit(c, reqs, run_id="run-d")
        sc.submit(c, reqs)
        keys = [s[4].get("idempotency_key") for s in self.seen[-4:]]
        self.assertEqual(keys[0], keys[1])
        self.assertNotEqual(keys[0], keys[2])
        self.assertIsNone(keys[3])
        self.assertEqual(keys[0], sc.idempotency_key("run-c", reqs))

    def test_results_sends_datetimes_models_and_dataclasses(self):
        # Issue 17 (b): these were "not JSON serializable".
        @dataclasses.dataclass
        class Row:
            id: int
            seen: datetime.date

        c = sc.SlackbotClient(self.url, "good-key-0123456789abcdef")
        when = datetime.datetime(2026, 12, 1, 11, 30, tzinfo=datetime.timezone.utc)
        calls = {"c1": {"at": when}, "c2": Row(7, datetime.date(2026, 11, 30)), "c3": {"tags": {"b"}}}
        want = {"c1": {"at": "2026-12-01T11:30:00+00:00"}, "c2": {"id": 7, "seen": "2026-11-30"}, "c3": {"tags": ["b"]}}
        try:
            import pydantic
        except ImportError:
            print("pydantic is not installed: pydantic models in results NOT TESTED", flush=True)
        else:
            class Report(pydantic.BaseModel):
                rows: int
                at: datetime.datetime

            calls["c4"] = Report(rows=3, at=when)
            want["c4"] = {"rows": 3, "at": "2026-12-01T11:30:00Z"}
        c.results("tok", {"calls": calls})
        self.assertEqual(self.seen[-1][4]["calls"], want)
        with self.assertRaises(TypeError):
            c.results("tok", {"calls": {"c1": object()}})

    def test_handler_hands_out_the_token(self):
        # Issue 17 (c): an external call's result is posted by whoever
        # computes it, with the token on_token received.
        c = sc.SlackbotClient(self.url, "good-key-0123456789abcdef")
        got = []
        handler = sc.make_handler(c, on_token=lambda token, approval: got.append((token, approval["status"])))
        asyncio.run(handler(types.SimpleNamespace(run_id="run-2"), json.loads(REQUESTS_LITERAL)))
        self.assertEqual(got, [("tok", "resolved")])

        async def later(token, approval):
            await asyncio.sleep(0)
            await asyncio.to_thread(c.results, token, {"calls": {"call_2": {"rows": 3}}})

        asyncio.run(sc.ask(c, json.loads(REQUESTS_LITERAL), on_token=later))
        self.assertEqual(self.seen[-1][:2], ("POST", "/v1/approvals/tok/results"))
        self.assertEqual(self.seen[-1][4]["calls"], {"call_2": {"rows": 3}})


def _has_pip() -> bool:
    import importlib.util

    return importlib.util.find_spec("pip") is not None


@unittest.skipUnless(_has_pip(), "pip is not installed: pip install ./clients/python NOT TESTED")
class InstallTest(unittest.TestCase):
    """pip install ./clients/python works offline (no index, nothing to fetch:
    the build backend is in the tree) and installs an importable module."""

    def test_pip_install_offline(self):
        import subprocess
        import tempfile

        here = os.path.dirname(os.path.abspath(__file__))
        with tempfile.TemporaryDirectory() as target:
            env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONDONTWRITEBYTECODE="1")
            subprocess.run(
                [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", target, here],
                check=True, env=env, capture_output=True, timeout=120,
            )
            out = subprocess.run(
                [sys.executable, "-c", "import slackbot_client, sys; print(slackbot_client.__file__); print(sorted(slackbot_client.__all__))"],
                check=True, capture_output=True, text=True, cwd=target, env=dict(env, PYTHONPATH=target), timeout=60,
            ).stdout
            self.assertTrue(out.startswith(os.path.join(target, "slackbot_client.py")), out)
            self.assertIn("make_handler", out)
            out = subprocess.run(
                [sys.executable, "-c", "import slackbot_receipt; print(slackbot_receipt.__file__)"],
                check=True, capture_output=True, text=True, cwd=target, env=dict(env, PYTHONPATH=target), timeout=60,
            ).stdout
            self.assertTrue(out.startswith(os.path.join(target, "slackbot_receipt.py")), out)
            dist = [d for d in os.listdir(target) if d.endswith(".dist-info")]
            self.assertEqual(dist, ["slackbot_client-0.2.0.dist-info"])
            with open(os.path.join(target, dist[0], "METADATA"), encoding="utf-8") as f:
                self.assertIn("Requires-Python: >=3.10\n", f.read())


LIVE_URL = os.environ.get("SLACKBOT_URL")
LIVE_KEY = os.environ.get("SLACKBOT_API_KEY")
LIVE_TIMEOUT = float(os.environ.get("SLACKBOT_LIVE_TIMEOUT", "120"))


@unittest.skipUnless(LIVE_URL and LIVE_KEY, "set SLACKBOT_URL and SLACKBOT_API_KEY to run against a live slackbot")
class LiveTest(unittest.TestCase):
    """Against a live slackbot whose routes send delete_file, fetch_report and
    deploy_web to people; someone must click Approve on the delete_file cards
    (and leave deploy_web's alone)."""

    @classmethod
    def setUpClass(cls):
        cls.jwks = sr.fetch_jwks(LIVE_URL)

    def setUp(self):
        self.client = sc.SlackbotClient(LIVE_URL, LIVE_KEY)
        self.run_id = "live-" + uuid.uuid4().hex[:12]

    def assertReceipt(self, results, call_id: str, tool: str, args, **kw) -> dict:
        """The approved call's receipt, as slackbot signed it, verifies; for other arguments it does not."""
        md = wire_of(results)["metadata"].get(call_id)
        claims = sr.verify_metadata(md, self.jwks, call_id=call_id, tool=tool, args=args, **kw)
        self.assertEqual(claims["by"], ["U0ALICE"])
        with self.assertRaises(sr.ReceiptMismatch):
            sr.verify_metadata(md, self.jwks, call_id=call_id, tool=tool, args=dict(args, extra=1), **kw)
        return claims

    def assertNoReceipt(self, results, call_id: str) -> None:
        self.assertNotIn(sr.METADATA_KEY, wire_of(results)["metadata"].get(call_id) or {}, f"{call_id} was not approved")

    def test_handler_waits_for_a_click(self):
        handler = sc.make_handler(self.client, requester="pydantic-ai example", context="Live test of the deferred-tool handler.")
        requests = {
            "calls": [],
            "approvals": [{"tool_name": "delete_file", "args": {"path": "/tmp/live.txt"}, "tool_call_id": "call_live_1", "part_kind": "tool-call"}],
            "metadata": {},
        }
        ctx = types.SimpleNamespace(run_id=self.run_id)
        results = asyncio.run(asyncio.wait_for(handler(ctx, requests), LIVE_TIMEOUT))
        print("LIVE handler results:", compact(results_form(self, results)), flush=True)
        self.assertEqual(results_form(self, results)["approvals"], {"call_live_1": True})
        self.assertReceipt(results, "call_live_1", "delete_file", {"path": "/tmp/live.txt"})
        # The same run asking for the same calls gets the same answer, not new cards.
        again = asyncio.run(asyncio.wait_for(handler(ctx, requests), 10))
        self.assertEqual(again, results)

    def test_an_approvers_edit_in_slack(self):
        # With the tool's schema sent, the card offers Edit; the Go test's
        # approver edits the path shown (/tmp/edit-me.txt) in Slack's form,
        # and the run gets the edit as the approval's override_args, with a
        # receipt for the edited arguments.
        # The schema comes from the agent's tool through args_schemas_of:
        # Pydantic AI's Agent when it is importable, its ToolDefinition as a
        # dict otherwise.
        pai = sc._pydantic_ai()
        if pai is not None:
            agent = pai.Agent(None)

            @agent.tool_plain(requires_approval=True)
            def delete_file(path: str) -> str:
                return "deleted " + path
        else:
            agent = {"name": "delete_file", "parameters_json_schema":
                     {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}
        handler = sc.make_handler(self.client, args_schemas=sc.args_schemas_of(agent), context="Live test: an edit in Slack.")
        requests = {"approvals": [{"tool_name": "delete_file", "args": {"path": "/tmp/edit-me.txt"}, "tool_call_id": "call_edit_1"}]}
        results = asyncio.run(asyncio.wait_for(handler(types.SimpleNamespace(run_id=self.run_id), requests), LIVE_TIMEOUT))
        print("LIVE slack edit results:", compact(results_form(self, results)), flush=True)
        self.assertEqual(results_form(self, results)["approvals"], {"call_edit_1": {"override_args": {"path": "/tmp/edited.txt"}, "kind": "tool-approved"}})
        if isinstance(results, dict):  # Pydantic AI's objects have no answered_by: the receipt names who
            self.assertEqual(results["answered_by"], {"call_edit_1": "U0ALICE"})
        self.assertReceipt(results, "call_edit_1", "delete_file", {"path": "/tmp/edited.txt"})

    def test_runs_reusing_call_ids(self):
        # A model that reuses a call id (mock models, some OpenAI-compatible
        # servers) in a later round of the run and in another run: each gets
        # its own card and its own approval, whose receipt names its own
        # request. Stand-ins for Pydantic AI's RunContext (not installed here).
        handler = sc.make_handler(self.client, context="Live test: reused call ids.",
                                  on_token=lambda token, approval: tokens.append(token))
        call_id = "call_reused_" + uuid.uuid4().hex[:8]
        requests = {"approvals": [{"tool_name": "delete_file", "args": {"path": "/tmp/reused.txt"}, "tool_call_id": call_id}]}
        tokens = []
        for ctx in (types.SimpleNamespace(run_id=self.run_id, run_step=1),
                    types.SimpleNamespace(run_id=self.run_id, run_step=3),
                    types.SimpleNamespace(run_id=self.run_id + "-b", run_step=1)):
            results = asyncio.run(asyncio.wait_for(handler(ctx, requests), LIVE_TIMEOUT))
            self.assertEqual(len(set(tokens)), len(tokens), "a round got an earlier round's request")
            if isinstance(results, dict):  # else the receipt names who
                self.assertEqual(results["answered_by"], {call_id: "U0ALICE"})
            self.assertReceipt(results, call_id, "delete_file", {"path": "/tmp/reused.txt"}, token=tokens[-1])
        # Stop the world: a retried submit of the run finds its request, another run's is its own.
        first = sc.submit(self.client, requests, run_id=self.run_id + "-c", context="Live test: reused call ids.")
        again = sc.submit(self.client, requests, run_id=self.run_id + "-c", context="Live test: reused call ids.")
        other = sc.submit(self.client, requests, run_id=self.run_id + "-d", context="Live test: reused call ids.")
        self.assertEqual(again["token"], first["token"])
        self.assertNotIn(other["token"], (first["token"], *tokens))
        for t in (first["token"], other["token"]):
            self.assertEqual(results_form(self, sc.collect(self.client, t, timeout=LIVE_TIMEOUT))["approvals"], {call_id: True})

    def test_stop_the_world(self):
        # The run ended with DeferredToolRequests: hand them over.
        approval = sc.submit(self.client, json.loads(REQUESTS_LITERAL.replace("issue_refund", "delete_file")),
                             context="Live test: stop the world.", idempotency_key=self.run_id)
        token = approval["token"]
        self.assertEqual(approval["status"], "pending")
        self.assertEqual([c["kind"] for c in approval["calls"]], ["approval", "approval", "external"])
        # The external call's result arrives from a worker.
        part = self.client.results(token, {"calls": {"call_2": {"rows": 3}}})
        # Pending until people approve the rest (resolved if they were quicker).
        self.assertIn(part["status"], ("pending", "resolved"))
        self.assertEqual([c["state"] for c in part["calls"] if c["tool_call_id"] == "call_2"], ["answered"])
        # People approve the rest; then the run resumes with these results.
        results = sc.collect(self.client, token, timeout=LIVE_TIMEOUT)
        print("LIVE stop-the-world results:", compact(results_form(self, results)), flush=True)
        self.assertEqual(results_form(self, results)["calls"], {"call_2": {"rows": 3}})
        self.assertEqual(results_form(self, results)["approvals"], {"call_1": True, "call_3": True})
        self.assertReceipt(results, "call_1", "delete_file", {"order_id": "A-1002", "amount": 250}, token=token)
        self.assertReceipt(results, "call_3", "delete_file", {"order_id": "A-1003", "amount": 900}, token=token)
        with self.assertRaises(sr.ReceiptMismatch):  # one call's receipt is no other call's
            sr.verify_receipt(results_form(self, results)["metadata"]["call_1"][sr.METADATA_KEY], self.jwks, call_id="call_3",
                              tool="delete_file", args={"order_id": "A-1003", "amount": 900})
        with self.assertRaises(sr.ReceiptMismatch):  # nor another request's
            self.assertReceipt(results, "call_1", "delete_file", {"order_id": "A-1002", "amount": 250}, token="x" * 43)
        self.assertNoReceipt(results, "call_2")  # an external call's result, not an approval

    def test_cancel(self):
        # deploy_web goes to approvers who do not click in the Go test.
        approval = self.client.create({"approvals": [{"tool_name": "deploy_web", "args": {"version": "9.9"}, "tool_call_id": "c1"}]},
                                      context="Live test: cancelled at once.")
        done = self.client.cancel(approval["token"])
        self.assertEqual(done["status"], "cancelled")
        self.assertEqual(sc.results_from_json(done, pydantic=False)["approvals"],
                         {"c1": {"message": sc.NO_DECISION_PREFIX + "cancelled", "kind": "tool-denied"}})
        self.assertNoReceipt(sc.results_from_json(done, pydantic=False), "c1")  # a denial has no receipt
        with self.assertRaises(sc.SlackbotError) as cm:
            self.client.cancel(approval["token"])
        self.assertEqual(cm.exception.code, "conflict")

    def test_args_schemas(self):
        # slackbot takes a tool's schema with its calls (its cards then offer
        # Edit, checked against it: the TypeScript tests submit such edits),
        # and refuses one that is no schema, saying so.
        schema = {"type": "object", "properties": {"version": {"type": "string"}}, "required": ["version"]}
        call = {"tool_name": "deploy_web", "args": {"version": "9.9"}, "tool_call_id": "c1"}
        approval = self.client.create({"approvals": [call]}, args_schemas={"deploy_web": schema}, context="Live test: a schema.")
        self.assertEqual(approval["status"], "pending")
        self.assertEqual(self.client.cancel(approval["token"])["status"], "cancelled")
        with self.assertRaises(sc.SlackbotError) as cm:
            self.client.create({"approvals": [call]}, args_schemas={"deploy_web": {"type": 7}})
        self.assertEqual((cm.exception.status, cm.exception.code), (400, "invalid_request"))
        self.assertIn("slackbot_args_schema", cm.exception.message)

    def test_errors(self):
        with self.assertRaises(sc.SlackbotError) as cm:
            sc.SlackbotClient(LIVE_URL, "not-a-key-0123456789abcdef").get("x" * 43)
        self.assertEqual((cm.exception.status, cm.exception.code), (401, "unauthorized"))
        with self.assertRaises(sc.SlackbotError) as cm:
            self.client.get("x" * 43)
        self.assertEqual((cm.exception.status, cm.exception.code), (404, "not_found"))
        with self.assertRaises(sc.SlackbotError) as cm:
            self.client.create({"approvals": []})
        self.assertEqual((cm.exception.status, cm.exception.code), (400, "invalid_request"))


if __name__ == "__main__":
    unittest.main()
