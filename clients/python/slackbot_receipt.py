"""Verify slackbot's approval receipts, on the standard library only.

slackbot puts a receipt in ``DeferredToolResults.metadata[tool_call_id]``
under ``"slackbot_receipt"`` for every call it approved (by people, a
policy or a grant); Pydantic AI hands that metadata to the tool as
``ctx.tool_call_metadata``. A receipt is a compact JWS (EdDSA over
Ed25519, ``typ: slackbot-receipt+jwt``, the key's RFC 7638 thumbprint as
``kid``) whose claims bind the call: its ``sub`` (tool_call_id), ``tool``,
``args_sha256`` (base64url SHA-256 of the RFC 8785 canonical JSON of the
arguments that run), ``by``, ``route``, ``tok`` (base64url SHA-256 of the
resume token), ``iat`` and ``exp``; after a step-up (a passkey) also
``amr`` (RFC 8176: ``["hwk"]``, ``["otp"]``) and ``cred`` (the approvers'
credential ids), which ``require_step_up=True`` demands. The tool verifies it before acting::

    from slackbot_receipt import fetch_jwks, verify_tool_call

    JWKS = fetch_jwks("https://slackbot.example.com")   # once; again on ReceiptUnknownKey

    @agent.tool(requires_approval=True)
    def issue_refund(ctx: RunContext, order_id: str, amount: float) -> str:
        verify_tool_call(ctx, JWKS, {"order_id": order_id, "amount": amount})
        ...

A receipt proves what slackbot decided, no more: that someone or something
slackbot's routing allowed approved this call with these arguments. The
tool still enforces its own limits.

Ed25519 is verified with ``cryptography`` when it is importable and with
a pure-Python RFC 8032 implementation otherwise (slower, about a
millisecond, but it needs nothing compiled). Verification follows
slackbot's Go verifier (package receipt) rule for rule; both are tested
against the same vectors (receipt/testdata/vectors.json).
"""

from __future__ import annotations

import base64
import datetime
import decimal
import hashlib
import json
import math
import re
import time
import urllib.parse
import urllib.request
from typing import Any, Mapping

from slackbot_ed25519 import DEFAULT_BACKEND, ed25519_verify, has_cryptography

__all__ = [
    "DEFAULT_BACKEND",
    "METADATA_KEY",
    "InexactNumber",
    "JWKSError",
    "KeySet",
    "ReceiptError",
    "ReceiptExpired",
    "ReceiptMalformed",
    "ReceiptMismatch",
    "ReceiptMissing",
    "ReceiptSignature",
    "ReceiptUnknownKey",
    "args_sha256",
    "canonical_json",
    "ed25519_verify",
    "fetch_jwks",
    "has_cryptography",
    "parse_jwks",
    "token_sha256",
    "verify_metadata",
    "verify_receipt",
    "verify_tool_call",
]

#: Where a receipt is in a call's DeferredToolResults metadata.
METADATA_KEY = "slackbot_receipt"
#: The typ header of every receipt: no other JWT signed by the key passes for one.
RECEIPT_TYPE = "slackbot-receipt+jwt"
#: Seconds of clock difference allowed on exp and iat.
SKEW = 60
#: A receipt longer than this is refused unread; slackbot's are well under 1 KiB.
MAX_RECEIPT_BYTES = 8 << 10
#: A JWKS document longer than this is refused.
MAX_JWKS_BYTES = 64 << 10


class ReceiptError(Exception):
    """Why a receipt does not verify; ``kind`` is one of missing, malformed,
    unknown_key, signature, mismatch, expired (the vectors' error names)."""

    kind = ""
    reason = ""

    def __init__(self, detail: str = ""):
        super().__init__(self.reason + (": " + detail if detail else ""))


class ReceiptMissing(ReceiptError):
    """The call's metadata holds no receipt."""

    kind, reason = "missing", "no approval receipt"


class ReceiptMalformed(ReceiptError):
    """Not a receipt: not a compact JWS, another alg than EdDSA, another typ, bad claims, issued in the future."""

    kind, reason = "malformed", "approval receipt malformed"


class ReceiptUnknownKey(ReceiptError):
    """Signed by a key the JWKS does not hold: fetch the JWKS again (keys rotate)."""

    kind, reason = "unknown_key", "approval receipt signed by an unknown key"


class ReceiptSignature(ReceiptError):
    """The signature does not verify: the receipt was altered."""

    kind, reason = "signature", "approval receipt signature does not verify"


class ReceiptMismatch(ReceiptError):
    """A valid receipt, but for another call, tool, arguments, request or issuer."""

    kind, reason = "mismatch", "approval receipt is for another call"


