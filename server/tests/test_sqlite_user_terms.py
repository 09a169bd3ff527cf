"""SQLite full-text search reads only the searching user's rows: what other users' memories say
changes neither what a search finds nor its BM25 scores (so not its cost either)."""

from __future__ import annotations

from pathlib import Path

import apsw
import numpy as np

from cortadel_server.storage.base import MemoryFilters, MemoryRecord
from cortadel_server.storage.sqlite import SqliteStorage
from cortadel_server.storage.sqlite_terms import UserTerms
from cortadel_server.storage.term_index import Totals

TEXTS = [
    "Ana moved to Lisbon and loves pottery.",
    "Ana teaches chess in Porto on Tuesdays.",
    "Bob's sister runs a pottery studio in Lisbon.",
    "The chess club meets in Porto.",
]
#: another user's memories, dense in the same words (and the same words' stems: "moves", "loving")
CROWD = ["Lisbon pottery chess moves", "Porto loving pottery", "chess chess Lisbon Porto"] * 200
#: as many memories of as many words (BM25 also weighs a row's length against the average), none of ana's
STRANGERS = ["Zebras graze very quietly", "Quartz glows green", "Violins hum very softly"] * 200


def _store(path: Path, users: dict[str, list[str]]) -> SqliteStorage:
    store = SqliteStorage(path)
    vector = np.ones(4, dtype=np.float32) / 2
    with store.write():
        for user, texts in users.items():
            for i, text in enumerate(texts):
                store.insert_memory(
                    MemoryRecord(id=f"{user}-{i}", user_id=user, text=text, created_at=1e9 + i, fingerprint=f"{user}{i}",
                                 session_id=f"{user}-s{i // 2}"),
                    vector,
                )
    return store


def test_other_users_words_change_neither_hits_nor_scores(tmp_path: Path) -> None:
    # BM25 weighs a word by how many rows hold it: counted over every user, the crowd's rows would
    # lower the weight of ana's words (and make every search walk them).
    strangers = _store(tmp_path / "strangers.db", {"crowd": STRANGERS, "ana": TEXTS})
    crowded = _store(tmp_path / "crowded.db", {"crowd": CROWD, "ana": TEXTS})
    try:
        for query in ("pottery in Lisbon", "chess Porto", "Who moved?"):
            expected = strangers.text_search("ana", query, MemoryFilters(), 10)
            assert expected, query
            assert crowded.text_search("ana", query, MemoryFilters(), 10) == expected
            assert crowded.text_search("ana", query, MemoryFilters(include_superseded=True), 10) == expected
            assert crowded.session_search("ana", query, 10) == strangers.session_search("ana", query, 10)
        assert [s.id for s in crowded.text_search("ana", "pottery in Lisbon", MemoryFilters(), 10)] == ["ana-0", "ana-2", "ana-1", "ana-3"]
        assert [s.id for s in crowded.session_search("ana", "chess", 10)] == ["ana-s0", "ana-s1"]
        assert crowded.text_search("nobody", "pottery", MemoryFilters(), 10) == []
        assert [s.id for s in crowded.text_search("crowd", "loving", MemoryFilters(), 2)] == ["crowd-4", "crowd-10"]
    finally:
        strangers.close()
        crowded.close()


def test_remembered_stems_are_the_stemmers_own_and_callers_cannot_change_them() -> None:
    # A query word's stems are kept per connection: asking again, after a caller changed what it
    # got, gives the stemmer's answer.
    terms = UserTerms(apsw.Connection(":memory:"))
    first = terms.phrases("Sam's cats are running to Lisbon")
    assert first == [["sam", "s"], ["cat"], ["run"], ["lisbon"]]
    first[1].append("dog")
    first.clear()
    assert terms.phrases("Lisbon cats, Sam's") == [["lisbon"], ["cat"], ["sam", "s"]]
    assert terms.document("u1", "Cats were running home.") == "u1cat u1were u1run u1home"
    stems = terms.stems("Cats were running home.")
    assert stems == ["cat", "were", "run", "home"]
    stems.append("away")
    assert terms.stems("Cats were running home.") == ["cat", "were", "run", "home"]
    assert terms.stems("Cats were running home.", query=True) == ["cat", "were", "run", "home"]


def _full_text(store: SqliteStorage, user: str, query: str) -> list[tuple[str, float]]:
    """What FTS5 itself ranks (the in-process term index left out), current and past rows."""
    found = store._fts5_text_search(user, query, MemoryFilters(include_superseded=True), 10, context_weight=0.3)
    return [(s.id, round(s.score, 9)) for s in found]


def test_rows_a_write_edits_or_deletes_before_its_end_leave_the_full_text_index_as_if_never_written(tmp_path: Path) -> None:
    """A memory's full-text row waits for the end of its write (migration 0011). A write that edits
    or deletes such a memory before then must hand the index the row first: the triggers take the
    old terms out. Else the index keeps terms of a text no memory holds (found by the old words,
    and counted in every BM25 weight) or of a memory that is gone."""
    vector = np.ones(4, dtype=np.float32) / 2
    edited, direct = SqliteStorage(tmp_path / "edited.db"), SqliteStorage(tmp_path / "direct.db")

    def insert(store: SqliteStorage, memory_id: str, text: str, at: int) -> None:
        store.insert_memory(MemoryRecord(id=memory_id, user_id="ana", text=text, created_at=1e9 + at, fingerprint=memory_id,
                                         session_id="s1"), vector)

    try:
        with edited.write("ana"):
            insert(edited, "m1", "Ana moved to Lisbon with her cello.", 0)
            insert(edited, "m2", "Ana teaches chess on Tuesdays.", 1)
            edited.update_memory("ana", "m1", text="Ana moved to Porto.")
            edited.delete_memories("ana", ["m2"])
            insert(edited, "m3", "The chess club meets in Porto.", 2)
        with direct.write("ana"):
            insert(direct, "m1", "Ana moved to Porto.", 0)
            insert(direct, "m3", "The chess club meets in Porto.", 2)
        for store in (edited, direct):  # the same memories, each with the text it holds now
            assert {m.id: m.text for m in store.list_memories("ana", MemoryFilters(), offset=0, limit=10)[0]} == \
                {"m1": "Ana moved to Porto.", "m3": "The chess club meets in Porto."}
        assert _full_text(edited, "ana", "Lisbon cello") == [] and _full_text(edited, "ana", "Tuesdays") == []
        for query in ("Porto", "moved to Porto", "chess club", "Ana"):
            assert _full_text(edited, "ana", query) == _full_text(direct, "ana", query), query
        assert [memory_id for memory_id, _ in _full_text(edited, "ana", "chess")] == ["m3"]
        assert edited._committed_totals("memories_fts") == direct._committed_totals("memories_fts") == Totals(2, 14)
    finally:
        edited.close()
        direct.close()
