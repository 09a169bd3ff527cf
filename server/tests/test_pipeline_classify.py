"""Memory types, categories (built-in and configured) and gists."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cortadel_server.pipeline.classify import (
    DEFAULT_CATEGORIES,
    GIST_LIMIT,
    Taxonomy,
    gist,
    memory_type,
)
from cortadel_server.pipeline.model import MemoryType

NOW = datetime(2026, 6, 15, tzinfo=UTC)
DEFAULT = Taxonomy.from_setting(None)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("User only ships to production on Tuesdays.", MemoryType.PROCEDURAL),
        ("User prefers to always use pnpm instead of npm.", MemoryType.PROCEDURAL),
        ("User moved to Paris last month.", MemoryType.EPISODIC),
        ("User went to Rome in May 2023.", MemoryType.EPISODIC),
        ("User visited the dentist.", MemoryType.EPISODIC),
        ("User lives in Berlin.", MemoryType.SEMANTIC),
        ("User likes coffee.", MemoryType.SEMANTIC),
        ("User has been vegetarian since 2019.", MemoryType.SEMANTIC),
        ("User used to live in Berlin.", MemoryType.SEMANTIC),
    ],
)
def test_memory_type(text: str, kind: MemoryType) -> None:
    assert memory_type(text, NOW) is kind


@pytest.mark.parametrize(
    ("text", "categories"),
    [
        ("User only ships to production on Tuesdays.", ("work", "schedule")),
        ("User likes coffee.", ("preferences", "food")),
        ("User is allergic to peanuts.", ("health",)),
        ("User's team uses tabs.", ("work", "tech")),
        ("User's sister lives in Lisbon.", ("personal", "relationships")),
        ("User is saving for a house and pays rent of 900 euro.", ("finance", "goals")),
        ("User is flying to Tokyo for a vacation.", ("travel",)),
        ("User teaches the team.", ("work",)),  # "tea" inside "teaches" is not food
        ("User gave 30 € to a stranger.", ("finance",)),
        ("USER GAVE 30 € TO A STRANGER.", ("finance",)),
        ("User gave 30 EURO to a stranger.", ("finance",)),
    ],
)
def test_default_categories(text: str, categories: tuple[str, ...]) -> None:
    assert DEFAULT.categorize(text) == categories


def test_the_default_taxonomy_lists_every_category() -> None:
    assert DEFAULT.names == tuple(DEFAULT_CATEGORIES) == (
        "personal", "preferences", "work", "health", "travel", "relationships", "food", "finance", "schedule", "tech", "goals",
    )


def test_a_configured_taxonomy_replaces_the_default() -> None:
    custom = Taxonomy.from_setting(" Work, pets ,Billing, work")
    assert custom.names == ("work", "pets", "billing")
    assert custom.categorize("User's pet parrot bites; the team deploys on Fridays.") == ("work", "pets")
    assert custom.categorize("User disputes a billing error.") == ("billing",)
    assert custom.keep(["PETS", "food", "work"]) == ("work", "pets")


def test_configured_names_need_not_be_ascii() -> None:
    custom = Taxonomy.from_setting("Santé, Straße, ſki")
    assert custom.names == ("santé", "straße", "ſki")
    assert custom.categorize("User asked about SANTÉ insurance.") == ("santé",)
    assert custom.categorize("User's straße is quiet.") == ("straße",)
    assert custom.categorize("User goes SKIING in March.") == ("ſki",)  # the long s is an s
    assert custom.categorize("User asked about SANTE insurance.") == ()


def test_gist_is_the_text_or_a_word_boundary_cut() -> None:
    assert gist("User likes coffee.") == "User likes coffee"
    long = "User keeps " + ", ".join(f"item number {i}" for i in range(30)) + "."
    short = gist(long)
    assert len(short) <= GIST_LIMIT and short.endswith("…")
    assert long.startswith(short[:-1])
    assert short[-2] != " "
