"""SQLite's text arm (and through it the dedup lookup of every write) ranks in process
(storage/term_index.py) with every filter as a row mask, and gives what FTS5's bm25() gives: the
same memories, in the same order, with the same scores to the last bit — ties, possessives (a
two-token phrase), contexts, past versions, another user's rows, a write's own rows, deletes and
edits, and each filter a search can carry."""

from __future__ import annotations

import gc
import itertools
import random
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import numpy as np
import pytest

from cortadel_server.storage.base import SUPERSEDED, MemoryFilters, MemoryRecord
from cortadel_server.storage.sqlite import SqliteStorage, _Sessions, user_key
from cortadel_server.storage.term_index import FLOORED_ABOVE, TermIndex, Totals
from cortadel_server.storage.vector_cache import VersionedCache

NAMES = ["Priya", "Tom", "Ana", "Kenji"]
PLACES = ["Porto", "Lisbon", "Osaka"]
#: sentences of one shape: many rows score exactly alike, so the order of ties is compared too
TEMPLATES = ["{n}'s sister moved to {p}.", "{n} likes tea in {p}.", "{n} cooks ramen with {m} in {p} every Sunday."]
QUERIES = [
    "Priya's sister moved to Porto.", "Tom likes tea in Lisbon.", "Priya's", "tea Osaka", "Where does Kenji's sister live?", "ramen Sunday Porto Lisbon",
    "sister", "nothing matches zzz",
]
FILTERS = {
    "current facts": MemoryFilters(),
    "past versions too": MemoryFilters(include_superseded=True),
    "superseded only": MemoryFilters(state=SUPERSEDED),
    "memory type": MemoryFilters(memory_type="episodic"),
    "category": MemoryFilters(categories=("travel",)),
    "app": MemoryFilters(app_name="chat"),
    "tag": MemoryFilters(tag="family"),
    "session": MemoryFilters(session_id="alice-s7"),
    "valid between": MemoryFilters(valid_between=(1e9 + 40, 1e9 + 200)),
    "as of": MemoryFilters(as_of=1e9 + 150),
    "ids": MemoryFilters(ids=tuple(f"alice-{i}" for i in range(0, 300, 3))),
    "exclude ids": MemoryFilters(exclude_ids=tuple(f"alice-{i}" for i in range(0, 300, 2))),
}


def _texts(count: int, offset: int = 0) -> list[str]:
    combos = itertools.cycle(itertools.product(TEMPLATES, NAMES, NAMES, PLACES))
    return [t.format(n=n, m=m, p=p) for t, n, m, p in itertools.islice(combos, offset, offset + count)]


def _insert(store: SqliteStorage, user: str, texts: list[str], start: int) -> None:
    vector = np.ones(4, dtype=np.float32) / 2
    for i, text in enumerate(texts, start):
        store.insert_memory(
            MemoryRecord(
                id=f"{user}-{i}", user_id=user, text=text, created_at=1e9 + i, fingerprint=f"{user}{i}",
                session_id=f"{user}-s{i // 3}",  # sessions of three: most rows have a context
                memory_type="episodic" if i % 4 == 0 else "semantic", categories=["travel"] if i % 5 == 0 else [],
                tags=["family"] if i % 6 == 0 else [], app_name="chat" if i % 2 else None,
            ),
            vector,
        )


@pytest.fixture()
def store(tmp_path: Path) -> SqliteStorage:
    store = SqliteStorage(tmp_path / "text.db", index_after_searches=1)
    with store.write():
        _insert(store, "alice", _texts(300), 0)
        _insert(store, "bob", _texts(200, offset=50), 0)  # another user: the table's totals, not alice's hits
    for i in range(0, 300, 7):  # past versions: counted by BM25, returned only when a filter asks
        store.update_memory("alice", f"alice-{i}", state=SUPERSEDED, expired_at=2e9, invalid_at=2e9)
    return store


@contextmanager
def _loader_held(store: SqliteStorage) -> Iterator[None]:
    """The loader thread kept busy: what a write of the store leaves behind stays behind (the
    loader catches it up as soon as the write commits) until the block ends."""
    free = threading.Event()
    store._term_loader.submit(free.wait, 5)
    try:
        yield
    finally:
        free.set()


def _loaded(store: SqliteStorage) -> None:
    """Wait for the loads of term indexes asked for so far (the loader runs them in order)."""
    store._term_loader.submit(lambda: None).result()


def _both(
    store: SqliteStorage, query: str, filters: MemoryFilters, limit: int = 8, user: str = "alice"
) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """``text_search``'s answer, from the term index (loaded at this point), and FTS5's."""
    if store._search_terms(user) is None:
        store._term_index(user)  # at once: the loader waits a while before loading again
    assert store._search_terms(user) is not None or store.user_version(user) == 0
    ranked = [(s.id, s.score) for s in store.text_search(user, query, filters, limit)]
    fts5 = [(s.id, s.score) for s in store._fts5_text_search(user, query, filters, limit, context_weight=0.3)]
    return ranked, fts5


