"""The auth matrix: open server, valid key by each of the three ways, bad key, another user's key."""

from __future__ import annotations

import subprocess
import sys
import uuid

import httpx
import pytest

from cortadel_server.auth import mint_key, verify_key
from cortadel_server.testing import ServerProcess


def send_key(way: str, key: str) -> dict:
    if way == "bearer":
        return {"headers": {"Authorization": f"Bearer {key}"}}
    if way == "header":
        return {"headers": {"API_KEY": key}}
    return {"params": {"api_key": key}}


WAYS = ("bearer", "header", "query")


def operations(user: str, memory_id: str) -> list[tuple[str, str, dict]]:
    return [
        ("POST", "/api/v1/memories", {"json": {"user_id": user, "text": f"Auth probe {uuid.uuid4()}", "infer": False}}),
        ("POST", "/api/v1/memories/search", {"json": {"user_id": user, "query": "probe"}}),
        ("GET", "/api/v1/memories", {"params": {"user_id": user}}),
        ("GET", f"/api/v1/memories/{memory_id}", {"params": {"user_id": user}}),
        ("GET", f"/api/v1/memories/{memory_id}/history", {"params": {"user_id": user}}),
        ("DELETE", "/api/v1/memories", {"json": {"user_id": user, "memory_ids": [str(uuid.uuid4())]}}),
        ("POST", "/api/v1/memories/from-conversation", {"json": {"user_id": user, "messages": [{"role": "user", "content": "Hi!"}]}}),
    ]


def merge(request_kwargs: dict, key_kwargs: dict) -> dict:
    merged = dict(request_kwargs)
    for part in ("headers", "params"):
        if part in key_kwargs:
            merged[part] = {**merged.get(part, {}), **key_kwargs[part]}
    return merged


def test_keys_round_trip_and_reject_tampering() -> None:
    key = mint_key("s", "alice")
    assert verify_key("s", key) == "alice"
    assert verify_key("other-secret", key) is None
    assert verify_key("s", key[:-1] + ("0" if key[-1] != "0" else "1")) is None
    assert verify_key("s", "garbage") is None
    forged = mint_key("s", "bob").split(".")[0] + "." + key.split(".")[1]
    assert verify_key("s", forged) is None


def test_cli_mints_the_same_key() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "cortadel_server", "mint-key", "alice"],
        env={"CORTADEL_AUTH_SECRET": "cli-secret", "PATH": ""}, capture_output=True, text=True, check=True,
    )
    assert out.stdout.strip() == mint_key("cli-secret", "alice")


def test_mint_key_without_secret_fails_with_one_line() -> None:
    out = subprocess.run([sys.executable, "-m", "cortadel_server", "mint-key", "alice"], env={"PATH": ""},
                         capture_output=True, text=True, check=False)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [out.stderr.strip()]
    assert "CORTADEL_AUTH_SECRET" in out.stderr


@pytest.mark.parametrize("way", WAYS)
def test_valid_key_allows_every_operation(auth_server: ServerProcess, way: str) -> None:
    user = f"auth-{way}"
    key = auth_server.mint_key(user)
    with httpx.Client(base_url=auth_server.base_url) as client:
        created = client.post("/api/v1/memories", **merge({"json": {"user_id": user, "text": "Kept under a key.", "infer": False}}, send_key(way, key)))
        assert created.status_code == 200
        memory_id = created.json()["id"]
        for method, path, kwargs in operations(user, memory_id):
            response = client.request(method, path, **merge(kwargs, send_key(way, key)))
            assert response.status_code == 200, (method, path, response.text)
        detail = client.get(f"/api/v1/memories/{memory_id}", **send_key(way, key))  # user from the key
        assert detail.status_code == 200 and detail.json()["text"] == "Kept under a key."


@pytest.mark.parametrize("way", WAYS)
def test_missing_or_bad_key_is_401(auth_server: ServerProcess, way: str) -> None:
    bad = mint_key("not-the-secret", "alice")
    with httpx.Client(base_url=auth_server.base_url) as client:
        for method, path, kwargs in operations("alice", str(uuid.uuid4())):
            for key_kwargs in ({}, send_key(way, bad)):
                response = client.request(method, path, **merge(kwargs, key_kwargs))
                assert response.status_code == 401, (method, path)
                body = response.json()
                assert body["status"] == 401 and body["code"] == "unauthorized"
                assert response.headers["x-request-id"]


@pytest.mark.parametrize("way", WAYS)
def test_another_users_key_is_403(auth_server: ServerProcess, way: str) -> None:
    with httpx.Client(base_url=auth_server.base_url) as client:
        alice_key = auth_server.mint_key("alice-403")
        created = client.post("/api/v1/memories", json={"user_id": "alice-403", "text": "Alice's secret garden.", "infer": False},
                              headers={"Authorization": f"Bearer {alice_key}"}).json()
        mallory = auth_server.mint_key("mallory")
        for method, path, kwargs in operations("alice-403", created["id"]):
            response = client.request(method, path, **merge(kwargs, send_key(way, mallory)))
            assert response.status_code == 403, (method, path, response.text)
            assert response.json()["code"] == "forbidden"
        # Mallory's own namespace has nothing of Alice's.
        own = client.get(f"/api/v1/memories/{created['id']}", **send_key(way, mallory))
        assert own.status_code == 404


def test_health_stays_open_and_content_free(auth_server: ServerProcess) -> None:
    response = httpx.get(f"{auth_server.base_url}/api/health")
    assert response.status_code == 200
    assert "secret garden" not in response.text


def test_open_server_needs_no_key(server: ServerProcess) -> None:
    response = httpx.post(f"{server.base_url}/api/v1/memories/search", json={"user_id": "anyone", "query": "x"})
    assert response.status_code == 200


def test_key_user_fills_a_missing_user_id(auth_server: ServerProcess) -> None:
    key = auth_server.mint_key("implicit-user")
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=auth_server.base_url, headers=headers) as client:
        created = client.post("/api/v1/memories", json={"text": "Ursula sails on Saturdays.", "infer": False})
        assert created.status_code == 200 and created.json()["event"] == "ADD"
        found = client.post("/api/v1/memories/search", json={"query": "sailing Saturdays"}).json()
        assert [r["id"] for r in found["results"]] == [created.json()["id"]]
        listed = client.get("/api/v1/memories").json()
        assert [i["content"] for i in listed["items"]] == ["Ursula sails on Saturdays."]
        explicit = client.get("/api/v1/memories", params={"user_id": "implicit-user"}).json()
        assert explicit["total"] == 1
        gone = client.request("DELETE", "/api/v1/memories", json={"memory_ids": [created.json()["id"]]})
        assert gone.json()["message"] == "Deleted 1 memory"
