"""Deterministic synthetic memories and queries: templates filled from small vocabularies.

    sentences(user="user-007", seed=0)  # an endless, repeatable stream of distinct sentences
    queries(seed=0, n=500)              # questions in the same vocabulary

A sentence is one personal fact, sometimes followed by a second clause, in the style an assistant
would remember ("Priya's sister Ana moved to Porto in 2019 and works as a pharmacist."). The stream
for a user depends only on (seed, user), so every run and every system loads the same text.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

NAMES = ["Ana", "Priya", "Tom", "Kenji", "Lea", "Omar", "Sofia", "Malik", "Ines", "Jonas", "Mei", "Diego", "Nora", "Felix",
         "Amara", "Lukas", "Yara", "Ravi", "Elena", "Sam", "Hugo", "Zara", "Ivan", "Chloe", "Tariq", "Marta", "Noah", "Aiko"]
RELATIONS = ["sister", "brother", "manager", "neighbour", "cousin", "best friend", "landlord", "dentist", "colleague",
             "daughter", "son", "partner", "mentor", "flatmate", "aunt", "uncle"]
CITIES = ["Porto", "Lisbon", "Berlin", "Osaka", "Nairobi", "Toronto", "Lyon", "Kraków", "Seville", "Utrecht", "Denver",
          "Bergen", "Valparaíso", "Hanoi", "Tbilisi", "Cork", "Ghent", "Bologna", "Perth", "Quito"]
JOBS = ["pharmacist", "data engineer", "nurse", "carpenter", "architect", "teacher", "baker", "pilot", "lawyer",
        "translator", "chemist", "firefighter", "designer", "vet", "accountant", "journalist", "plumber", "chef"]
FOODS = ["ramen", "sourdough", "paella", "falafel", "dumplings", "tiramisu", "pho", "risotto", "tacos", "curry",
         "pierogi", "ceviche", "baklava", "gnocchi", "kimchi", "shakshuka"]
HOBBIES = ["bouldering", "pottery", "chess", "birdwatching", "salsa dancing", "trail running", "knitting", "sailing",
           "woodworking", "photography", "beekeeping", "calligraphy", "kayaking", "gardening", "astronomy", "fencing"]
THINGS = ["a blue bicycle", "an old Volvo", "a sourdough starter", "a rescue greyhound", "two cats", "a vintage camera",
          "a standing desk", "an electric kettle", "a 3D printer", "a cello", "a tandem kayak", "a telescope"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"]
ALLERGIES = ["peanuts", "shellfish", "penicillin", "cats", "pollen", "gluten", "latex", "dust mites"]
TOOLS = ["Postgres", "Kubernetes", "Terraform", "React", "Rust", "Django", "Kafka", "Airflow", "Redis", "Svelte"]

TEMPLATES = [
    "{name}'s {relation} {name2} moved to {city} in {year} and works as a {job}.",
    "{name} is allergic to {allergy} and avoids {food} at restaurants.",
    "{name} took up {hobby} in {month} {year} after a trip to {city}.",
    "{name} bought {thing} on a {weekday} in {month} for {price} euros.",
    "Every {weekday} {name} cooks {food} with {name2}, their {relation}.",
    "{name} prefers {tool} over {tool2} for work projects and keeps notes about it.",
    "The dentist appointment for {name} is on {weekday}, {day} {month}, at {hour}:{minute:02d}.",
    "{name} and {name2} are planning a {days}-day trip to {city} in {month}.",
    "{name} has been learning {hobby} with a coach for {days} weeks and practises on {weekday}s.",
    "{name}'s favourite dish is {food}; they learned the recipe from their {relation} in {city}.",
    "{name} started a new job as a {job} in {city} on {day} {month} {year}.",
    "{name} lent {thing} to their {relation} {name2} and wants it back by {month}.",
]
CLAUSES = [
    " They also mentioned that {name2} recommends {food}.",
    " Their {relation} thinks {city} is too expensive.",
    " The budget for it is {price} euros.",
    " {name2} will join them on {weekday}.",
    " They said {hobby} helps them relax after work.",
]
QUESTIONS = [
    "Where did {name}'s {relation} move?",
    "What is {name} allergic to?",
    "When did {name} start {hobby}?",
    "What did {name} buy in {month}?",
    "What does {name} cook on {weekday}?",
    "Which tool does {name} prefer for work?",
    "When is {name}'s dentist appointment?",
    "Who is travelling to {city} with {name}?",
    "What is {name}'s favourite dish?",
    "Where does {name} work as a {job}?",
    "what did {name} lend to {name2}",
    "{hobby} {city}",
]


def _slots(rng: random.Random) -> dict[str, object]:
    name, name2 = rng.sample(NAMES, 2)
    tool, tool2 = rng.sample(TOOLS, 2)
    return {
        "name": name, "name2": name2, "relation": rng.choice(RELATIONS), "city": rng.choice(CITIES), "job": rng.choice(JOBS),
        "food": rng.choice(FOODS), "hobby": rng.choice(HOBBIES), "thing": rng.choice(THINGS), "weekday": rng.choice(WEEKDAYS),
        "month": rng.choice(MONTHS), "allergy": rng.choice(ALLERGIES), "tool": tool, "tool2": tool2,
        "year": rng.randint(2004, 2025), "day": rng.randint(1, 28), "hour": rng.randint(8, 18), "minute": rng.choice([0, 15, 30, 45]),
        "price": rng.randint(12, 2400), "days": rng.randint(2, 21),
    }


def sentences(user: str, seed: int = 0) -> Iterator[str]:
    """Distinct sentences for one user, forever, in a repeatable order."""
    rng = random.Random(f"{seed}:{user}")
    seen: set[str] = set()
    while True:
        slots = _slots(rng)
        text = rng.choice(TEMPLATES).format(**slots)
        if rng.random() < 0.4:
            text += rng.choice(CLAUSES).format(**slots)
        if text not in seen:
            seen.add(text)
            yield text


def queries(seed: int = 0, n: int = 500) -> list[str]:
    rng = random.Random(f"{seed}:queries")
    return [rng.choice(QUESTIONS).format(**_slots(rng)) for _ in range(n)]
