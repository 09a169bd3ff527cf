"""The dashboard over HTTP against a real server: each page shows the exact stored data, stored HTML
stays text, curating forms change what the REST API reports, bad input is a clear 4xx page, and a
user's key sees that user only. (The real-browser suite is server/browser_tests.)"""

from __future__ import annotations

import math
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from html import unescape
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.scripted_openai import RecordedRequest, Reply, ScriptedOpenAI, hashed_embeddings

from cortadel_server.storage.sqlite import SqliteStorage
from cortadel_server.testing import ServerProcess, running_server

SECRET = "dashboard-test-secret"
ADMIN = "dashboard-admin-credential"


def visible(html: str) -> str:
    """The page's text as a reader sees it: tags dropped, entities decoded, whitespace collapsed."""
    body = re.sub(r"<(head|script|style)\b.*?</\1>", " ", html, flags=re.DOTALL)
    body = re.sub(r"</?(strong|em|code|a|time)\b[^>]*>", "", body)  # inline: no word break
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", body))).strip()


def shown(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def add(api: httpx.Client, user: str, text: str, **fields: Any) -> dict[str, Any]:
    response = api.post("/api/v1/memories", json={"user_id": user, "text": text, "infer": False, **fields})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def csrf(client: httpx.Client) -> str:
    """The form token: any dashboard page sets its cookie."""
    if "cortadel_csrf" not in client.cookies:
        assert client.get("/ui/login").status_code == 200
    token = client.cookies.get("cortadel_csrf")
    assert token
    return token


def error_of(html: str) -> str:
    match = re.search(r'<p class="message">(.*?)</p>', html, re.DOTALL)
    assert match, html
    return unescape(match.group(1))


@pytest.fixture()
def browser(server: ServerProcess) -> Iterator[httpx.Client]:
    """A client that keeps cookies and does not follow redirects, as a form test needs."""
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        yield client


# -- open server ----------------------------------------------------------------------------------
def test_the_root_and_the_dashboard_entry_redirect_to_the_users_page(browser: httpx.Client) -> None:
    root = browser.get("/")
    assert (root.status_code, root.headers["location"]) == (303, "/ui/")
    entry = browser.get("/ui/")
    assert (entry.status_code, entry.headers["location"]) == (303, "/ui/users")


def test_the_memories_page_lists_each_fact_with_both_time_axes(api: httpx.Client, browser: httpx.Client, user: str) -> None:
    first = add(api, user, "User drinks oat milk.", app="barista", project="kitchen", tags=["food"], session_id="s-1",
                timestamp="2026-03-01T08:00:00Z")
    add(api, user, "User cycles to work.", tags=["commute"])
    page = browser.get("/ui/memories", params={"user_id": user})
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    text = visible(page.text)
    assert "Memories of " + user in text
    assert "2 memories" in text
    # newest first
    assert text.index("User cycles to work.") < text.index("User drinks oat milk.")
    recorded = api.get(f"/api/v1/memories/{first['id']}", params={"user_id": user}).json()["created_at"]
    assert abs(recorded - time.time()) < 120
    assert (f"User drinks oat milk. active semantic app barista project kitchen session s-1 #food "
            f"true 2026-03-01 08:00:00 UTC → now recorded {shown(recorded)}") in text

    tagged = visible(browser.get("/ui/memories", params={"user_id": user, "tag": "commute"}).text)
    assert "1 memory" in tagged
    assert "User cycles to work." in tagged and "oat milk" not in tagged
    by_app = visible(browser.get("/ui/memories", params={"user_id": user, "app": "barista", "session_id": "s-1"}).text)
    assert "1 memory" in by_app and "User drinks oat milk." in by_app
    by_text = visible(browser.get("/ui/memories", params={"user_id": user, "q": "bicycle commute cycles"}).text)
    assert "2 memories, the 1,000 most relevant first, then the rest newest first" in by_text
    assert by_text.index("User cycles to work.") < by_text.index("User drinks oat milk.")


def test_the_text_filter_is_the_apis_listing_with_the_true_total_on_every_page(
    api: httpx.Client, browser: httpx.Client, user: str
) -> None:
    """More matches than the page used to rank (200): the count is every memory, and paging walks
    them all, each once, in the order the API's search_query listing gives."""
    gardens = [f"{who} grows {crop} in a garden in {city}." for who in ("User", "User's sister", "User's son") for city in (
        "Lisbon", "Berlin", "Kyoto", "Oslo", "Lima", "Cairo", "Dublin", "Austin", "Boston", "Denver", "Madrid", "Rome",
        "Vienna", "Prague", "Warsaw", "Athens", "Nairobi", "Sydney", "Perth", "Toronto", "Montreal", "Seattle", "Chicago",
    ) for crop in ("tomatoes", "carrots", "leeks", "beans", "onions", "peppers", "squash", "kale", "beets", "radishes")]
    others = ["User practises piano scales every evening.", "User renewed a passport at the embassy."]
    batch = api.post("/api/v1/memories/batch", json={"user_id": user, "memories": [
        {"text": t, "infer": False} for t in [*gardens, *others]]}, timeout=180)  # 692 facts on a shared machine
    assert batch.status_code == 200, batch.text
    stored = {m["id"]: m["content"] for m in batch.json()["memories"] if m["event"] == "ADD"}  # near-duplicates are skipped
    assert len(stored) > 200 and set(others) <= set(stored.values())
    total, pages = len(stored), math.ceil(len(stored) / 100)
    shown_ids: list[str] = []
    for number in range(1, pages + 1):
        page = browser.get("/ui/memories", params={"user_id": user, "q": "garden tomatoes", "size": "100", "page": str(number)})
        assert page.status_code == 200
        assert (f"{total} memories, the 1,000 most relevant first, then the rest newest first · page {number} of {pages}"
                in visible(page.text))
        shown_ids += re.findall(r'href="/ui/memory\?user_id=[^&]+&amp;id=([0-9a-f-]{36})"', page.text)
    assert len(shown_ids) == len(set(shown_ids)) == total
    assert set(shown_ids) == set(stored)
    listed = [api.get("/api/v1/memories", params={"user_id": user, "search_query": "garden tomatoes", "size": 100,
                                                  "page": n}).json() for n in range(1, pages + 1)]
    assert {body["total"] for body in listed} == {total}
    assert shown_ids == [m["id"] for body in listed for m in body["items"]]
    # relevance first: the first page is garden facts, the tomato growers at its top
    assert all(" in a garden in " in stored[i] for i in shown_ids[:100])
    assert all(" grows tomatoes " in stored[i] for i in shown_ids[:5])


def test_the_state_filter_lists_one_state_at_a_time(api: httpx.Client, browser: httpx.Client, user: str) -> None:
    old = add(api, user, "User works at Initech.")
    revised = browser.post("/ui/memory/edit", data={"user_id": user, "id": old["id"], "text": "User works at Globex.",
                                                    "csrf_token": csrf(browser)})
    assert revised.status_code == 303
    ended = add(api, user, "User is on holiday.")
    assert browser.post("/ui/memory/invalidate", data={"user_id": user, "id": ended["id"], "csrf_token": csrf(browser)}).status_code == 303
    add(api, user, "User speaks Danish.")

    def listed(state: str | None) -> list[str]:
        page = browser.get("/ui/memories", params={"user_id": user, **({"state": state} if state else {})})
        assert page.status_code == 200
        return re.findall(r'<a class="text" href="[^"]+">([^<]+)</a>', page.text)

    current = ["User speaks Danish.", "User works at Globex."]
    assert listed(None) == listed("current") == listed("active") == current
    assert listed("superseded") == ["User works at Initech."]
    assert listed("invalidated") == ["User is on holiday."]
    assert listed("resolved") == []
    assert listed("all") == ["User speaks Danish.", "User is on holiday.", "User works at Globex.", "User works at Initech."]
    page = browser.get("/ui/memories", params={"user_id": user, "state": "superseded"}).text
    assert "1 memory" in visible(page)
    assert '<option value="superseded" selected>only superseded</option>' in page
    assert '<option value="current" >current facts</option>' in page


def test_point_in_time_shows_what_was_true_and_what_was_believed(api: httpx.Client, browser: httpx.Client, user: str) -> None:
    add(api, user, "User lives in Lisbon.", timestamp="2025-01-01T00:00:00Z")
    before_any = visible(browser.get("/ui/memories", params={"user_id": user, "as_of": "2024-06-01T00:00:00Z"}).text)
    assert "0 memories" in before_any and "No memories match." in before_any
    then = visible(browser.get("/ui/memories", params={"user_id": user, "as_of": "2025-06-01T00:00:00Z"}).text)
    assert "1 memory" in then and "User lives in Lisbon." in then
    known_before = visible(browser.get("/ui/memories", params={"user_id": user, "known_at": "2020-01-01T00:00:00Z"}).text)
    assert "0 memories" in known_before


def test_stored_html_is_shown_as_text_and_never_run(api: httpx.Client, browser: httpx.Client, user: str) -> None:
    stored = add(api, user, 'Note <script>alert("pwned")</script> <img src=x onerror=alert(1)>')
    for path, params in (("/ui/memories", {"user_id": user}), ("/ui/memory", {"user_id": user, "id": stored["id"]}),
                         ("/ui/search", {"user_id": user, "q": "Note pwned"})):
        page = browser.get(path, params=params)
        assert page.status_code == 200
        assert '<script>alert("pwned")' not in page.text and "<img src=x" not in page.text
        assert "&lt;script&gt;alert(&#34;pwned&#34;)&lt;/script&gt; &lt;img src=x onerror=alert(1)&gt;" in page.text
        assert page.headers["content-security-policy"].startswith("default-src 'none'; style-src 'self'; script-src 'self'")


def test_a_fact_page_shows_its_properties_provenance_and_history(api: httpx.Client, browser: httpx.Client, user: str) -> None:
    conversation = api.post("/api/v1/memories/from-conversation", json={
        "user_id": user, "session_id": "s-9", "project": "travel",
        "messages": [{"role": "user", "content": "I am allergic to peanuts.", "uuid": "turn-1"}],
    })
    assert conversation.status_code == 200, conversation.text
    memory_id = conversation.json()["results"][0]["id"]
    record = api.get(f"/api/v1/memories/{memory_id}", params={"user_id": user}).json()
    text = visible(browser.get("/ui/memory", params={"user_id": user, "id": memory_id}).text)
    assert f"A fact {record['text']}" in text
    assert f"State active Gist {record['gist'] or '—'} Type {record['memory_type']}" in text
    assert "App · project · session — · travel · s-9" in text
    assert f"Id {memory_id}" in text
    assert f"Recorded {shown(record['created_at'])} Believed until still believed" in text
    assert "Source turns turn-1" in text
    assert "History When (recorded) Event Detail" in text and " ADD source conversation" in text


def test_editing_stores_a_new_version_and_keeps_the_old_one(api: httpx.Client, browser: httpx.Client, user: str) -> None:
    old = add(api, user, "User works at Initech.")
    edited = browser.post("/ui/memory/edit", data={"user_id": user, "id": old["id"], "text": "User works at Globex.",
                                                   "csrf_token": csrf(browser)})
    assert edited.status_code == 303
    new_id = re.fullmatch(rf"/ui/memory\?user_id={re.escape(user)}&id=([0-9a-f-]{{36}})&done=edited", edited.headers["location"])
    assert new_id, edited.headers["location"]
    new = api.get(f"/api/v1/memories/{new_id.group(1)}", params={"user_id": user}).json()
    before = api.get(f"/api/v1/memories/{old['id']}", params={"user_id": user}).json()
    assert (new["text"], new["state"], new["is_current"]) == ("User works at Globex.", "active", True)
    assert (before["text"], before["state"], before["superseded_by"], before["is_current"]) == (
        "User works at Initech.", "superseded", new["id"], False)
    history = api.get(f"/api/v1/memories/{old['id']}/history", params={"user_id": user}).json()["events"]
    assert history[-1]["event"] == "SUPERSEDE"
    assert history[-1]["detail"] == {"superseded_by": new["id"], "statement": "User works at Globex.", "source": "dashboard"}
    current = api.get("/api/v1/memories", params={"user_id": user}).json()
    assert [m["content"] for m in current["items"]] == ["User works at Globex."]

    page = browser.get(edited.headers["location"])
    text = visible(page.text)
    assert "Saved as a new version; the old one is kept in the history." in text
    timeline = text[text.index("Versions"):text.index("History When")]
    assert timeline.index("User works at Initech. superseded") < timeline.index("This version active User works at Globex.")
    # an old version cannot be edited again: the page offers no form, and a forged post is refused
    again = browser.post("/ui/memory/edit", data={"user_id": user, "id": old["id"], "text": "User works at Hooli.",
                                                  "csrf_token": csrf(browser)})
    assert again.status_code == 400
    assert error_of(again.text) == "text: Only a current fact can be edited; this one is superseded"


def test_invalidating_ends_the_fact_at_the_given_time(api: httpx.Client, browser: httpx.Client, user: str) -> None:
    fact = add(api, user, "User is on holiday.", timestamp="2026-01-01T00:00:00Z")
    done = browser.post("/ui/memory/invalidate", data={"user_id": user, "id": fact["id"], "invalid_since": "2026-02-01T00:00:00Z",
                                                        "csrf_token": csrf(browser)})
    assert (done.status_code, done.headers["location"]) == (303, f"/ui/memory?user_id={user}&id={fact['id']}&done=invalidated")
    record = api.get(f"/api/v1/memories/{fact['id']}", params={"user_id": user}).json()
    assert (record["state"], record["invalid_at"], record["is_current"]) == ("invalidated", "2026-02-01T00:00:00.000Z", False)
    text = visible(browser.get(done.headers["location"]).text)
    assert "Marked as no longer true." in text and "True until 2026-02-01 00:00:00 UTC" in text


def test_deleting_needs_confirmation_then_purges_as_the_api_does(api: httpx.Client, browser: httpx.Client, user: str) -> None:
    fact = add(api, user, "User's locker code is 4711.")
    confirm_page = visible(browser.get("/ui/memory/delete", params={"user_id": user, "id": fact["id"]}).text)
    assert "Delete a fact User's locker code is 4711." in confirm_page
    unconfirmed = browser.post("/ui/memory/delete", data={"user_id": user, "id": fact["id"], "csrf_token": csrf(browser)})
    assert unconfirmed.status_code == 400
    assert error_of(unconfirmed.text) == "confirm: Tick the box to confirm the deletion"
    assert api.get(f"/api/v1/memories/{fact['id']}", params={"user_id": user}).status_code == 200
    deleted = browser.post("/ui/memory/delete", data={"user_id": user, "id": fact["id"], "confirm": "yes", "csrf_token": csrf(browser)})
    assert (deleted.status_code, deleted.headers["location"]) == (303, f"/ui/memories?user_id={user}&done=deleted")
    gone = api.get(f"/api/v1/memories/{fact['id']}", params={"user_id": user})
    assert (gone.status_code, gone.json()["message"]) == (404, f"Memory {fact['id']} not found")
    assert "Deleted for good." in visible(browser.get(deleted.headers["location"]).text)


def test_a_form_from_another_site_is_refused(api: httpx.Client, browser: httpx.Client, user: str) -> None:
    fact = add(api, user, "User prefers tea.")
    for token in ("", "forged"):
        browser.cookies.clear()
        browser.get("/ui/login")
        refused = browser.post("/ui/memory/delete", data={"user_id": user, "id": fact["id"], "confirm": "yes", "csrf_token": token})
        assert refused.status_code == 403
        assert error_of(refused.text) == "The form expired or came from another site: reload the page and send it again"
    assert api.get(f"/api/v1/memories/{fact['id']}", params={"user_id": user}).json()["state"] == "active"


@pytest.mark.parametrize(("path", "params", "message"), [
    ("/ui/memories", {"page": "0"}, "page: Must be a whole number from 1 to 4000"),
    ("/ui/memories", {"as_of": "last tuesday"}, "as_of: Not an ISO 8601 date-time or Unix seconds"),
    ("/ui/memories", {"state": "deleted"}, "state: Must be one of current, active, superseded, invalidated, resolved, all"),
    ("/ui/memories", {"memory_type": "dream"}, "memory_type: Must be one of episodic, semantic, procedural"),
    ("/ui/search", {"q": "x", "top_k": "51"}, "top_k: Must be a whole number from 1 to 50"),
    ("/ui/search", {"q": "x", "mode": "magic"}, "mode: Must be one of hybrid, text, vector, deep"),
    ("/ui/search", {"q": "x", "known_at": "3000-01-01T00:00:00Z"},
     "known_at: Must be an instant between 1900-01-01 and 2999-12-31 (ISO 8601 or Unix seconds)"),
])
def test_bad_query_input_is_a_400_page_naming_the_field(
    browser: httpx.Client, user: str, path: str, params: dict[str, str], message: str
) -> None:
    page = browser.get(path, params={"user_id": user, **params})
    assert page.status_code == 400
    assert error_of(page.text) == message
    assert "400 · validation_error" in visible(page.text)


def test_bad_form_input_is_a_400_page_and_changes_nothing(api: httpx.Client, browser: httpx.Client, user: str) -> None:
    fact = add(api, user, "User has a cat.", timestamp="2026-01-10T00:00:00Z")
    token = csrf(browser)
    cases = [
        ("/ui/memory/invalidate", {"invalid_since": "soon"}, 400, "invalid_since: Not an ISO 8601 date-time or Unix seconds"),
        ("/ui/memory/invalidate", {"invalid_since": "2026-01-01T00:00:00Z"}, 400, "invalid_since: Must not be before the fact became true"),
        ("/ui/memory/edit", {"text": "   "}, 400, "text: This field is required"),
        ("/ui/memory/edit", {"text": "x" * 50_001}, 400, "text: At most 50000 characters"),
        ("/ui/memory/edit", {}, 400, "text: This field is required"),
    ]
    for path, fields, status, message in cases:
        refused = browser.post(path, data={"user_id": user, "id": fact["id"], "csrf_token": token, **fields})
        assert (refused.status_code, error_of(refused.text)) == (status, message), (path, fields)
    missing = browser.post("/ui/memory/edit", data={"user_id": user, "id": "not-a-uuid", "text": "y", "csrf_token": token})
    assert (missing.status_code, error_of(missing.text)) == (404, "Memory not-a-uuid not found")
    assert api.get(f"/api/v1/memories/{fact['id']}", params={"user_id": user}).json()["state"] == "active"


@pytest.mark.parametrize(("page_params", "api_call"), [
    ({"as_of": "last tuesday"}, ("GET", "/api/v1/memories", {"as_of": "last tuesday"})),
    ({"known_at": "3000-01-01T00:00:00Z"}, ("GET", "/api/v1/memories", {"known_at": "3000-01-01T00:00:00Z"})),
])
def test_a_bad_filter_gets_the_apis_status_and_message(
    api: httpx.Client, browser: httpx.Client, user: str, page_params: dict[str, str], api_call: tuple[str, str, dict[str, str]]
) -> None:
    method, path, params = api_call
    answer = api.request(method, path, params={"user_id": user, **params})
    page = browser.get("/ui/memories", params={"user_id": user, **page_params})
    body = answer.json()
    assert (page.status_code, answer.status_code) == (400, 400)
    shown = visible(page.text)
    assert f"{body['status']} · {body['code']}" in shown
    assert [f"{field}: {reason}" for field, reasons in body["errors"].items() for reason in reasons] == [error_of(page.text)]


class Controls(HTMLParser):
    """Every form control of a page, and the ids its <label for> elements name."""

    def __init__(self) -> None:
        super().__init__()
        self.controls: list[dict[str, str | None]] = []
        self.labelled: set[str] = set()
        self._button: dict[str, str | None] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "label" and found.get("for"):
            self.labelled.add(str(found["for"]))
        elif tag in ("input", "select", "textarea") and found.get("type") != "hidden":
            self.controls.append({"tag": tag, **found})
        elif tag == "button":
            self._button = {"tag": tag, **found, "text": ""}
            self.controls.append(self._button)

    def handle_data(self, data: str) -> None:
        if self._button is not None:
            self._button["text"] = (self._button["text"] or "") + data

    def handle_endtag(self, tag: str) -> None:
        if tag == "button":
            self._button = None

    def unlabelled(self) -> list[str]:
        return [str(c.get("name") or c["tag"]) for c in self.controls
                if not (c.get("aria-label") or (c["tag"] == "button" and (c.get("text") or "").strip())
                        or (c.get("id") and c["id"] in self.labelled))]


def test_every_control_on_every_page_has_a_label(api: httpx.Client, browser: httpx.Client, user: str) -> None:
    fact = add(api, user, "User likes jazz.")
    pages = [("/ui/login", {}), ("/ui/users", {}), ("/ui/system", {}), ("/ui/memories", {"user_id": user}),
             ("/ui/memory", {"user_id": user, "id": fact["id"]}), ("/ui/memory/delete", {"user_id": user, "id": fact["id"]}),
             ("/ui/search", {"user_id": user, "q": "jazz"}), ("/ui/entities", {"user_id": user}),
             ("/ui/memories", {"user_id": user, "page": "0"})]
    counted = 0
    for path, params in pages:
        page = browser.get(path, params=params)
        assert page.status_code in (200, 400), path
        parsed = Controls()
        parsed.feed(page.text)
        assert parsed.unlabelled() == [], path
        counted += len(parsed.controls)
    assert counted >= 30  # the pages have their controls: a page that lost its form fails above, not here


def test_the_search_lab_shows_each_hits_arms_ranks_and_timings(api: httpx.Client, browser: httpx.Client, user: str) -> None:
    # two sessions: facts of one session lend each other context, and this is about one fact's own evidence
    add(api, user, "User plays the cello in an orchestra.", session_id="rehearsal")
    add(api, user, "User dislikes early mornings.", session_id="breakfast")
    page = browser.get("/ui/search", params={"user_id": user, "q": "cello orchestra", "mode": "text", "top_k": "5"})
    text = visible(page.text)
    assert "Recipe text: rrf fusion of text (weight 1.0)." in text
    assert "1 hit" in text
    assert "User plays the cello in an orchestra. Why hit 1 Arm Rank text 1 fused score" in text
    assert re.search(r"Timings \(ms\): text_ms \d+\.\d+ fusion_ms \d+\.\d+", text), text
    assert "dislikes" not in text
    hybrid = visible(browser.get("/ui/search", params={"user_id": user, "q": "cello orchestra"}).text)
    assert "Arm Rank text 1 vector 1" in hybrid


def test_the_users_page_counts_each_state(api: httpx.Client, browser: httpx.Client, user: str) -> None:
    old = add(api, user, "User owns a red bike.")
    browser.post("/ui/memory/edit", data={"user_id": user, "id": old["id"], "text": "User owns a blue bike.", "csrf_token": csrf(browser)})
    add(api, user, "User speaks Danish.")
    text = visible(browser.get("/ui/users").text)
    row = re.search(rf"{re.escape(user)} (\d+) (\d+) (\d+) (\d+) (\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d UTC)", text)
    assert row, text
    assert row.groups()[:4] == ("2", "1", "0", "0")
    last = datetime.strptime(row.group(5), "%Y-%m-%d %H:%M:%S UTC").replace(tzinfo=UTC).timestamp()
    assert abs(last - time.time()) < 120


def test_the_system_page_shows_health_embedder_and_storage(api: httpx.Client, browser: httpx.Client, backend: str) -> None:
    health = api.get("/api/health").json()["checks"]["embeddings"]
    text = visible(browser.get("/ui/system").text)
    assert text.startswith("Skip to content Cortadel Users System System Healthy")
    assert f"Database {backend} · ok · " in text
    assert f"Embedder {health['provider']}/{health['model']} · dimension {health['dim']} · ok" in text
    if backend == "sqlite":  # the file's size; a PostgreSQL server's disk is not the page's to report
        assert re.search(r"Storage size \d+\.\d (KiB|MiB)", text), text
    else:
        assert "Storage size — " in text
    assert re.search(r"Jobs waiting \d+", text), text


def test_the_system_page_lists_the_job_queue_with_ages_and_the_recent_errors(tmp_path: Path) -> None:
    """Jobs as the storage holds them (one waiting to retry, one given up), and a failed embedder
    call seen as the request that failed (503) and the provider error, under the request's id."""
    failing = threading.Event()

    def embed(request: RecordedRequest) -> Reply:
        if failing.is_set():
            return Reply.error(400, "the embedding model is overloaded")  # a 400 is not retried
        return hashed_embeddings(request)

    with ScriptedOpenAI() as embedder:
        embedder.handle("/v1/embeddings", embed)
        embeddings_url = embedder.v1_url
        server = ServerProcess(tmp_path / "cortadel.db", env={
            "CORTADEL_EMBEDDER": "openai", "CORTADEL_EMBEDDER_URL": embeddings_url, "CORTADEL_EMBEDDER_MODEL": "scripted"})
        server.start()  # the schema
        server.stop()
        storage = SqliteStorage(server.data)
        seeded = time.time()
        try:
            for error, retry_at in (("scripted: retry later", seeded + 3600), ("scripted: gave up", None)):
                storage.enqueue_job("enrich", "jobs-user", None, {})
                job = storage.claim_job(time.time())
                assert job is not None
                storage.fail_job(job.id, error, retry_at)
        finally:
            storage.close()
        server.start()
        try:
            with httpx.Client(base_url=server.base_url, timeout=30) as client:
                quiet = visible(client.get("/ui/system").text)
                assert "Jobs waiting 1 " in quiet
                jobs = re.search(r"Job queue Kind Status Jobs Oldest enrich failed 1 (\d+) s enrich queued 1 (\d+) s Recent", quiet)
                assert jobs, quiet
                assert all(0 <= int(age) <= time.time() - seeded + 1 for age in jobs.groups())
                assert "No server or provider errors since the server started." in quiet

                failing.set()
                before = time.time()
                refused = client.post("/api/v1/memories/search", json={"user_id": "jobs-user", "query": "anything"},
                                      headers={"x-request-id": "search-7f3a"})
                assert (refused.status_code, refused.headers["x-request-id"]) == (503, "search-7f3a")
                page = client.get("/ui/system").text
        finally:
            server.stop()
    text = visible(page)
    errors = text.split("Recent errors When Operation Status Request id Message ", 1)[1]
    stamp = r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC)"
    failure = re.escape(f'openai embedder: {embeddings_url}/embeddings answered HTTP 400: '
                        '{"error": {"message": "the embedding model is overloaded", "type": "scripted"}}')
    # newest first: the System page's own health check, then the search and the embedder call it made
    rows = re.fullmatch(
        rf"{stamp} embedder provider error ([0-9a-f]{{32}}) {failure} {stamp} Memories_Search 503 search-7f3a — "
        rf"{stamp} embedder provider error search-7f3a {failure} The latest 50 since the server started: .*", errors)
    assert rows, errors
    for shown_at in (rows.group(1), rows.group(3), rows.group(4)):
        at = datetime.strptime(shown_at, "%Y-%m-%d %H:%M:%S UTC").replace(tzinfo=UTC).timestamp()
        assert before - 1 <= at <= time.time()


