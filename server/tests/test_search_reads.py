"""What a search reads of the store: the fused head's texts and sessions for the stages after
fusion (``Storage.memory_heads``), whole records only for the hits it returns, and (through a
cross-encoder) the rerank of the head — on both backends."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import datetime

import httpx
import pytest
from support.scripted_openai import RecordedRequest, Reply, ScriptedOpenAI
from test_api_memories import add, search
from test_storage_contract import mem, opener, vec  # noqa: F401 - opener: the contract's fixture, both backends

from cortadel_server.storage.base import SUPERSEDED, Storage
from cortadel_server.testing import database_for, running_server


def test_heads_are_the_text_and_session_of_existing_memories_in_any_state(opener: Callable[[], Storage]) -> None:  # noqa: F811
    store = opener()
    store.insert_memory(mem("m1", "I live in Lisbon.", session_id="s1", tags=["home"]), vec(1, 0, 0, 0))
    store.insert_memory(mem("m2", "I lived in Porto.", at=1), vec(0, 1, 0, 0))
    store.update_memory("u1", "m2", state=SUPERSEDED, expired_at=mem("x", "").created_at + 2)
    store.insert_memory(mem("m3", "Bob lives in Osaka.", user="u2", session_id="s1"), vec(0, 0, 1, 0))
    heads = store.memory_heads("u1", ["m2", "m1", "m3", "missing"])
    assert sorted((h.id, h.text, h.session_id) for h in heads.values()) == [
        ("m1", "I live in Lisbon.", "s1"), ("m2", "I lived in Porto.", None),
    ]
    assert set(heads) == {"m1", "m2"}  # another user's memory and an unknown id are left out
    assert store.memory_heads("u2", []) == {}


def test_hits_carry_their_whole_records_when_the_head_is_wider(api: httpx.Client, user: str) -> None:
    """The default recipe weighs a head of 30 and returns 2: both come back with every field."""
    before = time.time()
    kept = [
        add(api, user, f"Ana grows tomatoes in bed {i}.", tags=[f"bed-{i}"], metadata={"source": "garden-log", "n": i},
            session_id="garden")
        for i in range(5)
    ]
    body = search(api, user, "Ana grows tomatoes", top_k=2)
    assert body["total"] == 2
    by_id = {k["id"]: i for i, k in enumerate(kept)}
    for hit in body["results"]:
        i = by_id[hit["id"]]
        assert hit["content"] == f"Ana grows tomatoes in bed {i}."
        assert hit["tags"] == [f"bed-{i}"]
        assert hit["source"] == "garden-log"
        assert hit["categories"] == [] and hit["memory_type"] == "semantic"
        assert before - 1 <= datetime.fromisoformat(hit["created_at"]).timestamp() <= time.time() + 1


@pytest.fixture()
def cross_encoder() -> Iterator[ScriptedOpenAI]:
    """A rerank API (TEI's dialect) that scores a text by its length: the longest first."""
    with ScriptedOpenAI() as scripted:
        def by_length(request: RecordedRequest) -> Reply:
            return Reply(body=[{"index": i, "score": float(len(t))} for i, t in enumerate(request.body["texts"])])
        scripted.handle("/rerank", by_length)
        yield scripted


def test_the_cross_encoder_reorders_the_head_and_the_hits_are_whole(
    backend: str, cross_encoder: ScriptedOpenAI, user: str
) -> None:
    env = {"CORTADEL_RERANKER": "http", "CORTADEL_RERANKER_URL": cross_encoder.base_url}
    with running_server(env=env, database_url=database_for(backend)) as server, \
            httpx.Client(base_url=server.base_url, timeout=30) as api:
        texts = ["Ana bakes bread.", "On Sundays Ana bakes bread with her grandmother in the stone oven.",
                 "Ana sells bread at the market.", "Tom paints."]
        added = [add(api, user, t, tags=["kitchen"]) for t in texts]
        assert [a["event"] for a in added] == ["ADD"] * 4
        ids = {a["id"]: t for a, t in zip(added, texts, strict=True)}
        body = search(api, user, "Ana bakes bread", top_k=2, rerank="cross_encoder")
        (request,) = cross_encoder.requests_to("/rerank")
        assert request.body["query"] == "Ana bakes bread"
        assert sorted(request.body["texts"]) == sorted(texts)  # the fused head: the vector arm finds every one
        assert [ids[h["id"]] for h in body["results"]] == [texts[1], texts[2]]
        assert [h["attributes"]["rerank_score"] for h in body["results"]] == [float(len(texts[1])), float(len(texts[2]))]
        assert all(h["attributes"]["reranked"] is True and h["attributes"]["reranker"] == "http" for h in body["results"])
        assert all(h["tags"] == ["kitchen"] for h in body["results"])
