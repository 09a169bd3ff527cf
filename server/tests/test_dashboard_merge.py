"""The dashboard's entity merge over HTTP: the form, its confirmation, the merge through
reconciliation's own operation (listed as approved by hand, undone exactly), bad input, and auth."""

from __future__ import annotations

import time

import httpx
from test_dashboard import csrf, error_of, signed_in, visible

from cortadel_server.config import Settings
from cortadel_server.storage import open_storage
from cortadel_server.storage.base import StoredEntity
from cortadel_server.testing import ServerProcess, running_server

FACTS = ["User met Dan Lee at the conference.", "User's manager is Dana Lee.", "Dana Lee approved the budget."]


def stored(server: ServerProcess, user: str) -> list[StoredEntity]:
    """The user's entities as stored (names and links, in the order first seen), on either backend."""
    storage = open_storage(Settings(data=str(server.data), database_url=server.database_url))
    try:
        return storage.dump_entities(user)
    finally:
        storage.close()


def fill(api: httpx.Client, user: str) -> list[str]:
    ids = []
    for text in FACTS:
        response = api.post("/api/v1/memories", json={"user_id": user, "text": text})
        assert response.status_code == 200, response.text
        ids.append(response.json()["id"])
    deadline = time.monotonic() + 30
    while not all(api.get(f"/api/v1/memories/{i}", params={"user_id": user}).json()["extraction_status"] == "done" for i in ids):
        assert time.monotonic() < deadline, "enrichment did not finish"
        time.sleep(0.1)
    return ids


def test_merge_two_entities_from_the_page_and_undo_it(server: ServerProcess, user: str) -> None:
    with httpx.Client(base_url=server.base_url, timeout=30) as browser:
        ids = fill(browser, user)
        before = stored(server, user)
        entities = browser.get("/ui/entities", params={"user_id": user})
        assert 'href="/ui/entities/merge?user_id=' in entities.text

        review = browser.get("/ui/entities/merge", params={"user_id": user, "source": "dan lee", "target": "dana lee"})
        assert review.status_code == 200
        shown = visible(review.text)
        assert "Merge dan lee into dana lee?" in shown
        assert "The names dan lee become names of dana lee, with 1 current fact: User met Dan Lee at the conference." in shown
        assert "No merges applied." in shown

        unconfirmed = browser.post("/ui/entities/merge", data={"user_id": user, "source": "dan lee", "target": "dana lee",
                                                              "csrf_token": csrf(browser)})
        assert (unconfirmed.status_code, error_of(unconfirmed.text)) == (400, "confirm: Tick the box to confirm the merge")
        assert stored(server, user) == before

        merged = browser.post("/ui/entities/merge", data={"user_id": user, "source": "dan lee", "target": "dana lee",
                                                         "confirm": "yes", "csrf_token": csrf(browser)})
        assert (merged.status_code, merged.headers["location"]) == (303, f"/ui/entities/merge?user_id={user}&done=merged")
        names = browser.get("/api/v1/reconcile/suggestions", params={"user_id": user, "status": "approved"}).json()["items"]
        assert [(s["kind"], s["subject"], s["decided_by"], s["confidence"]) for s in names] == [
            ("merge_entities", {"source": "dan lee", "target": "dana lee"}, "hand", 1.0)]
        after = {e.canonical: e for e in stored(server, user)}
        assert (after["dan lee"].aliases, after["dan lee"].memory_ids) == ((), ())
        assert ids[0] in after["dana lee"].memory_ids and "dan lee" in after["dana lee"].aliases

        listing = visible(browser.get(f"/ui/entities/merge?user_id={user}&done=merged").text)
        assert "Merged. The merge is listed below and can be undone." in listing
        assert "dan lee dana lee hand 1.00 Undo" in listing
        assert "dan lee, dana lee" in visible(browser.get("/ui/entities", params={"user_id": user}).text)

        undone = browser.post("/ui/entities/merge/undo", data={"user_id": user, "suggestion_id": names[0]["id"],
                                                              "csrf_token": csrf(browser)})
        assert (undone.status_code, undone.headers["location"]) == (303, f"/ui/entities/merge?user_id={user}&done=undone")
        assert stored(server, user) == before
        assert "No merges applied." in visible(browser.get("/ui/entities/merge", params={"user_id": user}).text)


def test_bad_merge_input_gets_the_apis_errors(server: ServerProcess, user: str) -> None:
    with httpx.Client(base_url=server.base_url, timeout=30) as browser:
        fill(browser, user)
        same = browser.get("/ui/entities/merge", params={"user_id": user, "source": "dan lee", "target": "dan lee"})
        assert (same.status_code, error_of(same.text)) == (400, "target: Choose another entity than the one merged away")
        unknown = browser.get("/ui/entities/merge", params={"user_id": user, "source": "<script>x</script>"})
        assert unknown.status_code == 400
        assert "<script>x</script>" not in unknown.text and "&lt;script&gt;" in unknown.text
        gone = browser.post("/ui/entities/merge", data={"user_id": user, "source": "zed", "target": "dana lee",
                                                       "confirm": "yes", "csrf_token": csrf(browser)})
        assert (gone.status_code, error_of(gone.text)) == (409, "Entity 'zed' no longer exists (merged or deleted since)")
        forged = browser.post("/ui/entities/merge", data={"user_id": user, "source": "dan lee", "target": "dana lee",
                                                         "confirm": "yes", "csrf_token": "forged"})
        assert forged.status_code == 403


def test_with_auth_a_key_merges_only_its_own_entities() -> None:
    secret, admin = "merge-secret", "merge-admin"
    with running_server(env={"CORTADEL_AUTH_SECRET": secret, "CORTADEL_ADMIN_KEY": admin}) as server:
        with httpx.Client(base_url=server.base_url, timeout=30,
                          headers={"Authorization": f"Bearer {server.mint_key('bob')}"}) as api:
            fill(api, "bob")
        before = stored(server, "bob")
        with signed_in(server, server.mint_key("alice")) as alice:
            peek = alice.get("/ui/entities/merge", params={"user_id": "bob"})
            assert (peek.status_code, error_of(peek.text)) == (403, "API key is not valid for user 'bob'")
            forced = alice.post("/ui/entities/merge", data={"user_id": "bob", "source": "dan lee", "target": "dana lee",
                                                           "confirm": "yes", "csrf_token": csrf(alice)})
            assert forced.status_code == 403
        assert stored(server, "bob") == before