def test_the_entities_page_lists_aliases_and_the_facts_that_mention_them(api: httpx.Client, browser: httpx.Client, user: str) -> None:
    api.post("/api/v1/memories", json={"user_id": user, "text": "I met Maria Lopez in Lisbon."})
    deadline = time.monotonic() + 20
    while "maria lopez" not in (text := visible(browser.get("/ui/entities", params={"user_id": user}).text)).lower():
        assert time.monotonic() < deadline, text  # entities are found by the background job
        time.sleep(0.2)
    known = dict(re.findall(r"(\S[^·]*?) (maria lopez|lisbon)(?= |$)", text.split("Entity Aliases", 1)[1].lower()))
    assert set(known.values()) == {"maria lopez", "lisbon"}, text
    facts = visible(browser.get("/ui/entities", params={"user_id": user, "entity": "maria lopez"}).text)
    assert "Facts that mention maria lopez" in facts and "User met Maria Lopez in Lisbon." in facts


def test_the_assets_ship_in_the_package_and_nothing_else_is_served(browser: httpx.Client) -> None:
    css = browser.get("/ui/static/dashboard.css")
    assert (css.status_code, css.headers["content-type"]) == (200, "text/css; charset=utf-8")
    assert css.text.startswith("/* The dashboard's only stylesheet")
    for name in ("../pages.py", "..%2Fpages.py", "dashboard.py"):
        assert browser.get(f"/ui/static/{name}").status_code == 404
    page = browser.get("/ui/memories", params={"user_id": "anyone"}).text
    assert re.findall(r'(?:src|href)="(https?:)?//', page) == []  # no request leaves the machine


