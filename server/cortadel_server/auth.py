"""API keys bound to one user, verifiable without a database: ``ck_<user>.<hmac>``.

The user id travels base64url-encoded in the key; the HMAC-SHA256 of it under the auth secret
proves the key was minted here. Comparison is constant-time.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac

PREFIX = "ck_"


def _signature(secret: str, user_id: str) -> str:
    return hmac.new(secret.encode("utf-8"), b"cortadel-key:" + user_id.encode("utf-8"), hashlib.sha256).hexdigest()[:40]


def _encode_user(user_id: str) -> str:
    return base64.urlsafe_b64encode(user_id.encode("utf-8")).decode("ascii").rstrip("=")


def mint_key(secret: str, user_id: str) -> str:
    return f"{PREFIX}{_encode_user(user_id)}.{_signature(secret, user_id)}"


def verify_key(secret: str, key: str) -> str | None:
    """The user id the key is bound to, or None when the key was not minted with this secret.

    Only the exact minted spelling passes: a key is ASCII, and its user part must be the canonical
    unpadded encoding (base64 decoders also accept added padding and stray bits).
    """
    if not key.isascii() or not key.startswith(PREFIX) or "." not in key:
        return None
    encoded, _, signature = key[len(PREFIX):].rpartition(".")
    try:
        user_id = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    if not user_id or not hmac.compare_digest(encoded.encode("ascii"), _encode_user(user_id).encode("ascii")):
        return None
    if not hmac.compare_digest(signature.encode("ascii"), _signature(secret, user_id).encode("ascii")):
        return None
    return user_id


def is_admin_key(admin_key: str | None, key: str | None) -> bool:
    """Whether ``key`` is the admin credential (never true when none is configured)."""
    if not admin_key or key is None:
        return False
    return hmac.compare_digest(key.encode("utf-8"), admin_key.encode("utf-8"))
