"""decide(): the event one candidate causes among the user's current facts."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from cortadel_server.config import Settings
from cortadel_server.pipeline.decide import decide, normalize, shape, slot_query
from cortadel_server.pipeline.model import Candidate, Decision, Event, Intent, Neighbour
from cortadel_server.providers import build_embedder

NOW = datetime(2026, 6, 15, tzinfo=UTC)


def candidate(text: str, intent: Intent = Intent.REMEMBER, target: str | None = None, reconfirm: bool = False) -> Candidate:
    return Candidate(text, intent, NOW, NOW, target=target, reconfirm=reconfirm)


@pytest.mark.parametrize(
    ("new", "old", "event"),
    [
        ("User lives in Paris now.", "User lives in Berlin.", Event.SUPERSEDE),
        ("User moved to Paris last month.", "User lives in Berlin.", Event.SUPERSEDE),
        ("User relocated to Porto.", "User is based in Lisbon.", Event.SUPERSEDE),
        ("User does not like coffee anymore.", "User likes coffee.", Event.SUPERSEDE),
        ("User hates coffee.", "User likes coffee.", Event.SUPERSEDE),
        ("User likes coffee again.", "User does not like coffee.", Event.SUPERSEDE),
        ("User no longer drinks coffee.", "User drinks coffee.", Event.SUPERSEDE),
        ("User stopped drinking coffee.", "User drinks coffee every morning.", Event.SUPERSEDE),
        ("User works at Stripe.", "User works at Google.", Event.SUPERSEDE),
        ("User works as a nurse.", "User works as a teacher.", Event.SUPERSEDE),
        ("User's favourite color is green.", "User's favorite color is blue.", Event.SUPERSEDE),
        ("User's name is Alicia.", "User's name is Alice.", Event.SUPERSEDE),
        ("User is 35 years old.", "User is 34.", Event.SUPERSEDE),
        ("User has 3 kids.", "User has 2 kids.", Event.SUPERSEDE),
        ("User only ships to production on Thursdays.", "User only ships to production on Tuesdays.", Event.SUPERSEDE),
        ("User is married to Sam.", "User is married to Alex.", Event.SUPERSEDE),
        ("i live in Rome", "User lives in Berlin.", Event.SUPERSEDE),
        ("User likes coffee.", "User likes coffee.", Event.SKIP_DUPLICATE),
        ("User really likes coffee.", "User likes coffee.", Event.SKIP_DUPLICATE),
        ("user LIKES coffee!!", "User likes coffee.", Event.SKIP_DUPLICATE),
        ("User currently lives in Paris.", "User lives in Paris.", Event.SKIP_DUPLICATE),
        ("User loves coffee.", "User likes coffee.", Event.SKIP_DUPLICATE),
        ("User likes tea.", "User likes coffee.", Event.ADD),
        ("User has a cat.", "User has a dog.", Event.ADD),
        ("User's wife lives in Rome.", "User lives in Paris.", Event.ADD),
        ("User used to live in Berlin.", "User lives in Paris.", Event.ADD),
        ("User is vegetarian.", "User is a software engineer.", Event.ADD),
        ("User visited Rome.", "User visited Paris.", Event.ADD),
        ("Jack's note 4 about the harbour.", "Jack's note 3 about the harbour.", Event.ADD),
        ("User does not eat meat.", "User likes coffee.", Event.ADD),
        ("User drives a Tesla now.", "User drives a BMW.", Event.SUPERSEDE),
        ("User uses Vim these days.", "User uses VS Code.", Event.SUPERSEDE),
        ("User also plays tennis now.", "User plays golf.", Event.ADD),
        ("User is a manager now.", "User is a developer.", Event.ADD),
    ],
)
def test_remember(new: str, old: str, event: Event) -> None:
    decision = decide(candidate(new), [Neighbour("m1", old, 0.8)])
    assert decision.event is event
    assert decision.targets == (() if event is Event.ADD else ("m1",))


def test_the_negation_guard_never_calls_opposites_duplicates() -> None:
    decision = decide(candidate("User does not like coffee."), [Neighbour("m1", "User likes coffee.", 0.99)])
    assert decision == Decision(Event.SUPERSEDE, ("m1",), "affinity:coffe negated")


def test_reconfirmation_touches_and_a_duplicate_wins_over_a_slot_change() -> None:
    facts = [Neighbour("old", "User lives in Berlin.", 0.7), Neighbour("same", "User lives in Paris.", 0.9)]
    assert decide(candidate("User still lives in Paris.", reconfirm=True), facts).event is Event.TOUCH
    assert decide(candidate("User lives in Paris.", reconfirm=False), facts) == Decision(Event.SKIP_DUPLICATE, ("same",), "same fact")


def test_retractions_resolutions_and_entity_deletions() -> None:
    facts = [
        Neighbour("addr", "User's address is 12 Oak Street."),
        Neighbour("job", "User works at Google."),
        Neighbour("bug", "User is fixing the login bug."),
        Neighbour("closed", "The login bug was fixed."),
        Neighbour("boss", "Bob is User's manager."),
        Neighbour("tennis", "User plays tennis with Bob."),
    ]
    assert decide(candidate("Forget it.", Intent.RETRACT, "User's address"), facts).targets == ("addr",)
    assert decide(candidate("That is not true.", Intent.RETRACT, "User works at Google."), facts).targets == ("job",)
    assert decide(candidate("Forget it.", Intent.RETRACT, "User's phone number"), facts).event is Event.NOOP
    assert decide(candidate("The login bug is resolved.", Intent.RESOLVE, "login bug"), facts) == Decision(Event.RESOLVE, ("bug",), "open item closed")
    unknown = decide(candidate("The payment bug is fixed.", Intent.RESOLVE, "payment bug"), facts)
    assert (unknown.event, unknown.targets) == (Event.ADD, ())
    assert decide(candidate("Forget Bob.", Intent.FORGET_ENTITY, "Bob"), facts).targets == ("boss", "tennis")
    assert decide(candidate("Forget Eve.", Intent.FORGET_ENTITY, "Eve"), facts).event is Event.NOOP


def test_near_misses_are_marked_ambiguous_for_an_llm_verdict() -> None:
    decision = decide(candidate("User is learning the piano with a teacher."), [Neighbour("m1", "User is learning the piano.")])
    assert (decision.event, decision.ambiguous) == (Event.ADD, True)
    clear = decide(candidate("User likes tea."), [Neighbour("m1", "User lives in Oslo.")])
    assert clear.ambiguous is False


def test_normalize_and_shape() -> None:
    assert normalize("  User currently LIVES in Paris, now!! ") == "user lives in paris"
    assert normalize("I'm 3.5 km away at 9:30") == "user am 3.5 km away at 9:30"
    s = shape("User moved to Paris last month.")
    assert (s.slot, s.slot_value, s.negative, s.subject) == ("residence", frozenset({"pari"}), False, "user")


def test_slot_queries_name_every_way_of_saying_the_slot() -> None:
    assert slot_query("User moved to Paris last month.") == "user lives live living moved relocated based resides address home city"
    assert slot_query("User's wife works at Google.") == "user's wife works work working joined employed job company employer"
    assert slot_query("User likes coffee.") is None


EMBEDDER = build_embedder(Settings.from_env({}))


def similarity(a: str, b: str) -> float:
    """Cosine similarity from the default embedder, as the writer's vector search reports it."""
    va, vb = EMBEDDER.embed([a, b])
    return float(np.dot(va, vb) / (np.linalg.norm(va) * np.linalg.norm(vb)))


