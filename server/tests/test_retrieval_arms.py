"""Each retrieval arm and stage alone, on a real SQLite file with the real wordllama embedder.

Fusion functions and neighbour context are pure and tested with exact numbers; the arms and the
retriever are tested by the rankings they give over small, hand-written stores.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import apsw
import pytest

from cortadel_server.providers.embedding import WordLlamaEmbedder
from cortadel_server.retrieval.arms import ARMS, Arm, ArmConfig, ArmContext
from cortadel_server.retrieval.fusion import dense_ranks, fuse_ranks, score_fusion
from cortadel_server.retrieval.search import (
    HYBRID,
    Fusion,
    Retriever,
    SearchConfig,
    SearchRequest,
)
from cortadel_server.retrieval.stages import (
    NeighbourConfig,
    add_neighbours,
    spread_sessions,
    weigh_questions,
    weigh_speaker,
)
from cortadel_server.storage.base import (
    EntityMention,
    MemoryFilters,
    MemoryRecord,
    ScoredId,
)
from cortadel_server.storage.migrations import MIGRATIONS, migrate
from cortadel_server.storage.sqlite import SqliteStorage, user_key
from cortadel_server.text import fingerprint


@pytest.fixture(scope="module")
def embedder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WordLlamaEmbedder]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
        yield WordLlamaEmbedder()


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[SqliteStorage]:
    storage = SqliteStorage(tmp_path / "arms.db")
    yield storage
    storage.close()


class Writer:
    """Inserts memories the way the pipeline does (embedded text, increasing created_at)."""

    def __init__(self, store: SqliteStorage, embedder: WordLlamaEmbedder) -> None:
        self.store = store
        self.embedder = embedder
        self.clock = 1_700_000_000.0

    def add(self, user: str, text: str, session: str | None = None, **fields: object) -> str:
        self.clock += 1
        record = MemoryRecord(id=str(uuid.uuid4()), user_id=user, text=text, created_at=self.clock,
                              fingerprint=fingerprint(text), session_id=session, **fields)  # type: ignore[arg-type]
        self.store.insert_memory(record, self.embedder.embed([text])[0])
        return record.id


@pytest.fixture()
def writer(store: SqliteStorage, embedder: WordLlamaEmbedder) -> Writer:
    return Writer(store, embedder)


def run_arm(store: SqliteStorage, embedder: WordLlamaEmbedder, arm: Arm, query: str, user: str = "u",
            filters: MemoryFilters | None = None, now: float | None = None) -> list[ScoredId]:
    request = SearchRequest(user, query, filters=filters or MemoryFilters())
    ctx = ArmContext(store, request, lambda: embedder.embed([query])[0], now or time.time())
    return ARMS[arm](ctx, ArmConfig(arm), 20)


# -- fusion -----------------------------------------------------------------------------------------
def test_dense_ranks_share_a_rank_between_equal_scores() -> None:
    found = [ScoredId("a", 3.0), ScoredId("b", 3.0), ScoredId("c", 2.0), ScoredId("d", 1.0), ScoredId("e", 1.0)]
    assert dense_ranks(found) == {"a": 1, "b": 1, "c": 2, "d": 3, "e": 3}


def test_fuse_ranks_weighs_each_arm() -> None:
    fused = dict(fuse_ranks({"text": {"a": 1, "b": 2}, "session": {"a": 1, "b": 1, "c": 1}}, {"text": 1.0, "session": 0.5}, k=10))
    assert fused["a"] == pytest.approx(1 / 11 + 0.5 / 11)
    assert fused["b"] == pytest.approx(1 / 12 + 0.5 / 11)
    assert fused["c"] == pytest.approx(0.5 / 11)


def test_score_fusion_keeps_the_margin_of_a_clear_winner() -> None:
    text = [ScoredId("a", 9.0), ScoredId("b", 3.0), ScoredId("c", 1.0)]
    vector = [ScoredId("c", 0.62), ScoredId("b", 0.61), ScoredId("a", 0.60)]
    fused = score_fusion({"text": text, "vector": vector}, {"text": 1.0, "vector": 0.2})
    assert [mid for mid, _ in fused] == ["a", "b", "c"]
    # each arm divided by its best score: text 9 → 1.0, 3 → 1/3; vector 0.62 → 1.0, 0.60 → 0.60/0.62
    assert dict(fused) == pytest.approx({"a": 1.0 + 0.2 * 0.60 / 0.62, "b": 1 / 3 + 0.2 * 0.61 / 0.62, "c": 1 / 9 + 0.2})
    # Equal-weight RRF over the same lists sees three near-ties: the margin is gone.
    rrf = dict(fuse_ranks({"text": dense_ranks(text), "vector": dense_ranks(vector)}))
    assert rrf["a"] == pytest.approx(rrf["c"]) and rrf["a"] / rrf["b"] < 1.001
    # The lowest of scores that reach below zero still counts (fused scores stay above zero).
    lowest = dict(score_fusion({"vector": [ScoredId("x", 0.5), ScoredId("y", -0.5)]}))
    assert lowest["x"] == 1.0 and 0 < lowest["y"] <= 1e-6
    # One score for all: each gets the full weight.
    assert score_fusion({"session": [ScoredId("x", 4.0), ScoredId("y", 4.0)]}, {"session": 0.3}) == [("x", 0.3), ("y", 0.3)]


# -- neighbour context ------------------------------------------------------------------------------
def test_neighbours_get_a_share_of_their_hits_score() -> None:
    fused = [("m2", 1.0), ("x", 0.5), ("m4", 0.12)]
    sessions = {"m2": "s1", "x": None, "m4": "s1"}
    members = {"s1": ["m1", "m2", "m3", "m4", "m5"]}
    out, lent = add_neighbours(fused, sessions, members, NeighbourConfig(depth=1, window=2, share=0.2))
    assert out == [("m2", 1.0), ("x", 0.5), ("m1", pytest.approx(0.2)), ("m3", pytest.approx(0.2)),
                   ("m4", pytest.approx(0.16))]
    assert lent == {"m1": "m2", "m3": "m2", "m4": "m2"}
    # depth 0 leaves the list as it was
    assert add_neighbours(fused, sessions, members, NeighbourConfig(depth=0)) == (fused, {})


def test_spread_sessions_decays_repeat_hits_of_one_session() -> None:
    fused = [("a1", 1.0), ("a2", 0.9), ("a3", 0.8), ("b1", 0.6), ("x", 0.5)]
    sessions = {"a1": "a", "a2": "a", "a3": "a", "b1": "b", "x": None}
    spread = spread_sessions(fused, sessions, 0.5)
    assert spread == [("a1", 1.0), ("b1", 0.6), ("x", 0.5), ("a2", pytest.approx(0.45)), ("a3", pytest.approx(0.2))]
    assert spread_sessions(fused, sessions, 1.0) == fused


@pytest.mark.parametrize(
    ("text", "asks"),
    [("Where did you go?", True), ('She said "really?"', True), ("Great! What did you paint?  ", True),
     ("Is it? I think so.", False), ("We went to Lisbon.", False), ("", False)],
)
def test_is_question_reads_the_end_of_the_memory(text: str, asks: bool) -> None:
    from cortadel_server.retrieval.stages import is_question

    assert is_question(text) is asks


def test_weigh_questions_lowers_memories_that_ask() -> None:
    fused = [("q", 1.0), ("s", 0.9), ("unknown", 0.85)]
    texts = {"q": "Where did you go for the workshop?", "s": "We went to Lisbon."}
    assert weigh_questions(fused, texts, 0.8) == [("s", 0.9), ("unknown", 0.85), ("q", 0.8)]
    assert weigh_questions(fused, texts, 1.0) == fused


def test_replies_only_lends_from_a_question_to_the_memory_after_it() -> None:
    fused = [("q", 1.0), ("s", 0.9), ("q2", 0.5)]
    sessions = {"q": "s1", "s": "s1", "q2": "s2"}
    members = {"s1": ["a", "q", "r", "s", "t"], "s2": ["q2"]}
    texts = {"q": "Mel: What did you paint?", "s": "Caroline: A sunset.", "q2": "Mel: And then?"}
    config = NeighbourConfig(depth=3, window=1, share=0.3, replies_only=True)
    out, lent = add_neighbours(fused, sessions, members, config, texts)
    # Only the question lends, only forward ("a" before it gets nothing); "s" states, so "t" gets
    # nothing; "q2" asks but is the last of its session.
    assert out == [("q", 1.0), ("s", 0.9), ("q2", 0.5), ("r", pytest.approx(0.3))]
    assert lent == {"r": "q"}
    # A reply already found adds the share to its own score.
    out, _ = add_neighbours([("q", 1.0), ("r", 0.5)], sessions, members, config, texts)
    assert out == [("q", 1.0), ("r", pytest.approx(0.8))]


def test_weigh_speaker_raises_what_the_asked_about_person_said() -> None:
    fused = [("m", 1.0), ("c", 0.9), ("x", 0.5)]
    texts = {"m": "Melanie: Thanks, Caroline!", "c": "Caroline: I went to the support group.", "x": "Caroline went too."}
    assert weigh_speaker(fused, texts, "Caroline", 1.2) == [("c", pytest.approx(1.08)), ("m", 1.0), ("x", 0.5)]
    assert weigh_speaker(fused, texts, None, 1.2) == fused
    assert weigh_speaker(fused, texts, "Melanie", 1.2) == [("m", pytest.approx(1.2)), ("c", 0.9), ("x", 0.5)]


# -- session documents (storage) --------------------------------------------------------------------
def _doc(store: SqliteStorage, user: str, session: str) -> str | None:
    rows = store._rows("SELECT text FROM session_docs WHERE user_id = ? AND session_id = ?", (user, session))
    return rows[0][0] if rows else None


def test_session_documents_follow_inserts_updates_and_deletes(store: SqliteStorage, writer: Writer) -> None:
    first = writer.add("u", "We planned a hiking trip.", "s1")
    second = writer.add("u", "The Alps in August, I hope.", "s1")
    writer.add("u", "Groceries: oat milk.", "s2")
    writer.add("u", "No session here.")
    assert _doc(store, "u", "s1") == "We planned a hiking trip.\nThe Alps in August, I hope."
    assert [s.id for s in store.session_search("u", "hiking alps", 5)] == ["s1"]
    store.update_memory("u", second, text="The Dolomites in August.")
    assert _doc(store, "u", "s1") == "We planned a hiking trip.\nThe Dolomites in August."
    assert store.session_search("u", "alps", 5) == []
    assert store.delete_memories("u", [first]) == 1
    assert _doc(store, "u", "s1") == "The Dolomites in August."
    store.delete_memories("u", [second])
    assert _doc(store, "u", "s1") is None
    assert store.session_search("u", "dolomites", 5) == []
    assert store._rows("SELECT count(*) FROM session_docs_fts WHERE session_docs_fts MATCH ?", (store._conn().terms.match(user_key("u"), "dolomites"),)) == [(0,)]


def test_session_search_and_members_are_user_scoped_and_filtered(store: SqliteStorage, writer: Writer) -> None:
    now = time.time()
    kept = writer.add("alice", "Alice booked the ferry to Crete.", "trip")
    writer.add("alice", "Alice booked the ferry to Rhodes.", "trip", invalid_at=now, expired_at=now, state="superseded")
    writer.add("bob", "Bob booked the ferry to Crete.", "trip")
    assert [s.id for s in store.session_search("alice", "ferry crete", 5)] == ["trip"]
    assert store.session_search("carol", "ferry crete", 5) == []
    assert store.session_members("alice", ["trip", "none"], MemoryFilters()) == {"trip": [kept]}
    assert len(store.session_members("alice", ["trip"], MemoryFilters(include_superseded=True))["trip"]) == 2


def test_migration_builds_session_documents_for_existing_memories(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = apsw.Connection(str(path))
    conn.execute("CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    conn.execute(MIGRATIONS[0].sql)
    conn.execute("INSERT INTO schema_migrations VALUES (?, datetime('now'))", (MIGRATIONS[0].name,))
    for rowid, (text, session, created) in enumerate(
        [("second turn", "s1", 2.0), ("first turn", "s1", 1.0), ("loose fact", None, 3.0)], start=1
    ):
        conn.execute(
            "INSERT INTO memories(rowid, id, user_id, user_key, text, fingerprint, session_id, created_at) "
            "VALUES (?, ?, 'u', ?, ?, '', ?, ?)",
            (rowid, f"m{rowid}", user_key("u"), text, session, created),
        )
    assert migrate(conn) == [step.name for step in MIGRATIONS[1:]]
    conn.close()
    store = SqliteStorage(path)
    assert _doc(store, "u", "s1") == "first turn\nsecond turn"
    assert [s.id for s in store.session_search("u", "turn", 5)] == ["s1"]
    assert store._rows("SELECT id, context FROM memories ORDER BY id") == [("m1", "first turn"), ("m2", ""), ("m3", "")]
    assert [s.id for s in store.text_search("u", "first", MemoryFilters(), 5)] == ["m2", "m1"]
    store.close()


# -- the arms ---------------------------------------------------------------------------------------
def test_session_arm_ranks_the_episode_whose_words_are_spread_over_turns(store: SqliteStorage, embedder: WordLlamaEmbedder, writer: Writer) -> None:
    plan = [writer.add("u", "Let's plan the hiking trip.", "s1"), writer.add("u", "Sure, the Alps sound great.", "s1"),
            writer.add("u", "I'll book the train.", "s1")]
    other = [writer.add("u", "The Alps were on TV last night.", "s2"), writer.add("u", "Nice documentary.", "s2")]
    found = run_arm(store, embedder, Arm.SESSION, "hiking in the Alps")
    # s1 holds both words, s2 one: all of s1 first, sharing one score, in write order.
    assert [s.id for s in found] == plan + other
    assert dense_ranks(found) == {plan[0]: 1, plan[1]: 1, plan[2]: 1, other[0]: 2, other[1]: 2}


def test_entity_arm_finds_facts_linked_to_the_named_entity(store: SqliteStorage, embedder: WordLlamaEmbedder, writer: Writer) -> None:
    carol = writer.add("u", "She joined Initech as a designer.")
    both = writer.add("u", "Carol and Dave met at the office.")
    writer.add("u", "Dave likes chess.")
    store.link_entities("u", carol, [EntityMention("Carol", "person", "carol")])
    store.link_entities("u", both, [EntityMention("Carol", "person", "carol"), EntityMention("Dave", "person", "dave")])
    found = run_arm(store, embedder, Arm.ENTITY, "Where does Carol work?")
    assert {s.id for s in found} == {carol, both}
    assert run_arm(store, embedder, Arm.ENTITY, "Did Carol meet Dave?")[0].id == both
    assert run_arm(store, embedder, Arm.ENTITY, "Where does Erin work?") == []
    assert run_arm(store, embedder, Arm.ENTITY, "Where does Carol work?", user="other") == []


def test_time_arm_keeps_facts_valid_in_the_named_window(store: SqliteStorage, embedder: WordLlamaEmbedder, writer: Writer) -> None:
    def at(y: int, m: int, d: int) -> float:
        return datetime(y, m, d, tzinfo=UTC).timestamp()

    may_concert = writer.add("u", "Went to a jazz concert.", valid_at=at(2023, 5, 14))
    may_walk = writer.add("u", "Long walk by the river.", valid_at=at(2023, 5, 20))
    june_concert = writer.add("u", "Went to a rock concert.", valid_at=at(2023, 6, 2))
    now = at(2024, 1, 10)
    found = run_arm(store, embedder, Arm.TIME, "Which concert did I go to in May 2023?", now=now)
    assert [s.id for s in found] == [may_concert, may_walk]      # BM25 hit first, the rest by cosine
    last_year = run_arm(store, embedder, Arm.TIME, "concert last year", now=now)
    assert {s.id for s in last_year[:2]} == {may_concert, june_concert} and last_year[2].id == may_walk
    assert run_arm(store, embedder, Arm.TIME, "Which concert did I go to?", now=now) == []


# -- the retriever ----------------------------------------------------------------------------------
def test_context_column_finds_the_reply_to_a_matching_question(store: SqliteStorage, writer: Writer) -> None:
    asked = writer.add("u", "Melanie: Where did you go for the pottery workshop?", "s1")
    answer = writer.add("u", "Caroline: Lisbon! The tiles there were lovely.", "s1")
    again = writer.add("u", "Caroline: Pottery again next week?")             # no session: no context
    writer.add("u", "Caroline: My cat knocked over a vase.", "s2")
    found = store.text_search("u", "pottery workshop", MemoryFilters(), 10)
    # One query word in the text itself outweighs both in the context (weight 0.3).
    assert [s.id for s in found] == [asked, again, answer]
    alone = store.text_search("u", "pottery workshop", MemoryFilters(), 10, context_weight=0.0)
    assert [s.id for s in alone][:2] == [asked, again] and alone[2].score == 0.0
    # Deleting the question takes its words out of the reply's context too.
    store.delete_memories("u", [asked])
    assert answer not in [s.id for s in store.text_search("u", "workshop", MemoryFilters(), 10)]


def test_default_recipe_explains_each_hit(store: SqliteStorage, embedder: WordLlamaEmbedder, writer: Writer) -> None:
    asked = writer.add("u", "Melanie: Where did you go for the pottery workshop?", "s1")
    answer = writer.add("u", "Caroline: Lisbon! The tiles there were lovely.", "s1")
    writer.add("u", "Caroline: My cat knocked over a vase.", "s2")
    hits = Retriever(store, embedder).search(SearchRequest("u", "pottery workshop"))
    assert [h.memory.id for h in hits][:2] == [asked, answer]
    assert hits[0].attributes["arms"]["text"] == {"rank": 1}
    assert hits[1].attributes["arms"]["text"] == {"rank": 2}
    assert hits[0].attributes["arms"]["session"] == hits[1].attributes["arms"]["session"] == {"rank": 1}
    assert set(hits[0].attributes["timings_ms"]) >= {"embed_ms", "text_ms", "vector_ms", "session_ms", "fusion_ms"}


def test_neighbour_context_brings_the_turn_before_a_hit(store: SqliteStorage, embedder: WordLlamaEmbedder, writer: Writer) -> None:
    before = writer.add("u", "Caroline: Guess where I was on Saturday.", "s1")
    hit = writer.add("u", "Melanie: At the pottery workshop in Lisbon?", "s1")
    writer.add("u", "Caroline: The vase broke.", "s2")
    config = SearchConfig(arms=(ArmConfig(Arm.TEXT),), neighbours=NeighbourConfig(depth=1, window=1, share=0.2))
    retriever = Retriever(store, embedder)
    hits = retriever.search(SearchRequest("u", "pottery workshop"), config)
    assert [h.memory.id for h in hits] == [hit, before]
    assert hits[1].attributes["context_of"] == hit and hits[1].attributes["arms"] == {}
    assert hits[1].attributes["fusion_score"] == pytest.approx(hits[0].attributes["fusion_score"] * 0.2)
    plain = retriever.search(SearchRequest("u", "pottery workshop"), dataclasses.replace(config, neighbours=None))
    assert [h.memory.id for h in plain] == [hit]


def test_include_session_arm_switches_the_arm_on_and_off(store: SqliteStorage, embedder: WordLlamaEmbedder, writer: Writer) -> None:
    ids = [writer.add("u", "Tomatoes by the wall.", "g"), writer.add("u", "Planning the garden.", "g")]
    retriever = Retriever(store, embedder)
    text_only = SearchConfig(arms=(ArmConfig(Arm.TEXT),))
    assert [h.memory.id for h in retriever.search(SearchRequest("u", "garden"), text_only)] == ids[1:]
    with_session = retriever.search(SearchRequest("u", "garden", include_session_arm=True), text_only)
    assert [h.memory.id for h in with_session] == [ids[1], ids[0]]
    assert with_session[1].attributes["arms"] == {"session": {"rank": 1}}
    without = HYBRID.for_request(SearchRequest("u", "garden", include_session_arm=False))
    assert [a.arm for a in without.arms] == [Arm.TEXT, Arm.VECTOR]
    assert HYBRID.for_request(SearchRequest("u", "garden")) is HYBRID


def test_default_recipe_keeps_current_facts_only_and_one_hit_per_memory(store: SqliteStorage, embedder: WordLlamaEmbedder, writer: Writer) -> None:
    now = time.time()
    new = writer.add("u", "User lives in Porto.", "move")
    writer.add("u", "User lives in Braga.", "move", invalid_at=now, expired_at=now, state="superseded")
    near = writer.add("u", "User likes the river in Porto.", "move")
    writer.add("v", "User lives in Porto too.", "move")
    hits = Retriever(store, embedder).search(SearchRequest("u", "where does the user live Porto"))
    ids = [h.memory.id for h in hits]
    assert sorted(ids) == sorted([new, near]) and ids[0] == new
    assert len(ids) == len(set(ids))
    scoped = Retriever(store, embedder).search(SearchRequest("u", "Porto", filters=MemoryFilters(session_id="other")))
    assert scoped == []


def test_score_fusion_is_selectable_per_config(store: SqliteStorage, embedder: WordLlamaEmbedder, writer: Writer) -> None:
    strong = writer.add("u", "The invoice number is 4471 for the boiler repair.")
    writer.add("u", "Paid the plumber.")
    config = SearchConfig(arms=(ArmConfig(Arm.TEXT), ArmConfig(Arm.VECTOR, weight=0.2)), fusion=Fusion.SCORE)
    hits = Retriever(store, embedder).search(SearchRequest("u", "boiler invoice"), config)
    assert hits[0].memory.id == strong
    fused = [h.attributes["fusion_score"] for h in hits]  # hit.score is the reference-scale rrf_score
    assert 1.0 <= fused[0] <= 1.2      # BM25's best (1.0) plus at most the vector arm's weight
    assert 0.0 <= fused[1] <= 0.2      # no word in common: the vector arm's share only


def test_session_decay_lets_another_episode_into_the_head(store: SqliteStorage, embedder: WordLlamaEmbedder, writer: Writer) -> None:
    a1 = writer.add("u", "Kayak trip on the lake, kayak rental booked.", "a")
    a2 = writer.add("u", "The kayak paddles were heavy.", "a")
    b1 = writer.add("u", "Thinking about a kayak for next summer.", "b")
    config = SearchConfig(arms=(ArmConfig(Arm.TEXT),), fusion=Fusion.SCORE)
    retriever = Retriever(store, embedder)
    plain = [h.memory.id for h in retriever.search(SearchRequest("u", "kayak"), config)]
    assert plain == [a1, a2, b1], plain
    spread = [h.memory.id for h in retriever.search(SearchRequest("u", "kayak"), dataclasses.replace(config, session_decay=0.01))]
    assert spread == [a1, b1, a2], (spread, plain)


def test_default_recipe_prefers_a_statement_to_an_equally_matching_question(store: SqliteStorage, embedder: WordLlamaEmbedder, writer: Writer) -> None:
    question = writer.add("u", "Did you adopt the puppy from the shelter?", "s1")
    writer.add("u", "Not yet, maybe next month.", "s1")
    statement = writer.add("u", "We adopted the puppy from the shelter.", "s2")
    retriever = Retriever(store, embedder)
    hits = retriever.search(SearchRequest("u", "adopt puppy shelter"))
    assert [h.memory.id for h in hits][:2] == [statement, question]
    plain = retriever.search(SearchRequest("u", "adopt puppy shelter"), dataclasses.replace(HYBRID, question_weight=1.0))
    before = {h.memory.id: h.attributes["fusion_score"] for h in plain}
    after = {h.memory.id: h.attributes["fusion_score"] for h in hits}
    assert after[question] == pytest.approx(0.8 * before[question])
    assert after[statement] == pytest.approx(before[statement])


def test_default_recipe_lifts_the_reply_of_the_asked_about_person(store: SqliteStorage, embedder: WordLlamaEmbedder, writer: Writer) -> None:
    writer.add("u", "Melanie: The kids loved the beach trip last weekend.", "s1")
    asked = writer.add("u", "Melanie: What motivated you to pursue counseling, Caroline?", "s1")
    reply = writer.add("u", "Caroline: My own journey and the support I got made a huge difference.", "s1")
    writer.add("u", "Melanie: Counseling sounds like hard work.", "s2")
    writer.add("u", "Caroline: I bought new running shoes.", "s2")
    query = SearchRequest("u", "What motivated Caroline to pursue counseling?")
    retriever = Retriever(store, embedder)
    hits = retriever.search(query)
    assert [h.memory.id for h in hits][:2] == [reply, asked]
    assert hits[0].attributes["context_of"] == asked and "context_of" not in hits[1].attributes
    # Without the reply lending and the speaker weighting the question stays first.
    before = retriever.search(query, dataclasses.replace(HYBRID, neighbours=None, speaker_weight=1.0))
    assert [h.memory.id for h in before][:2] == [asked, reply]
    fused = {h.memory.id: h.attributes["fusion_score"] for h in before}
    # The question's score before its own weighting (0.8) lends 0.3; the reply is Caroline's: x 1.2.
    assert hits[0].attributes["fusion_score"] == pytest.approx((fused[reply] + 0.3 * fused[asked] / 0.8) * 1.2)
    assert hits[1].attributes["fusion_score"] == pytest.approx(fused[asked])
