"""*Extra.* Media and communities with both clients against a real server."""

from __future__ import annotations

import time
from typing import Any

import pytest
from sdk_support import Connect

from cortadel import AddOptions, Community, MediaFact, MediaResult, ValidationError

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63606060f80f0000040001"
    "2b1c5b9b0000000049454e44ae426082"
)


def test_add_media_documents_and_images(server: Any, connect: Connect, user: str) -> None:
    client = connect(server.base_url, user)
    notes = client.add_media("notes.md", text="# Notes\n\nThe staging database is rebuilt every Sunday.", tags=["ops"])
    assert isinstance(notes, MediaResult)
    assert (notes.name, notes.media_type, notes.kind, notes.pages, notes.passages, notes.caption) == (
        "notes.md", "text/markdown", "document", None, 1, None)
    [fact] = notes.results
    assert fact == MediaFact(id=fact.id, memory="The staging database is rebuilt every Sunday.", event="ADD",
                             error=None, page=None, offset=9)
    stored = client.get(fact.id or "")
    assert stored is not None and stored.tags == ["ops"]

    image = client.add_media("board.png", data=PNG, caption="The sprint board shows four open tickets.")
    assert (image.kind, image.media_type, image.captioned_by, [r.memory for r in image.results]) == (
        "image", "image/png", "caller", ["The sprint board shows four open tickets."])
    with pytest.raises(ValidationError) as caught:
        client.add_media("board.png", data=PNG)
    assert caught.value.status == 400 and "CORTADEL_VISION_MODEL" in caught.value.message


def test_communities(server: Any, connect: Connect, user: str) -> None:
    client = connect(server.base_url, user)
    assert client.communities() == []
    ids = [client.add(text, AddOptions(infer=True)).id for text in
           ("Dana works at Acme in Berlin.", "Dana and Omar review the Acme budget.", "Omar lives in Berlin.")]
    deadline = time.monotonic() + 30
    while any((client.get(i) or pytest.fail("gone")).extraction_status != "done" for i in ids):
        assert time.monotonic() < deadline, "enrichment did not finish"
        time.sleep(0.1)
    found = client.communities()
    assert all(isinstance(c, Community) for c in found)
    *level0, level1 = found
    # A triangle of three entities: singletons at the fine level 0, one group of them at level 1.
    assert [(c.level, c.entities, c.parent_id) for c in level0] == [
        (0, ["acme"], level1.id), (0, ["berlin"], level1.id), (0, ["omar"], level1.id)]
    assert (level1.level, level1.entities, level1.memory_ids, level1.title, level1.summarized_by) == (
        1, ["acme", "berlin", "omar"], ids, "Acme, Berlin, Omar", "extractive")
    assert (level1.child_ids, level1.parent_id) == ([c.id for c in level0], None)
    assert client.communities(level=1) == [level1]
