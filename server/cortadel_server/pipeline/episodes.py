"""Episodes for memories written without a session id: which earlier memories a new one belongs with.

    written = Written(storage, "alice", app_name=None)
    episode_of(None, {}, "Caroline: Hey Mel! Long time no talk!", now, written, gap=1800.0)
    # "episode-3f2c…": a greeting opens a new episode
    episode_of(None, {}, "Melanie: That race sounds great!", now, written, gap=1800.0)
    # the episode of alice's last memory: same app, close in time, nothing opened anew

The session arm and the context column work on sessions; the published SDKs and most clients
never send one. So a memory without one gets an episode, stored as its session id, by these rules
in order:

1. an explicit ``session_id`` always wins;
2. a thread the client named in metadata (``thread_id``, ``run_id``, ``conversation_id`` …, the keys
   the official integrations and agent frameworks put there) is the episode;
3. otherwise it continues the episode of the memory its user last wrote in the same app, when that
   one's episode was inferred too, the new statement's time lies within ``CORTADEL_EPISODE_GAP``
   seconds of that memory's valid time or write time, and the text does not open a new
   conversation, and that episode holds fewer than ``MAX_EPISODE`` memories; else a new episode
   begins.

A client importing a conversation writes it within minutes, so time alone cannot tell its
sessions apart: the text does. A conversation opens with a greeting ("Hey Mel!", "long time no
talk", "since we last spoke"), unless it answers the greeting just before it, and a farewell
("Bye!", "talk soon") closes one. Inferred ids start with ``episode-``, so they never continue a
session a client named.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from cortadel_server.language.caseless import Caseless
from cortadel_server.language.speakers import without_speaker
from cortadel_server.storage.base import MemoryFilters, MemoryRecord, Storage

#: the most memories one inferred episode holds: a bulk import sent without sessions must not
#: become one episode of thousands (LoCoMo's longest session has 43 turns)
MAX_EPISODE = 50

#: the prefix of every inferred episode id
EPISODE_PREFIX = "episode-"

#: metadata keys that name the client's thread, run or conversation (snake and camel case)
THREAD_KEYS = (
    "thread_id", "threadId", "run_id", "runId", "conversation_id", "conversationId", "chat_id", "chatId",
    "session_id", "sessionId",
)

#: how far into a text a greeting is looked for
_HEAD = 200
#: phrases that open a conversation wherever they stand in its first words
_OPENING = Caseless(
    r"\b(?:since (?:we|i) (?:last )?(?:spoke|talked|chatted|met|caught up|saw each other)"
    r"|since our last (?:chat|talk|conversation)|long time no (?:see|talk|chat|speak)"
    r"|(?:good|great|nice) to (?:see|hear from|talk to|chat with|catch up with) you"
    r"|how have you been|it'?s been (?:a while|ages|too long)|been a while)\b"
)
#: a greeting as the first word
_GREETING = Caseless(r"^(?:hey|hi|hello|hiya|heya|howdy|good (?:morning|afternoon|evening))\b")
_FAREWELL = Caseless(
    r"\b(?:bye|goodbye|talk (?:to you )?(?:soon|later)|chat (?:soon|later)|(?<!to )see (?:you|ya)\b"
    r"|catch you later|take care|good ?night|gotta go|have a (?:good|great|nice) (?:one|day|night|evening))\b"
)


def episode_of(
    session_id: str | None,
    metadata: Mapping[str, Any],
    text: str,
    said_at: float,
    written: Written,
    *,
    gap: float,
) -> str:
    """The session id to store a memory under (see the module docstring for the rules).

    ``written`` reads what its user wrote before (asked only when rule 3 needs it); ``said_at``
    is the new memory's statement time."""
    if session_id:
        return session_id
    thread = thread_of(metadata)
    if thread is not None:
        return thread
    last = written.last()
    if last is None or last.session_id is None or not last.session_id.startswith(EPISODE_PREFIX):
        return new_episode()
    # Its valid time, or its write time: "I went there yesterday" is valid from yesterday but was
    # said just now, and an import's statements were said long before they were written.
    apart = min(abs(said_at - moment) for moment in (last.created_at, last.valid_at) if moment is not None)
    if apart > gap or opens(text, after=last.text) or closes(last.text, before=text):
        return new_episode()
    if written.size(last.session_id) >= MAX_EPISODE:
        return new_episode()
    return last.session_id


class Written:
    """What one user wrote with one app before, as the rules ask for it, inside one write
    transaction: read once, then kept in step by the writer (``wrote``, ``forget``), so the
    memories of a batch do not read per memory what the ones before them wrote."""

    def __init__(self, storage: Storage, user_id: str, app_name: str | None) -> None:
        self.storage = storage
        self.user_id = user_id
        self.app_name = app_name
        self._last: MemoryRecord | None = None
        self._last_read = False
        self._sizes: dict[str, int] = {}

    def last(self) -> MemoryRecord | None:
        """The memory written last (any state)."""
        if not self._last_read:
            self._last, self._last_read = self.storage.last_written(self.user_id, self.app_name), True
        return self._last

    def size(self, episode: str) -> int:
        """How many memories, past versions included, the episode holds."""
        if episode not in self._sizes:
            # Counted, not listed: a single add asks at each write (8 against 86 µs at 50 members).
            self._sizes[episode] = self.storage.count_matching(self.user_id, MemoryFilters(session_id=episode, include_superseded=True))
        return self._sizes[episode]

    def wrote(self, record: MemoryRecord) -> None:
        """``record`` was just stored with this user and app."""
        # last_written orders by write time, then insertion: a later insert wins unless the clock went back.
        if self._last_read and (self._last is None or record.created_at >= self._last.created_at):
            self._last = record
        if record.session_id in self._sizes:
            self._sizes[record.session_id] += 1

    def forget(self) -> None:
        """Memories were deleted: read again on the next question."""
        self._last, self._last_read, self._sizes = None, False, {}


def thread_of(metadata: Mapping[str, Any]) -> str | None:
    """The thread, run or conversation id the client put in the memory's metadata, if any."""
    for key in THREAD_KEYS:
        value = metadata.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool) and str(value).strip():
            return str(value).strip()
    return None


def new_episode() -> str:
    return f"{EPISODE_PREFIX}{uuid.uuid4().hex}"


def _words(text: str) -> str:
    return without_speaker(text)[:_HEAD]


def is_greeting(text: str) -> bool:
    words = _words(text)
    return _OPENING.found_in(words) or _GREETING.found_in(words)


def opens(text: str, *, after: str) -> bool:
    """Whether ``text`` opens a conversation: it greets, and does not answer a greeting."""
    return is_greeting(text) and not is_greeting(after)


def closes(text: str, *, before: str) -> bool:
    """Whether ``text`` ended a conversation: a farewell not followed by another farewell."""
    return _FAREWELL.found_in(text) and not _FAREWELL.found_in(before)
