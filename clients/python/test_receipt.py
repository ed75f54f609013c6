"""Tests of slackbot_receipt: the shared vectors (receipt/testdata/vectors.json,
signed by slackbot's Go code) with both Ed25519 backends, RFC 8785 and RFC
8032 examples, and every way a receipt is refused.

    python3 -m unittest -v test_receipt

test_slackbot_client imports these tests, so cmd/slackbot's
TestPythonExample runs them too.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import os
import struct
import threading
import types
import unittest

import slackbot_ed25519 as ed
import slackbot_receipt as sr

__all__ = ["ReceiptVectorsTest", "CanonicalJSONTest", "Ed25519Test", "ReceiptRefusalTest", "JWKSTest"]

HERE = os.path.dirname(os.path.abspath(__file__))
VECTORS_PATH = os.path.join(HERE, "..", "..", "receipt", "testdata", "vectors.json")

with open(VECTORS_PATH, encoding="utf-8") as _f:
    VECTORS = json.load(_f)

BACKENDS = ["pure"] + (["cryptography"] if sr.has_cryptography() else [])


def _b64(b: bytes) -> str:
    return sr._b64url_encode(b)


# A test-only RFC 8032 signer (5.1.6) over the module's curve arithmetic, so
# the refusal tests need no compiled dependency either.
def _compress(p: tuple) -> bytes:
    zinv = pow(p[2], ed._P - 2, ed._P)
    x, y = p[0] * zinv % ed._P, p[1] * zinv % ed._P
    return (y | (x & 1) << 255).to_bytes(32, "little")


def _public(seed: bytes) -> bytes:
    h = hashlib.sha512(seed).digest()
    a = (int.from_bytes(h[:32], "little") & ((1 << 254) - 8)) | (1 << 254)
    return _compress(ed._mul(a, ed._G))


def _sign(seed: bytes, msg: bytes) -> bytes:
    h = hashlib.sha512(seed).digest()
    a = (int.from_bytes(h[:32], "little") & ((1 << 254) - 8)) | (1 << 254)
    pub = _compress(ed._mul(a, ed._G))
    r = int.from_bytes(hashlib.sha512(h[32:] + msg).digest(), "little") % ed._L
    big_r = _compress(ed._mul(r, ed._G))
    k = int.from_bytes(hashlib.sha512(big_r + pub + msg).digest(), "little") % ed._L
    return big_r + ((r + k * a) % ed._L).to_bytes(32, "little")


SEED = b"p" * 32
PUB = _public(SEED)
KID = sr._thumbprint(PUB)
JWKS = {"keys": [{"kty": "OKP", "crv": "Ed25519", "x": _b64(PUB), "kid": KID, "alg": "EdDSA", "use": "sig"}]}
ARGS = {"amount": 250, "customer": "cus_42", "note": "dup charge ✓"}
T0 = 1_800_000_000


def make_claims(**over) -> dict:
    c = {"iss": "https://slackbot.example.com", "sub": "call_1", "tool": "issue_refund", "args_sha256": sr.args_sha256(ARGS),
         "by": ["U0ALICE"], "route": "refunds", "tok": sr.token_sha256("tok_secret"), "iat": T0, "exp": T0 + 3600}
    c.update(over)
    return c


def make_receipt(claims: dict | None = None, header: dict | None = None, seed: bytes = SEED) -> str:
    head = header if header is not None else {"alg": "EdDSA", "kid": sr._thumbprint(_public(seed)), "typ": sr.RECEIPT_TYPE}
    text = _b64(json.dumps(head).encode()) + "." + _b64(json.dumps(claims if claims is not None else make_claims()).encode())
    return text + "." + _b64(_sign(seed, text.encode()))


def _respell(part: str) -> str:
    """part with non-zero trailing bits: the same bytes to a lenient decoder."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    assert len(part) % 4 == 2, "the last character carries 4 unused bits"
    alt = part[:-1] + alphabet[alphabet.index(part[-1]) + 1]
    assert base64.urlsafe_b64decode(alt + "==") == base64.urlsafe_b64decode(part + "==")
    return alt


