"""What a full-text query searches for, the same on every backend: the query's distinct words,
stopwords dropped, and the weight of a memory's context column against its own text."""

from __future__ import annotations

from cortadel_server.text import words

#: Full-text weight of a memory's context column (the text written before it in its session)
#: against its own text (1.0). Tuned on LoCoMo dev: 0.3 lifts turn recall@5 of BM25 from 0.53 to 0.64.
CONTEXT_WEIGHT = 0.3

# Words too common to carry evidence in an OR-query; they only slow ranking down.
STOPWORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "been", "but", "by", "can", "could", "did", "do", "does",
    "for", "from", "had", "has", "have", "he", "her", "hers", "him", "his", "how", "i", "if", "in", "into",
    "is", "it", "its", "me", "my", "no", "not", "of", "on", "or", "our", "ours", "she", "so", "than", "that",
    "the", "their", "them", "then", "there", "these", "they", "this", "to", "too", "up", "us", "was", "we",
    "were", "what", "when", "where", "which", "who", "whom", "why", "will", "with", "would", "you", "your",
    "yours",
})


def query_terms(query: str) -> list[str]:
    """The distinct words an OR-query of ``query`` matches, in order; a query of stopwords only keeps them."""
    tokens = words(query)
    kept = [t for t in tokens if t not in STOPWORDS] or tokens
    return list(dict.fromkeys(t.replace('"', "") for t in kept if t.replace('"', "")))
