"""The perf corpus is repeatable per (seed, user) and never repeats a sentence."""

from __future__ import annotations

from itertools import islice

from bench.perf.corpus import queries, sentences


def test_same_user_and_seed_give_the_same_stream() -> None:
    assert list(islice(sentences("user-001"), 50)) == list(islice(sentences("user-001"), 50))
    assert list(islice(sentences("user-001"), 50)) != list(islice(sentences("user-002"), 50))
    assert list(islice(sentences("user-001", seed=1), 50)) != list(islice(sentences("user-001", seed=0), 50))


def test_sentences_are_distinct_and_sentence_shaped() -> None:
    batch = list(islice(sentences("user-003"), 5000))
    assert len(set(batch)) == 5000
    assert all(s[0].isupper() and s.endswith((".", "?")) for s in batch)


def test_queries_are_repeatable() -> None:
    assert queries(n=20) == queries(n=20)
    assert len(queries(n=500)) == 500
