"""The six operations of the contract, driven over HTTP against a real server."""

from __future__ import annotations

import json
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

import httpx

from cortadel_server.testing import ServerProcess, database_for


def add(api: httpx.Client, user: str, text: str, **extra: object) -> dict:
    response = api.post("/api/v1/memories", json={"user_id": user, "text": text, "infer": False, **extra})
    assert response.status_code == 200, response.text
    return response.json()


def search(api: httpx.Client, user: str, query: str, **extra: object) -> dict:
    response = api.post("/api/v1/memories/search", json={"user_id": user, "query": query, **extra})
    assert response.status_code == 200, response.text
    return response.json()


def test_add_returns_the_stored_memory(api: httpx.Client, user: str) -> None:
    before = time.time()
    body = add(api, user, "Alice keeps her bike in the blue shed.", app="notes-app", metadata={"k": 1, "nested": {"a": [1, 2]}})
    after = time.time()
    assert body["event"] == "ADD"
    assert uuid.UUID(body["id"])
    assert body["content"] == "Alice keeps her bike in the blue shed."
    assert body["state"] == "active"
    assert body["app_name"] == "notes-app"
    assert json.loads(body["metadata"]) == {"k": 1, "nested": {"a": [1, 2]}}
    created = datetime.fromisoformat(body["created_at"]).timestamp()
    assert before - 1 <= created <= after + 1


def test_get_returns_the_exact_text_and_detail_shape(api: httpx.Client, user: str) -> None:
    text = "  Exact text,   with spacing and ünïcode — kept verbatim.  "
    created = add(api, user, text, metadata={"source": "unit"})
    response = api.get(f"/api/v1/memories/{created['id']}", params={"user_id": user})
    assert response.status_code == 200
    detail = response.json()
    assert detail["text"] == text
    assert detail["id"] == created["id"]
    assert detail["state"] == "active"
    assert detail["is_current"] is True
    assert detail["is_global"] is False
    assert detail["superseded_by"] is None
    assert detail["invalid_at"] is None
    assert detail["metadata_"] == {"source": "unit"}
    assert isinstance(detail["created_at"], int)
    assert abs(detail["created_at"] - time.time()) < 60


def test_duplicate_add_returns_skip_duplicate_with_existing_id(api: httpx.Client, user: str) -> None:
    first = add(api, user, "Bob's favourite colour is green.")
    again = add(api, user, "Bob's favourite colour is green.")
    near = add(api, user, "bob's favourite colour is GREEN!")
    assert again["event"] == "SKIP_DUPLICATE" and again["id"] == first["id"]
    assert near["event"] == "SKIP_DUPLICATE" and near["id"] == first["id"]
    listing = api.get("/api/v1/memories", params={"user_id": user}).json()
    assert listing["total"] == 1


def test_twenty_concurrent_identical_adds_store_one_row(server: ServerProcess, user: str) -> None:
    def one(_: int) -> dict:
        with httpx.Client(base_url=server.base_url, timeout=30) as client:
            return add(client, user, "The office wifi password rotates every Monday.")

    with ThreadPoolExecutor(max_workers=20) as pool:
        results = list(pool.map(one, range(20)))
    events = sorted(r["event"] for r in results)
    assert events.count("ADD") == 1 and events.count("SKIP_DUPLICATE") == 19
    assert len({r["id"] for r in results}) == 1
    with httpx.Client(base_url=server.base_url) as client:
        assert client.get("/api/v1/memories", params={"user_id": user}).json()["total"] == 1


