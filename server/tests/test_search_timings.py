"""A search's phase timings (``attributes.timings_ms``) are each phase apart: the query's embedding
is not counted again in the arm that first asked for it, and reading the fused head's records is a
phase of its own (``records_ms``), not part of fusion."""

from __future__ import annotations

import dataclasses
import time

import httpx
from support.scripted_openai import RecordedRequest, Reply, ScriptedOpenAI, embedding_inputs, hashed_embeddings

from cortadel_server.testing import database_for, running_server

EMBEDDINGS = "/v1/embeddings"
#: how long the scripted embedder takes to answer the search's query: far above any arm's own work here
QUERY_EMBEDDING_SECONDS = 0.3
QUERY = "Which shed holds the bike?"


def _embed(request: RecordedRequest) -> Reply:
    reply = hashed_embeddings(request)
    return dataclasses.replace(reply, delay=QUERY_EMBEDDING_SECONDS) if embedding_inputs(request) == [QUERY] else reply


def test_each_phase_is_timed_apart(backend: str) -> None:
    with ScriptedOpenAI() as embedder:
        embedder.handle(EMBEDDINGS, _embed)
        env = {"CORTADEL_EMBEDDER": "openai", "CORTADEL_EMBEDDER_URL": embedder.v1_url, "CORTADEL_EMBEDDER_MODEL": "scripted"}
        with running_server(env=env, database_url=database_for(backend)) as server, \
                httpx.Client(base_url=server.base_url, timeout=30) as api:
            for text in ("Alice keeps her bike in the blue shed.", "The spare key is under the red pot."):
                added = api.post("/api/v1/memories", json={"user_id": "ann", "text": text, "infer": False})
                assert added.json()["event"] == "ADD", added.text
            started = time.perf_counter()
            response = api.post("/api/v1/memories/search", json={"user_id": "ann", "query": QUERY, "top_k": 5})
            wall_ms = (time.perf_counter() - started) * 1000
    assert response.status_code == 200, response.text
    results = response.json()["results"]
    assert results[0]["content"] == "Alice keeps her bike in the blue shed."
    timings = results[0]["attributes"]["timings_ms"]
    assert list(timings) == ["text_ms", "embed_ms", "vector_ms", "session_ms", "fusion_ms", "records_ms"]
    assert QUERY_EMBEDDING_SECONDS * 1000 <= timings["embed_ms"] < wall_ms
    # the vector arm asked for the embedding; its own work is a scan of two vectors
    assert 0 <= timings["vector_ms"] < QUERY_EMBEDDING_SECONDS * 1000 / 2
    assert all(0 <= ms < QUERY_EMBEDDING_SECONDS * 1000 / 2 for phase, ms in timings.items() if phase != "embed_ms")
    # phases apart add up to no more than the request took
    assert sum(timings.values()) < wall_ms
