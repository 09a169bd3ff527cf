"""The writer and the enrichment runner in process, on a real SQLite file and the real embedder."""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import apsw
import pytest
from support.scripted_openai import Reply, ScriptedOpenAI

from cortadel_server.config import Settings
from cortadel_server.errors import StorageError
from cortadel_server.language.entities import EntityKind, EntityMention
from cortadel_server.pipeline.enrich import MAX_ATTEMPTS, Enricher
from cortadel_server.pipeline.llm import LlmJudge
from cortadel_server.pipeline.rules import RulesExtractor
from cortadel_server.pipeline.writer import ConversationTurn, Writer
from cortadel_server.providers import build_embedder
from cortadel_server.providers._http import RetryPolicy
from cortadel_server.providers.embedding.base import Embedder
from cortadel_server.providers.llm import OpenAIChatClient
from cortadel_server.storage.base import MemoryFilters
from cortadel_server.storage.sqlite import SqliteStorage

START = datetime(2026, 3, 31, 9, 0, tzinfo=UTC).timestamp()
DAY = 86_400.0


class Clock:
    """The writer's idea of now, moved by the test."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return build_embedder(Settings())


@pytest.fixture
def storage(tmp_path: Path, embedder: Embedder) -> Iterator[SqliteStorage]:
    store = SqliteStorage(tmp_path / "cortadel.db")
    store.ensure_vector_index(embedder.dim, "wordllama")
    yield store
    store.close()


@pytest.fixture
def clock() -> Clock:
    return Clock(START)


@pytest.fixture
def writer(storage: SqliteStorage, embedder: Embedder, clock: Clock) -> Writer:
    return Writer(storage, embedder, RulesExtractor(), clock=clock)


def say(writer: Writer, user: str, *contents: str) -> list[tuple[str, str | None]]:
    outcomes = writer.add_conversation(
        user, [ConversationTurn("user", c) for c in contents],
        is_agent_memory=False, app_name="tests", tags=[], project=None, session_id=None, transcript_path=None,
    )
    return [(o.event, o.memory) for o in outcomes]


def test_supersede_sets_both_time_axes(writer: Writer, storage: SqliteStorage, clock: Clock) -> None:
    [berlin] = writer.add_conversation("u", [ConversationTurn("user", "I live in Berlin.")], is_agent_memory=False,
                                       app_name=None, tags=[], project=None, session_id=None, transcript_path=None)
    clock.now = START + 100 * DAY  # 9 July 2026
    [paris] = writer.add_conversation("u", [ConversationTurn("user", "I moved to Paris last month.")], is_agent_memory=False,
                                      app_name=None, tags=[], project=None, session_id=None, transcript_path=None)
    assert paris.event == "SUPERSEDE"
    new, old = storage.get_memory("u", paris.id), storage.get_memory("u", berlin.id)
    assert new is not None and old is not None
    assert new.valid_at == datetime(2026, 6, 9, 9, 0, tzinfo=UTC).timestamp()
    assert (old.invalid_at, old.expired_at, old.superseded_by, old.state) == (new.valid_at, clock.now, new.id, "superseded")
    assert (old.valid_at, old.created_at) == (START, START)

    def texts(**filters: float) -> list[str]:
        rows, _ = storage.list_memories("u", MemoryFilters(**filters), offset=0, limit=10)
        return [r.text for r in rows]

    assert texts(as_of=START + DAY) == ["User lives in Berlin."]  # before the move
    assert texts(as_of=START + 90 * DAY) == ["User moved to Paris last month."]  # after it
    assert texts(known_at=START + 80 * DAY) == ["User lives in Berlin."]  # what we believed then
    assert [h.event for h in storage.history("u", old.id)] == ["ADD", "SUPERSEDE"]
    assert [h.event for h in storage.history("u", new.id)] == ["SUPERSEDE"]


def test_concurrent_identical_writes_store_one_fact(writer: Writer, storage: SqliteStorage) -> None:
    barrier = threading.Barrier(6)

    def write(_: int) -> str:
        barrier.wait()
        [(event, _)] = say(writer, "u", "I keep the spare key under the blue flowerpot.")
        return event

    with ThreadPoolExecutor(6) as pool:
        events = sorted(pool.map(write, range(6)))
    assert events == ["ADD"] + ["SKIP_DUPLICATE"] * 5
    assert storage.list_memories("u", MemoryFilters(include_superseded=True), offset=0, limit=10)[1] == 1


def test_touch_records_the_reconfirmation(writer: Writer, storage: SqliteStorage, clock: Clock) -> None:
    say(writer, "u", "I live in Lisbon.")
    clock.now += DAY
    [touched] = writer.add_conversation("u", [ConversationTurn("user", "Yes, I still live in Lisbon.")], is_agent_memory=False,
                                        app_name=None, tags=[], project=None, session_id=None, transcript_path=None)
    assert (touched.event, touched.memory) == ("TOUCH", "User lives in Lisbon.")
    record = storage.get_memory("u", touched.id)
    assert record is not None and record.updated_at == clock.now
    assert [h.event for h in storage.history("u", touched.id)] == ["ADD", "TOUCH"]


def test_add_text_verbatim_still_recognises_intent_and_falls_back_to_the_text(writer: Writer) -> None:
    add = lambda text, infer: writer.add_text("u", text, infer=infer, app_name=None, memory_type=None,
                                              metadata={}, project=None, tags=[], source="add")
    assert (add("Bob is my manager.", False).event, add("Paris is lovely in spring.", True).memory) == ("ADD", "Paris is lovely in spring.")
    forgotten = add("Forget everything about Bob.", False)
    assert (forgotten.event, forgotten.memory) == ("DELETE_ENTITY", "Bob is my manager.")
    nothing = add("Forget my phone number.", True)
    assert (nothing.event, nothing.id, nothing.error) == ("ERROR", None, "Nothing to forget: no current memory matches.")


def test_enrichment_links_aliases_to_one_entity(writer: Writer, storage: SqliteStorage) -> None:
    say(writer, "u", "I moved to NYC.", "I work at IBM.")
    say(writer, "u", "My sister lives in New York City.", "My brother works for International Business Machines.")
    pending = storage.list_memories("u", MemoryFilters(), offset=0, limit=10)[0]
    assert {m.extraction_status for m in pending} == {"pending"}
    while writer.enricher.run_once():
        pass
    rows = {m.text: m for m in storage.list_memories("u", MemoryFilters(), offset=0, limit=10)[0]}
    assert {m.extraction_status for m in rows.values()} == {"done"}
    city = {rows_id for rows_id in (s.id for s in storage.memories_for_entities("u", ["new york city"], MemoryFilters(), 10))}
    assert city == {rows["User moved to NYC."].id, rows["User's sister lives in New York City."].id}
    company = {s.id for s in storage.memories_for_entities("u", ["ibm"], MemoryFilters(), 10)}
    assert company == {rows["User works at IBM."].id, rows["User's brother works for International Business Machines."].id}


def test_enrichment_keeps_its_alias_index_only_while_no_other_write_changed_the_aliases(
    writer: Writer, storage: SqliteStorage,
) -> None:
    """The worker keeps a user's alias index from one claim to the next; an alias another write
    stores in between (a curation merge, an import) is in the next claim's index all the same."""
    say(writer, "u", "I moved to NYC.", "My uncle Robert lives in Boston.")
    while writer.enricher.run_once():
        pass
    facts = {m.text: m.id for m in storage.list_memories("u", MemoryFilters(), offset=0, limit=10)[0]}
    uncle = facts["User's uncle Robert lives in Boston."]
    storage.link_entities("u", uncle, [EntityMention("Bobby", EntityKind.PERSON, "robert")])  # another write: "Bobby" is Robert
    say(writer, "u", "My friend Bobby lives in Leeds.", "My cousin works in New York City.")
    while writer.enricher.run_once():
        pass
    facts = {m.text: m.id for m in storage.list_memories("u", MemoryFilters(), offset=0, limit=10)[0]}
    robert = {s.id for s in storage.memories_for_entities("u", ["robert"], MemoryFilters(), 10)}
    assert robert == {uncle, facts["User's friend Bobby lives in Leeds."]}
    city = {s.id for s in storage.memories_for_entities("u", ["new york city"], MemoryFilters(), 10)}
    assert city == {facts["User moved to NYC."], facts["User's cousin works in New York City."]}