def test_search_finds_a_fresh_memory_exactly_once(api: httpx.Client, user: str) -> None:
    add(api, user, "Carol is allergic to peanuts and shellfish.")
    add(api, user, "The quarterly report is due on the fifth of March.")
    created = add(api, user, "Dave plays the cello in a community orchestra.")
    body = search(api, user, "cello orchestra")
    ids = [r["id"] for r in body["results"]]
    assert ids.count(created["id"]) == 1
    top = body["results"][0]
    assert top["id"] == created["id"]
    assert top["content"] == "Dave plays the cello in a community orchestra."
    assert top["rrf_score"] > 0
    assert top["text_rank"] == 1 and top["vector_rank"] == 1
    assert body["query"] == "cello orchestra"
    assert body["total"] == len(body["results"])
    # The three adds form one inferred episode, so the session arm finds it too.
    assert set(top["attributes"]["arms"]) == {"text", "vector", "session"}


def test_search_modes_fill_only_their_arm(api: httpx.Client, user: str) -> None:
    add(api, user, "Erin commutes to work by ferry.")
    text = search(api, user, "ferry commute", mode="text")["results"][0]
    vector = search(api, user, "ferry commute", mode="vector")["results"][0]
    assert text["text_rank"] == 1 and text["vector_rank"] is None
    assert vector["vector_rank"] == 1 and vector["text_rank"] is None


def test_search_filters_session_and_memory_type(api: httpx.Client, user: str) -> None:
    add(api, user, "Frank deploys with a blue-green strategy.", memory_type="procedural")
    add(api, user, "Frank deploys on Thursdays.", memory_type="semantic")
    procedural = search(api, user, "Frank deploys", memory_type="procedural")["results"]
    assert [r["content"] for r in procedural] == ["Frank deploys with a blue-green strategy."]
    assert search(api, user, "Frank deploys", session_id="no-such-session")["results"] == []


def test_search_top_k_and_token_budget_trim_without_reordering(api: httpx.Client, user: str) -> None:
    for i in range(6):
        add(api, user, f"Gina's travel note number {i}: she visited city {i} and loved the museums there.")
    full = search(api, user, "Gina travel museums", top_k=5)["results"]
    assert len(full) == 5
    budget = search(api, user, "Gina travel museums", top_k=5, token_budget=45)["results"]
    assert 1 <= len(budget) < 5
    assert [r["id"] for r in budget] == [r["id"] for r in full[: len(budget)]]


def test_rerank_without_cross_encoder_keeps_fused_order_and_says_so(api: httpx.Client, user: str) -> None:
    add(api, user, "Hank's garden has tomatoes and basil.")
    plain = search(api, user, "garden tomatoes")["results"]
    reranked = search(api, user, "garden tomatoes", rerank="cross_encoder")["results"]
    assert [r["id"] for r in reranked] == [r["id"] for r in plain]
    assert reranked[0]["attributes"]["reranked"] is False


def test_search_reports_app_name_of_the_memory(api: httpx.Client, user: str) -> None:
    add(api, user, "Ivy's dentist appointment is at 9am.", app="calendar-bot")
    result = search(api, user, "dentist appointment", app_name="another-app")["results"][0]
    assert result["app_name"] == "calendar-bot"


def test_list_is_newest_first_with_paging(api: httpx.Client, user: str) -> None:
    texts = [f"Jack's note {i} about the harbour." for i in range(5)]
    for text in texts:
        add(api, user, text)
    page1 = api.get("/api/v1/memories", params={"user_id": user, "page": 1, "size": 2}).json()
    page3 = api.get("/api/v1/memories", params={"user_id": user, "page": 3, "size": 2}).json()
    assert [i["content"] for i in page1["items"]] == [texts[4], texts[3]]
    assert [i["content"] for i in page3["items"]] == [texts[0]]
    assert (page1["total"], page1["page"], page1["size"], page1["pages"]) == (5, 1, 2, 3)
    assert page3["page"] == 3