def verify(receipt, jwks=JWKS, **over):
    kw = {"call_id": "call_1", "tool": "issue_refund", "args": ARGS, "now": T0 + 60}
    kw.update(over)
    return sr.verify_receipt(receipt, jwks, **kw)


class ReceiptVectorsTest(unittest.TestCase):
    """Every case of the vectors Go's receipt package signed and checks: the
    same verdict, with each Ed25519 backend, args given parsed or as text."""

    def check_vectors(self, backend: str):
        self.assertGreaterEqual(len(VECTORS["cases"]), 17)
        for case in VECTORS["cases"]:
            e = case["expect"]
            for form, args in (("parsed", e["args"]), ("text", json.dumps(e["args"], ensure_ascii=False))):
                with self.subTest(case=case["name"], args=form):
                    try:
                        claims = sr.verify_receipt(case["receipt"], VECTORS["jwks"], call_id=e["call_id"], tool=e["tool"],
                                                   args=args, token=e.get("token"), now=e["now"], backend=backend,
                                                   require_step_up=e.get("require_step_up", False))
                    except sr.ReceiptError as err:
                        self.assertEqual(err.kind, case["error"], f"{case['name']}: {err}")
                    else:
                        self.assertEqual(case["error"], "", f"{case['name']} verified: {claims}")
                        self.assertEqual((claims["sub"], claims["tool"]), (e["call_id"], e["tool"]))

    def test_vectors_pure(self):
        self.check_vectors("pure")

    @unittest.skipUnless(sr.has_cryptography(), "cryptography is not installed: its backend NOT TESTED (the pure one is)")
    def test_vectors_cryptography(self):
        self.check_vectors("cryptography")

    def test_claims(self):
        case = VECTORS["cases"][0]
        claims = sr.verify_receipt(case["receipt"], json.dumps(VECTORS["jwks"]), call_id="call_1", tool="issue_refund",
                                   args=case["expect"]["args"], token="tok_secret", now=case["expect"]["now"])
        self.assertEqual(claims["by"], ["U0ALICE"])
        self.assertEqual(claims["route"], "refunds")
        self.assertEqual(claims["exp"] - claims["iat"], 3600)

    def test_default_backend(self):
        self.assertEqual(sr.DEFAULT_BACKEND, "cryptography" if sr.has_cryptography() else "pure")
        with self.assertRaises(ValueError):
            sr.ed25519_verify(PUB, b"", bytes(64), backend="openssl")


def _double(hex_bits: str) -> float:
    return struct.unpack(">d", bytes.fromhex(hex_bits))[0]