def _varints(blob: bytes) -> int:
    """The sum of a docsize record's varints (each column's tokens; all below 128 here)."""
    assert all(b < 0x80 for b in blob)
    return sum(blob)


def test_the_index_ranks_with_fts5s_formula_to_the_bit(store: SqliteStorage) -> None:
    """``TermIndex.best`` alone, with the table's totals counted here from FTS5's own docsize
    records: FTS5's scores, and its order of ties, for every query; a possessive is a phrase."""
    index = store._term_index("alice")
    assert index is not None and index.n == 300
    assert store._conn().terms.phrases("Priya's sister")[0] == ["priya", "s"]
    (rows,) = store._rows("SELECT count(*) FROM memories")[0]
    totals = Totals(rows, sum(_varints(size) for (size,) in store._rows("SELECT sz FROM memories_fts_docsize")))
    ties = 0
    for query in QUERIES[:-1]:
        fts5 = [(s.id, s.score) for s in store._fts5_text_search("alice", query, MemoryFilters(), 8, context_weight=0.3)]
        assert index.best(store._conn().terms.phrases(query), lambda _: totals, limit=8) == fts5, query
        ties += any(a[1] == b[1] for a, b in itertools.pairwise(fts5))
    assert ties >= 2
    assert _both(store, "sister", MemoryFilters(), user="nobody") == ([], [])


def test_inserts_update_the_index_in_place_and_deletes_and_edits_catch_it_up(store: SqliteStorage) -> None:
    index = store._term_index("alice")
    assert index is not None
    text = store.cache_reads["text"]
    with store.write("alice"):
        _insert(store, "alice", _texts(10, offset=7), 400)
    assert store._search_terms("alice") is index  # kept current by the write, not reloaded
    assert all(ranked == fts5 for ranked, fts5 in (_both(store, q, MemoryFilters()) for q in QUERIES))
    reloads = text.reloads
    store.delete_memories("alice", [f"alice-{i}" for i in range(0, 60, 2)])
    # the next search takes the 30 rows out in place (their rowids gone), and the sessions' contexts rebuilt
    assert store._search_terms("alice") is index and (index.removed, index.n) == (30, 310)
    for filters in FILTERS.values():
        assert all(ranked == fts5 for ranked, fts5 in (_both(store, q, filters) for q in QUERIES))
    store.update_memory("alice", "alice-3", text="Priya's sister moved to Oslo.")  # its text and its successor's context
    assert store._search_terms("alice") is index
    for filters in FILTERS.values():
        assert all(ranked == fts5 for ranked, fts5 in (_both(store, q, filters) for q in QUERIES))
    assert _both(store, "Oslo", MemoryFilters(), limit=300)[0][0][0] == "alice-3"
    assert text.reloads == reloads  # caught up each time, never read whole


def test_a_lookup_among_many_matched_rows_keeps_those_above_a_floor_and_ranks_as_fts5(tmp_path: Path) -> None:
    """Past ``FLOORED_ABOVE`` matched rows, only those at or above the floor the query's rarest
    phrases give are ranked: FTS5's rows, order and scores still, ties and filters included."""
    store = SqliteStorage(tmp_path / "many.db", index_after_searches=1)
    with store.write():
        _insert(store, "carol", _texts(1_500), 0)
        # a rare word in rows that score higher the later they come: the few above the floor are sorted
        _insert(store, "carol", ["Ana said a zebra moved to Porto with Tom and Kenji every Sunday.", "A zebra moved to Porto.", "Zebra!"], 1_500)
        # two rare words in the same five rows: each row counts once towards the floor
        _insert(store, "carol", ["A quokka met a zebra" + " in Osaka" * k + "." for k in range(5)], 1_503)
    floored = 0
    for query, limit in itertools.product([*QUERIES, "zebra moved to Porto", "quokka zebra in Porto"], (1, 8, 40)):
        for filters in (MemoryFilters(), FILTERS["exclude ids"], FILTERS["app"]):
            ranked, fts5 = _both(store, query, filters, limit=limit, user="carol")
            assert ranked == fts5, (query, limit, filters)
        floored += len(store._fts5_text_search("carol", query, MemoryFilters(), 10_000, context_weight=0.3)) > FLOORED_ABOVE
    assert floored >= 15  # five queries at each limit
    store.close()


@pytest.mark.parametrize("name", FILTERS)
def test_every_filter_ranks_as_fts5_does(store: SqliteStorage, name: str) -> None:
    filters = FILTERS[name]
    ties = 0
    for query in QUERIES:
        ranked, fts5 = _both(store, query, filters)
        assert ranked == fts5, (name, query)
        ties += any(a[1] == b[1] for a, b in itertools.pairwise(fts5))
        # The answer came from the index: it ranks the same rows itself, with the filter as a mask.
        index = store._term_index("alice")
        assert index is not None
        allowed = index.rows_of(store._filtered_ids("alice", filters)) if filters.narrows else index.current()
        phrases = store._conn().terms.phrases(query)
        assert index.best_among(phrases, lambda p: store._fts_totals("memories_fts", "alice", p), allowed, limit=8) == ranked, query
    if name in ("current facts", "past versions too"):
        assert ties >= 2  # the order of equal scores was part of what was compared


