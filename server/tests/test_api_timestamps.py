"""Statement time (extension): valid time follows when a thing was said, record time stays now."""

from __future__ import annotations

import time
from datetime import datetime

import httpx


def instant(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()


def test_conversation_turn_timestamps_anchor_relative_times(api: httpx.Client, user: str) -> None:
    said = "2023-05-08T13:56:00Z"
    body = {"user_id": user, "messages": [
        {"role": "user", "content": "I adopted a puppy yesterday.", "uuid": "D1:1", "timestamp": said},
    ]}
    results = api.post("/api/v1/memories/from-conversation", json=body).json()["results"]
    assert [r["event"] for r in results] == ["ADD"]
    detail = api.get(f"/api/v1/memories/{results[0]['id']}", params={"user_id": user}).json()
    assert detail["text"] == "User adopted a puppy yesterday."
    assert detail["source_turn_uuids"] == ["D1:1"]
    assert abs(instant(detail["valid_at"]) - instant("2023-05-07T13:56:00Z")) <= 86400
    assert abs(detail["created_at"] - time.time()) < 60  # recorded now


def test_add_timestamp_sets_valid_time_and_point_in_time_reads_follow(api: httpx.Client, user: str) -> None:
    created = api.post("/api/v1/memories", json={
        "user_id": user, "text": "Wen joined the rowing club.", "infer": False, "timestamp": "2021-03-01T00:00:00Z",
    }).json()
    detail = api.get(f"/api/v1/memories/{created['id']}", params={"user_id": user}).json()
    assert detail["valid_at"] == "2021-03-01T00:00:00.000Z"
    before = api.get("/api/v1/memories", params={"user_id": user, "as_of": "2021-02-01T00:00:00Z"}).json()
    after = api.get("/api/v1/memories", params={"user_id": user, "as_of": "2022-01-01"}).json()
    assert before["total"] == 0
    assert [i["id"] for i in after["items"]] == [created["id"]]
    bad = api.post("/api/v1/memories", json={"user_id": user, "text": "x y z", "timestamp": "someday"})
    assert bad.status_code == 400 and "timestamp" in bad.json()["errors"]
