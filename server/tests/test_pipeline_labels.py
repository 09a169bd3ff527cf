"""A "Word: …" prefix names a speaker only when what follows speaks in the first person;
otherwise it is a label ("Deploy: run tests, then push.") and stays part of the fact."""

from __future__ import annotations

import httpx
import pytest


@pytest.mark.parametrize(
    ("text", "stored"),
    [
        ("Deploy: run tests, then push.", "Deploy: run tests, then push."),
        ("Release checklist: bump the version, tag, publish.", "Release checklist: bump the version, tag, publish."),
        # A transcript line naming its speaker is still about that speaker.
        ("Caroline: I went to a support group yesterday.", "Caroline went to a support group yesterday."),
    ],
)
def test_add_keeps_a_label_prefix_and_reads_a_speaker_prefix(api: httpx.Client, user: str, text: str, stored: str) -> None:
    response = api.post("/api/v1/memories", json={"user_id": user, "text": text})
    assert response.status_code == 200, response.text
    assert (response.json()["event"], response.json()["content"]) == ("ADD", stored)
    listed = api.get("/api/v1/memories", params={"user_id": user}).json()["items"]
    assert [item["content"] for item in listed] == [stored]

