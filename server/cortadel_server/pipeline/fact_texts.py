"""What one write transaction knows of its user's current facts, so a batch's dedup lookups read
the store once rather than once per fact.

    known = FactTexts(storage, "alice")
    known.expect([c.fingerprint for c in candidates], texts_up_to=25 * len(candidates), shapes_made_up_to=2 * len(candidates))
    same, texts = known.neighbour_texts(ids, fingerprint)  # Storage.neighbour_texts, from memory when it can
    known.wrote(record)                                    # the transaction's own writes
    known.ended(["m1"])                                    # no longer current (superseded, retracted, deleted)
    known.current_shapes()                                 # every current fact's shape (decide.CurrentShapes), or None

``expect`` reads the current fact of every fingerprint of the batch in one statement, and the texts
of all the user's current facts in another when they are few enough for that to cost less than
the lookups would. A fact's text never changes inside the writer's transaction, and only the
transaction changes which facts are current, so what it read or wrote stays true until it ends a
fact itself. Anything it does not know (a neighbour it never saw, a fingerprint whose fact it
ended) is read through ``Storage.neighbour_texts`` as before, and learnt. Valid for one transaction
only: another writer may change the store between two.

When ``expect`` read every current fact, the transaction knows them all: ``current_shapes`` indexes
their comparison shapes, kept current by ``wrote`` and ``ended``, so a fact none of them bears on is
decided without its full-text lookups (``decide.needs_full_text``). ``KeptShapes`` keeps them for the user's next
batch, which brings them up to date with the current facts it reads (other writes may have
changed a few), instead of making them all again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence

from cortadel_server.pipeline.decide import CurrentShapes, shape
from cortadel_server.storage.base import MemoryRecord, Storage
from cortadel_server.text_caches import holds_text

__all__ = ["FactTexts", "KeptShapes"]

#: users whose current facts' shapes ``KeptShapes`` keeps (a user of 10,000 facts: some 15 MB)
KEPT_USERS = 2


class KeptShapes:
    """The current facts' shapes of the users the last batches wrote: remade at every batch, the
    shapes of a user's 4,500 facts took 7 % of a batch of 500 (profiled). Holds texts, so
    ``forget_texts`` empties it."""

    def __init__(self) -> None:
        self._kept: OrderedDict[str, CurrentShapes] = OrderedDict()
        self._lock = threading.Lock()
        holds_text(self.clear)

    def take(self, user_id: str) -> CurrentShapes | None:
        """The user's shapes as their last batch left them (the batch that takes them changes
        them, so they leave until kept again)."""
        with self._lock:
            return self._kept.pop(user_id, None)

    def keep(self, user_id: str, shapes: CurrentShapes) -> None:
        """``shapes`` are the user's current facts' as a committed batch left them."""
        with self._lock:
            self._kept[user_id] = shapes
            self._kept.move_to_end(user_id)
            while len(self._kept) > KEPT_USERS:
                self._kept.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()


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
        #: whether ``_texts`` holds every current fact (``expect`` read them all)
        self._complete = False
        #: their shapes, once asked for; None when too many were not cached to make them
        self._shapes: CurrentShapes | None = None
        self._shapes_tried = False
        #: how many shapes not cached ``current_shapes`` may make, and the shapes it starts from
        #: (``expect`` sets both)
        self._shapes_made_up_to = 0
        self._kept_shapes: CurrentShapes | None = None

    def expect(
        self, fingerprints: Iterable[str], *, texts_up_to: int, shapes_made_up_to: int = 0, shapes: CurrentShapes | None = None
    ) -> None:
        """Read the current facts of ``fingerprints`` at once, before the lookups that ask for them,
        and the texts of all the user's current facts when there are at most ``texts_up_to``
        (``current_shapes`` then makes at most ``shapes_made_up_to`` shapes not cached, starting
        from ``shapes``, those the user's last batch kept, when given)."""
        wanted = [f for f in dict.fromkeys(fingerprints) if f not in self._same]
        if wanted:
            found = self.storage.first_by_fingerprints(self.user_id, wanted)
            for f in wanted:
                self._answer(f, found.get(f))
        everything = self.storage.all_current_texts(self.user_id, texts_up_to)
        if everything is not None:
            self._texts.update(everything)
            self._complete = True
            self._shapes_made_up_to = shapes_made_up_to
            self._kept_shapes = shapes

    def current_shapes(self) -> CurrentShapes | None:
        """The shapes of every current fact, when the transaction knows them all and making those
        not held yet takes at most the shapes not cached ``expect`` allowed (``decide.shape``:
        about 80 µs each); made at the first call, then kept current."""
        if self._complete and not self._shapes_tried:
            self._shapes_tried = True
            current = self._kept_shapes or CurrentShapes()
            self._kept_shapes = None
            # What another write ended, deleted or changed since the kept shapes were made goes,
            # what it wrote comes: they hold the current facts exactly.
            for memory_id in current.ids():
                if memory_id not in self._texts:
                    current.remove(memory_id)
            misses = shape.cache_info().misses
            for memory_id, text in self._texts.items():
                if not current.holds(memory_id, text):
                    if shape.cache_info().misses - misses > self._shapes_made_up_to:
                        return None
                    current.add(memory_id, text)
            self._shapes = current
        return self._shapes

    @property
    def made_shapes(self) -> CurrentShapes | None:
        """``current_shapes`` if made, without making them."""
        return self._shapes

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
        if self._shapes is not None:
            self._shapes.add(record.id, record.text)
        if self._same.get(record.fingerprint, "") is None:  # the first current fact of its fingerprint
            self._answer(record.fingerprint, record.id)

    def ended(self, ids: Iterable[str]) -> None:
        """The transaction made ``ids`` not current (or deleted them): forget them; a fingerprint
        they answered for is read again when asked."""
        for memory_id in set(ids):
            self._texts.pop(memory_id, None)
            if self._shapes is not None:
                self._shapes.remove(memory_id)
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