def test_the_dashboard_is_not_in_the_api_contract(api: httpx.Client) -> None:
    paths = api.get("/openapi.json").json()["paths"]
    assert [p for p in paths if p == "/" or p.startswith("/ui")] == []


# -- with auth ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def secured() -> Iterator[ServerProcess]:
    with running_server(env={"CORTADEL_AUTH_SECRET": SECRET, "CORTADEL_ADMIN_KEY": ADMIN}) as srv:
        yield srv


@contextmanager
def signed_in(server: ServerProcess, key: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        yield _login(client, key)


def _login(client: httpx.Client, key: str) -> httpx.Client:
    form = client.get("/ui/login")
    assert form.status_code == 200
    login = client.post("/ui/login", data={"key": key, "csrf_token": csrf(client)})
    assert (login.status_code, login.headers["location"]) == (303, "/ui/")
    cookie = next(v for k, v in login.headers.multi_items() if k == "set-cookie" and v.startswith("cortadel_key="))
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
    return client


def test_with_auth_on_a_visitor_without_a_key_is_sent_to_the_login_form(secured: ServerProcess) -> None:
    with httpx.Client(base_url=secured.base_url, timeout=30) as client:
        for path in ("/", "/ui/", "/ui/memories?user_id=alice", "/ui/users", "/ui/system"):
            page = client.get(path)
            assert (page.status_code, page.headers["location"]) == (303, "/ui/login"), path
        assert "Paste an API key" in visible(client.get("/ui/login").text)
        wrong = client.post("/ui/login", data={"key": "ck_nope.0000", "csrf_token": csrf(client)})
        assert wrong.status_code == 401
        assert "Invalid API key" in visible(wrong.text)
        assert "cortadel_key" not in client.cookies


def test_a_users_key_sees_that_user_only(secured: ServerProcess) -> None:
    alice_key, bob_key = secured.mint_key("alice"), secured.mint_key("bob")
    with httpx.Client(base_url=secured.base_url, timeout=30) as api:
        bobs = api.post("/api/v1/memories", json={"text": "Bob's PIN is 9921.", "infer": False},
                        headers={"Authorization": f"Bearer {bob_key}"}).json()
        api.post("/api/v1/memories", json={"text": "Alice runs marathons.", "infer": False},
                 headers={"Authorization": f"Bearer {alice_key}"})
    with signed_in(secured, alice_key) as alice:
        home = alice.get("/ui/")
        assert (home.status_code, home.headers["location"]) == (303, "/ui/memories?user_id=alice")
        own = visible(alice.get("/ui/memories").text)
        assert "Memories of alice" in own and "Alice runs marathons." in own and "9921" not in own
        assert "Users" not in own.split("Memories of alice")[0]  # no link to pages about every user
        for path, params in (("/ui/memories", {"user_id": "bob"}), ("/ui/memory", {"user_id": "bob", "id": bobs["id"]}),
                             ("/ui/memory/delete", {"user_id": "bob", "id": bobs["id"]}),
                             ("/ui/memories", {"user_id": "bob", "q": "PIN", "state": "all"}),
                             ("/ui/search", {"user_id": "bob", "q": "PIN"}), ("/ui/entities", {"user_id": "bob"}),
                             ("/ui/entities", {"user_id": "bob", "entity": "bob"})):
            refused = alice.get(path, params=params)
            assert (refused.status_code, error_of(refused.text)) == (403, "API key is not valid for user 'bob'"), path
            assert "9921" not in refused.text
        # bob's fact under alice's name is simply not found
        hidden = alice.get("/ui/memory", params={"id": bobs["id"]})
        assert (hidden.status_code, error_of(hidden.text)) == (404, f"Memory {bobs['id']} not found")
        for path, fields in (("/ui/memory/delete", {"confirm": "yes"}), ("/ui/memory/edit", {"text": "Bob's PIN is 0000."}),
                             ("/ui/memory/invalidate", {})):
            forged = alice.post(path, data={"user_id": "bob", "id": bobs["id"], "csrf_token": csrf(alice), **fields})
            assert (forged.status_code, error_of(forged.text)) == (403, "API key is not valid for user 'bob'"), path
            # under her own name, bob's fact is not found: nothing of his changes either way
            own_name = alice.post(path, data={"user_id": "alice", "id": bobs["id"], "csrf_token": csrf(alice), **fields})
            assert (own_name.status_code, error_of(own_name.text)) == (404, f"Memory {bobs['id']} not found"), path
        for path in ("/ui/users", "/ui/system"):
            admin_only = alice.get(path)
            assert (admin_only.status_code, error_of(admin_only.text)) == (
                403, "This operation needs the admin credential; a user API key never passes")
        # the cookie is the dashboard's only: the API still wants its key in a header
        api_by_cookie = alice.get("/api/v1/memories", params={"user_id": "alice"})
        assert (api_by_cookie.status_code, api_by_cookie.json()["message"]) == (401, "Missing API key")
        out = alice.post("/ui/logout", data={"csrf_token": csrf(alice)})
        assert (out.status_code, out.headers["location"]) == (303, "/ui/login")
        assert alice.get("/ui/memories").status_code == 303
    with httpx.Client(base_url=secured.base_url, timeout=30) as api:
        still = api.get(f"/api/v1/memories/{bobs['id']}", headers={"Authorization": f"Bearer {bob_key}"}).json()
        assert (still["text"], still["state"]) == ("Bob's PIN is 9921.", "active")


def test_the_admin_key_sees_every_user(secured: ServerProcess) -> None:
    with httpx.Client(base_url=secured.base_url, timeout=30) as api:
        api.post("/api/v1/memories", json={"text": "Carol grows tomatoes.", "infer": False},
                 headers={"Authorization": f"Bearer {secured.mint_key('carol')}"})
    with signed_in(secured, ADMIN) as admin:
        users = visible(admin.get("/ui/users").text)
        assert re.search(r"carol 1 0 0 0 \d{4}-", users), users
        carol = visible(admin.get("/ui/memories", params={"user_id": "carol"}).text)
        assert "Carol grows tomatoes." in carol
        assert "Healthy" in visible(admin.get("/ui/system").text)