def test_the_filters_keep_what_they_name(store: SqliteStorage) -> None:
    texts = _texts(300)

    def holds(i: int, word: str) -> bool:  # in its text, or in its context (the text before it in its session)
        return word in texts[i] or (i % 3 != 0 and word in texts[i - 1])

    past, _ = _both(store, "sister", MemoryFilters(state=SUPERSEDED), limit=300)
    assert {memory_id for memory_id, _ in past} == {f"alice-{i}" for i in range(0, 300, 7) if holds(i, "sister")} != set()
    current, _ = _both(store, "ramen", MemoryFilters(), limit=300)
    assert {memory_id for memory_id, _ in current} == {f"alice-{i}" for i in range(300) if i % 7 and holds(i, "ramen")}
    session, _ = _both(store, "ramen", MemoryFilters(session_id="alice-s33"))
    assert {memory_id for memory_id, _ in session} == {"alice-99", "alice-100", "alice-101"}  # its three, all about ramen


def test_another_context_weight_is_ranked_by_fts5(store: SqliteStorage) -> None:
    # The index holds one context weight; a recipe with another gets FTS5's ranking of it.
    heavier = [(s.id, s.score) for s in store.text_search("alice", "ramen", MemoryFilters(), 300, context_weight=0.8)]
    assert heavier == [
        (s.id, s.score) for s in store._fts5_text_search("alice", "ramen", MemoryFilters(), 300, context_weight=0.8)
    ]
    assert heavier[0][1] > _both(store, "ramen", MemoryFilters(), limit=300)[0][0][1]  # the context counts more


def test_a_search_inside_a_write_sees_its_rows_and_after_a_rollback_only_what_committed(store: SqliteStorage) -> None:
    assert _both(store, "Zanzibar", MemoryFilters()) == ([], [])
    with pytest.raises(RuntimeError), store.write("alice"):
        _insert(store, "alice", ["Priya's sister moved to Zanzibar."], 300)
        ranked, fts5 = _both(store, "Zanzibar", MemoryFilters(include_superseded=True))
        assert ranked == fts5 and [memory_id for memory_id, _ in ranked] == ["alice-300"]
        raise RuntimeError("roll back")
    assert _both(store, "Zanzibar", MemoryFilters(include_superseded=True)) == ([], [])


def test_a_cold_search_is_ranked_by_fts5_while_the_index_loads_off_the_request(store: SqliteStorage, tmp_path: Path) -> None:
    fts5 = [(s.id, s.score) for s in store._fts5_text_search("alice", "tea Osaka", MemoryFilters(), 8, context_weight=0.3)]
    restarted = SqliteStorage(tmp_path / "text.db", index_after_searches=1)  # a new process: no index in memory
    try:
        assert restarted._terms.current("alice", restarted.user_version("alice")) is None
        assert [(s.id, s.score) for s in restarted.text_search("alice", "tea Osaka", MemoryFilters(), 8)] == fts5
        _loaded(restarted)
        index = restarted._search_terms("alice")
        assert index is not None and index.n == 300
        assert [(s.id, s.score) for s in restarted.text_search("alice", "tea Osaka", MemoryFilters(), 8)] == fts5
        # A user without memories asks for no load.
        assert restarted._search_terms("nobody") is None and ("_term_index", "nobody") not in restarted._term_loads
    finally:
        restarted.close()


def test_a_user_who_searches_a_few_times_is_ranked_by_fts5_and_asks_for_no_load(store: SqliteStorage, tmp_path: Path) -> None:
    restarted = SqliteStorage(tmp_path / "text.db", index_after_searches=3)
    try:
        fts5 = [(s.id, s.score) for s in restarted._fts5_text_search("alice", "tea Osaka", MemoryFilters(), 8, context_weight=0.3)]
        for _ in range(2):
            assert [(s.id, s.score) for s in restarted.text_search("alice", "tea Osaka", MemoryFilters(), 8)] == fts5
            _loaded(restarted)
            assert ("_term_index", "alice") not in restarted._term_loads
            assert restarted._terms.current("alice", restarted.user_version("alice")) is None
        restarted.text_search("alice", "tea Osaka", MemoryFilters(), 8)  # the third search asks for it
        _loaded(restarted)
        index = restarted._search_terms("alice")
        assert index is not None and index.n == 300
        assert [(s.id, s.score) for s in restarted.text_search("alice", "tea Osaka", MemoryFilters(), 8)] == fts5
        # Counted per user: bob's first search still asks for nothing.
        restarted.text_search("bob", "tea", MemoryFilters(), 8)
        _loaded(restarted)
        assert restarted._terms.current("bob", restarted.user_version("bob")) is None
    finally:
        restarted.close()