def test_one_run_enriches_a_users_queued_facts_together_and_a_failing_one_on_its_own(
    writer: Writer, storage: SqliteStorage, tmp_path: Path,
) -> None:
    say(writer, "u", "I moved to NYC.", "I work at IBM.", "My sister lives in New York City.")
    say(writer, "v", "I live in Leeds.")
    say(writer, "u", "My brother works for International Business Machines.")
    facts = {m.text: m.id for m in storage.list_memories("u", MemoryFilters(), offset=0, limit=10)[0]}
    # A database fault on one fact's entity link (a trigger in the file, as a full disk or a bad
    # page would fail it): the run's shared transaction rolls back, then each fact goes alone.
    database = apsw.Connection(str(tmp_path / "cortadel.db"))
    database.execute(
        "CREATE TRIGGER refuse_link BEFORE INSERT ON memory_entities WHEN NEW.memory_id = ? "
        "BEGIN SELECT RAISE(ABORT, 'disk says no'); END".replace("?", f"'{facts['User works at IBM.']}'")
    )
    assert writer.enricher.run_once() is True
    status = {m.text: m.extraction_status for m in storage.list_memories("u", MemoryFilters(), offset=0, limit=10)[0]}
    assert status == {
        "User moved to NYC.": "done", "User works at IBM.": "pending", "User's sister lives in New York City.": "done",
        "User's brother works for International Business Machines.": "done",
    }  # every job of u in one run, v's left for the next
    assert [m.extraction_status for m in storage.list_memories("v", MemoryFilters(), offset=0, limit=10)[0]] == ["pending"]
    assert list(database.execute("SELECT user_id, memory_id, status, attempts, last_error FROM jobs ORDER BY id")) == [
        ("u", facts["User works at IBM."], "queued", 1, "StorageError: database error: disk says no"),
        ("v", storage.list_memories("v", MemoryFilters(), offset=0, limit=1)[0][0].id, "queued", 0, None),
    ]
    city = {s.id for s in storage.memories_for_entities("u", ["new york city"], MemoryFilters(), 10)}
    assert city == {facts["User moved to NYC."], facts["User's sister lives in New York City."]}
    database.execute("DROP TRIGGER refuse_link")
    database.close()
    later = Enricher(storage, writer.taxonomy, clock=lambda: time.time() + 10)  # past the failed job's back-off
    while later.run_once():
        pass
    # the long name was linked first this time, so it is the canonical one
    company = {s.id for s in storage.memories_for_entities("u", ["international business machines"], MemoryFilters(), 10)}
    assert company == {facts["User works at IBM."], facts["User's brother works for International Business Machines."]}
    assert storage.pending_jobs() == 0


