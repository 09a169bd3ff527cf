"""decide(): the event one candidate causes among the user's current facts."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cortadel_server.pipeline.decide import decide, normalize, shape, slot_query
from cortadel_server.pipeline.model import Candidate, Decision, Event, Intent, Neighbour

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