def test_list_filters(api: httpx.Client, user: str) -> None:
    add(api, user, "Kim's flight to Oslo leaves Friday.", app="travel-app", memory_type="episodic")
    add(api, user, "Kim prefers aisle seats.", app="prefs-app")
    by_app = api.get("/api/v1/memories", params={"user_id": user, "app_id": "travel-app"}).json()
    assert [i["content"] for i in by_app["items"]] == ["Kim's flight to Oslo leaves Friday."]
    by_type = api.get("/api/v1/memories", params={"user_id": user, "memory_type": "episodic"}).json()
    assert [i["content"] for i in by_type["items"]] == ["Kim's flight to Oslo leaves Friday."]
    ignored = api.get("/api/v1/memories", params={"user_id": user, "memory_type": "bogus"}).json()
    assert ignored["total"] == 2
    searched = api.get("/api/v1/memories", params={"user_id": user, "search_query": "aisle seats"}).json()
    assert searched["items"][0]["content"] == "Kim prefers aisle seats."


def test_delete_removes_everything(api: httpx.Client, user: str) -> None:
    keep = add(api, user, "Liam's passport expires in 2031.")
    gone = add(api, user, "Liam's locker code is 4471.")
    response = api.request("DELETE", "/api/v1/memories", json={"user_id": user, "memory_ids": [gone["id"], str(uuid.uuid4())]})
    assert response.status_code == 200
    assert response.json() == {"message": "Deleted 1 memory"}
    assert api.get(f"/api/v1/memories/{gone['id']}", params={"user_id": user}).status_code == 404
    assert gone["id"] not in [r["id"] for r in search(api, user, "Liam locker code 4471")["results"]]
    assert api.get(f"/api/v1/memories/{gone['id']}/history", params={"user_id": user}).status_code == 404
    listing = api.get("/api/v1/memories", params={"user_id": user}).json()
    assert [i["id"] for i in listing["items"]] == [keep["id"]]
    # Re-adding the deleted text is a fresh ADD, not a duplicate of a ghost.
    assert add(api, user, "Liam's locker code is 4471.")["event"] == "ADD"


def test_delete_of_unknown_ids_is_not_an_error(api: httpx.Client, user: str) -> None:
    response = api.request("DELETE", "/api/v1/memories", json={"user_id": user, "memory_ids": ["nope", str(uuid.uuid4())]})
    assert response.status_code == 200
    assert response.json()["message"] == "Deleted 0 memories"


def test_get_unknown_non_uuid_and_foreign_ids_are_404(api: httpx.Client, user: str) -> None:
    mine = add(api, user, "Mia's cat is called Pixel.")
    for memory_id, owner in ((str(uuid.uuid4()), user), ("not-a-uuid", user), (mine["id"], "someone-else")):
        response = api.get(f"/api/v1/memories/{memory_id}", params={"user_id": owner})
        assert response.status_code == 404
        body = response.json()
        assert body["status"] == 404 and body["code"] == "not_found" and memory_id in body["message"]


def test_users_are_isolated_through_every_operation(api: httpx.Client) -> None:
    a, b = f"iso-a-{uuid.uuid4()}", f"iso-b-{uuid.uuid4()}"
    secret = add(api, a, "Nora's bank PIN hint is the lighthouse.")
    assert search(api, b, "Nora bank PIN lighthouse")["results"] == []
    assert api.get("/api/v1/memories", params={"user_id": b}).json()["total"] == 0
    assert api.get("/api/v1/memories", params={"user_id": b, "search_query": "lighthouse"}).json()["items"] == []
    assert api.get(f"/api/v1/memories/{secret['id']}", params={"user_id": b}).status_code == 404
    deleted = api.request("DELETE", "/api/v1/memories", json={"user_id": b, "memory_ids": [secret["id"]]}).json()
    assert deleted["message"] == "Deleted 0 memories"
    assert api.get(f"/api/v1/memories/{secret['id']}", params={"user_id": a}).status_code == 200
    # The same text for another user is that user's own ADD, not a duplicate.
    assert add(api, b, "Nora's bank PIN hint is the lighthouse.")["event"] == "ADD"


