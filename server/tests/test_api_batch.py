"""Batch ingest (POST /api/v1/memories/batch) over HTTP against real servers: order, dedup and
supersede across items, per-item errors, the limits, authorization, one embedder call per batch."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from datetime import datetime

import httpx
import pytest
from starlette.responses import JSONResponse
from support.scripted_openai import ScriptedOpenAI, hashed_embeddings

from cortadel_server.api import schemas
from cortadel_server.testing import ServerProcess, database_for, running_server

BATCH = "/api/v1/memories/batch"
EMBEDDINGS = "/v1/embeddings"


def batch(api: httpx.Client, user: str, **items: object) -> dict:
    response = api.post(BATCH, json={"user_id": user, **items})
    assert response.status_code == 200, response.text
    return response.json()


def listing(api: httpx.Client, user: str, **params: str) -> list[str]:
    body = api.get("/api/v1/memories", params={"user_id": user, "size": 100, **params}).json()
    return sorted(m["content"] for m in body["items"])


def test_memories_come_back_in_order_shaped_as_single_adds(api: httpx.Client, user: str) -> None:
    before = time.time()
    body = batch(api, user, memories=[
        {"text": "Alice keeps her bike in the blue shed.", "infer": False, "app": "notes-app", "metadata": {"k": 1}},
        {"text": "The spare key is under the red pot.", "infer": False, "tags": ["home"], "project": "house"},
        {"text": "Alice keeps her bike in the blue shed.", "infer": False},
    ])
    after = time.time()
    assert body["conversations"] == []
    first, second, again = body["memories"]
    assert (first["event"], first["content"], first["state"], first["app_name"], first["error"]) == (
        "ADD", "Alice keeps her bike in the blue shed.", "active", "notes-app", None)
    assert json.loads(first["metadata"]) == {"k": 1}
    assert before - 1 <= datetime.fromisoformat(first["created_at"]).timestamp() <= after + 1
    assert (second["event"], second["content"], second["metadata"]) == ("ADD", "The spare key is under the red pot.", None)
    assert uuid.UUID(first["id"]) != uuid.UUID(second["id"])
    # Item 3 sees item 1, written in the same transaction.
    assert (again["event"], again["id"], again["content"]) == ("SKIP_DUPLICATE", first["id"], "Alice keeps her bike in the blue shed.")
    stored = api.get(f"/api/v1/memories/{second['id']}", params={"user_id": user}).json()
    assert (stored["tags"], stored["project"], stored["extraction_status"]) == (["home"], "house", "done")
    assert listing(api, user) == ["Alice keeps her bike in the blue shed.", "The spare key is under the red pot."]
    # The same answer a single add gives for the duplicate.
    single = api.post("/api/v1/memories", json={"user_id": user, "text": "The spare key is under the red pot.", "infer": False}).json()
    assert single == {**second, "event": "SKIP_DUPLICATE", "metadata": None}


def test_a_later_item_supersedes_an_earlier_one(api: httpx.Client, user: str) -> None:
    body = batch(api, user, memories=[
        {"text": "I live in Berlin.", "timestamp": "2026-01-10T09:00:00Z"},
        {"text": "I live in Paris now.", "timestamp": "2026-03-01T18:30:00Z"},
    ])
    berlin, paris = body["memories"]
    assert (berlin["event"], berlin["content"]) == ("ADD", "User lives in Berlin.")
    assert (paris["event"], paris["content"]) == ("SUPERSEDE", "User lives in Paris now.")
    old = api.get(f"/api/v1/memories/{berlin['id']}", params={"user_id": user}).json()
    assert (old["is_current"], old["superseded_by"]) == (False, paris["id"])
    assert datetime.fromisoformat(old["invalid_at"]).timestamp() == datetime.fromisoformat("2026-03-01T18:30:00+00:00").timestamp()
    assert listing(api, user) == ["User lives in Paris now."]


def test_a_bad_item_is_its_own_error_and_the_good_ones_are_stored(api: httpx.Client, user: str) -> None:
    body = batch(api, user, memories=[
        {"text": "", "infer": False},
        {"text": "Bob drinks his tea without sugar.", "infer": False},
        {"text": "x", "infer": False, "memoryType": "semantic"},
        {"text": "Typed wrong.", "infer": False, "memory_type": "weird"},
        {"text": "Dated wrong.", "infer": False, "timestamp": "yesterday-ish"},
        "just a string",
        {"text": "Bob's office is on the fourth floor.", "infer": False},
    ])
    results = [(m["event"], m["content"], m["error"]) for m in body["memories"]]
    assert results[1] == ("ADD", "Bob drinks his tea without sugar.", None)
    assert results[6] == ("ADD", "Bob's office is on the fourth floor.", None)
    assert results[0] == ("ERROR", None, "Invalid item: text: String should have at least 1 character")
    assert results[2] == ("ERROR", None, "Invalid item: memoryType: Unknown field (fields are snake_case)")
    assert results[3] == ("ERROR", None, "Invalid item: memory_type: Must be one of episodic, semantic, procedural")
    assert results[4][:2] == ("ERROR", None)
    assert results[4][2].startswith("Invalid item: timestamp: ")
    assert results[5][:2] == ("ERROR", None)
    assert results[5][2].startswith("Invalid item: body: Input should be a valid dictionary")
    assert all(m["id"] == "" for i, m in enumerate(body["memories"]) if i not in (1, 6))
    assert listing(api, user) == ["Bob drinks his tea without sugar.", "Bob's office is on the fourth floor."]


def test_conversations_answer_as_from_conversation_does(api: httpx.Client, user: str) -> None:
    body = batch(api, user, conversations=[
        {"messages": [{"role": "user", "content": "I keep my passport in the top drawer."}], "tags": ["travel"]},
        {"messages": [{"role": "user", "content": "thanks"}]},
        {"messages": []},
        {"messages": [{"role": "user", "content": "I keep my passport in the top drawer.", "uuid": "t-2"}]},
    ], memories=[{"text": "My passport expires in 2031.", "infer": False}])
    assert [(m["event"], m["content"]) for m in body["memories"]] == [("ADD", "My passport expires in 2031.")]
    stored, nothing, bad, again = body["conversations"]
    [fact] = stored["results"]
    assert (fact["event"], fact["memory"], fact["error"]) == ("ADD", "User keeps their passport in the top drawer.", None)
    assert nothing == {"no_facts_extracted": True}
    assert bad == {"results": [{"id": "", "memory": None, "event": "ERROR",
                                "error": "Invalid item: messages: List should have at least 1 item after validation, not 0"}]}
    assert [(r["event"], r["id"]) for r in again["results"]] == [("SKIP_DUPLICATE", fact["id"])]
    single = api.post("/api/v1/memories/from-conversation", json={
        "user_id": user, "messages": [{"role": "user", "content": "thanks"}]}).json()
    assert single == nothing


def test_the_answer_is_byte_for_byte_the_models_dump(api: httpx.Client, user: str) -> None:
    response = api.post(BATCH, json={"user_id": user, "memories": [
        {"text": "Zoë's café opens at 7 — \"early\".", "infer": False, "app": "notes", "metadata": {"q": "a \"b\"", "ü": 1}},
        {"text": "", "infer": False},
    ], "conversations": [
        {"messages": [{"role": "user", "content": "I keep my spare glasses in the car."}]},
        {"messages": [{"role": "user", "content": "thanks"}]},
    ]})
    assert response.status_code == 200, response.text
    body = response.json()
    # What the route answered before it skipped the models: their dump (unset fields left out), through JSONResponse.
    through_models = JSONResponse(schemas.BatchResponse.model_validate(body).model_dump(exclude_unset=True)).body
    assert response.content == through_models
    stored, bad = body["memories"]
    assert list(stored) == list(schemas.MemoryCreatedResponse.model_fields)
    assert (stored["content"], stored["app_name"], json.loads(stored["metadata"]), bad["error"]) == (
        "Zoë's café opens at 7 — \"early\".", "notes", {"q": 'a "b"', "ü": 1}, "Invalid item: text: String should have at least 1 character")
    fact, nothing = body["conversations"]
    assert list(body) == ["memories", "conversations"] and list(fact) == ["results"]
    assert [(r["event"], r["memory"], r["error"]) for r in fact["results"]] == [("ADD", "User keeps their spare glasses in the car.", None)]
    assert list(fact["results"][0]) == list(schemas.ConversationIngestItem.model_fields)
    assert nothing == {"no_facts_extracted": True}


def test_whole_request_problems_are_a_400(api: httpx.Client, user: str) -> None:
    for body, field in (({"user_id": user}, "memories"), ({"user_id": user, "memories": []}, "memories"),
                        ({"memories": [{"text": "a"}]}, "user_id"), ({"user_id": user, "memories": "a"}, "memories"),
                        ({"user_id": user, "items": []}, "items")):
        response = api.post(BATCH, json=body)
        assert response.status_code == 400, response.text
        problem = response.json()
        assert (problem["status"], problem["code"]) == (400, "validation_error")
        assert list(problem["errors"]) == [field], problem
    assert listing(api, user) == []


@pytest.fixture(scope="module")
def small_limits(backend: str) -> Iterator[ServerProcess]:
    env = {"CORTADEL_MAX_BATCH_ITEMS": "3", "CORTADEL_MAX_BATCH_BYTES": "65536"}
    with running_server(env=env, database_url=database_for(backend)) as server:
        yield server


def test_the_item_and_byte_limits_are_413s_and_store_nothing(small_limits: ServerProcess) -> None:
    with httpx.Client(base_url=small_limits.base_url, timeout=30) as api:
        items = [{"text": f"Fact number {i}.", "infer": False} for i in range(3)]
        response = api.post(BATCH, json={"user_id": "lim", "memories": items, "conversations": [
            {"messages": [{"role": "user", "content": "I like tea."}]}]})
        assert response.status_code == 413
        assert response.json() == {
            "status": 413, "code": "payload_too_large",
            "message": "A batch holds at most 3 memories and conversations together (CORTADEL_MAX_BATCH_ITEMS); "
                       "this one has 4: send it in smaller batches.",
            "detail": None,
        }
        response = api.post(BATCH, json={"user_id": "lim", "memories": [{"text": "y" * 40_000}, {"text": "z" * 40_000}]})
        assert response.status_code == 413
        assert response.json() == {"status": 413, "code": "payload_too_large",
                                   "message": "Request body exceeds 65536 bytes", "detail": None}
        assert api.get("/api/v1/memories", params={"user_id": "lim"}).json()["total"] == 0
        assert [m["event"] for m in batch(api, "lim", memories=items)["memories"]] == ["ADD", "ADD", "ADD"]


def test_a_key_writes_only_its_own_user(auth_server: ServerProcess) -> None:
    key = auth_server.mint_key("owner")
    body = {"user_id": "someone-else", "memories": [{"text": "Not yours to write.", "infer": False}]}
    with httpx.Client(base_url=auth_server.base_url, timeout=30) as api:
        denied = api.post(BATCH, json=body, headers={"Authorization": f"Bearer {key}"})
        assert denied.status_code == 403
        assert denied.json()["message"] == "API key is not valid for user 'someone-else'"
        assert api.post(BATCH, json=body).status_code == 401
        mine = api.post(BATCH, json={**body, "user_id": "owner"}, headers={"Authorization": f"Bearer {key}"})
        assert mine.status_code == 200
        assert mine.json()["memories"][0]["event"] == "ADD"


def test_a_batch_is_embedded_in_one_call(backend: str) -> None:
    with ScriptedOpenAI() as embedder:
        embedder.handle(EMBEDDINGS, hashed_embeddings)
        env = {"CORTADEL_EMBEDDER": "openai", "CORTADEL_EMBEDDER_URL": embedder.v1_url, "CORTADEL_EMBEDDER_MODEL": "scripted"}
        with running_server(env=env, database_url=database_for(backend)) as server, \
                httpx.Client(base_url=server.base_url, timeout=30) as api:
            embedder.requests.clear()
            texts = [f"Delivery {i} arrives on dock {i % 7}." for i in range(50)]
            body = batch(api, "dock", memories=[{"text": t, "infer": False} for t in texts])
            assert [m["content"] for m in body["memories"]] == texts
            assert {m["event"] for m in body["memories"]} == {"ADD"}
            calls = embedder.requests_to(EMBEDDINGS)
            assert len(calls) == 1
            assert sorted(calls[0].body["input"]) == sorted(texts)


#: stored by single adds before the items below, for both users of the next test
PREAMBLE = [{"text": "I live in Berlin.", "timestamp": "2026-01-10T09:00:00Z"}, {"text": "I like coffee."}, {"text": "I drive a BMW."}]
#: repeats and contradictions of the preamble and of earlier items, a dated past version whose chain
#: runs through an item's supersede, a resolution and an entity deletion of earlier items
ITEMS = [
    {"text": "I live in Berlin."},
    {"text": "I live in Paris now.", "timestamp": "2026-03-01T18:30:00Z"},
    {"text": "I live in Paris."},
    {"text": "I no longer like coffee."},
    {"text": "My sister works as a nurse."},
    {"text": "My sister works as a nurse."},
    {"text": "My sister works as a doctor now."},
    {"text": "I drive a Tesla now."},
    {"text": "I live in Lisbon.", "timestamp": "2025-06-01T12:00:00Z"},
    {"text": "The login bug is open.", "infer": False},
    {"text": "The login bug is resolved."},
    {"text": "I met Bob at the gym."},
    {"text": "Forget everything about Bob."},
]


def test_a_batch_decides_as_the_same_adds_one_by_one(api: httpx.Client, user: str) -> None:
    started = time.time()
    answers: dict[str, list[dict]] = {}
    for who, one_by_one in ((f"{user}-batch", False), (f"{user}-single", True)):
        for item in PREAMBLE:
            assert api.post("/api/v1/memories", json={"user_id": who, **item}).status_code == 200
        if one_by_one:
            answers[who] = [api.post("/api/v1/memories", json={"user_id": who, **item}).json() for item in ITEMS]
        else:
            answers[who] = batch(api, who, memories=ITEMS)["memories"]
    expected = [
        ("SKIP_DUPLICATE", "User lives in Berlin."), ("SUPERSEDE", "User lives in Paris now."),
        ("SKIP_DUPLICATE", "User lives in Paris now."), ("SUPERSEDE", "User no longer likes coffee."),
        ("ADD", "User's sister works as a nurse."), ("SKIP_DUPLICATE", "User's sister works as a nurse."),
        ("SUPERSEDE", "User's sister works as a doctor now."), ("SUPERSEDE", "User drives a Tesla now."),
        ("ADD", "User lives in Lisbon."), ("ADD", "The login bug is open."), ("RESOLVE", "The login bug is resolved."),
        ("ADD", "User met Bob at the gym."), ("DELETE_ENTITY", "User met Bob at the gym."),
    ]
    for who, answer in answers.items():
        assert [(m["event"], m["content"]) for m in answer] == expected, who
        by_content = {m["content"]: m["id"] for m in answer}
        # Item 3 is a duplicate of item 2, item 6 of item 5: the ids of the earlier items.
        assert (answer[2]["id"], answer[5]["id"]) == (answer[1]["id"], answer[4]["id"])
        assert listing(api, who) == [
            "The login bug is resolved.", "User drives a Tesla now.", "User lives in Paris now.", "User no longer likes coffee.",
            "User's sister works as a doctor now.",
        ]
        berlin = answer[0]["id"]
        # Lisbon is a past version before Berlin, found through Berlin's supersede by Paris (item 2),
        # which this same batch recorded in Berlin's history.
        lisbon = api.get(f"/api/v1/memories/{by_content['User lives in Lisbon.']}", params={"user_id": who}).json()
        assert (lisbon["is_current"], lisbon["superseded_by"]) == (False, berlin), who
        assert datetime.fromisoformat(lisbon["invalid_at"]).timestamp() == datetime.fromisoformat("2026-01-10T09:00:00+00:00").timestamp()
        history = api.get(f"/api/v1/memories/{berlin}/history", params={"user_id": who}).json()["events"]
        kept = [(e["event"], e["detail"]) for e in history if e["event"] != "ENRICH"]  # enrichment runs whenever it runs
        assert kept == [
            ("ADD", {"source": "add"}),
            ("SUPERSEDE", {"superseded_by": answer[1]["id"], "statement": "User lives in Paris now."}),
            ("SUPERSEDE", {"supersedes": lisbon["id"]}),
        ], who
        assert all(started - 1 <= datetime.fromisoformat(e["at"]).timestamp() <= time.time() + 1 for e in history)


#: stored by single adds before the next test's items
STORED_FIRST = [{"text": "Alice keeps her bike in the blue shed.", "infer": False}, {"text": "I live in Berlin."}]
#: exact repeats (by fingerprint) of a stored fact, of an earlier item, and of a fact an earlier item superseded
REPEATS = [
    {"text": "Alice keeps her bike in the blue shed.", "infer": False},
    {"text": "I live in Paris now."},
    {"text": "I live in Berlin."},
    {"text": "Bob fixes bikes on Sundays.", "infer": False},
    {"text": "Bob fixes bikes on Sundays.", "infer": False},
    {"text": "I live in Paris."},
]


def test_a_repeat_matches_only_facts_still_current_at_its_turn(api: httpx.Client, user: str) -> None:
    answers: dict[str, list[dict]] = {}
    stored: dict[str, list[dict]] = {}
    for who, one_by_one in ((f"{user}-batch", False), (f"{user}-single", True)):
        stored[who] = [api.post("/api/v1/memories", json={"user_id": who, **item}).json() for item in STORED_FIRST]
        if one_by_one:
            answers[who] = [api.post("/api/v1/memories", json={"user_id": who, **item}).json() for item in REPEATS]
        else:
            answers[who] = batch(api, who, memories=REPEATS)["memories"]
    for who, answer in answers.items():
        shed, berlin = (m["id"] for m in stored[who])
        assert [(m["event"], m["content"]) for m in answer] == [
            ("SKIP_DUPLICATE", "Alice keeps her bike in the blue shed."), ("SUPERSEDE", "User lives in Paris now."),
            ("SUPERSEDE", "User lives in Berlin."), ("ADD", "Bob fixes bikes on Sundays."),
            ("SKIP_DUPLICATE", "Bob fixes bikes on Sundays."), ("SUPERSEDE", "User lives in Paris."),
        ], who
        # The stored repeat names the stored fact, the later Bob the earlier one; Berlin again is a
        # new fact, not the one Paris superseded, and Paris again supersedes that new one.
        assert (answer[0]["id"], answer[4]["id"]) == (shed, answer[3]["id"]), who
        assert berlin not in {answer[2]["id"], answer[5]["id"]}, who
        again = api.get(f"/api/v1/memories/{answer[2]['id']}", params={"user_id": who}).json()
        assert (again["is_current"], again["superseded_by"]) == (False, answer[5]["id"]), who
        assert listing(api, who) == ["Alice keeps her bike in the blue shed.", "Bob fixes bikes on Sundays.", "User lives in Paris."]


#: facts nearer to "User moved to Lisbon." for the embedder than "User lives in Berlin." is (cosine 0.66-0.87 against 0.33)
LISBON = ["I love Lisbon.", "I visited Lisbon in 2019.", "I bought a map of Lisbon.", "I learned Portuguese in Lisbon.",
          "I hiked near Lisbon.", "I photographed Lisbon at night.", "I flew to Lisbon for a wedding.", "I ate custard tarts in Lisbon."]


def test_a_batch_decides_on_what_other_writes_stored_since_the_users_last_batch(api: httpx.Client, user: str) -> None:
    """A batch keeps its user's current facts' shapes for their next batch (decide.needs_full_text):
    a single add and a retraction in between (as many current facts as before, none deleted) are
    not in them, so the next batch brings them up to date, and finds the fact only the full-text
    lookup finds (Berlin is not among the 8 nearest by the embedder)."""
    first = batch(api, user, memories=[{"text": t} for t in [*LISBON, "I like coffee."]])["memories"]
    assert [m["event"] for m in first] == ["ADD"] * 9
    berlin = api.post("/api/v1/memories", json={"user_id": user, "text": "I live in Berlin."}).json()
    assert (berlin["event"], berlin["content"]) == ("ADD", "User lives in Berlin.")
    retracted = api.post("/api/v1/memories", json={"user_id": user, "text": "It is not true that I like coffee."}).json()
    assert (retracted["event"], retracted["id"]) == ("INVALIDATE", first[8]["id"])
    second = batch(api, user, memories=[{"text": "I moved to Lisbon."}, {"text": "I read novels."}])["memories"]
    assert [(m["event"], m["content"]) for m in second] == [("SUPERSEDE", "User moved to Lisbon."), ("ADD", "User reads novels.")]
    old = api.get(f"/api/v1/memories/{berlin['id']}", params={"user_id": user}).json()
    assert (old["is_current"], old["superseded_by"]) == (False, second[0]["id"])