def test_the_index_loaded_at_once_equals_the_one_built_row_by_row(store: SqliteStorage) -> None:
    loaded = store._term_index("alice")
    assert loaded is not None
    rows = store._rows("SELECT id, text, context, expired_at IS NULL AND invalid_at IS NULL FROM memories "
                       "WHERE user_id = 'alice' ORDER BY rowid")
    stems = store._conn().terms.stems
    built = TermIndex(loaded.version, [(i, stems(t) if t else [], stems(c) if c else [], bool(cur)) for i, t, c, cur in rows],
                      context_weight=0.3)
    for query in QUERIES:
        phrases = store._conn().terms.phrases(query)
        for limit in (1, 8, 300):
            assert loaded.best(phrases, lambda p: store._fts_totals("memories_fts", "alice", p), limit=limit) == \
                built.best(phrases, lambda p: store._fts_totals("memories_fts", "alice", p), limit=limit), (query, limit)
    assert loaded.ids == built.ids and loaded.n == built.n == 300


def _sessions(store: SqliteStorage, query: str, limit: int) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """``session_search``'s answer, from the session index (loaded at this point), and FTS5's."""
    if store._for_search(store._sessions, store._session_index, "alice") is None:
        store._session_index("alice")
    ranked = [(s.id, s.score) for s in store.session_search("alice", query, limit)]
    return ranked, [(s.id, s.score) for s in store._fts5_session_search("alice", query, limit)]


def test_committed_totals_read_from_fts5s_record_equal_what_its_bm25_reads(store: SqliteStorage) -> None:
    """``_committed_totals`` decodes FTS5's averages record; the query through a phrase asks FTS5's
    own auxiliary API. After inserts, appends to session documents, ended facts, deletes (which
    rebuild documents), a purge and a rollback, both give the same rows and tokens."""

    def asked(table: str, stem: str) -> Totals:
        rows = store._rows(
            f"SELECT fts_rows({table}), fts_tokens({table}) FROM {table} WHERE {table} MATCH ? LIMIT 1",
            (f'"{user_key("alice")}{stem}"',),
        )
        return Totals(*rows[0])

    def check() -> tuple[Totals, Totals]:
        memories, sessions = store._committed_totals("memories_fts"), store._committed_totals("session_docs_fts")
        assert memories == asked("memories_fts", "sister") and sessions == asked("session_docs_fts", "sister")
        assert memories is not None and sessions is not None
        return memories, sessions

    before = check()
    assert before[0].rows == 500 and before[1].rows == 100 + 67  # alice's and bob's memories and sessions
    with store.write("alice"):
        _insert(store, "alice", ["Priya's sister moved to Zanzibar."] * 4, 300)
    after = check()
    assert after[0].rows == 504 and after[1].rows == 169 and after[1].tokens > before[1].tokens
    store.update_memory("alice", "alice-301", state=SUPERSEDED, expired_at=2e9, invalid_at=2e9)
    store.delete_memories("alice", ["alice-302", "alice-10"])
    assert check()[0].rows == 502
    with pytest.raises(RuntimeError), store.write("alice"):
        _insert(store, "alice", ["Never committed."], 400)
        raise RuntimeError("rolled back")
    assert check()[0].rows == 502


def test_a_write_reads_fts5s_totals_once_and_its_reads_keep_them(store: SqliteStorage) -> None:
    """Inside a write the memories' totals are read from FTS5 (a query through a phrase) once, then
    follow the write's inserts; a read between two lookups, a ``WITH … SELECT`` too, keeps them.
    Each lookup still ranks as FTS5 does."""
    _both(store, "sister", MemoryFilters())
    asked: list[str] = []

    def traced(cursor: object, sql: str, bindings: object) -> bool:
        if "fts_rows(memories_fts)" in sql:
            asked.append(sql)
        return True

    with store.write("alice"):
        connection = store._conn()
        connection.exec_trace = traced
        try:
            _insert(store, "alice", ["Priya's sister moved to Zanzibar."], 300)
            for at, query in enumerate(("Zanzibar", "sister Porto", "Priya's"), 400):
                ranked, fts5 = _both(store, query, MemoryFilters())
                assert ranked == fts5
                store.neighbour_texts("alice", [ranked[0][0]], "alice300")  # WITH same AS (SELECT …) …
                _insert(store, "alice", [f"Tom likes tea in {query}."], at)
        finally:
            connection.exec_trace = None
    # One read by the first lookup; FTS5's own searches above ask bm25(), not these totals.
    assert len(asked) == 1


