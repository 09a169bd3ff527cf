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


def mint_key(secret: str, user_id: str) -> str:
    encoded = base64.urlsafe_b64encode(user_id.encode("utf-8")).decode("ascii").rstrip("=")
    return f"{PREFIX}{encoded}.{_signature(secret, user_id)}"


def verify_key(secret: str, key: str) -> str | None:
    """The user id the key is bound to, or None when the key was not minted with this secret."""
    if not key.startswith(PREFIX) or "." not in key:
        return None
    encoded, _, signature = key[len(PREFIX):].rpartition(".")
    try:
        user_id = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    if not user_id or not hmac.compare_digest(signature, _signature(secret, user_id)):
        return None
    return user_id
