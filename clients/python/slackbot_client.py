"""slackbot's HTTP API for Pydantic AI agents, on the standard library only.

slackbot puts a person in the loop of an agent's tool calls through Slack:
it posts each pending call as a card with Approve / Deny buttons and
returns the decisions. This module speaks its HTTP API (/v1/approvals)
in Pydantic AI's wire format, so the JSON is exactly what Pydantic AI's
``DeferredToolRequests`` and ``DeferredToolResults`` hold.

Two ways to use it with Pydantic AI:

Inline, as a deferred-tool handler (the run waits while people decide)::

    from pydantic_ai import Agent
    from pydantic_ai.capabilities import HandleDeferredToolCalls
    from slackbot_client import SlackbotClient, make_handler

    client = SlackbotClient("https://slackbot.example.com", api_key)
    agent = Agent(..., capabilities=[HandleDeferredToolCalls(handler=make_handler(client))])

Stop the world (the run ends with DeferredToolRequests; resume later)::

    result = agent.run_sync(prompt, output_type=[str, DeferredToolRequests])
    if isinstance(result.output, DeferredToolRequests):
        token = submit(client, result.output, run_id=result.run_id, context="why")["token"]
        ...                      # store token and result.all_messages()
        results = collect(client, token)   # blocks until people decided
        agent.run_sync(message_history=messages, deferred_tool_results=results)

Everything works on plain dicts in the wire format when pydantic_ai is
not installed; when it is, results are converted with its own
``TypeAdapter(DeferredToolResults)`` both ways, so every result kind
(ToolReturn, RetryPromptPart, ModelRetry, ToolApproved, ToolDenied)
round-trips exactly, and what a run gets back is Pydantic AI's
DeferredToolResults (results_to_json gives its JSON). Python >= 3.10.

So that approvers can edit a call on its card, pass its tool's JSON Schema:
``make_handler(client, args_schemas=args_schemas_of)`` sends those of the
tools the run's step offers (see slackbot_schemas.args_schemas_of).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import datetime
import functools
import hashlib
import inspect
import hmac
import json
import secrets
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Awaitable, Callable, Mapping

from slackbot_schemas import args_schemas_of

__all__ = [
    "NO_DECISION_PREFIX",
    "SlackbotClient",
    "SlackbotError",
    "Waiter",
    "args_schemas_of",
    "ask",
    "callback_secret",
    "collect",
    "idempotency_key",
    "make_handler",
    "requests_to_json",
    "results_from_json",
    "results_to_json",
    "submit",
    "verify_callback",
]

#: What the model is told for every call whose wait ended without a decision.
NO_DECISION_PREFIX = "No decision on this tool call arrived: "

#: slackbot answers a long poll after at most this many seconds.
MAX_WAIT = 60.0


class SlackbotError(Exception):
    """An error answer of slackbot's API: its HTTP status, stable code and message.

    Codes: unauthorized (401), invalid_request (400), route_forbidden (403),
    self_approval (403), not_found (404), method_not_allowed (405), conflict (409),
    payload_too_large (413), unsupported_media_type (415), internal (500).
    """

    def __init__(self, status: int, code: str, message: str):
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message


class SlackbotClient:
    """A client of slackbot's /v1 API, authenticated with a bearer key from API_KEYS."""

    def __init__(self, base_url: str, api_key: str, *, timeout: float = MAX_WAIT + 15):
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self.timeout = timeout

    def __repr__(self) -> str:  # never show the key
        return f"SlackbotClient({self.base_url!r})"

    def create(
        self,
        requests: Any,
        *,
        route: str | None = None,
        requester: str | None = None,
        context: str | None = None,
        timeout: str | float | None = None,
        callback_url: str | None = None,
        idempotency_key: str | None = None,
        args_schemas: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> dict:
        """Hands deferred tool calls to slackbot, which posts their cards.

        requests is a DeferredToolRequests (Pydantic AI's, or its JSON as a
        dict). Returns the approval: token, status ("pending", or
        "resolved" when policies decided every call), expires_at, calls.
        args_schemas maps tool names to the JSON Schema of their arguments
        (in Pydantic AI, a ToolDefinition's parameters_json_schema): each
        approval of such a tool carries it in its metadata
        (ARGS_SCHEMA_KEY), so approvers can edit its arguments on the card,
        checked against the schema before the tool runs with them.
        """
        body = with_args_schemas(requests_to_json(requests), args_schemas)
        for name, value in (
            ("route", route),
            ("requester", requester),
            ("context", context),
            ("timeout", timeout),
            ("callback_url", callback_url),
            ("idempotency_key", idempotency_key),
        ):
            if value is not None:
                body[name] = value
        return self._request("POST", "/v1/approvals", body)

    def get(self, token: str, *, wait: float | None = None) -> dict:
        """Reads an approval; with wait, blocks up to that many seconds (at most 60) until it ends."""
        path = "/v1/approvals/" + urllib.parse.quote(token, safe="")
        if wait:
            path += "?wait=" + format(min(wait, MAX_WAIT), "g")
        return self._request("GET", path)

    def wait(self, token: str, *, timeout: float | None = None, poll: float = 30.0) -> dict:
        """Long-polls until the approval ends (or timeout seconds pass) and returns it."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            wait = poll
            if deadline is not None:
                wait = min(wait, max(deadline - time.monotonic(), 0))
            approval = self.get(token, wait=wait)
            if approval["status"] != "pending":
                return approval
            if deadline is not None and time.monotonic() >= deadline:
                return approval

    def results(self, token: str, results: Any) -> dict:
        """Answers pending calls: external results or programmatic decisions.

        results is a DeferredToolResults (Pydantic AI's, or its JSON). Calls
        left out stay pending; the approval resolves when none is left. The
        key that opened the request may decide its approvals only on a route
        with allow_self_approval: true (403 self_approval otherwise).
        """
        path = "/v1/approvals/" + urllib.parse.quote(token, safe="") + "/results"
        return self._request("POST", path, results_to_json(results))

    def cancel(self, token: str) -> dict:
        """Cancels a pending approval: its calls end with "No decision ...: cancelled"."""
        return self._request("DELETE", "/v1/approvals/" + urllib.parse.quote(token, safe=""))

    def _request(self, method: str, path: str, body: Any = None) -> dict:
        data = None
        headers = {"Authorization": "Bearer " + self._api_key, "Accept": "application/json"}
        if body is not None:
            data = json.dumps(body, separators=(",", ":"), default=_json_default).encode()
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(self.base_url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as err:
            raw = err.read()
            try:
                e = json.loads(raw)["error"]
                raise SlackbotError(err.code, e["code"], e["message"]) from None
            except (ValueError, KeyError, TypeError):
                raise SlackbotError(err.code, "http_error", raw.decode(errors="replace")[:200]) from None


class Waiter:
    """Resolves futures from long polls running in background threads.

    watch(token) starts a daemon thread that long-polls slackbot until the
    approval ends and then resolves the returned concurrent.futures.Future
    with it; asyncio code awaits it with asyncio.wrap_future.
    """

    def __init__(self, client: SlackbotClient, *, poll: float = 30.0, timeout: float | None = None):
        self.client = client
        self.poll = poll
        self.timeout = timeout
        self._lock = threading.Lock()
        self._futures: dict[str, concurrent.futures.Future] = {}

    def watch(self, token: str) -> concurrent.futures.Future:
        with self._lock:
            fut = self._futures.get(token)
            if fut is not None:
                return fut
            fut = concurrent.futures.Future()
            self._futures[token] = fut
        threading.Thread(target=self._run, args=(token, fut), name="slackbot-wait", daemon=True).start()
        return fut

    def _run(self, token: str, fut: concurrent.futures.Future) -> None:
        try:
            approval = self.client.wait(token, timeout=self.timeout, poll=self.poll)
        except BaseException as err:  # hand every failure to the waiting code
            fut.set_exception(err)
        else:
            fut.set_result(approval)
        finally:
            with self._lock:
                self._futures.pop(token, None)


# --- the wire format --------------------------------------------------------


def _part_to_json(part: Any) -> dict:
    if isinstance(part, Mapping):
        return dict(part)
    return {"tool_name": part.tool_name, "args": part.args, "tool_call_id": part.tool_call_id}


def requests_to_json(requests: Any) -> dict:
    """DeferredToolRequests (Pydantic AI's, or a dict) as its JSON:
    {"calls": [ToolCallPart], "approvals": [ToolCallPart], "metadata": {id: {...}}}."""
    if isinstance(requests, Mapping):
        get = requests.get
    else:
        def get(name, default=None):
            return getattr(requests, name, default)
    return {
        "calls": [_part_to_json(p) for p in get("calls") or []],
        "approvals": [_part_to_json(p) for p in get("approvals") or []],
        "metadata": {k: dict(v) for k, v in (get("metadata") or {}).items()},
    }


def _pydantic_ai():
    """Pydantic AI's result types, or None when it is not installed."""
    try:
        import pydantic_ai
    except ImportError:
        return None
    return pydantic_ai


def _results_adapter(pai: Any) -> Any:
    """pydantic.TypeAdapter(pai.DeferredToolResults) for the real Pydantic AI,
    which parses and dumps every result kind (ToolReturn, RetryPromptPart,
    ModelRetry, ToolApproved, ToolDenied, pydantic models, datetimes) by its
    own rules; None for anything else (a stand-in without __version__, or
    pydantic missing), which gets the conversion below."""
    if getattr(pai, "__version__", None) is None:
        return None
    return _adapter_for(pai.DeferredToolResults)


@functools.lru_cache(maxsize=4)
def _adapter_for(cls: type) -> Any:
    """One TypeAdapter per class: building one compiles its schema."""
    try:
        from pydantic import TypeAdapter
    except ImportError:
        return None
    return TypeAdapter(cls)


def _json_default(v: Any) -> Any:
    """What json.dumps cannot encode by itself: datetimes and dates (ISO
    8601), pydantic models (model_dump(mode="json")), dataclasses, sets."""
    if isinstance(v, (datetime.datetime, datetime.date, datetime.time)):
        return v.isoformat()
    dump = getattr(v, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return dataclasses.asdict(v)
    if isinstance(v, (set, frozenset)):
        return sorted(v, key=repr)
    raise TypeError(f"{type(v).__name__} is not JSON serializable")


def _approval_to_json(v: Any) -> Any:
    if isinstance(v, (bool, Mapping)):
        return v if isinstance(v, bool) else dict(v)
    kind = getattr(v, "kind", None)
    if kind == "tool-approved":
        override = getattr(v, "override_args", None)
        return True if override is None else {"override_args": override, "kind": "tool-approved"}
    if kind == "tool-denied":
        return {"message": v.message, "kind": "tool-denied"}
    raise TypeError(f"not an approval result: {v!r}")


def _call_to_json(v: Any) -> Any:
    name = type(v).__name__
    if name == "ModelRetry":
        return {"message": getattr(v, "message", str(v)), "kind": "model-retry"}
    if name == "ToolFailed":
        return {"message": getattr(v, "message", str(v)), "kind": "tool-failed"}
    return v


def results_to_json(results: Any) -> dict:
    """DeferredToolResults (Pydantic AI's, or a dict) as its JSON, all four keys present.

    Pydantic AI's own DeferredToolResults is dumped with its TypeAdapter
    (mode="json"), so ToolReturn, RetryPromptPart, models and datetimes
    are written exactly as Pydantic AI reads them back."""
    pai = None if isinstance(results, Mapping) else _pydantic_ai()
    adapter = _results_adapter(pai) if pai is not None and isinstance(results, pai.DeferredToolResults) else None
    if adapter is not None:
        dumped = adapter.dump_python(results, mode="json")
        return {
            "calls": dumped.get("calls") or {},
            "approvals": dumped.get("approvals") or {},
            "metadata": dumped.get("metadata") or {},
            "answered_by": {},
        }
    if isinstance(results, Mapping):
        get = results.get
    else:
        def get(name, default=None):
            return getattr(results, name, default)
    return {
        "calls": {k: _call_to_json(v) for k, v in (get("calls") or {}).items()},
        "approvals": {k: _approval_to_json(v) for k, v in (get("approvals") or {}).items()},
        "metadata": {k: dict(v) for k, v in (get("metadata") or {}).items()},
        "answered_by": dict(get("answered_by") or {}),
    }


def results_from_json(data: Any, *, pydantic: bool | None = None) -> Any:
    """The DeferredToolResults to resume a run with, from slackbot's JSON.

    data is an approval as slackbot returns it (its "results") or the
    results themselves. With pydantic_ai installed (or pydantic=True) it
    returns pydantic_ai.DeferredToolResults with ToolApproved, ToolDenied,
    ModelRetry and ToolFailed objects; otherwise the normalized JSON.
    data may also be a DeferredToolResults already (what a handler returned).
    """
    if not isinstance(data, Mapping):
        data = results_to_json(data)
    if "token" in data and "status" in data:
        if data.get("results") is None:
            raise ValueError(f"approval {data['token'][:6]}… is {data['status']}: it has no results yet")
        data = data["results"]
    wire = results_to_json(data)
    pai = _pydantic_ai() if pydantic is not False else None
    if pydantic and pai is None:
        raise ImportError("pydantic_ai is not installed")
    if pai is None:
        return wire
    adapter = _results_adapter(pai)
    if adapter is not None:
        return adapter.validate_python({k: wire[k] for k in ("calls", "approvals", "metadata")})

    def approval(v: Any) -> Any:
        if isinstance(v, bool):
            return v
        if v.get("kind") == "tool-approved":
            return pai.ToolApproved(override_args=v.get("override_args"))
        return pai.ToolDenied(v.get("message") or "The tool call was denied.")

    def call(v: Any) -> Any:
        if isinstance(v, Mapping) and v.get("kind") == "model-retry":
            return pai.ModelRetry(v.get("message") or "")
        if isinstance(v, Mapping) and v.get("kind") == "tool-failed":
            failed = getattr(pai, "ToolFailed", None) or getattr(pai, "ModelRetry")
            return failed(v.get("message") or "")
        return v

    return pai.DeferredToolResults(
        calls={k: call(v) for k, v in wire["calls"].items()},
        approvals={k: approval(v) for k, v in wire["approvals"].items()},
        metadata=wire["metadata"],
    )


#: The member of a call's metadata carrying its tool's JSON Schema.
ARGS_SCHEMA_KEY = "slackbot_args_schema"


def with_args_schemas(wire: dict, schemas: Mapping[str, Mapping[str, Any]] | None) -> dict:
    """wire (requests as JSON) with the schema of every approval's tool that
    schemas has in the call's metadata; wire's own dicts are not changed."""
    if not schemas:
        return wire
    metadata = dict(wire["metadata"])
    for part in wire["approvals"]:
        schema = schemas.get(part["tool_name"])
        if schema is not None:
            metadata[part["tool_call_id"]] = {**metadata.get(part["tool_call_id"], {}), ARGS_SCHEMA_KEY: dict(schema)}
    return {**wire, "metadata": metadata}


# --- asking from a run ------------------------------------------------------


def idempotency_key(run_id: str, requests: Any, *, run_step: int | None = None) -> str:
    """The idempotency key of one round of one run's deferred calls: the
    run's id (Pydantic AI's RunContext.run_id, or AgentRunResult.run_id
    when the run ended with DeferredToolRequests), the step that deferred
    them (RunContext.run_step) and the call ids. The same round asked
    again finds the same request instead of posting new cards; another run,
    or a later round, gets its own even when the model reuses call ids
    (mock models and some OpenAI-compatible servers do), so it never
    receives an earlier decision."""
    wire = requests_to_json(requests)
    ids = sorted(p["tool_call_id"] for p in wire["approvals"] + wire["calls"])
    named = json.dumps([run_id, run_step, ids], separators=(",", ":"))
    return "pydantic-ai:" + hashlib.sha256(named.encode()).hexdigest()[:40]


async def ask(
    client: SlackbotClient,
    requests: Any,
    *,
    waiter: Waiter | None = None,
    idempotency_key: str | None = None,
    on_token: Callable[[str, dict], Any] | None = None,
    **create: Any,
) -> Any:
    """Hands requests to slackbot and waits, without blocking the event loop,
    until people decided: returns the DeferredToolResults to continue with.

    The request is created (the cards posted) in a worker thread; a
    background Waiter long-polls and resolves the future this coroutine
    awaits. Expiry and cancellation come back as results too: every
    undecided call then says "No decision on this tool call arrived: ...".
    on_token(token, approval), a function or a coroutine function, is
    called once the cards are posted, before the wait: whoever computes an
    external call's result posts it with client.results(token, ...).
    create takes the keyword arguments of SlackbotClient.create.
    """
    approval = await asyncio.to_thread(client.create, requests, idempotency_key=idempotency_key, **create)
    if on_token is not None:
        got = on_token(approval["token"], approval)
        if inspect.isawaitable(got):
            await got
    if approval["status"] == "pending":
        waiter = waiter or Waiter(client)
        approval = await asyncio.wrap_future(waiter.watch(approval["token"]))
    if approval["status"] == "pending":
        raise TimeoutError(f"no decision within the waiter's timeout (token {approval['token'][:6]}…)")
    return results_from_json(approval)


def make_handler(
    client: SlackbotClient,
    *,
    waiter: Waiter | None = None,
    on_token: Callable[[str, dict], Any] | None = None,
    **create: Any,
) -> Callable[[Any, Any], Awaitable[Any]]:
    """A handler for Pydantic AI's HandleDeferredToolCalls capability:
    ``async def handler(ctx, requests) -> DeferredToolResults``.

    Each batch of deferred calls goes to slackbot once: the idempotency key
    names the run (ctx.run_id), its step (ctx.run_step) and the call ids
    (see idempotency_key), so a handler retried for the same round finds
    the same token instead of posting new cards, and no other run or round
    gets its decisions. A context without a run id names no run: each of
    its calls is a request of its own.
    on_token(token, approval) sees each request once its cards are posted
    (see ask): the way to hand the token to whoever computes an external
    call's result. create takes the keyword arguments of SlackbotClient.create;
    its args_schemas may also be a function of the run's context, called
    for each batch: ``args_schemas=args_schemas_of`` sends the schema of
    every tool the run's step offers, so every card offers Edit.
    """
    waiter = waiter or Waiter(client)
    schemas = create.pop("args_schemas", None)

    async def handler(ctx: Any, requests: Any) -> Any:
        wire = requests_to_json(requests)
        # Without a run id the call ids alone would name the round, and a
        # later run reusing them would get this one's decisions.
        run_id = getattr(ctx, "run_id", None) or "unnamed-" + secrets.token_hex(16)
        key = idempotency_key(run_id, wire, run_step=getattr(ctx, "run_step", None))
        args_schemas = schemas(ctx) if callable(schemas) else schemas
        return await ask(client, wire, waiter=waiter, idempotency_key=key, on_token=on_token,
                         args_schemas=args_schemas, **create)

    return handler


# --- stop the world ---------------------------------------------------------


def submit(client: SlackbotClient, requests: Any, *, run_id: str | None = None, **create: Any) -> dict:
    """Stop-the-world, step 1: hand the DeferredToolRequests a run ended with
    to slackbot. Returns the approval; keep its "token" with the run's
    messages to resume later. With run_id (the run's AgentRunResult.run_id)
    the request is keyed to that run (idempotency_key): submitting it again
    returns the same approval instead of posting new cards."""
    if run_id is not None and create.get("idempotency_key") is None:
        create["idempotency_key"] = idempotency_key(run_id, requests)
    return client.create(requests, **create)


def collect(client: SlackbotClient, token: str, *, timeout: float | None = None) -> Any:
    """Stop-the-world, step 2: wait until people decided and return the
    DeferredToolResults to pass as deferred_tool_results with the run's
    message history. Raises TimeoutError if timeout passes first."""
    approval = client.wait(token, timeout=timeout)
    if approval["status"] == "pending":
        raise TimeoutError(f"approval {token[:6]}… is still pending")
    return results_from_json(approval)


# --- callbacks --------------------------------------------------------------


def callback_secret(api_key: str) -> str:
    """The secret slackbot signs this key's callbacks with:
    hex(HMAC-SHA256(api_key, "slackbot-callback-v1"))."""
    return hmac.new(api_key.encode(), b"slackbot-callback-v1", hashlib.sha256).hexdigest()


def verify_callback(api_key: str, headers: Mapping[str, str], body: bytes, *, tolerance: float = 300, now: float | None = None) -> bool:
    """Whether a callback is slackbot's: X-Slackbot-Signature must be
    "v1=" + hex(HMAC-SHA256(secret, timestamp + "." + body)) over the raw
    body, and X-Slackbot-Timestamp within tolerance seconds of now."""
    lower = {k.lower(): v for k, v in headers.items()}
    ts = lower.get("x-slackbot-timestamp", "")
    if not ts.isdigit() or abs((time.time() if now is None else now) - int(ts)) > tolerance:
        return False
    mac = hmac.new(callback_secret(api_key).encode(), ts.encode() + b"." + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest("v1=" + mac, lower.get("x-slackbot-signature", ""))
