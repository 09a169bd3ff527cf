"""Per-user full-text terms for SQLite's FTS5: every indexed word carries its user's key.

BM25's IDF counts every row that holds a query word. With one plain index for all users that count
walks every user's rows, so a search (and each dedup lookup of a write) grew with the whole store:
5.7 ms at 50,000 rows against 1.2 ms for the same user alone. Indexing ``<user key><stem>``
instead gives each user doclists of their own: a search reads only its user's rows, and the IDF is
the user's own. The stems are SQLite's (porter over unicode61, what the index used before),
computed through APSW by the SQL function ``user_terms(user_key, text)`` that the full-text
triggers call, and stored in contentless FTS5 tables whose ``ascii`` tokenizer keeps each term
whole. Every connection that writes memories must ``register`` it first.
"""

from __future__ import annotations

from typing import Any, cast

import apsw

from cortadel_server.storage.search_terms import query_terms
from cortadel_server.text_caches import holds_text

#: the tokenizer the terms are cut and stemmed by
STEMMER = ("porter", ["unicode61"])
#: query words whose stems a connection remembers (then it starts over): a user's words recur
WORDS_HELD = 50_000


def indexed(key: str, stems: list[str]) -> str:
    """What the index holds for a text of these ``stems`` of the user with ``key``: their terms, in order."""
    return key + f" {key}".join(stems) if stems else ""  # one join: session documents run long


class UserTerms:
    """Turns text into one user's terms, with the stemmer of one connection."""

    def __init__(self, conn: apsw.Connection) -> None:
        self._stem = conn.fts5_tokenizer(*STEMMER)
        self._word_stems: dict[str, tuple[str, ...]] = {}
        holds_text(self.forget_words)  # the words of deleted texts leave with them

    def forget_words(self) -> None:
        self._word_stems = {}

    def stems(self, text: str, *, query: bool = False) -> list[str]:
        flags = apsw.FTS5_TOKENIZE_QUERY if query else apsw.FTS5_TOKENIZE_DOCUMENT
        # Without offsets and colocated tokens, APSW gives the tokens alone.
        return cast(list[str], self._stem(text.encode("utf-8"), flags, None, include_offsets=False, include_colocated=False))

    def document(self, key: str, text: str) -> str:
        """What the index holds for ``text`` of the user with ``key`` (``indexed``)."""
        return indexed(key, self.stems(text)) if key and text else ""

    def phrases(self, query: str) -> list[list[str]]:
        """The phrases an OR-query of ``query`` is made of, each its word's stems: a word that stems
        to several ("sam's") stays one phrase, as FTS5 would read it quoted. Two words of one stem
        stay two phrases, weighing as they did when FTS5 stemmed the query itself. A word's stems
        are remembered: a tokenizer call per word was most of the cost of a dedup lookup's query."""
        known = self._word_stems
        phrases = []
        for word in query_terms(query):
            stems = known.get(word)
            if stems is None:
                if len(known) >= WORDS_HELD:
                    known.clear()
                stems = known[word] = tuple(self.stems(word, query=True))
            if stems:
                phrases.append(list(stems))
        return phrases

    def match(self, key: str, query: str) -> str | None:
        """The FTS5 OR-query of ``phrases(query)`` as the user's terms."""
        return " OR ".join('"' + " ".join(key + stem for stem in p) + '"' for p in self.phrases(query)) or None


def register(conn: apsw.Connection) -> UserTerms:
    """Give ``conn`` the ``user_terms`` function the full-text triggers call, and the auxiliary
    functions ``fts_rows`` and ``fts_tokens`` (a table's rows and tokens, every user's, as its BM25
    counts them, the open transaction's writes included); returns its terms."""
    terms = UserTerms(conn)
    conn.create_scalar_function("user_terms", cast(Any, terms.document), 2, deterministic=True)
    conn.register_fts5_function("fts_rows", _row_count)
    conn.register_fts5_function("fts_tokens", _token_count)
    return terms


def _row_count(api: apsw.FTS5ExtensionApi, *_: apsw.SQLiteValue) -> int:
    return api.row_count


def _token_count(api: apsw.FTS5ExtensionApi, *_: apsw.SQLiteValue) -> int:
    return api.column_total_size(-1)
