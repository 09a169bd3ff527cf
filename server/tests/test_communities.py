"""Communities over HTTP: entities grouped by the facts that mention them together, two levels,
extractive summaries or an LLM's, refreshed only where the memories changed."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
from support.scripted_openai import Reply, ScriptedOpenAI

from cortadel_server.testing import database_for, running_server

USER = "communities-user"
BERLIN = ["Dana works at Acme in Berlin.", "Dana and Omar review the Acme budget.", "Omar lives in Berlin."]
VIENNA = ["Priya plays cello with Lena.", "Lena teaches Priya in Vienna.", "Vienna hosts the Mozart festival that Lena loves."]


def remember(base: str, texts: list[str]) -> list[str]:
    ids = [httpx.post(f"{base}/api/v1/memories", json={"user_id": USER, "text": t}, timeout=60).json()["id"] for t in texts]
    deadline = time.monotonic() + 30  # entities are linked by the enrichment job, in the background
    while any(httpx.get(f"{base}/api/v1/memories/{i}", params={"user_id": USER}).json()["extraction_status"] != "done"
              for i in ids):
        assert time.monotonic() < deadline, "enrichment did not finish"
        time.sleep(0.1)
    return ids


def communities(base: str, **params: Any) -> list[dict[str, Any]]:
    response = httpx.get(f"{base}/api/v1/communities", params={"user_id": USER, **params}, timeout=60)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["total"] == len(body["communities"])
    return list(body["communities"])


def test_entities_group_into_two_levels_with_extractive_summaries(tmp_path: Path, backend: str) -> None:
    with running_server(data=tmp_path / "c.db", database_url=database_for(backend)) as server:
        base = server.base_url
        assert communities(base) == []
        berlin = remember(base, BERLIN)
        vienna = remember(base, VIENNA)
        found = communities(base)
        # Entities are what the rules extractor finds (a sentence's first word is not taken for a name).
        assert [(c["level"], c["entities"], c["memory_ids"], c["title"], c["summarized_by"]) for c in found] == [
            (0, ["acme", "berlin", "omar"], berlin, "Acme, Berlin, Omar", "extractive"),
            (0, ["lena", "mozart"], [vienna[0], vienna[2]], "Lena, Mozart", "extractive"),
            (0, ["priya", "vienna"], [vienna[1], vienna[2]], "Priya, Vienna", "extractive"),
            (1, ["lena", "mozart", "priya", "vienna"], vienna, "Vienna, Lena, Mozart", "extractive"),
            (1, ["acme", "berlin", "omar"], berlin, "Acme, Berlin, Omar", "extractive"),
        ]
        # The summary: the facts that tie most of its entities together, newest first among equals.
        assert found[0]["summary"] == "Dana and Omar review the Acme budget. Dana works at Acme in Berlin. Omar lives in Berlin."
        assert found[1]["summary"] == "Vienna hosts the Mozart festival that Lena loves. Priya plays cello with Lena."
        # Two levels: each level-0 community has one parent, which lists it.
        berlin0, lena0, priya0, vienna1, berlin1 = (c["id"] for c in found)
        assert [c["parent_id"] for c in found] == [berlin1, vienna1, vienna1, None, None]
        assert [c["child_ids"] for c in found] == [[], [], [], [lena0, priya0], [berlin0]]
        assert communities(base, level=1) == found[3:]

        # A new fact changes only the communities it touches: the others keep their ids.
        remember(base, ["The team meets Omar at Acme every Monday."])
        again = {c["id"] for c in communities(base)}
        assert {lena0, priya0, vienna1} <= again
        assert berlin0 not in again

        bad = httpx.get(f"{base}/api/v1/communities", params={"user_id": USER, "level": 2})
        assert bad.status_code == 400 and "level" in bad.json()["errors"]


def test_an_llm_writes_the_summaries_and_only_changed_communities_are_rewritten(tmp_path: Path, backend: str) -> None:
    with ScriptedOpenAI() as api:
        written = iter(range(1, 100))
        api.handle("/v1/chat/completions", lambda request: Reply.chat(
            {"title": f"Group {next(written)}", "summary": "Written by the model."}))
        env = {"CORTADEL_LLM_URL": api.v1_url, "CORTADEL_LLM_MODEL": "writer-1"}
        with running_server(env, data=tmp_path / "c.db", database_url=database_for(backend)) as server:
            base = server.base_url
            remember(base, BERLIN)
            remember(base, VIENNA)
            first = {c["id"]: c for c in communities(base)}
            assert {(c["summarized_by"], c["summary"]) for c in first.values()} == {("writer-1", "Written by the model.")}
            # One request per distinct community: a level-1 community with one child shares its words.
            distinct = {i.partition("-")[2] for i in first}
            assert len(api.requests_to("/v1/chat/completions")) == len(distinct) == 4
            assert api.requests_to("/v1/chat/completions")[0].body["messages"][1]["content"].startswith("- ")
            assert communities(base) == list(first.values())
            assert len(api.requests_to("/v1/chat/completions")) == 4  # nothing changed: nothing rewritten

            (moved,) = remember(base, ["Priya moved to Vienna last year."])
            second = {c["id"]: c for c in communities(base)}
            kept = set(first) & set(second)
            # Berlin (both levels) and Lena/Mozart do not mention the new fact: they keep ids and words.
            assert sorted(first[i]["entities"][0] for i in kept) == ["acme", "acme", "lena"]
            assert all(moved in c["memory_ids"] for i, c in second.items() if i not in kept)
            assert all(second[i]["title"] == first[i]["title"] for i in kept)
            new = {i.partition("-")[2] for i in second} - distinct
            assert len(api.requests_to("/v1/chat/completions")) == 4 + len(new) > 4  # only what changed
