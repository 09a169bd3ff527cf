"""What one write transaction knows of its user's current facts, so a batch's dedup lookups read
the store once rather than once per fact.

    known = FactTexts(storage, "alice")
    known.expect([c.fingerprint for c in candidates], texts_up_to=25 * len(candidates))  # once for the whole batch
    same, texts = known.neighbour_texts(ids, fingerprint)  # Storage.neighbour_texts, from memory when it can
    known.wrote(record)                                    # the transaction's own writes
    known.ended(["m1"])                                    # no longer current (superseded, retracted, deleted)

``expect`` reads the current fact of every fingerprint of the batch in one statement, and the texts
of all the user's current facts in another when they are few enough for that to cost less than
the lookups would. A fact's text never changes inside the writer's transaction, and only the
transaction changes which facts are current, so what it read or wrote stays true until it ends a
fact itself. Anything it does not know (a neighbour it never saw, a fingerprint whose fact it
ended) is read through ``Storage.neighbour_texts`` as before, and learnt. Valid for one transaction
only: another writer may change the store between two.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from cortadel_server.storage.base import MemoryRecord, Storage

__all__ = ["FactTexts"]


class FactTexts:
    def __init__(self, storage: Storage, user_id: str) -> None:
        self.storage = storage
        self.user_id = user_id
        #: texts of current facts, by id
        self._texts: dict[str, str] = {}
        #: per fingerprint, the current fact ``find_by_fingerprint`` gives (None: there is none)
        self._same: dict[str, str | None] = {}
        #: ``_same`` turned round: the fingerprints each fact answers for (``ended`` reads it per fact
        #: ended, where a scan of ``_same`` cost a pass over every fingerprint of the batch)
        self._answers: dict[str, set[str]] = {}

    def expect(self, fingerprints: Iterable[str], *, texts_up_to: int) -> None:
        """Read the current facts of ``fingerprints`` at once, before the lookups that ask for them,
        and the texts of all the user's current facts when there are at most ``texts_up_to``."""
        wanted = [f for f in dict.fromkeys(fingerprints) if f not in self._same]
        if wanted:
            found = self.storage.first_by_fingerprints(self.user_id, wanted)
            for f in wanted:
                self._answer(f, found.get(f))
        everything = self.storage.all_current_texts(self.user_id, texts_up_to)
        if everything is not None:
            self._texts.update(everything)

    def neighbour_texts(self, ids: Sequence[str], fingerprint: str) -> tuple[str | None, dict[str, str]]:
        """``Storage.neighbour_texts(user, ids, fingerprint)`` for current ``ids``, in id order (the
        order the store gives them in; decide() breaks ties of score by it)."""
        texts = self._texts
        missing = [i for i in ids if i not in texts]
        if missing or fingerprint not in self._same:
            same, found = self.storage.neighbour_texts(self.user_id, missing, fingerprint)
            self._answer(fingerprint, same)
            texts.update(found)
        same = self._same[fingerprint]
        if same is not None and same not in texts:  # read by expect(): its text is not known yet
            texts.update(self.storage.current_texts(self.user_id, [same]))
        wanted = {i for i in ids if i in texts}
        if same is not None:
            wanted.add(same)
        return same, {i: texts[i] for i in sorted(wanted)}

    def wrote(self, record: MemoryRecord) -> None:
        """The transaction inserted ``record`` (current)."""
        self._texts[record.id] = record.text
        if self._same.get(record.fingerprint, "") is None:  # the first current fact of its fingerprint
            self._answer(record.fingerprint, record.id)

    def ended(self, ids: Iterable[str]) -> None:
        """The transaction made ``ids`` not current (or deleted them): forget them; a fingerprint
        they answered for is read again when asked."""
        for memory_id in set(ids):
            self._texts.pop(memory_id, None)
            for fingerprint in self._answers.pop(memory_id, ()):
                del self._same[fingerprint]

    def _answer(self, fingerprint: str, memory_id: str | None) -> None:
        """``memory_id`` is the current fact of ``fingerprint`` (None: there is none)."""
        previous = self._same.get(fingerprint)
        if previous is not None:
            self._answers[previous].discard(fingerprint)
        self._same[fingerprint] = memory_id
        if memory_id is not None:
            self._answers.setdefault(memory_id, set()).add(fingerprint)
