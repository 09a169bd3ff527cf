"""API keys against a real server with auth switched on."""

from __future__ import annotations

from typing import Any

import pytest
from sdk_support import Connect

from cortadel import AuthenticationError, CortadelError, PermissionDeniedError


def test_a_users_own_key_works(auth_server: Any, connect: Connect) -> None:
    client = connect(auth_server.base_url, "alice", api_key=auth_server.mint_key("alice"))
    created = client.add("Alice keeps her keys in the blue bowl.")
    detail = client.get(created.id)
    assert detail is not None and detail.text == "Alice keeps her keys in the blue bowl."


def test_the_key_can_come_from_the_environment(auth_server: Any, connect: Connect, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORTADEL_API_KEY", auth_server.mint_key("alice"))
    assert connect(auth_server.base_url, "alice").list().page == 1


@pytest.mark.parametrize("api_key, message", [(None, "Missing API key"), ("not-a-key", "Invalid API key")])
def test_missing_or_bad_key_is_401(auth_server: Any, connect: Connect, api_key: Any, message: str) -> None:
    client = connect(auth_server.base_url, "alice", api_key=api_key)
    for call in (client.list, lambda: client.add("x"), lambda: client.search("x")):
        with pytest.raises(AuthenticationError) as caught:
            call()
        assert (caught.value.status, caught.value.code, caught.value.message) == (401, "unauthorized", message)


def test_another_users_key_is_403(auth_server: Any, connect: Connect) -> None:
    client = connect(auth_server.base_url, "bob", api_key=auth_server.mint_key("alice"))
    for call in (client.list, lambda: client.add("x"), lambda: client.delete(["x"])):
        with pytest.raises(PermissionDeniedError) as caught:
            call()
        assert (caught.value.status, caught.value.code) == (403, "forbidden")
        assert "bob" in caught.value.message
    with pytest.raises(CortadelError):
        client.get("00000000-0000-4000-8000-000000000000")


def test_health_needs_no_key(auth_server: Any, connect: Connect) -> None:
    assert connect(auth_server.base_url, "alice").health().status == "ok"