def test_a_row_extended_in_place_equals_the_row_loaded_whole() -> None:
    """``TermIndex.extend``: the terms and pairs appended, the pair across the join, the length."""
    first = [["kenji", "s", "sister"], ["tom", "like", "tea"], ["ana"]]
    added = [["s", "cat", "tea", "tea"], ["ana", "s", "sister"], []]
    extended = TermIndex(1, [(f"d{i}", words, [], True) for i, words in enumerate(first)], context_weight=0.3)
    for i, words in enumerate(added):
        extended.extend(f"d{i}", first[i][-1], words)
    whole = TermIndex.load(1, [(f"d{i}", a + b, [], True) for i, (a, b) in enumerate(zip(first, added, strict=True))],
                           context_weight=0.3)
    for index in (extended, whole):
        index.best([["tea"]], lambda _: Totals(3, 20), limit=3)  # fills the copy of the lengths
    assert extended._terms.keys() == whole._terms.keys() and extended._pairs.keys() == whole._pairs.keys()
    for key in [*whole._terms, *whole._pairs]:
        mine = extended._terms.get(key) or extended._pairs[key]
        theirs = whole._terms.get(key) or whole._pairs[key]
        assert mine == theirs, key  # rows and frequencies, byte for byte
    assert list(extended._length) == list(whole._length) == [7.0, 6.0, 1.0]
    for phrases in ([["tea"]], [["sister"], ["ana"]], [["kenji", "s"]], [["sister", "s"]], [["ana", "s"]]):
        assert extended.best(phrases, lambda _: Totals(3, 20), limit=3) == whole.best(phrases, lambda _: Totals(3, 20), limit=3)


def test_rows_are_appended_while_other_threads_take_the_current_rows() -> None:
    """A search takes ``current()`` without the cache's lock while a catch-up in another thread
    appends rows: reading the flags exported their array to numpy for as long as it converted, and
    the append failed with BufferError on its first try, leaving the entry half changed."""
    index = TermIndex(1, [(f"m{i}", ["tea", "porto"], [], True) for i in range(20_000)], context_weight=0.3)
    stop = threading.Event()

    def take_current() -> None:
        while not stop.is_set():
            index.current()

    readers = [threading.Thread(target=take_current) for _ in range(3)]
    for reader in readers:
        reader.start()
    try:
        for i in range(30_000):
            index.append(f"n{i}", ["tea"], [], i % 2 == 0)
    finally:
        stop.set()
        for reader in readers:
            reader.join()
    flags = index.current()
    assert (len(flags), int(flags.sum())) == (50_000, 35_000)


@pytest.mark.parametrize("way", ["advance", "amend", "catch_up"])
def test_an_entry_whose_change_raised_is_dropped(way: str) -> None:
    """A change that raised part way (a write's, or a catch-up's) may have left the entry half
    changed: the cache drops it, so the next search reads the user whole instead of trusting it."""
    cache: VersionedCache[TermIndex] = VersionedCache(incremental=True)
    entry = TermIndex(3, [(f"m{i}", ["tea"], [], True) for i in range(5)], context_weight=0.3)
    cache.put("u1", entry)

    def half_done(index: TermIndex) -> bool:
        index.append("m5", ["tea"], [], True)
        raise RuntimeError("half done")

    with pytest.raises(RuntimeError, match="half done"):
        if way == "advance":
            cache.advance("u1", 4, half_done)
        elif way == "amend":
            cache.amend("u1", 3, half_done)
        else:
            cache.catch_up("u1", entry, 3, 5, half_done)
    assert cache.get("u1") is None
    assert cache._held == 0  # its rows left the count the cache bounds itself by


def test_rows_removed_and_replaced_in_place_rank_as_the_same_rows_loaded_afresh() -> None:
    """``TermIndex.apply`` through 300 random steps (rows appended, removed by the rowids left,
    given new terms, ended): after each, every query ranks as an index loaded afresh from the rows
    left ranks it, hits, order and scores, and both hold the same keys."""
    rng = random.Random(7)
    words = ["kenji", "s", "sister", "tea", "porto", "osaka", "likes", "moved", "to", "cat", "ramen", "sunday"]

    def terms() -> tuple[list[str], list[str]]:
        return rng.choices(words, k=rng.randint(1, 8)), rng.choices(words, k=rng.randint(0, 5)) if rng.random() < 0.5 else []

    rows = {rowid: (f"m{rowid}", *terms(), True) for rowid in range(1, 121)}  # rowid: (id, text, context, current)
    index = TermIndex.load(1, list(rows.values()), context_weight=0.3, rowids=list(rows))
    next_rowid, compared = 121, 0
    for step in range(300):
        kind = rng.choice(["append", "remove", "replace", "end"])
        held = sorted(rows)
        changed: list[tuple[int, str, list[str], list[str], bool]] = []
        if kind == "append" or len(held) < 10:
            rows[next_rowid] = (f"m{next_rowid}", *terms(), True)
            changed.append((next_rowid, *rows[next_rowid]))
            next_rowid += 1
        elif kind == "remove":
            for rowid in rng.sample(held, rng.randint(1, 3)):
                del rows[rowid]
        else:
            rowid = rng.choice(held)
            memory_id, text, context, current = rows[rowid]
            rows[rowid] = (memory_id, *terms(), current) if kind == "replace" else (memory_id, text, context, False)
            changed.append((rowid, *rows[rowid]))
        present = np.array(sorted(rows), dtype=np.int64)
        assert index.apply(len(rows) - len(changed), changed, present), step
        fresh = TermIndex.load(1, [rows[r] for r in sorted(rows)], context_weight=0.3, rowids=sorted(rows))
        assert (index.rows_held, set(index._terms), set(index._pairs)) == (fresh.n, set(fresh._terms), set(fresh._pairs))
        table = partial(lambda totals, _: totals, Totals(len(rows), sum(len(t) + len(c) for _, t, c, _ in rows.values())))
        for query in ([[w] for w in rng.sample(words, 3)], [["kenji", "s"], ["tea"]], [["sister"]]):
            ranked = index.best(query, table, limit=10)
            assert ranked == fresh.best(query, table, limit=10), (step, query)
            compared += ranked is not None
    assert index.removed > 50 and compared > 800  # many rows removed, and the rankings compared (not left to FTS5)