class ReceiptNoStepUp(ReceiptMismatch):
    """require_step_up, and the receipt's approval was a click alone: no
    amr, or an approver without a step-up credential (kind "mismatch")."""


class ReceiptExpired(ReceiptError):
    """The receipt's exp (plus SKEW) has passed."""

    kind, reason = "expired", "approval receipt expired"


class InexactNumber(ValueError):
    """The arguments hold a number RFC 8785 cannot carry exactly (slackbot's ErrInexactNumber)."""

    def __init__(self, text: str):
        super().__init__(
            f"the number {text[:40]} is not exactly an IEEE 754 double "
            "(an integer beyond 2^53, or more digits than a double holds): send it as a string"
        )


class JWKSError(ValueError):
    """The JWK Set is unusable: too large, not JSON, a kid that is not its key's thumbprint, no Ed25519 key."""


# --- RFC 8785 (JCS) ---------------------------------------------------------


def _exact(text: str, value: float) -> None:
    """Refuses a number whose written decimal value differs from the double
    RFC 8785 writes for it (Go's receipt.ExactNumbers)."""
    if math.isinf(value) or decimal.Decimal(text) != decimal.Decimal(repr(value)):
        raise InexactNumber(text)


def _int_value(i: int) -> float:
    try:
        f = float(i)
    except OverflowError:
        raise InexactNumber(str(i)) from None
    _exact(str(i), f)
    return f