def test_health_reports_every_check(api: httpx.Client, backend: str) -> None:
    response = api.get("/api/health")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    checks = body["checks"]
    assert checks["memgraph"]["ok"] is True and checks["memgraph"]["url"] == f"{backend}://"
    assert checks["embeddings"] == {**checks["embeddings"], "ok": True, "provider": "wordllama", "dim": 256}
    assert checks["indexes"]["ok"] is True and checks["indexes"]["provider_dim"] == 256
    assert checks["indexes"]["mismatches"] == []
    assert abs(datetime.fromisoformat(body["checked_at"]).timestamp() - time.time()) < 60


def test_every_response_carries_a_request_id(api: httpx.Client, user: str) -> None:
    ok = api.get("/api/health")
    bad = api.post("/api/v1/memories", json={"user_id": user})
    echoed = api.get("/api/health", headers={"X-Request-Id": "trace-123"})
    assert len(ok.headers["x-request-id"]) == 32
    assert len(bad.headers["x-request-id"]) == 32 and bad.headers["x-request-id"] != ok.headers["x-request-id"]
    assert echoed.headers["x-request-id"] == "trace-123"
    # A made id is a random version-4 UUID's hex, as uuid.uuid4().hex gave (it is made without os.urandom now).
    made = [api.get("/livez").headers["x-request-id"] for _ in range(20)] + [ok.headers["x-request-id"]]
    assert len(set(made)) == 21
    assert all(uuid.UUID(hex=i).hex == i and uuid.UUID(hex=i).version == 4 and uuid.UUID(hex=i).variant == uuid.RFC_4122 for i in made)


def test_memories_survive_a_restart(tmp_path, backend: str) -> None:
    server = ServerProcess(tmp_path / "restart.db", database_url=database_for(backend))
    server.start()
    try:
        with httpx.Client(base_url=server.base_url) as client:
            created = add(client, "restart-user", "Olga's boat is moored at pier 7.")
        server.restart()
        with httpx.Client(base_url=server.base_url) as client:
            detail = client.get(f"/api/v1/memories/{created['id']}", params={"user_id": "restart-user"}).json()
            assert detail["text"] == "Olga's boat is moored at pier 7."
            assert search(client, "restart-user", "boat pier")["results"][0]["id"] == created["id"]
            assert add(client, "restart-user", "Olga's boat is moored at pier 7.")["event"] == "SKIP_DUPLICATE"
    finally:
        server.stop()


def test_from_conversation_items_carry_all_four_keys(api: httpx.Client, user: str) -> None:
    body = {"user_id": user, "messages": [{"role": "user", "content": "I keep my bonsai on the balcony.", "uuid": "t-1"}]}
    response = api.post("/api/v1/memories/from-conversation", json=body).json()
    assert set(response) == {"results"}
    [item] = response["results"]
    assert item == {"id": item["id"], "memory": "User keeps their bonsai on the balcony.", "event": "ADD", "error": None}
    nothing = api.post("/api/v1/memories/from-conversation", json={"user_id": user, "messages": [{"role": "user", "content": "Hi! Thanks!"}]}).json()
    assert nothing == {"no_facts_extracted": True}


def test_verbatim_chat_turns_are_never_read_as_commands_or_corrections(api: httpx.Client, user: str) -> None:
    first = add(api, user, "Thanks, Gina! The cake you baked was amazing.")
    second = add(api, user, "Thanks, Gina! See you at the concert on Friday.")
    question = add(api, user, "How do you feel now that the kitchen renovation is finished?")
    assert [first["event"], second["event"], question["event"]] == ["ADD", "ADD", "ADD"]
    listing = api.get("/api/v1/memories", params={"user_id": user}).json()
    assert listing["total"] == 3 and all(i["is_current"] for i in listing["items"])
    # A single verbatim statement is still read for intent and deduplicated.
    assert add(api, user, "Thanks, Gina! See you at the concert on Friday.")["event"] == "SKIP_DUPLICATE"
