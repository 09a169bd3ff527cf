"""Over HTTP, on both backends: a question lends to its reply, and the asked-about person's own
lines come first, for memories added with the contract's fields only (an inferred episode)."""

from __future__ import annotations

import httpx
from test_api_memories import add, search

TURNS = (
    "Melanie: The kids loved the beach trip last weekend.",
    "Melanie: What motivated you to pursue counseling, Caroline?",
    "Caroline: My own journey and the support I got made a huge difference.",
    "Melanie: Counseling sounds like hard work.",
    "Caroline: I bought new running shoes.",
)


def test_the_reply_to_a_matching_question_comes_first(api: httpx.Client, user: str) -> None:
    ids = [add(api, user, text, metadata={"speaker": text.split(":")[0]})["id"] for text in TURNS]
    episode = api.get(f"/api/v1/memories/{ids[0]}", params={"user_id": user}).json()["session_id"]
    assert episode.startswith("episode-")
    assert all(api.get(f"/api/v1/memories/{i}", params={"user_id": user}).json()["session_id"] == episode for i in ids)

    results = search(api, user, "What motivated Caroline to pursue counseling?")["results"]
    asked, reply = ids[1], ids[2]
    assert [r["id"] for r in results][:2] == [reply, asked]
    assert results[0]["attributes"]["context_of"] == asked
    assert "context_of" not in results[1]["attributes"]
    # The reply was found by the arms too (the question is its context); the lent share adds to that.
    assert results[0]["attributes"]["arms"]["text"] == {"rank": 2}
    assert results[1]["attributes"]["arms"]["text"] == {"rank": 1}
    assert results[0]["attributes"]["fusion_score"] > results[1]["attributes"]["fusion_score"] > 1.0
    # rrf_score falls with the returned order (reference scale, k = 60).
    scores = [r["rrf_score"] for r in results]
    assert scores == sorted(scores, reverse=True) and scores[0] <= 3 / 61

    # The text recipe has neither stage: the question keeps its place.
    text_only = search(api, user, "What motivated Caroline to pursue counseling?", mode="text")["results"]
    assert [r["id"] for r in text_only][:2] == [asked, reply]