@pytest.mark.parametrize(
    ("new", "old", "event"),
    [
        ("User's dog is called Rex.", "User has a dog named Rex.", Event.SKIP_DUPLICATE),
        ("User is employed by Google.", "User works at Google.", Event.SKIP_DUPLICATE),
        # Close for the embedder, but another person, another polarity, another slot or an addition:
        ("User's brother lives in Porto.", "User's sister lives in Porto.", Event.ADD),
        ("User's wife likes tea.", "User likes tea.", Event.ADD),
        ("User dislikes tea.", "User likes tea.", Event.SUPERSEDE),
        ("User lives in Lyon.", "User is from Lyon.", Event.ADD),
        ("User likes green tea too.", "User likes tea.", Event.ADD),
        ("User's flight is on 14 July.", "User's flight is on 12 July.", Event.SUPERSEDE),
    ],
)
def test_paraphrases_are_duplicates_only_when_nothing_that_tells_facts_apart_differs(new: str, old: str, event: Event) -> None:
    score = similarity(new, old)
    assert score > 0.8  # the embedder alone would merge every one of these
    assert decide(candidate(new), [Neighbour("m1", old, score)]).event is event


def test_a_named_replacement_supersedes_the_fact_that_mentions_it_for_the_same_person() -> None:
    facts = [Neighbour("sister", "User's sister lives in Lisbon.", 0.6), Neighbour("own", "User lives in Lisbon.", 0.5)]
    decision = decide(candidate("User lives in Porto.", target="Lisbon"), facts)
    assert decision == Decision(Event.SUPERSEDE, ("own",), "replaces Lisbon")
    switched = decide(candidate("User switched from VS Code to Neovim.", target="VS Code"), [Neighbour("m1", "User uses VS Code.", 0.4)])
    assert switched == Decision(Event.SUPERSEDE, ("m1",), "replaces VS Code")
    nothing = decide(candidate("User is from Lyon.", target="Lille"), [Neighbour("m1", "User likes tea.", 0.2)])
    assert (nothing.event, nothing.uncertain) == (Event.ADD, "said to replace 'Lille', which no current fact names")


def test_a_cessation_supersedes_what_stopped_and_only_that() -> None:
    gym = Neighbour("gym", "User goes to the gym every morning.", 0.6)
    assert decide(candidate("User stopped going to the gym."), [gym]) == Decision(Event.SUPERSEDE, ("gym",), "stopped")
    assert decide(candidate("User gave up the piano."), [Neighbour("p", "User plays the piano.", 0.5)]).event is Event.SUPERSEDE
    assert decide(candidate("User stopped eating meat."), [Neighbour("f", "User eats fish.", 0.6)]).event is Event.ADD
    assert decide(candidate("User's sister quit smoking."), [Neighbour("s", "User smokes.", 0.6)]).event is Event.ADD


def test_the_person_of_a_fact_is_the_head_of_its_possessive() -> None:
    assert shape("User's sister lives in Porto.").people == frozenset({"sister"})
    assert shape("User's daughter's name is Ava.").people == frozenset({"daughter"})
    assert shape("User's son Leo just turned 7.").people == frozenset({"son"})
    assert shape("User's mum lives in Cebu.").people == shape("User's mom lives in Manila.").people == frozenset({"mom"})
    assert shape("User's dentist appointment is on 3 July.").people == frozenset()
