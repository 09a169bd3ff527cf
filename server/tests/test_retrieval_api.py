"""Retrieval over HTTP: the session arm switch, explainable attributes, the reply to a question."""

from __future__ import annotations

import httpx
from test_api_memories import add, search


def test_include_session_arm_expands_to_the_sessions_members(api: httpx.Client, user: str) -> None:
    tomatoes = add(api, user, "Tomatoes go by the south wall.", session_id="garden")["id"]
    plan = add(api, user, "Let's plan the garden this spring.", session_id="garden")["id"]
    add(api, user, "The car needs new tyres.", session_id="car")
    plain = search(api, user, "garden", mode="text")
    assert [r["id"] for r in plain["results"]] == [plan]
    expanded = search(api, user, "garden", mode="text", include_session_arm=True)
    assert [r["id"] for r in expanded["results"]] == [plan, tomatoes]
    assert expanded["results"][1]["attributes"]["arms"] == {"session": {"rank": 1}}
    assert expanded["results"][1]["text_rank"] is None


def test_default_search_explains_each_hit_and_finds_the_reply(api: httpx.Client, user: str) -> None:
    asked = add(api, user, "Melanie: Where did you go for the pottery workshop?", session_id="s1")["id"]
    answer = add(api, user, "Caroline: Lisbon! The tiles there were lovely.", session_id="s1")["id"]
    add(api, user, "Caroline: My cat knocked over a vase.", session_id="s2")
    body = search(api, user, "pottery workshop")
    results = body["results"]
    # The question and its reply lead; which of the two first depends on BM25's IDF, which counts
    # every user's rows in the file (the reply also takes a share of the question's score).
    assert {r["id"] for r in results[:2]} == {asked, answer}
    question, reply = (next(r for r in results if r["id"] == i) for i in (asked, answer))
    assert question["text_rank"] == 1
    assert question["attributes"]["arms"]["text"] == {"rank": 1}
    assert question["attributes"]["arms"]["session"] == {"rank": 1}
    assert reply["text_rank"] == 2          # through the question before it (context column)
    # Ranked by score; when the reply leads, its share of the question's score can tie it.
    assert results[0]["rrf_score"] >= results[1]["rrf_score"] > results[2]["rrf_score"] > 0
    off = search(api, user, "pottery workshop", include_session_arm=False)
    assert "session" not in off["results"][0]["attributes"]["arms"]


def test_the_deep_recipe_adds_the_time_arm(api: httpx.Client, user: str) -> None:
    concert = add(api, user, "I went to a Radiohead concert.", timestamp="2023-05-20T20:00:00Z", infer=False)["id"]
    add(api, user, "I went to a jazz concert.", timestamp="2024-02-10T20:00:00Z", infer=False)
    deep = search(api, user, "Which concert did I go to in May 2023?", mode="deep")
    assert deep["results"][0]["id"] == concert
    assert deep["results"][0]["attributes"]["arms"]["time"] == {"rank": 1}
    plain = search(api, user, "Which concert did I go to in May 2023?")
    assert all("time" not in r["attributes"]["arms"] for r in plain["results"])