def _tracked_within(root: object) -> list[object]:
    """The objects reachable from ``root`` that Python's cyclic garbage collector tracks."""
    seen, todo, tracked = {id(root)}, [root], []
    while todo:
        item = todo.pop()
        if gc.is_tracked(item):
            tracked.append(item)
        for referent in gc.get_referents(item):
            if id(referent) not in seen and not isinstance(referent, type):
                seen.add(id(referent))
                todo.append(referent)
    return tracked


def test_an_index_holds_a_fixed_handful_of_objects_for_the_garbage_collector_however_many_terms() -> None:
    """Postings are bytes: a full collection walks no object per term or pair, loaded or appended
    (two arrays in a holder were three tracked objects a key)."""
    texts = _texts(900)
    index = TermIndex.load(1, [(f"m{i}", t.lower().split(), [], True) for i, t in enumerate(texts[:600])],
                           context_weight=0.3)
    for i, text in enumerate(texts[600:]):
        index.append(f"n{i}", [*text.lower().split(), f"word{i}"], [], True)  # 300 new terms and pairs
    index.extend("m0", "porto.", ["more", "words"])
    assert len(index._terms) + len(index._pairs) > 600
    gc.collect()  # tuples and dicts holding nothing tracked are untracked by a collection
    kinds = sorted(type(o).__name__ for o in _tracked_within(index))
    assert kinds == ["TermIndex", "array", "array", "array", "list", "list", "lock"], kinds


def test_a_load_that_read_before_a_write_and_finishes_after_it_leaves_the_entry_the_write_moved_on(
    store: SqliteStorage,
) -> None:
    """The loader thread reads a user's indexes in its own snapshot; a write of this process may
    commit, and move the cached entries on, before that load puts what it read. The entries the
    write kept current stay (CI once saw the session index swapped for the late load's)."""
    store._session_index("alice")
    store._term_index("alice")
    before = store.user_version("alice")
    read_first, written = threading.Event(), threading.Event()
    late: list[int] = []  # the versions the late load read

    def load_late() -> None:  # the loader's reads: in a snapshot opened before the write
        with store.search_snapshot("alice"):
            read_first.set()
            written.wait(5)
            late.append(store._session_index("alice").version)
            late.append(getattr(store._term_index("alice"), "version", 0))

    thread = threading.Thread(target=load_late)
    thread.start()
    assert read_first.wait(5)
    with store.write("alice"):
        _insert(store, "alice", ["Tom's sister moved to Zanzibar."], 300)
    sessions, terms = store._sessions.get("alice"), store._terms.get("alice")
    assert sessions is not None and terms is not None and sessions.version == terms.version == before + 1
    written.set()
    thread.join(5)
    assert late == [before, before]
    assert store._sessions.get("alice") is sessions and store._terms.get("alice") is terms
    assert [s.id for s in store.session_search("alice", "Zanzibar", 3)] == ["alice-s100"]


def test_a_load_that_read_before_a_deletion_is_held_behind_and_caught_up_before_the_deletion_returns(
    store: SqliteStorage,
) -> None:
    """A deletion rebuilds its session's document: the write leaves the session index behind, and
    the deleting thread catches it up in place before the deletion returns (not the loader, which
    may be busy): the member gone, the document's new terms. A load that read before the write and
    finishes after it is not held in its place (it is no later). Searches rank as FTS5 does."""
    loaded = store._session_index("alice")
    gone, *kept = loaded.members["alice-s0"]
    before = loaded.version
    read_first, written = threading.Event(), threading.Event()
    late: list[_Sessions] = []

    def load_late() -> None:  # the loader's reads: in a snapshot opened before the write
        with store.search_snapshot("alice"):
            read_first.set()
            written.wait(5)
            late.append(store._session_index("alice"))

    thread = threading.Thread(target=load_late)
    thread.start()
    assert read_first.wait(5)
    with _loader_held(store):  # busy throughout: what catches the entry up is the deleting thread
        store.delete_memories("alice", [gone])
        assert store._sessions.current("alice", store.user_version("alice")) is loaded  # caught up in place
        assert loaded.version > before and gone not in loaded.session_of and loaded.members["alice-s0"] == kept
        assert store.cache_reads["sessions"].catch_ups == 1
        written.set()
        thread.join(5)
        assert [entry.version for entry in late] == [before] and store._sessions.get("alice") is loaded
    for query in QUERIES:
        ranked = [(hit.id, hit.score) for hit in store.session_search("alice", query, 200)]
        assert ranked == [(hit.id, hit.score) for hit in store._fts5_session_search("alice", query, 200)], query


