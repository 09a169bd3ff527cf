"""Episodes for memories added without a session id (pipeline/episodes.py), over HTTP: what the
server infers, and that the session arm and the context column use it as an explicit session."""

from __future__ import annotations

import hashlib

import httpx
from test_api_memories import add, search

from cortadel_server.testing import running_server


def session_of(api: httpx.Client, user: str, memory_id: str) -> str | None:
    response = api.get(f"/api/v1/memories/{memory_id}", params={"user_id": user})
    assert response.status_code == 200, response.text
    return response.json()["session_id"]


def test_a_conversation_added_turn_by_turn_is_split_into_episodes_by_its_greetings(api: httpx.Client, user: str) -> None:
    turns = [
        "Caroline: Hey Mel! Good to see you! How have you been?",
        "Melanie: Hey Caroline! Good to see you! I'm swamped with the kids and work.",
        "Caroline: I went to a support group for adoption yesterday.",
        "Melanie: That sounds helpful. Talk to you soon, bye!",
        "Caroline: Bye Mel, take care!",
        "Caroline: I signed up for a pottery class on Tuesdays.",   # after the farewells: a new episode
        "Melanie: Pottery sounds relaxing!",
        "Melanie: Hey Caroline, since we last chatted I ran a charity race.",  # a greeting: new again
        "Caroline: That charity race sounds great, Mel!",
    ]
    ids = [add(api, user, text)["id"] for text in turns]
    sessions = [session_of(api, user, memory_id) for memory_id in ids]
    assert all(s is not None and s.startswith("episode-") and len(s) == len("episode-") + 32 for s in sessions)
    first, second, third = sessions[0], sessions[5], sessions[7]
    assert sessions == [first] * 5 + [second] * 2 + [third] * 2
    assert len({first, second, third}) == 3


def test_an_inferred_episode_feeds_the_context_column_and_the_session_arm(api: httpx.Client, user: str) -> None:
    asked = add(api, user, "Melanie: Where did you go for the pottery workshop?")["id"]
    answer = add(api, user, "Caroline: Lisbon! The tiles there were lovely.")["id"]
    later = add(api, user, "Caroline: We also bought a blue teapot.")["id"]
    add(api, user, "Caroline: Hi Mel! Long time no talk. My cat knocked over a vase.")
    text = search(api, user, "pottery workshop", mode="text")["results"]
    # The reply is found through the question written before it in its episode.
    assert [(r["id"], r["text_rank"]) for r in text] == [(asked, 1), (answer, 2)]
    hybrid = search(api, user, "pottery workshop")["results"]
    # The question and its reply lead (which of the two first depends on BM25's IDF, which counts
    # every user's rows in the file); the rest of the episode follows through the session arm.
    assert {r["id"] for r in hybrid[:2]} == {asked, answer} and hybrid[2]["id"] == later
    assert hybrid[2]["attributes"]["arms"]["session"] == {"rank": 1}
    assert "text" not in hybrid[2]["attributes"]["arms"]


def test_an_explicit_session_id_always_wins_and_is_never_continued(api: httpx.Client, user: str) -> None:
    named = add(api, user, "Tomatoes go by the south wall.", session_id="garden")["id"]
    after = add(api, user, "The shed needs a new roof.")["id"]
    again = add(api, user, "Hey! Long time no see. Basil goes by the door.", session_id="garden")["id"]
    assert session_of(api, user, named) == "garden"
    assert session_of(api, user, again) == "garden"
    assert session_of(api, user, after).startswith("episode-")


def test_a_thread_or_run_id_in_metadata_is_the_episode(api: httpx.Client, user: str) -> None:
    one = add(api, user, "Hey there, the deploy is on Friday.", metadata={"thread_id": "thread-7"})["id"]
    two = add(api, user, "Hello again, rollback plan is ready.", metadata={"threadId": "thread-7"})["id"]
    run = add(api, user, "The nightly job failed at step 3.", metadata={"run_id": 42})["id"]
    other = add(api, user, "Unrelated note about lunch.", metadata={"source": "chat"})["id"]
    assert [session_of(api, user, m) for m in (one, two, run)] == ["thread-7", "thread-7", "42"]
    assert session_of(api, user, other).startswith("episode-")
    scoped = search(api, user, "deploy rollback", session_id="thread-7", mode="text")["results"]
    assert sorted(r["id"] for r in scoped) == sorted([one, two])