class CanonicalJSONTest(unittest.TestCase):
    """RFC 8785's examples, and the numbers slackbot refuses (Go's ExactNumbers)."""

    APPENDIX_B = [  # RFC 8785 Appendix B: IEEE 754 bits -> ECMAScript form
        ("0000000000000000", "0"), ("8000000000000000", "0"), ("0000000000000001", "5e-324"),
        ("8000000000000001", "-5e-324"), ("7fefffffffffffff", "1.7976931348623157e+308"),
        ("ffefffffffffffff", "-1.7976931348623157e+308"), ("4340000000000000", "9007199254740992"),
        ("c340000000000000", "-9007199254740992"), ("4430000000000000", "295147905179352830000"),
        ("44b52d02c7e14af5", "9.999999999999997e+22"), ("44b52d02c7e14af6", "1e+23"),
        ("44b52d02c7e14af7", "1.0000000000000001e+23"), ("444b1ae4d6e2ef4e", "999999999999999700000"),
        ("444b1ae4d6e2ef4f", "999999999999999900000"), ("444b1ae4d6e2ef50", "1e+21"),
        ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"), ("3eb0c6f7a0b5ed8d", "0.000001"),
        ("41b3de4355555553", "333333333.3333332"), ("41b3de4355555554", "333333333.33333325"),
        ("41b3de4355555555", "333333333.3333333"), ("41b3de4355555556", "333333333.3333334"),
        ("41b3de4355555557", "333333333.33333343"), ("becbf647612f3696", "-0.0000033333333333333333"),
        ("43143ff3c1cb0959", "1424953923781206.2"),
    ]

    def test_appendix_b_numbers(self):
        for bits, want in self.APPENDIX_B:
            with self.subTest(bits=bits):
                self.assertEqual(sr.canonical_json([_double(bits)]), f"[{want}]".encode())
        for bits in ("7fffffffffffffff", "7ff0000000000000", "fff0000000000000"):  # NaN, +-Infinity
            with self.assertRaises(ValueError):
                sr.canonical_json([_double(bits)])

    def test_rfc8785_example(self):
        # RFC 8785 3.2.2, its number 333333333.33333329 written as the double
        # it is: with more digits than a double holds, slackbot refuses it.
        text = ('{"numbers": [333333333.3333333, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],'
                r'"string": "\u20ac$\u000F\u000aA' "'" r'\u0042\u0022\u005c\\\"\/", "literals": [null, true, false]}')
        want = ('{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
                '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}').encode()
        self.assertEqual(sr.canonical_json(text), want)
        self.assertEqual(sr.canonical_json(json.loads(text)), want)
        with self.assertRaises(sr.InexactNumber):
            sr.canonical_json(text.replace("333333333.3333333", "333333333.33333329"))

    def test_rfc8785_sorting(self):
        # RFC 8785 3.2.3: keys sorted by their UTF-16 code units.
        keys = ["\u20ac", "\r", "\ufb33", "1", "\U0001f600", "\u0080", "\u00f6"]
        got = json.loads(sr.canonical_json({k: i for i, k in enumerate(keys)}))
        self.assertEqual(list(got), ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600", "\ufb33"])

    def test_forms(self):
        for value, want in [
            ({"b": 1, "a": [True, None, "x"]}, '{"a":[true,null,"x"],"b":1}'),
            ([1e21, 1e-7, 100.0, -0.0, 0.5, 123e-20, 1e20], "[1e+21,1e-7,100,0,0.5,1.23e-18,100000000000000000000]"),
            ([2**53, -(2**53), 10**21, 0], "[9007199254740992,-9007199254740992,1e+21,0]"),
            (["\u007f\u2028\u001f\b\t\"\\/é😀"], '["\u007f\u2028\\u001f\\b\\t\\"\\\\/é😀"]'),
            (None, "{}"), ("", "{}"), ([], "[]"), ({}, "{}"),
        ]:
            with self.subTest(value=value):
                self.assertEqual(sr.canonical_json(value), want.encode())
        self.assertEqual(sr.canonical_json('{"b" : 2.5e2, "a":-0.0 }'), b'{"a":0,"b":250}')
        self.assertEqual(sr.canonical_json(b'{"a":"\\ud83d\\ude00"}'), '{"a":"😀"}'.encode())

    def test_refuses(self):
        for inexact in ['{"id": 12345678901234567891}', '[9007199254740993]', '[1152921504606846976]', '[0.10000000000000001]',
                        '[1e400]', '[-1e400]', '[1e-400]', "[" + "9" * 5000 + "]"]:
            with self.subTest(inexact=inexact), self.assertRaises(ValueError):
                sr.canonical_json(inexact)
        for parsed in [[2**53 + 1], [2**60], [10**400], [float("nan")], [float("inf")]]:
            with self.subTest(parsed=parsed), self.assertRaises(ValueError):
                sr.canonical_json(parsed)
        with self.assertRaises(sr.InexactNumber):
            sr.canonical_json({"id": 2**53 + 1})
        for bad in ['{"a":1,"a":2}', '"\\ud800"', '{"a":NaN}', '[Infinity]', '{"a":1}x', '{"a":01}', "[" * 100000, "{'a':1}"]:
            with self.subTest(bad=bad[:20]), self.assertRaises(ValueError):
                sr.canonical_json(bad)
        for bad in [{1: "x"}, ["\ud800"], {"\udc00": 1}, [object()], [{1, 2}]]:
            with self.subTest(bad=bad), self.assertRaises(ValueError):
                sr.canonical_json(bad)

    def test_args_sha256(self):
        # receipt (Go)'s TestArgsSHA256.
        want = _b64(hashlib.sha256(b'{"a":{"y":true,"z":null},"b":[1,2,"x"]}').digest())
        self.assertEqual(sr.args_sha256('{"b":[1,2.0,"x"],"a":{"z":null,"y":true}}'), want)
        self.assertEqual(sr.args_sha256({"b": [1, 2.0, "x"], "a": {"z": None, "y": True}}), want)
        self.assertEqual(sr.token_sha256("tok_secret"), "bCkh-73ykb-6zMEA04GWfOTHGmW6vn7RZahAffGPQng")


class Ed25519Test(unittest.TestCase):
    """RFC 8032 7.1's test vectors, and the encodings RFC 8032 refuses."""

    RFC8032 = [
        ("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
         "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"),
        ("3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
         "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"),
    ]

    def test_rfc8032_vectors(self):
        for backend in BACKENDS:
            for pub, msg, sig in self.RFC8032:
                pub, msg, sig = bytes.fromhex(pub), bytes.fromhex(msg), bytes.fromhex(sig)
                with self.subTest(backend=backend, msg=msg):
                    self.assertTrue(sr.ed25519_verify(pub, msg, sig, backend=backend))
                    self.assertFalse(sr.ed25519_verify(pub, msg + b"x", sig, backend=backend))
                    self.assertFalse(sr.ed25519_verify(pub, msg, sig[:-1], backend=backend))

    def test_test_signer_is_rfc8032(self):
        seed = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
        pub, _, sig = self.RFC8032[0]
        self.assertEqual((_public(seed).hex(), _sign(seed, b"").hex()), (pub, sig))

    def test_refuses_non_canonical(self):
        pub, msg, sig = (bytes.fromhex(x) for x in self.RFC8032[1])
        s = int.from_bytes(sig[32:], "little")
        identity_plus_p = (1 + ed._P).to_bytes(32, "little")  # y = 1 written as y + p
        negative_zero_x = (1 | 1 << 255).to_bytes(32, "little")  # x = 0 with the sign bit set
        for backend in BACKENDS:
            with self.subTest(backend=backend):
                # S + L is the same scalar mod L: RFC 8032 requires S < L.
                self.assertFalse(sr.ed25519_verify(pub, msg, sig[:32] + (s + ed._L).to_bytes(32, "little"), backend=backend))
                self.assertFalse(sr.ed25519_verify(pub, msg, identity_plus_p + sig[32:], backend=backend))
                self.assertFalse(sr.ed25519_verify(identity_plus_p, msg, sig, backend=backend))
        self.assertIsNone(ed._decompress(identity_plus_p))
        self.assertIsNone(ed._decompress(negative_zero_x))
        self.assertIsNone(ed._decompress((2**255 - 1).to_bytes(32, "little")))  # y = p + 18 >= p
        self.assertIsNotNone(ed._decompress((1).to_bytes(32, "little")))

    @unittest.skipUnless(sr.has_cryptography(), "cryptography is not installed: pure and cryptography NOT COMPARED")
    def test_backends_agree(self):
        msg = b"header.payload"
        sig = _sign(SEED, msg)
        for i in range(0, 64 * 8, 37):  # flip one bit at a time
            bad = bytearray(sig)
            bad[i // 8] ^= 1 << (i % 8)
            self.assertEqual(sr.ed25519_verify(PUB, msg, bytes(bad), backend="pure"),
                             sr.ed25519_verify(PUB, msg, bytes(bad), backend="cryptography"), i)
        self.assertTrue(sr.ed25519_verify(PUB, msg, sig, backend="cryptography"))


class ReceiptRefusalTest(unittest.TestCase):
    """The issue's bad input, and the rules beyond the vectors."""

    def assertKind(self, kind: str, receipt, **over):
        with self.assertRaises(sr.ReceiptError) as cm:
            verify(receipt, **over)
        self.assertEqual(cm.exception.kind, kind, str(cm.exception))
        self.assertIsInstance(cm.exception, {"missing": sr.ReceiptMissing, "malformed": sr.ReceiptMalformed,
                                             "unknown_key": sr.ReceiptUnknownKey, "signature": sr.ReceiptSignature,
                                             "mismatch": sr.ReceiptMismatch, "expired": sr.ReceiptExpired}[kind])
        return cm.exception

    def test_verifies(self):
        good = make_receipt()
        self.assertEqual(verify(good, token="tok_secret", issuer="https://slackbot.example.com")["sub"], "call_1")
        # The same arguments written another way are the same arguments.
        self.assertEqual(verify(good, args='{"note":"dup charge \\u2713","customer":"cus_42","amount":2.5e2}')["tool"], "issue_refund")

    def test_refused(self):
        good = make_receipt()
        h, p, s = good.split(".")
        head = {"alg": "EdDSA", "kid": KID, "typ": sr.RECEIPT_TYPE}
        for name, kind, receipt, over in [
            ("None", "missing", None, {}),
            ("empty", "missing", "", {}),
            ("bytes", "malformed", good.encode(), {}),
            ("garbage", "malformed", "not.a.jws", {}),
            ("four parts", "malformed", good + ".x", {}),
            ("not base64url", "malformed", h + "." + p + "." + s[:-2] + "+/", {}),
            ("padded", "malformed", h + "." + p + "." + s + "==", {}),
            ("the same signature spelled otherwise", "malformed", h + "." + p + "." + _respell(s), {}),
            ("huge", "malformed", "a" * (sr.MAX_RECEIPT_BYTES + 1), {}),
            ("header not JSON", "malformed", _b64(b"{x") + "." + p + "." + s, {}),
            ("alg none", "malformed", make_receipt(header=dict(head, alg="none")).rsplit(".", 1)[0] + ".", {}),
            ("alg HS256", "malformed", make_receipt(header=dict(head, alg="HS256")), {}),
            ("another typ", "malformed", make_receipt(header=dict(head, typ="JWT")), {}),
            ("no typ", "malformed", make_receipt(header={"alg": "EdDSA", "kid": KID}), {}),
            ("crit", "malformed", make_receipt(header=dict(head, crit=["b64"], b64=False)), {}),
            ("kid a number", "malformed", make_receipt(header=dict(head, kid=1)), {}),
            ("no kid", "unknown_key", make_receipt(header={"alg": "EdDSA", "typ": sr.RECEIPT_TYPE}), {}),
            ("another key", "unknown_key", make_receipt(seed=b"q" * 32), {}),
            ("a key claiming our kid", "signature", make_receipt(header=head, seed=b"q" * 32), {}),
            ("tampered payload", "signature", h + "." + _b64(json.dumps(make_claims(by=["U0MALLORY"])).encode()) + "." + s, {}),
            ("tampered header", "signature", _b64(json.dumps(dict(head, x=1)).encode()) + "." + p + "." + s, {}),
            ("no signature", "signature", h + "." + p + ".", {}),
            ("claims not an object", "malformed", make_receipt(claims=[1]), {}),
            ("iat a float", "malformed", make_receipt(claims=make_claims(iat=T0 + 0.5)), {}),
            ("by not strings", "malformed", make_receipt(claims=make_claims(by=[1])), {}),
            ("another call", "mismatch", good, {"call_id": "call_2"}),
            ("another tool", "mismatch", good, {"tool": "delete_file"}),
            ("other arguments", "mismatch", good, {"args": dict(ARGS, amount=251)}),
            ("one more argument", "mismatch", good, {"args": dict(ARGS, x=None)}),
            ("one byte of a string", "mismatch", good, {"args": dict(ARGS, customer="cus_43")}),
            ("inexact arguments", "mismatch", good, {"args": '{"amount": 250.00000000000000001}'}),
            ("arguments not JSON", "mismatch", good, {"args": "{"}),
            ("another request", "mismatch", good, {"token": "tok_other"}),
            ("another issuer", "mismatch", good, {"issuer": "https://evil.example"}),
            ("no sub", "mismatch", make_receipt(claims={k: v for k, v in make_claims().items() if k != "sub"}), {}),
            ("expired", "expired", good, {"now": T0 + 3600 + 2 * sr.SKEW}),
            ("no exp", "expired", make_receipt(claims={k: v for k, v in make_claims().items() if k != "exp"}), {}),
            ("issued in the future", "malformed", make_receipt(claims=make_claims(iat=T0 + 3600)), {}),
        ]:
            with self.subTest(name):
                self.assertKind(kind, receipt, **over)

    def test_require_step_up(self):
        stepped = make_receipt(claims=make_claims(amr=["hwk"], cred=["Y3JlZA"]))
        claims = verify(stepped, require_step_up=True)
        self.assertEqual((claims["amr"], claims["cred"]), (["hwk"], ["Y3JlZA"]))
        self.assertEqual(verify(make_receipt())["amr"], [])  # absent: none
        for name, receipt in [
            ("a click alone", make_receipt()),
            ("a quorum with one credential", make_receipt(claims=make_claims(by=["U0ALICE", "U0BOB"], amr=["hwk"], cred=["Y3JlZA"]))),
            ("amr without cred", make_receipt(claims=make_claims(amr=["hwk"]))),
        ]:
            with self.subTest(name):
                err = self.assertKind("mismatch", receipt, require_step_up=True)
                self.assertIsInstance(err, sr.ReceiptNoStepUp)
                self.assertIn("without the passkey", str(err))
        self.assertKind("malformed", make_receipt(claims=make_claims(amr="hwk")))
        # A tool that accepts only a passkey refuses a one-time code, and a click.
        verify(stepped, step_up_methods=["hwk"])
        otp = make_receipt(claims=make_claims(amr=["otp"], cred=["totp"]))
        for receipt in (otp, make_receipt()):
            err = self.assertKind("mismatch", receipt, step_up_methods=["hwk"])
            self.assertIsInstance(err, sr.ReceiptNoStepUp)

    def test_skew(self):
        good = make_receipt()
        verify(good, now=T0 + 3600 + sr.SKEW // 2)
        verify(good, now=T0 - sr.SKEW // 2)
        self.assertKind("expired", good, now=T0 + 3600 + sr.SKEW + 1)
        import datetime

        verify(good, now=datetime.datetime.fromtimestamp(T0 + 30, datetime.timezone.utc))

    def test_messages_are_clear(self):
        err = self.assertKind("mismatch", make_receipt(), call_id="call_9")
        self.assertEqual(str(err), "approval receipt is for another call: it approves tool call 'call_1', not 'call_9'")
        err = self.assertKind("expired", make_receipt(), now=T0 + 86400)
        self.assertEqual(str(err), "approval receipt expired: at 2027-01-15T09:00:00Z")

    def test_metadata_and_run_context(self):
        good = make_receipt()
        md = {sr.METADATA_KEY: good, "ticket": 42}
        kw = {"now": T0 + 60}
        self.assertEqual(sr.verify_metadata(md, JWKS, call_id="call_1", tool="issue_refund", args=ARGS, **kw)["sub"], "call_1")
        for missing in (None, {}, {"ticket": 42}):
            with self.assertRaises(sr.ReceiptMissing):
                sr.verify_metadata(missing, JWKS, call_id="call_1", tool="issue_refund", args=ARGS, **kw)
        # Pydantic AI's RunContext, as a tool sees it.
        ctx = types.SimpleNamespace(tool_call_id="call_1", tool_name="issue_refund", tool_call_metadata=md)
        self.assertEqual(sr.verify_tool_call(ctx, JWKS, ARGS, **kw)["by"], ["U0ALICE"])
        with self.assertRaises(sr.ReceiptMismatch):
            sr.verify_tool_call(types.SimpleNamespace(tool_call_id="call_1", tool_name="delete_file", tool_call_metadata=md), JWKS, ARGS, **kw)
        with self.assertRaises(sr.ReceiptMissing):
            sr.verify_tool_call(types.SimpleNamespace(tool_call_id="call_1", tool_name="issue_refund"), JWKS, ARGS, **kw)


class JWKSTest(unittest.TestCase):
    def test_parse(self):
        ks = sr.parse_jwks(VECTORS["jwks"])
        self.assertEqual(ks.ids, [k["kid"] for k in VECTORS["jwks"]["keys"]])
        self.assertIs(sr.parse_jwks(ks), ks)
        self.assertEqual(sr.parse_jwks(json.dumps(VECTORS["jwks"]).encode()).ids, ks.ids)
        # Other key types, private keys and encryption keys are skipped.
        others = [{"kty": "RSA", "n": "x", "e": "AQAB", "kid": "r"}, dict(JWKS["keys"][0], use="enc"),
                  {"kty": "OKP", "crv": "X25519", "x": _b64(bytes(32)), "kid": "x"}, dict(JWKS["keys"][0], d=_b64(SEED))]
        self.assertEqual(sr.parse_jwks({"keys": others + VECTORS["jwks"]["keys"]}).ids, ks.ids)

    def test_refuses(self):
        key = JWKS["keys"][0]
        for name, data in [
            ("kid not the thumbprint", {"keys": [dict(key, kid="chosen-by-attacker")]}),
            ("no kid", {"keys": [{k: v for k, v in key.items() if k != "kid"}]}),
            ("short x", {"keys": [dict(key, x=_b64(PUB[:31]))]}),
            ("empty", {"keys": []}),
            ("only other keys", {"keys": [dict(key, use="enc")]}),
            ("not a set", [key]),
            ("not JSON", "{"),
            ("too big", json.dumps(JWKS) + " " * sr.MAX_JWKS_BYTES),
        ]:
            with self.subTest(name), self.assertRaises(sr.JWKSError):
                sr.parse_jwks(data)
        with self.assertRaises(sr.JWKSError):
            verify(make_receipt(), jwks={"keys": []})

    def test_fetch(self):
        body = {"/.well-known/jwks.json": json.dumps(VECTORS["jwks"]).encode(), "/big/.well-known/jwks.json": b" " * (sr.MAX_JWKS_BYTES + 10)}
        seen = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                seen.append((self.path, self.headers.get("Accept")))
                data = body.get(self.path)
                self.send_response(200 if data else 404)
                self.send_header("Content-Type", "application/jwk-set+json")
                self.end_headers()
                self.wfile.write(data or b"")

            def log_message(self, *args):
                pass

        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        self.addCleanup(srv.server_close)
        self.addCleanup(srv.shutdown)
        base = f"http://127.0.0.1:{srv.server_address[1]}"
        want = [k["kid"] for k in VECTORS["jwks"]["keys"]]
        self.assertEqual(sr.fetch_jwks(base).ids, want)
        self.assertEqual(sr.fetch_jwks(base + "/").ids, want)
        self.assertEqual(sr.fetch_jwks(base + "/.well-known/jwks.json").ids, want)
        self.assertEqual(seen[0], ("/.well-known/jwks.json", "application/json"))
        for bad in (base + "/big", base + "/missing", "file:///etc/passwd", "ftp://127.0.0.1/"):
            with self.subTest(bad), self.assertRaises(sr.JWKSError):
                sr.fetch_jwks(bad)


if __name__ == "__main__":
    unittest.main()