def test_the_loader_catches_up_what_a_deletion_or_an_edit_of_this_process_left_behind(store: SqliteStorage) -> None:
    """Right after a deletion or an edit commits, the loader thread brings the entries it left
    behind to the new version by the changed rows: the next search finds them current, the same
    entries, and reads nothing."""
    index, sessions = store._term_index("alice"), store._session_index("alice")
    reads = store.cache_reads
    for change in (lambda: store.delete_memories("alice", ["alice-4", "alice-40"]),
                   lambda: store.update_memory("alice", "alice-10", text="Ana's sister moved to Oslo.")):
        counts = (reads["text"].catch_ups, reads["sessions"].catch_ups, reads["text"].reloads, reads["sessions"].reloads)
        change()
        _loaded(store)
        version = store.user_version("alice")
        assert store._terms.current("alice", version) is index and store._sessions.current("alice", version) is sessions
        assert (reads["text"].catch_ups, reads["sessions"].catch_ups, reads["text"].reloads, reads["sessions"].reloads) == (
            counts[0] + 1, counts[1] + 1, counts[2], counts[3])
    rows = reads["text"].rows
    # alice-11 holds alice-10's new text as its context
    assert [hit.id for hit in store.text_search("alice", "Oslo", MemoryFilters(), 3)] == ["alice-10", "alice-11"]
    assert [hit.id for hit in store.session_search("alice", "Oslo", 3)] == ["alice-s3"]
    assert reads["text"].rows == rows


def test_sessions_rank_as_fts5_ranks_them_and_a_write_of_this_process_keeps_the_index_current(store: SqliteStorage) -> None:
    ties = 0
    for query in QUERIES:
        for limit in (3, 200):
            ranked, fts5 = _sessions(store, query, limit)
            assert ranked == fts5, (query, limit)
            ties += any(a[1] == b[1] for a, b in itertools.pairwise(fts5))
            sessions = store._sessions.current("alice", store.user_version("alice"))
            assert sessions is not None and sessions.terms.n == 100  # 300 memories in sessions of three
            index = sessions.terms
            phrases = store._conn().terms.phrases(query)
            assert index.best_among(
                phrases, partial(store._fts_totals, "session_docs_fts", "alice"), index.current(), limit=limit
            ) == ranked
    assert ties >= 2
    sister = _sessions(store, "sister", 200)[0]
    assert {session_id for session_id, _ in sister} == {f"alice-s{i // 3}" for i, text in enumerate(_texts(300)) if "sister" in text}

    # Writes grow documents (one that existed, alice-s99, and a new one, alice-s100), end facts and
    # add members: the same entry follows them, without a load, and still ranks as FTS5 does.
    loaded = store._sessions.current("alice", store.user_version("alice"))
    with store.write("alice"):
        store.insert_memory(
            MemoryRecord(id="alice-late", user_id="alice", text="Kenji's sister moved to Zanzibar.", created_at=1e9 + 400,
                         fingerprint="late", session_id="alice-s99"),
            np.ones(4, dtype=np.float32) / 2,
        )
    with store.write("alice"):
        _insert(store, "alice", ["Tom's sister moved to Zanzibar too.", "Zanzibar sister Zanzibar."], 300)
        store.update_memory("alice", "alice-297", state=SUPERSEDED, expired_at=2e9, invalid_at=2e9)
    sessions = store._sessions.current("alice", store.user_version("alice"))
    assert sessions is loaded and sessions.terms.n == 101
    for query in [*QUERIES, "Zanzibar sister", "Zanzibar", "moved to Zanzibar", "sister moved", "Zanzibar Tom's"]:
        for limit in (3, 200):
            ranked, fts5 = _sessions(store, query, limit)
            assert ranked == fts5, (query, limit)
    assert [session_id for session_id, _ in _sessions(store, "Zanzibar", 3)[0]] == ["alice-s100", "alice-s99"]
    with store.write("alice"):  # inside a write: the query
        queried = store.session_members("alice", ["alice-s99", "alice-s100"], MemoryFilters())
    assert store.session_members("alice", ["alice-s99", "alice-s100"], MemoryFilters()) == queried == {
        "alice-s99": ["alice-298", "alice-299", "alice-late"],
        "alice-s100": ["alice-300", "alice-301"],
    }
    assert store._sessions.current("alice", store.user_version("alice")) is loaded
    # A fact current again must take its place among its session's members: the entry is left behind.
    store.update_memory("alice", "alice-297", state="active", expired_at=None, invalid_at=None)
    assert store._sessions.current("alice", store.user_version("alice")) is None
    ranked, fts5 = _sessions(store, "Zanzibar sister", 200)
    assert ranked == fts5 and ranked[0][0] == "alice-s100"


