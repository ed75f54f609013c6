"""Ed25519 signature verification (RFC 8032) for slackbot_receipt.

``ed25519_verify`` uses ``cryptography`` when it is importable and a
pure-Python implementation of RFC 8032 5.1.7 otherwise: slower (a few
milliseconds), but it needs nothing compiled. Both refuse S >= L and
non-canonical encodings of the points.
"""

from __future__ import annotations

import hashlib

__all__ = ["DEFAULT_BACKEND", "ed25519_verify", "has_cryptography"]

_P = 2**255 - 19
_L = 2**252 + 27742317777372353535851937790883648493
_D = -121665 * pow(121666, _P - 2, _P) % _P
_SQRT_M1 = pow(2, (_P - 1) // 4, _P)


def _recover_x(y: int, sign: int) -> int | None:
    """RFC 8032 5.1.3 steps 2-4; None where the encoding is not a point."""
    if y >= _P:  # non-canonical y
        return None
    x2 = (y * y - 1) * pow(_D * y * y + 1, _P - 2, _P) % _P
    if x2 == 0:
        return None if sign else 0  # x = 0 with the sign bit set is non-canonical
    x = pow(x2, (_P + 3) // 8, _P)
    if (x * x - x2) % _P != 0:
        x = x * _SQRT_M1 % _P
    if (x * x - x2) % _P != 0:
        return None
    if x & 1 != sign:
        x = _P - x
    return x


def _decompress(s: bytes) -> tuple[int, int, int, int] | None:
    y = int.from_bytes(s, "little")
    sign, y = y >> 255, y & ((1 << 255) - 1)
    x = _recover_x(y, sign)
    return None if x is None else (x, y, 1, x * y % _P)


def _add(p: tuple, q: tuple) -> tuple:
    """Extended twisted Edwards addition (RFC 8032 5.1.4)."""
    a = (p[1] - p[0]) * (q[1] - q[0]) % _P
    b = (p[1] + p[0]) * (q[1] + q[0]) % _P
    c = 2 * p[3] * q[3] * _D % _P
    d = 2 * p[2] * q[2] % _P
    e, f, g, h = b - a, d - c, d + c, b + a
    return (e * f % _P, g * h % _P, f * g % _P, e * h % _P)


def _mul(s: int, p: tuple) -> tuple:
    q = (0, 1, 1, 0)
    while s:
        if s & 1:
            q = _add(q, p)
        p = _add(p, p)
        s >>= 1
    return q


def _equal(p: tuple, q: tuple) -> bool:
    return (p[0] * q[2] - q[0] * p[2]) % _P == 0 and (p[1] * q[2] - q[1] * p[2]) % _P == 0


_GY = 4 * pow(5, _P - 2, _P) % _P
_G = (_recover_x(_GY, 0), _GY, 1, _recover_x(_GY, 0) * _GY % _P)


def _verify_pure(public: bytes, message: bytes, signature: bytes) -> bool:
    """RFC 8032 5.1.7, cofactorless ([S]B = R + [k]A, as Go and OpenSSL check):
    refuses S >= L and non-canonical encodings of A and R."""
    if len(public) != 32 or len(signature) != 64:
        return False
    a = _decompress(public)
    r = _decompress(signature[:32])
    s = int.from_bytes(signature[32:], "little")
    if a is None or r is None or s >= _L:
        return False
    k = int.from_bytes(hashlib.sha512(signature[:32] + public + message).digest(), "little") % _L
    return _equal(_mul(s, _G), _add(r, _mul(k, a)))


def _verify_cryptography(public: bytes, message: bytes, signature: bytes) -> bool:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        Ed25519PublicKey.from_public_bytes(public).verify(signature, message)
    except (InvalidSignature, ValueError):
        return False
    return True


def has_cryptography() -> bool:
    try:
        from cryptography.hazmat.primitives.asymmetric import ed25519  # noqa: F401
    except ImportError:
        return False
    return True


#: The Ed25519 backend verify_receipt uses by default: "cryptography" when importable, else "pure".
DEFAULT_BACKEND = "cryptography" if has_cryptography() else "pure"


def ed25519_verify(public: bytes, message: bytes, signature: bytes, *, backend: str | None = None) -> bool:
    """Whether signature is public's Ed25519 signature of message; backend
    "cryptography" or "pure" (default: DEFAULT_BACKEND)."""
    backend = backend or DEFAULT_BACKEND
    if backend == "pure":
        return _verify_pure(public, message, signature)
    if backend == "cryptography":
        return _verify_cryptography(public, message, signature)
    raise ValueError(f"unknown Ed25519 backend {backend!r}: want 'cryptography' or 'pure'")