def test_jobs_whose_end_the_database_failed_to_record_are_run_again_once_it_answers(
    writer: Writer, storage: SqliteStorage, tmp_path: Path,
) -> None:
    say(writer, "u", "I moved to NYC.", "I work at IBM.")
    facts = {m.text: m.id for m in storage.list_memories("u", MemoryFilters(), offset=0, limit=10)[0]}
    database = apsw.Connection(str(tmp_path / "cortadel.db"))
    database.execute("CREATE TRIGGER keep_jobs BEFORE DELETE ON jobs BEGIN SELECT RAISE(ABORT, 'disk says no'); END")
    with pytest.raises(StorageError, match="disk says no"):
        writer.enricher.run_once()  # the facts' enrichment committed; finishing their jobs failed
    assert list(database.execute("SELECT status, attempts FROM jobs")) == [("running", 1), ("running", 1)]
    database.execute("DROP TRIGGER keep_jobs")
    database.close()
    # Still claimed by this live process, so no other worker would take them: this one queues them again.
    assert writer.enricher.run_once() is True
    assert storage.pending_jobs() == 0
    for memory_id in facts.values():  # run twice: the second time finds the same entities
        entities = [h.detail["entities"] for h in storage.history("u", memory_id) if h.event == "ENRICH"]
        assert len(entities) == 2 and entities[0] == entities[1]
    assert {s.id for s in storage.memories_for_entities("u", ["ibm"], MemoryFilters(), 10)} == {facts["User works at IBM."]}


def test_interrupted_jobs_run_after_a_restart(writer: Writer, storage: SqliteStorage, clock: Clock) -> None:
    say(writer, "u", "My dentist is Dr. Okafor in Leeds.")
    assert storage.claim_job(time.time() + 1) is not None  # claimed by a process that then died
    assert storage.claim_job(time.time() + 1) is None
    restarted = Enricher(storage, writer.taxonomy, clock=lambda: time.time() + 1)
    restarted.start()
    try:
        deadline = time.time() + 5
        while storage.list_memories("u", MemoryFilters(), offset=0, limit=1)[0][0].extraction_status != "done":
            assert time.time() < deadline, "the requeued job never ran"
            time.sleep(0.02)
    finally:
        restarted.stop()
    [memory] = storage.list_memories("u", MemoryFilters(), offset=0, limit=1)[0]
    assert [h.detail.get("entities") for h in storage.history("u", memory.id) if h.event == "ENRICH"] == [["dr okafor", "leeds"]]


def test_a_failing_job_backs_off_then_marks_the_fact_failed(writer: Writer, storage: SqliteStorage) -> None:
    [(_, _)] = say(writer, "u", "I like hiking.")
    [memory] = storage.list_memories("u", MemoryFilters(), offset=0, limit=1)[0]
    job = storage.claim_job(time.time() + 1)
    assert job is not None
    storage.finish_job(job.id)
    storage.enqueue_job("not-a-job-kind", "u", memory.id, {})
    now = [time.time() + 1]
    enricher = Enricher(storage, writer.taxonomy, clock=lambda: now[0])
    waits = []
    for attempt in range(1, MAX_ATTEMPTS + 1):
        assert enricher.run_once() is True
        if attempt < MAX_ATTEMPTS:
            assert enricher.run_once() is False  # not due yet: backing off
            waits.append(2.0 * 2 ** (attempt - 1))
            now[0] += waits[-1]
    assert waits == [2.0, 4.0, 8.0, 16.0]
    assert enricher.run_once() is False  # given up, not retried
    assert storage.get_memory("u", memory.id).extraction_status == "failed"  # type: ignore[union-attr]