def test_imported_session_documents_move_the_users_version(store: SqliteStorage) -> None:
    store._session_index("alice")
    version = store.user_version("alice")
    with _loader_held(store):
        store.load_sessions("alice", [("imported", "Tom's sister moved to Zanzibar.")])
        assert store.user_version("alice") == version + 1
        assert store._sessions.current("alice", store.user_version("alice")) is None
    ranked, fts5 = _sessions(store, "Zanzibar", 3)
    assert ranked == fts5 and [session_id for session_id, _ in ranked] == ["imported"]


def test_session_members_of_current_facts_come_from_the_session_index(store: SqliteStorage) -> None:
    wanted = ["alice-s0", "alice-s2", "alice-s33", "alice-s99", "no-such-session", "alice-s2"]
    with store.write("alice"):  # inside a write: the query
        queried = store.session_members("alice", wanted, MemoryFilters())
        everything = store.session_members("alice", wanted, MemoryFilters(include_superseded=True))
    store._session_index("alice")
    assert store.session_members("alice", wanted, MemoryFilters()) == queried == {
        "alice-s0": ["alice-1", "alice-2"],  # alice-0 is a past version
        "alice-s2": ["alice-6", "alice-8"],
        "alice-s33": ["alice-99", "alice-100", "alice-101"],
        "alice-s99": ["alice-297", "alice-298", "alice-299"],
    }
    assert store.session_members("alice", wanted, MemoryFilters(include_superseded=True)) == everything
    assert everything["alice-s0"] == ["alice-0", "alice-1", "alice-2"]
    # A past version made after the load: the index is behind, the query answers.
    store.update_memory("alice", "alice-100", state=SUPERSEDED, expired_at=2e9, invalid_at=2e9)
    assert store.session_members("alice", ["alice-s33"], MemoryFilters()) == {"alice-s33": ["alice-99", "alice-101"]}


def test_searches_between_the_inserts_edits_and_deletes_of_one_write_rank_as_fts5(store: SqliteStorage) -> None:
    """Inside a write the table's totals are read once and then follow its inserts
    (``_memory_totals``); any other change of the memories reads them again. Before the write's
    first change they are what committed (FTS5's record); after one, FTS5's pending rows count."""
    with store.write("alice"):
        assert store._committed_totals("memories_fts") == store._fts_totals("memories_fts", "alice", ["sister"])
        for query in QUERIES:
            ranked, fts5 = _both(store, query, MemoryFilters())
            assert ranked == fts5, query
        for step, text in enumerate(_texts(12, offset=30)):
            _insert(store, "alice", [text], 500 + step)  # sessions of three: contexts count too
            if step == 4:
                store.update_memory("alice", "alice-501", text="Kenji's sister moved to Osaka for good.")
            if step == 8:
                store.delete_memories("alice", ["alice-502"])
            for query in QUERIES:
                ranked, fts5 = _both(store, query, MemoryFilters())
                assert ranked == fts5, (step, query)


def test_a_write_loads_the_session_index_a_user_never_had_and_the_next_search_ranks_sessions_in_process(tmp_path: Path) -> None:
    """Searches load a user's indexes only after ``index_after_searches`` of them; a write's lookups
    load the term index at once, and the session index with it, before the write's first change,
    once per process: from then on this process's writes keep both current."""
    store = SqliteStorage(tmp_path / "writes.db", index_after_searches=1_000)
    with store.write("alice"):
        _insert(store, "alice", _texts(60), 0)
    assert store._sessions.get("alice") is None  # inserts alone look nothing up
    with store.write("alice"):
        assert store._sessions.get("alice") is None
        store.text_search("alice", "sister", MemoryFilters(), 8)  # a dedup lookup, before any change
        loaded = store._sessions.get("alice")
        assert loaded is not None and loaded.terms.n == 20 and loaded.version == store.user_version("alice")
        _insert(store, "alice", ["Priya's sister moved to Zanzibar."], 60)  # a new session, alice-s20
    assert store._sessions.current("alice", store.user_version("alice")) is loaded and loaded.terms.n == 21
    for query in QUERIES + ["Zanzibar"]:
        ranked = store.session_search("alice", query, 5)
        assert [(s.id, s.score) for s in ranked] == [(s.id, s.score) for s in store._fts5_session_search("alice", query, 5)]
    assert [s.id for s in store.session_search("alice", "Zanzibar", 5)] == ["alice-s20"]
    assert store._searches == {}  # no search counted towards a load, none asked for

    # Left behind by an edit (a rebuilt document), the entry catches up at the next search (the
    # loader, which would catch it up first, is held meanwhile).
    with _loader_held(store):
        store.update_memory("alice", "alice-3", text="Tom likes green tea in Porto.")
        assert store._sessions.get("alice") is loaded and store._sessions.current("alice", store.user_version("alice")) is None
        ranked = store.session_search("alice", "green tea", 5)
        assert [(s.id, s.score) for s in ranked] == [(s.id, s.score) for s in store._fts5_session_search("alice", "green tea", 5)]
        assert ranked[0].id == "alice-s1" and store._sessions.current("alice", store.user_version("alice")) is loaded
    store.close()