def _es_number(f: float) -> str:
    """ECMAScript's Number::toString of a double, as RFC 8785 writes numbers."""
    if math.isnan(f) or math.isinf(f):
        raise ValueError("NaN and Infinity have no JSON form")
    if f == 0:
        return "0"
    sign = "-" if f < 0 else ""
    mant, _, exp = repr(abs(f)).partition("e")
    whole, _, frac = mant.partition(".")
    digits = (whole + frac).lstrip("0")
    q = int(exp or 0) - len(frac)  # value = int(digits) * 10**q
    trimmed = digits.rstrip("0")
    q += len(digits) - len(trimmed)
    k, n = len(trimmed), len(trimmed) + q  # value = 0.<digits> * 10**n
    if k <= n <= 21:
        return sign + trimmed + "0" * (n - k)
    if 0 < n <= 21:
        return sign + trimmed[:n] + "." + trimmed[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * -n + trimmed
    e = n - 1
    head = trimmed[0] + ("." + trimmed[1:] if k > 1 else "")
    return sign + head + "e" + ("+" if e > 0 else "-") + str(abs(e))


def _string(s: str) -> str:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("a string holds a lone UTF-16 surrogate") from None
    # json.dumps writes exactly RFC 8785's escapes: \" \\ \b \f \n \r \t and
    # \u00xx (lower case) for the other controls; everything else as is.
    return json.dumps(s, ensure_ascii=False)


def _serialize(v: Any, out: list[str]) -> None:
    if v is None:
        out.append("null")
    elif v is True or v is False:
        out.append("true" if v else "false")
    elif isinstance(v, int):
        out.append(_es_number(_int_value(v)))
    elif isinstance(v, float):
        out.append(_es_number(v))
    elif isinstance(v, str):
        out.append(_string(v))
    elif isinstance(v, Mapping):
        for k in v:
            if not isinstance(k, str):
                raise ValueError(f"an object key {k!r} is not a string")
        items = sorted(v.items(), key=lambda kv: kv[0].encode("utf-16-be", "surrogatepass"))
        out.append("{")
        for i, (k, item) in enumerate(items):
            out.append(("," if i else "") + _string(k) + ":")
            _serialize(item, out)
        out.append("}")
    elif isinstance(v, (list, tuple)):
        out.append("[")
        for i, item in enumerate(v):
            if i:
                out.append(",")
            _serialize(item, out)
        out.append("]")
    else:
        raise ValueError(f"{type(v).__name__} is not a JSON value")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    d: dict = {}
    for k, v in pairs:
        if k in d:
            raise ValueError(f"duplicate key {k!r}")
        d[k] = v
    return d


def _parse_exact(text: str | bytes) -> Any:
    def parse_float(s: str) -> float:
        f = float(s)
        _exact(s, f)
        return f

    def parse_constant(s: str) -> Any:
        raise ValueError(f"{s} is not JSON")

    return json.loads(text, parse_float=parse_float, parse_constant=parse_constant, object_pairs_hook=_no_duplicates)


def canonical_json(args: Any) -> bytes:
    """The RFC 8785 (JCS) canonical form of the arguments, as slackbot hashes them.

    args is a JSON value (a dict, usually) or its JSON text (str or bytes,
    as Pydantic AI's ToolCallPart.args may be); None or "" means {}. Raises
    InexactNumber for a number RFC 8785 would round (an integer beyond
    2^53 that is not exactly a double's shortest form, more digits than a
    double holds), as slackbot does, and ValueError for anything else that
    is not JSON (NaN, duplicate keys, a lone surrogate, a non-string key).
    """
    if args is None or args == "" or args == b"":
        args = {}
    if isinstance(args, (str, bytes, bytearray)):
        try:
            args = _parse_exact(args)
        except InexactNumber:
            raise
        except (ValueError, RecursionError) as err:
            raise ValueError(f"the arguments are not JSON: {err}") from None
    out: list[str] = []
    try:
        _serialize(args, out)
    except RecursionError:
        raise ValueError("the arguments nest too deeply") from None
    return "".join(out).encode("utf-8")


def _digest(b: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b"=").decode()


def args_sha256(args: Any) -> str:
    """A receipt's args_sha256 of these arguments: base64url (unpadded) SHA-256 of canonical_json(args)."""
    return _digest(canonical_json(args))


def token_sha256(token: str) -> str:
    """A receipt's tok of a resume token: base64url (unpadded) SHA-256 of its UTF-8 bytes."""
    return _digest(token.encode())


# --- keys -------------------------------------------------------------------

_B64URL = re.compile(r"[A-Za-z0-9_-]*")


def _b64url(part: str) -> bytes | None:
    """Unpadded base64url, as a JWS writes it (go-jose refuses padding too);
    None for anything else, including a non-canonical spelling (non-zero
    trailing bits), so one receipt has one spelling only."""
    if not _B64URL.fullmatch(part) or len(part) % 4 == 1:
        return None
    raw = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    return raw if _b64url_encode(raw) == part else None


def _b64url_encode(b: bytes) -> str:
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def _thumbprint(x: bytes) -> str:
    """RFC 7638 SHA-256 thumbprint of the Ed25519 public JWK with this x."""
    members = '{"crv":"Ed25519","kty":"OKP","x":"' + _b64url_encode(x) + '"}'
    return _b64url_encode(hashlib.sha256(members.encode()).digest())


class KeySet:
    """The public keys receipts are verified with, by kid (current first, then
    the previous ones slackbot keeps during a rotation). Build it with
    parse_jwks or fetch_jwks."""

    def __init__(self, keys: Mapping[str, bytes]):
        self._keys = dict(keys)

    @property
    def ids(self) -> list[str]:
        """The key ids, in the JWKS's order."""
        return list(self._keys)

    def public_key(self, kid: str) -> bytes | None:
        """The 32-byte Ed25519 public key of kid, or None."""
        return self._keys.get(kid)

    def __repr__(self) -> str:
        return f"KeySet({self.ids!r})"


def parse_jwks(data: Any) -> KeySet:
    """The Ed25519 signing keys of a JWK Set (JSON text, or the parsed dict).

    Keys of other types, private keys and keys marked for encryption are
    skipped, as slackbot's Go verifier skips them; a key whose kid is not its
    RFC 7638 thumbprint is refused (receipts name keys by thumbprint), and
    so is a set with no Ed25519 key. Raises JWKSError.
    """
    if isinstance(data, KeySet):
        return data
    if isinstance(data, (str, bytes, bytearray)):
        if len(data) > MAX_JWKS_BYTES:
            raise JWKSError(f"JWKS: {len(data)} bytes, at most {MAX_JWKS_BYTES}")
        try:
            data = json.loads(data)
        except (ValueError, RecursionError) as err:
            raise JWKSError(f"JWKS: not JSON: {err}") from None
    if not isinstance(data, Mapping) or not isinstance(data.get("keys", []), list):
        raise JWKSError('JWKS: want {"keys": [...]}')
    keys: dict[str, bytes] = {}
    for jwk in data.get("keys", []):
        if not isinstance(jwk, Mapping):
            raise JWKSError("JWKS: a key is not an object")
        if jwk.get("kty") != "OKP" or jwk.get("crv") != "Ed25519" or "d" in jwk or jwk.get("use", "") not in ("", "sig"):
            continue
        x = _b64url(jwk["x"]) if isinstance(jwk.get("x"), str) else None
        if x is None or len(x) != 32:
            raise JWKSError(f"JWKS: key {jwk.get('kid')!r}: x is not a 32-byte base64url Ed25519 public key")
        kid = _thumbprint(x)
        if jwk.get("kid") != kid:
            raise JWKSError(f"JWKS: key {jwk.get('kid')!r}: kid is not the key's RFC 7638 thumbprint {kid!r}")
        keys.setdefault(kid, x)
    if not keys:
        raise JWKSError("JWKS: no Ed25519 signing key")
    return KeySet(keys)


def fetch_jwks(base_url: str, *, timeout: float = 10.0) -> KeySet:
    """The key set slackbot serves at base_url + "/.well-known/jwks.json"
    (base_url may already be that URL). Reads at most MAX_JWKS_BYTES. Fetch
    again when a verification raises ReceiptUnknownKey: the keys rotated.
    Raises JWKSError."""
    url = base_url.rstrip("/")
    if not url.endswith("/.well-known/jwks.json"):
        url += "/.well-known/jwks.json"
    if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        raise JWKSError(f"fetch receipt keys: {url!r} is not an http(s) URL")
    req = urllib.request.Request(url, headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            body = resp.read(MAX_JWKS_BYTES + 1)
    except OSError as err:  # URLError and HTTPError are OSErrors
        raise JWKSError(f"fetch receipt keys from {url}: {err}") from None
    return parse_jwks(body)


# --- receipts ---------------------------------------------------------------

_STRING_CLAIMS = ("iss", "sub", "tool", "args_sha256", "route", "tok")
_INT64 = range(-(2**63), 2**63)


def _json_object(raw: bytes, what: str) -> dict:
    try:
        v = json.loads(raw)
    except (ValueError, RecursionError) as err:
        raise ReceiptMalformed(f"{what}: {err}") from None
    if not isinstance(v, dict):
        raise ReceiptMalformed(f"{what}: not a JSON object")
    return v


def _claims(raw: bytes) -> dict:
    """The payload's claims, with Go's types (a missing or null claim is its zero value)."""
    c = _json_object(raw, "claims")
    for name in _STRING_CLAIMS:
        if c.get(name) is None:
            c[name] = ""
        elif not isinstance(c[name], str):
            raise ReceiptMalformed(f"claims: {name} is not a string")
    for name in ("by", "amr", "cred"):
        if c.get(name) is None:
            c[name] = []
        elif not isinstance(c[name], list) or not all(isinstance(b, str) for b in c[name]):
            raise ReceiptMalformed(f"claims: {name} is not a list of strings")
    for name in ("iat", "exp"):
        if c.get(name) is None:
            c[name] = 0
        elif type(c[name]) is not int or c[name] not in _INT64:
            raise ReceiptMalformed(f"claims: {name} is not an integer")
    return c


def _verified(receipt: Any, keys: KeySet, backend: str | None) -> dict:
    """The claims of a receipt whose signature one of keys verifies."""
    if receipt is None or receipt == "":
        raise ReceiptMissing()
    if not isinstance(receipt, str):
        raise ReceiptMalformed(f"a {type(receipt).__name__}, not a string")
    if len(receipt) > MAX_RECEIPT_BYTES:
        raise ReceiptMalformed(f"{len(receipt)} bytes, at most {MAX_RECEIPT_BYTES}")
    parts = receipt.split(".")
    raw = [_b64url(p) for p in parts]
    if len(parts) != 3 or None in raw:
        raise ReceiptMalformed("not a compact JWS (header.payload.signature, base64url)")
    header = _json_object(raw[0], "header")
    if header.get("alg") != "EdDSA":
        raise ReceiptMalformed(f"alg {header.get('alg')!r}, want 'EdDSA'")
    if "crit" in header:
        raise ReceiptMalformed("crit header")
    if header.get("typ") != RECEIPT_TYPE:
        raise ReceiptMalformed(f"typ {header.get('typ')!r}, want {RECEIPT_TYPE!r}")
    kid = header.get("kid", "")
    if not isinstance(kid, str):
        raise ReceiptMalformed("kid is not a string")
    public = keys.public_key(kid)
    if public is None:
        raise ReceiptUnknownKey(f"kid {kid!r}")
    if not ed25519_verify(public, (parts[0] + "." + parts[1]).encode("ascii"), raw[2], backend=backend):
        raise ReceiptSignature()
    return _claims(raw[1])


def _timestamp(now: Any) -> float:
    if now is None:
        return time.time()
    if isinstance(now, datetime.datetime):
        return now.timestamp()
    return float(now)


def _iso(t: int) -> str:
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _check(c: dict, call_id: str, tool: str, args: Any, token: str | None, issuer: str | None, now: Any,
           require_step_up: bool = False, step_up_methods: Any = None) -> None:
    """Refuses claims that are not for this call (Go's Claims.check, in its order)."""
    try:
        digest = args_sha256(args)
    except ValueError as err:
        raise ReceiptMismatch(f"the arguments: {err}") from None
    t = _timestamp(now)
    if c["sub"] != call_id:
        raise ReceiptMismatch(f"it approves tool call {c['sub']!r}, not {call_id!r}")
    if c["tool"] != tool:
        raise ReceiptMismatch(f"it approves tool {c['tool']!r}, not {tool!r}")
    if c["args_sha256"] != digest:
        raise ReceiptMismatch("it approves other arguments than these")
    if token and c["tok"] != token_sha256(token):
        raise ReceiptMismatch("it was decided on another request")
    if issuer and c["iss"] != issuer:
        raise ReceiptMismatch(f"issued by {c['iss']!r}, not {issuer!r}")
    if (require_step_up or step_up_methods) and (not c["amr"] or len(c["cred"]) != len(c["by"])):
        raise ReceiptNoStepUp(
            "its approval was a click, without the passkey (or one-time code) this tool requires")
    if step_up_methods and any(m not in step_up_methods for m in c["amr"]):
        raise ReceiptNoStepUp(
            f"its approvers stepped up with {list(c['amr'])}; this tool accepts only {list(step_up_methods)}")
    if t > c["exp"] + SKEW:
        raise ReceiptExpired(f"at {_iso(c['exp'])}")
    if c["iat"] > t + SKEW:
        raise ReceiptMalformed(f"issued in the future ({_iso(c['iat'])})")


def verify_receipt(
    receipt: Any,
    jwks: Any,
    *,
    call_id: str,
    tool: str,
    args: Any,
    token: str | None = None,
    issuer: str | None = None,
    now: Any = None,
    backend: str | None = None,
    require_step_up: bool = False,
    step_up_methods: Any = None,
) -> dict:
    """Checks that receipt was signed by one of jwks's keys for exactly this
    call, and returns its claims (iss, sub, tool, args_sha256, by, route,
    tok, iat, exp).

    jwks is a KeySet (fetch_jwks, parse_jwks) or a JWK Set as JSON or dict.
    args are the arguments that will run (a dict, or its JSON text: see
    canonical_json); any difference in their canonical form refuses the
    receipt. token, when given, is the resume token the call was decided
    on; issuer, when given, the iss it must name (slackbot's PUBLIC_URL).
    now is Unix seconds or a datetime (default: the clock); SKEW seconds
    are allowed on exp and iat. backend picks the Ed25519 implementation
    ("cryptography" or "pure"; default DEFAULT_BACKEND). require_step_up
    refuses (ReceiptNoStepUp, a ReceiptMismatch) a receipt whose approvers
    did not each step up with a passkey or one-time code beyond the click
    in Slack: one without amr, or with fewer cred than by. step_up_methods
    (e.g. ["hwk"]: a passkey, where a route also accepts a one-time code,
    "otp") also refuses one whose amr names any other method; it implies
    require_step_up.

    Raises ReceiptMissing, ReceiptMalformed (including any alg but EdDSA and
    any typ but slackbot-receipt+jwt), ReceiptUnknownKey, ReceiptSignature,
    ReceiptMismatch or ReceiptExpired (all ReceiptError, whose kind names
    the case), and JWKSError for an unusable jwks.
    """
    claims = _verified(receipt, parse_jwks(jwks), backend)
    _check(claims, call_id, tool, args, token, issuer, now, require_step_up, step_up_methods)
    return claims


def verify_metadata(metadata: Any, jwks: Any, *, call_id: str, tool: str, args: Any, **kwargs: Any) -> dict:
    """verify_receipt of the receipt in a call's metadata: Pydantic AI's
    ``ctx.tool_call_metadata``, or ``DeferredToolResults.metadata[call_id]``.
    No metadata, or none under METADATA_KEY, raises ReceiptMissing."""
    receipt = metadata.get(METADATA_KEY) if isinstance(metadata, Mapping) else None
    return verify_receipt(receipt, jwks, call_id=call_id, tool=tool, args=args, **kwargs)


def verify_tool_call(ctx: Any, jwks: Any, args: Any, **kwargs: Any) -> dict:
    """verify_metadata for a Pydantic AI tool: the call id, tool name and
    metadata come from its RunContext (ctx.tool_call_id, ctx.tool_name,
    ctx.tool_call_metadata); args are the arguments the tool is about to
    act on. Takes verify_receipt's keyword arguments."""
    if not hasattr(ctx, "tool_call_metadata"):
        raise ReceiptMissing("this RunContext has no tool_call_metadata (Pydantic AI too old?)")
    return verify_metadata(ctx.tool_call_metadata, jwks, call_id=ctx.tool_call_id, tool=ctx.tool_name, args=args, **kwargs)
