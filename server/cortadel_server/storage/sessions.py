"""Session documents and turn context: what they hold, decided once for every backend.

A memory's *context* is the text written just before it in its session (a question, for the reply
that answers it); a *session document* is its members' texts in write order, one per line. Both
are derived data: a backend stores them (so full-text search can index them) and keeps them in step
through ``SessionRows`` — appending on insert, rebuilding from the members left after a delete or
an edit, so deleted text leaves its neighbours too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

#: joins member texts into a session document
SEPARATOR = "\n"


class SessionRows(Protocol):
    """The few reads and writes a backend offers for session upkeep, all inside its write()."""

    def session_texts(self, user_id: str, session_id: str) -> list[tuple[int, str, str]]:
        """The session's members in write order: (row key, text, stored context)."""
        ...

    def set_context(self, user_id: str, row_key: int, context: str) -> None: ...

    def put_session_document(self, user_id: str, session_id: str, text: str | None) -> None:
        """Store the session's document; None removes it (no member left)."""
        ...


def context_for(previous_texts: Sequence[str]) -> str:
    """The context of a memory written after ``previous_texts`` (the session's, in write order)."""
    return previous_texts[-1] if previous_texts else ""


def document_of(texts: Sequence[str]) -> str | None:
    return SEPARATOR.join(texts) if texts else None


def rebuild_sessions(rows: SessionRows, user_id: str, session_ids: Sequence[str | None]) -> None:
    """Recompute the documents and member contexts of these sessions from their members (after a
    delete or an edit); drop the documents left empty."""
    for session_id in dict.fromkeys(s for s in session_ids if s is not None):
        members = rows.session_texts(user_id, session_id)
        texts = [text for _, text, _ in members]
        for i, (row_key, _, context) in enumerate(members):
            expected = context_for(texts[:i])
            if context != expected:
                rows.set_context(user_id, row_key, expected)
        rows.put_session_document(user_id, session_id, document_of(texts))
