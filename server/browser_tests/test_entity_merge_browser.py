"""Merging two entities in chromium: from the entities page to the merge form, its confirmation,
the merge seen through the API as approved by hand, and its undo; photographed into docs/dashboard/."""

from __future__ import annotations

import time

import httpx
from playwright.sync_api import Page, expect

from browser_tests.conftest import screenshot

FACTS = ["User met Dan Lee at the conference.", "User's manager is Dana Lee."]


def test_merge_two_entities_and_undo_it(page: Page, api: httpx.Client) -> None:
    ids = [api.post("/api/v1/memories", json={"user_id": "mia", "text": text}).json()["id"] for text in FACTS]
    deadline = time.monotonic() + 30
    while not all(api.get(f"/api/v1/memories/{i}", params={"user_id": "mia"}).json()["extraction_status"] == "done" for i in ids):
        assert time.monotonic() < deadline, "enrichment did not finish"
        time.sleep(0.1)

    page.goto("/ui/entities?user_id=mia")
    page.get_by_role("link", name="Merge two entities").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Merge entities of mia")
    page.get_by_label("Merge away").select_option("dan lee")
    page.get_by_label("into").select_option("dana lee")
    page.get_by_role("button", name="Review the merge").click()
    expect(page.get_by_role("heading", name="Merge dan lee into dana lee?")).to_be_visible()
    expect(page.get_by_role("listitem").filter(has_text="User met Dan Lee at the conference.")).to_be_visible()
    screenshot(page, "entity-merge")
    page.get_by_label("Yes, merge dan lee into dana lee").check()
    page.get_by_role("button", name="Merge", exact=True).click()
    expect(page.get_by_role("status")).to_have_text("Merged. The merge is listed below and can be undone.")

    [merge] = api.get("/api/v1/reconcile/suggestions", params={"user_id": "mia", "status": "approved"}).json()["items"]
    assert (merge["subject"], merge["decided_by"]) == ({"source": "dan lee", "target": "dana lee"}, "hand")

    page.get_by_role("button", name="Undo the merge of dan lee into dana lee").click()
    expect(page.get_by_role("status")).to_have_text("Merge undone.")
    expect(page.get_by_text("No merges applied.")).to_be_visible()
    undone = api.get("/api/v1/reconcile/suggestions", params={"user_id": "mia", "status": "rejected"}).json()["items"]
    assert [s["id"] for s in undone] == [merge["id"]]