def test_a_ten_turn_conversation_stores_its_six_facts_every_time(writer: Writer) -> None:
    turns = [
        "Hi!", "I live in Porto.", "What's the weather like?", "I work at a bakery called Sol.",
        "My partner is Inês.", "Thanks!", "I only bake sourdough on Fridays.", "Can you suggest a recipe?",
        "I'm allergic to walnuts.", "My goal is to open a second shop in 2027.",
    ]
    wall, cpu = [], []
    for run in range(21):
        started, started_cpu = time.perf_counter(), time.thread_time()
        results = say(writer, f"perf-{run}", *turns)
        wall.append((time.perf_counter() - started) * 1000)
        cpu.append((time.thread_time() - started_cpu) * 1000)
        assert [e for e, _ in results] == ["ADD"] * 6
    # Timing is reported, not asserted: speed is measured by `make bench-pipeline`, on a quiet machine.
    print(f"\n10-turn conversation: p50 {statistics.median(wall):.1f} ms wall, {statistics.median(cpu):.1f} ms CPU")


def test_an_ambiguous_candidate_gets_one_llm_verdict(storage: SqliteStorage, embedder: Embedder) -> None:
    with ScriptedOpenAI() as api:
        chat = OpenAIChatClient(api.v1_url, model="judge", timeout=2, policy=RetryPolicy(base_delay=0.01))
        try:
            writer = Writer(storage, embedder, RulesExtractor(), judge=LlmJudge(chat))
            [(added, _)] = say(writer, "u", "I am learning the piano.")
            assert added == "ADD" and api.requests == []  # nothing to compare with: no call
            [piano] = storage.list_memories("u", MemoryFilters(), offset=0, limit=1)[0]
            api.enqueue("/v1/chat/completions", Reply.chat({"verdict": "update", "existing_id": piano.id}))
            assert say(writer, "u", "I am learning the piano with a teacher.") == [("SUPERSEDE", "User is learning the piano with a teacher.")]
            assert say(writer, "u", "I live in Oslo.") == [("ADD", "User lives in Oslo.")]  # clear case: no call
            assert len(api.requests) == 1
        finally:
            chat.close()


def test_a_requested_memory_type_wins_and_an_unknown_one_is_ignored(writer: Writer, storage: SqliteStorage) -> None:
    def add(text: str, memory_type: str | None) -> str:
        outcome = writer.add_text("u", text, infer=True, app_name=None, memory_type=memory_type,
                                  metadata={}, project=None, tags=[], source="add")
        assert outcome.record is not None
        return outcome.record.memory_type

    assert add("Release steps: tag, build, publish.", "procedural") == "procedural"
    assert add("I went to Oslo last week.", "whatever") == "episodic"


def test_a_new_city_finds_the_old_one_among_many_facts(writer: Writer, storage: SqliteStorage) -> None:
    say(writer, "u", "I live in Berlin.")
    friends = zip(["Ana", "Ben", "Cleo", "Dan", "Eva", "Finn", "Gus", "Hana", "Ivo", "Jon", "Kai", "Lea"],
                  ["Paris", "Lyon", "Nice", "Rome", "Milan", "Porto", "Madrid", "Paris", "Vienna", "Prague", "Oslo", "Paris"])
    # Twelve moves of other people crowd both search arms; the slot query still finds Berlin.
    say(writer, "u", *[f"My friend {name} moved to {city} last month." for name, city in friends])
    [(event, memory)] = say(writer, "u", "I moved to Paris last month.")
    assert (event, memory) == ("SUPERSEDE", "User moved to Paris last month.")
    [berlin] = [m for m in storage.list_memories("u", MemoryFilters(include_superseded=True), offset=0, limit=100)[0] if "Berlin" in m.text]
    assert berlin.superseded_by is not None


def test_forgetting_a_person_also_deletes_past_versions(writer: Writer, storage: SqliteStorage) -> None:
    say(writer, "u", "My manager is Bob.", "I live in Leeds.")
    assert say(writer, "u", "My manager is Bob Stone now.")[0][0] == "SUPERSEDE"
    everything = MemoryFilters(include_superseded=True)
    assert storage.list_memories("u", everything, offset=0, limit=10)[1] == 3
    gone = say(writer, "u", "Forget everything about Bob.")
    assert sorted(gone) == [("DELETE_ENTITY", "User's manager is Bob Stone now."), ("DELETE_ENTITY", "User's manager is Bob.")]
    assert [m.text for m in storage.list_memories("u", everything, offset=0, limit=10)[0]] == ["User lives in Leeds."]