def test_statement_time_and_the_app_separate_episodes(api: httpx.Client, user: str) -> None:
    first = add(api, user, "We booked the cabin.", timestamp="2023-05-08T13:56:00Z")["id"]
    close = add(api, user, "The cabin has a wood stove.", timestamp="2023-05-08T14:20:00Z")["id"]
    other_app = add(api, user, "The cabin wifi is slow.", timestamp="2023-05-08T14:21:00Z", app="notes")["id"]
    back = add(api, user, "We packed the canoe.", timestamp="2023-05-08T14:25:00Z")["id"]
    weeks_later = add(api, user, "The cabin trip photos are printed.", timestamp="2023-05-25T10:00:00Z")["id"]
    sessions = [session_of(api, user, m) for m in (first, close, other_app, back, weeks_later)]
    assert sessions[0] == sessions[1] == sessions[3]  # 24 and 5 minutes apart; the other app's note in between
    assert sessions[2] != sessions[0] and sessions[2].startswith("episode-")
    assert sessions[4] != sessions[0] and sessions[4].startswith("episode-")


def test_the_gap_setting_ends_episodes() -> None:
    with running_server(env={"CORTADEL_EPISODE_GAP": "60"}) as server, httpx.Client(base_url=server.base_url, timeout=30) as api:
        a = add(api, "gap-user", "We booked the cabin.", timestamp="2023-05-08T13:56:00Z")["id"]
        b = add(api, "gap-user", "The cabin has a wood stove.", timestamp="2023-05-08T13:56:50Z")["id"]
        c = add(api, "gap-user", "We packed the canoe.", timestamp="2023-05-08T13:58:00Z")["id"]
        sessions = [session_of(api, "gap-user", m) for m in (a, b, c)]
    assert sessions[0] == sessions[1] != sessions[2]


def test_an_inferred_episode_holds_at_most_fifty_memories(api: httpx.Client, user: str) -> None:
    # One batch: 51 memories written together, without a session, a bulk import's shape.
    memories = [{"text": f"Inventory {i}: crate {hashlib.sha1(str(i).encode()).hexdigest()[:10]} holds {i} bolts.", "infer": False}
                for i in range(51)]
    response = api.post("/api/v1/memories/batch", json={"user_id": user, "memories": memories})
    assert response.status_code == 200, response.text
    assert {item["event"] for item in response.json()["memories"]} == {"ADD"}
    ids = [item["id"] for item in response.json()["memories"]]
    assert len(set(ids)) == 51
    sessions = [session_of(api, user, memory_id) for memory_id in (ids[0], ids[49], ids[50])]
    assert sessions[0] == sessions[1] != sessions[2]
    assert sessions[2].startswith("episode-")


def test_a_batch_that_forgets_what_it_wrote_continues_from_what_is_left(api: httpx.Client, user: str) -> None:
    # A batch remembers what its items wrote (pipeline/episodes.py Written); after a deletion inside
    # it, the next memory follows the last one left (no farewell), not the deleted farewell.
    memories = [
        {"text": "Crate 1 holds 2 screws.", "infer": False},
        {"text": "Bob says bye, talk soon.", "infer": False},
        {"text": "Forget everything about Bob.", "infer": False},
        {"text": "Crate 9 holds 4 washers.", "infer": False},
    ]
    response = api.post("/api/v1/memories/batch", json={"user_id": user, "memories": memories})
    assert response.status_code == 200, response.text
    items = response.json()["memories"]
    assert [item["event"] for item in items] == ["ADD", "ADD", "DELETE_ENTITY", "ADD"]
    assert items[2]["id"] == items[1]["id"]
    assert api.get(f"/api/v1/memories/{items[1]['id']}", params={"user_id": user}).status_code == 404
    kept, after = session_of(api, user, items[0]["id"]), session_of(api, user, items[3]["id"])
    assert kept is not None and kept.startswith("episode-")
    assert after == kept
