"""Deterministic synthetic chats for the write-pipeline bench: a user telling an assistant about their life.

    conversation(index=3, seed=0, turns=10)   # [{"role": "user", "content": ...}, {"role": "assistant", ...}, ...]
    conversations(n=300, seed=0)              # n of them, each depending only on (seed, index)
    user_turn_kinds(messages)                 # Counter of "fact" / "chatter" user turns, for the report
    statements(n=200, seed=0)                 # single first-person statements, for adds

Turns alternate user / assistant, starting with the user. A user turn is a first-person statement
(a move, a job, an allergy, a purchase, a plan — most with a time expression) or chatter (a
greeting, a thanks, a question for the assistant) that should yield no fact; the assistant answers
with a short reply. Vocabularies are those of the performance bench.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence

from bench.perf.corpus import (
    ALLERGIES,
    CITIES,
    FOODS,
    HOBBIES,
    JOBS,
    MONTHS,
    NAMES,
    RELATIONS,
    THINGS,
    TOOLS,
    WEEKDAYS,
)

FACTS = [
    "I moved to {city} {when}.",
    "My {relation} {name} works as {a_job} in {city}.",
    "I'm allergic to {allergy}, so I skip {food} when we eat out.",
    "I started {hobby} {when} and I go every {weekday}.",
    "I prefer {tool} over {tool2} for work projects.",
    "My dentist appointment is on {weekday} at {hour}:{minute:02d}.",
    "I bought {thing} {when} for {price} euros.",
    "I usually cook {food} with {name} on {weekday}s.",
    "I work as {a_job} at a small company in {city}.",
    "My {kin} {name} just turned {age}.",
    "I lent my {item} to my {relation} {name}.",
    "We're planning a {days}-day trip to {city} in {month} with my {relation} {name}.",
    "I don't eat {food} anymore.",
    "My favourite dish is {food}, I learned it from my {relation}.",
]
WHEN = ["last month", "last week", "yesterday", "two weeks ago", "in {month}", "in {month} {year}", "three days ago"]
CHATTER = [
    "Hi!",
    "Good morning, how are you?",
    "Thanks, that helps a lot!",
    "Can you suggest a recipe for dinner?",
    "What's a good name for a cat?",
    "ok cool",
    "Could you explain how compound interest works?",
    "What should I pack for a weekend trip?",
]
REPLIES = [
    "Got it, thanks for telling me.",
    "That sounds lovely! Anything else on your mind?",
    "Sure, here is a simple idea: roast some vegetables with olive oil, garlic and lemon.",
    "Noted. How is everything else going?",
    "Happy to help. Let me know if you want more detail.",
    "Interesting! How did that come about?",
]
KIN = ["sister", "brother", "daughter", "son", "cousin", "niece", "nephew", "best friend"]
FACT_SHARE = 0.6  # of user turns


def _fill(template: str, rng: random.Random) -> str:
    name = rng.choice(NAMES)
    job = rng.choice(JOBS)
    tool, tool2 = rng.sample(TOOLS, 2)
    month = rng.choice(MONTHS)
    year = rng.randint(2015, 2025)
    slots: dict[str, object] = {
        "city": rng.choice(CITIES), "relation": rng.choice(RELATIONS), "name": name, "a_job": ("an " if job[0] in "aeiou" else "a ") + job, "kin": rng.choice(KIN),
        "allergy": rng.choice(ALLERGIES), "food": rng.choice(FOODS), "hobby": rng.choice(HOBBIES), "weekday": rng.choice(WEEKDAYS),
        "tool": tool, "tool2": tool2, "hour": rng.randint(8, 18), "minute": rng.choice([0, 15, 30, 45]), "thing": rng.choice(THINGS),
        "price": rng.randint(12, 2400), "age": rng.randint(3, 70), "item": rng.choice(["bike", "cello", "camera", "tent", "drill"]),
        "days": rng.randint(2, 21), "month": month, "when": rng.choice(WHEN).format(month=month, year=year),
    }
    return template.format(**slots)


def conversation(index: int, *, seed: int = 0, turns: int = 10) -> list[dict[str, str]]:
    """Conversation ``index`` of the stream for ``seed``: ``turns`` messages, user first."""
    rng = random.Random(f"{seed}:{index}")
    messages: list[dict[str, str]] = []
    for i in range(turns):
        if i % 2:
            messages.append({"role": "assistant", "content": rng.choice(REPLIES)})
        elif rng.random() < FACT_SHARE:
            messages.append({"role": "user", "content": _fill(rng.choice(FACTS), rng)})
        else:
            messages.append({"role": "user", "content": rng.choice(CHATTER)})
    return messages


def conversations(n: int, *, seed: int = 0, turns: int = 10) -> list[list[dict[str, str]]]:
    return [conversation(i, seed=seed, turns=turns) for i in range(n)]


def user_turn_kinds(messages: Sequence[Mapping[str, str]]) -> Counter[str]:
    """How many user turns are chatter (verbatim from CHATTER) and how many state a fact."""
    return Counter("chatter" if m["content"] in CHATTER else "fact" for m in messages if m["role"] == "user")


def statements(n: int, *, seed: int = 0) -> list[str]:
    """``n`` first-person statements of the kind the user turns make (for single adds)."""
    rng = random.Random(f"{seed}:statements")
    return [_fill(rng.choice(FACTS), rng) for _ in range(n)]
