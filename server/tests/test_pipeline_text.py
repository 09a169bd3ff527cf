"""Sentence splitting, the first-to-third-person rewrite and the rules extractor's filters."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cortadel_server.pipeline.model import Intent, Turn
from cortadel_server.pipeline.rewrite import conjugate, second_to_third, third_person
from cortadel_server.pipeline.rules import RulesExtractor, split_sentences

NOW = datetime(2026, 6, 15, 12, tzinfo=UTC)
RULES = RulesExtractor()


@pytest.mark.parametrize(
    ("first", "third"),
    [
        ("I only ship to production on Tuesdays.", "User only ships to production on Tuesdays."),
        ("I don't like coffee anymore.", "User does not like coffee anymore."),
        ("I'm a nurse at St. Mary's.", "User is a nurse at St. Mary's."),
        ("I no longer drink coffee.", "User no longer drinks coffee."),
        ("I've been vegetarian since 2019.", "User has been vegetarian since 2019."),
        ("Bob is my manager.", "Bob is User's manager."),
        ("I really enjoy sushi.", "User really enjoys sushi."),
        ("I used to live in Berlin.", "User used to live in Berlin."),
        ("I fly to Tokyo on 3 March.", "User flies to Tokyo on 3 March."),
        ("I watch TV with my kids.", "User watches TV with their kids."),
        ("I can't eat gluten.", "User cannot eat gluten."),
        ("My wife and I go hiking.", "User's wife and User go hiking."),
        ("We ship on Fridays.", "User and their team ship on Fridays."),
        ("We have two cats.", "User and their family have two cats."),
        ("I was born in 1990.", "User was born in 1990."),
        ("Anna called me yesterday.", "Anna called User yesterday."),
    ],
)
def test_first_person_becomes_third_person(first: str, third: str) -> None:
    assert third_person(first, "User") == third


def test_statements_to_the_listener_become_about_them() -> None:
    assert second_to_third("You work at Google, right?", "User") == "User works at Google, right?"
    assert second_to_third("You are vegetarian and your dog is Rex.", "User") == "User is vegetarian and their dog is Rex."


@pytest.mark.parametrize(("verb", "third"), [("ship", "ships"), ("go", "goes"), ("watch", "watches"), ("try", "tries"), ("play", "plays"), ("have", "has"), ("do", "does")])
def test_conjugate(verb: str, third: str) -> None:
    assert conjugate(verb) == third


def test_sentences_split_on_ends_but_not_on_titles_and_first_person_clauses_split_too() -> None:
    assert split_sentences("Hi! My doctor is Dr. Lee.\nI live in Oslo and I work at Equinor; thanks") == [
        "Hi!", "My doctor is Dr. Lee.", "I live in Oslo", "I work at Equinor", "thanks",
    ]


@pytest.mark.parametrize(
    "message",
    [
        "Hi!", "thanks", "Thank you so much!", "what's the weather?", "Good morning everyone", "ok cool",
        "Can you help me?", "Could you write a haiku about autumn", "Please summarize this article.",
        "I need you to be brief.", "I love it!", "I see.", "I'm fine, thanks.", "I have a question.",
        "I think it will rain.", "Maybe I will move.", "How do I reset my password", "Let's start.",
        "Paris is the capital of France.", "The weather is nice today.", "That's no longer true.",
    ],
)
def test_messages_that_hold_no_fact_about_the_user(message: str) -> None:
    assert RULES.extract([Turn("user", message, None, NOW)]) == []


def test_only_the_speaker_is_heard_and_agent_memory_switches_speaker() -> None:
    turns = [
        Turn("system", "I am a bot. My rules are strict.", None, NOW),
        Turn("assistant", "I always answer in English.", "a1", NOW),
        Turn("user", "I speak Portuguese at home.", "u1", NOW),
    ]
    assert [c.text for c in RULES.extract(turns)] == ["User speaks Portuguese at home."]
    [agent] = RULES.extract(turns, is_agent_memory=True)
    assert (agent.text, agent.source_turn_uuids) == ("Assistant always answers in English.", ("a1",))


@pytest.mark.parametrize(
    ("message", "intent", "target"),
    [
        ("Forget everything about Bob.", Intent.FORGET_ENTITY, "Bob"),
        ("Please delete all memories about Project Atlas!", Intent.FORGET_ENTITY, "Project Atlas"),
        ("Forget my old address.", Intent.RETRACT, "User's address"),
        ("Forget that I like coffee.", Intent.RETRACT, "User likes coffee"),
        ("I was wrong about the meeting time.", Intent.RETRACT, "The meeting time"),
        ("The login bug is resolved.", Intent.RESOLVE, "login bug"),
        ("I fixed the flaky test yesterday.", Intent.RESOLVE, "flaky test"),
        ("My visa application has been completed.", Intent.RESOLVE, "User's visa application"),
    ],
)
def test_intents_and_their_targets(message: str, intent: Intent, target: str) -> None:
    [candidate] = RULES.extract([Turn("user", message, None, NOW)])
    assert (candidate.intent, candidate.target) == (intent, target)


def test_that_is_no_longer_true_targets_the_statement_before_it() -> None:
    turns = [Turn("user", "I work at Shopify.", None, NOW), Turn("user", "Actually, scratch that.", None, NOW)]
    stored, retraction = RULES.extract(turns)
    assert (retraction.intent, retraction.target) == (Intent.RETRACT, stored.text)


def test_reconfirmation_is_marked() -> None:
    [still] = RULES.extract([Turn("user", "Yes, I still live in Oslo.", None, NOW)])
    [plain] = RULES.extract([Turn("user", "I live in Oslo.", None, NOW)])
    assert (still.reconfirm, plain.reconfirm) == (True, False)


def test_verbatim_keeps_the_text_and_recognises_the_intent() -> None:
    turn = Turn("user", "", None, NOW)
    kept = RULES.verbatim("  i live in oslo  ", turn)
    forget = RULES.verbatim("forget everything about Bob", turn)
    assert (kept.text, kept.intent) == ("  i live in oslo  ", Intent.REMEMBER)
    assert (forget.text, forget.intent, forget.target) == ("forget everything about Bob", Intent.FORGET_ENTITY, "Bob")


def test_an_explicit_add_keeps_every_statement_but_questions_and_small_talk() -> None:
    turn = Turn("user", "Thanks! I prefer dark mode. Use 2-space indentation. What time is it? I think tabs are better.", None, NOW)
    assert [c.text for c in RULES.extract([turn], explicit=True)] == [
        "User prefers dark mode.", "Use 2-space indentation.", "User thinks tabs are better.",
    ]
    assert [c.text for c in RULES.extract([turn])] == ["User prefers dark mode."]


def test_emails_urls_phone_numbers_and_times_survive_the_rewrite_untouched() -> None:
    turn = Turn("user", "My email is me@example.com and my phone is +49 151 2345678. Our standup is at 9:30 lol.", None, NOW)
    assert [c.text for c in RULES.extract([turn])] == [
        "User's email is me@example.com.", "User's phone is +49 151 2345678.", "User's standup is at 9:30.",
    ]


@pytest.mark.parametrize(
    ("message", "facts"),
    [
        ("Here's my setup:\n- I use Neovim\n2. My main language is Rust", ["User uses Neovim.", "User's main language is Rust."]),
        ("```python\n# I like this\nx = 1\n```\nWhy does it fail?", []),
        ("i live in berlin", ["User lives in berlin."]),
        ("I LOVE hiking!!!", ["User LOVES hiking."]),
        ("Can you remember that my wifi password is hunter2?", ["User's wifi password is hunter2."]),
        ("Please call me Sam.", ["User goes by Sam."]),
        ("Sorry, I meant Tuesday.", []),
    ],
)
def test_lists_code_casing_and_requests_to_remember(message: str, facts: list[str]) -> None:
    assert [c.text for c in RULES.extract([Turn("user", message, None, NOW)])] == facts


def test_an_explicit_statement_about_someone_else_is_kept_exactly_as_written() -> None:
    turn = Turn("user", "Alice's wifi isn't working", None, NOW)
    assert [c.text for c in RULES.extract([turn], explicit=True)] == ["Alice's wifi isn't working"]


def test_a_transcript_line_that_names_its_speaker_is_about_that_speaker() -> None:
    turns = [
        Turn("user", "Caroline: I went to a support group yesterday. My dog is called Rex.", "D1:3", NOW),
        Turn("user", "Note: I moved to Oslo.", "D1:4", NOW),
    ]
    assert [(c.text, c.source_turn_uuids) for c in RULES.extract(turns)] == [
        ("Caroline went to a support group yesterday.", ("D1:3",)),
        ("Caroline's dog is called Rex.", ("D1:3",)),
        ("User moved to Oslo.", ("D1:4",)),  # "Note:" is no speaker
    ]
