"""The blocking client: the same calls as the async one, over ``httpx.Client``."""

from __future__ import annotations

import builtins
import time
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, TypeVar

import httpx

from . import _curation as curation_ops
from . import _operations as ops
from . import _reconcile as reconcile_ops
from ._curation import Community, MediaResult
from ._errors import CortadelError
from ._http import DEFAULT_APP_NAME, DEFAULT_TIMEOUT, Endpoint, Retry, finish, translated_transport_errors
from ._models import (
    AddOptions,
    BatchConversation,
    BatchMemory,
    BatchResult,
    ChatMessage,
    ConversationOptions,
    ConversationResult,
    HealthResult,
    ListOptions,
    MemoryCreated,
    MemoryDetail,
    MemoryHistory,
    MemoryList,
    SearchOptions,
    SearchResults,
)
from ._reconcile import MergeSuggestion, MergeSuggestionList, ReconcileRun, ReconcileStatus

if TYPE_CHECKING:  # typing.Self is 3.11+; typing_extensions is needed only by the type checker
    from typing_extensions import Self

T = TypeVar("T")


class SyncCortadelClient:
    """Blocking client with the same methods, arguments and results as ``CortadelClient``.

    It runs on a plain ``httpx.Client`` (no event loop, no thread), so it is safe to call from
    code that already runs an event loop. ``http_client``, when given, is an ``httpx.Client``.
    """

    def __init__(
        self,
        base_url: str | None = None,
        user_id: str | None = None,
        *,
        api_key: str | None = None,
        app_name: str = DEFAULT_APP_NAME,
        http_client: httpx.Client | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retry: Retry | None = None,
    ) -> None:
        if isinstance(http_client, httpx.AsyncClient):
            raise TypeError("SyncCortadelClient needs an httpx.Client; pass an AsyncClient to CortadelClient.")
        self._endpoint = Endpoint(base_url, user_id, api_key, app_name, timeout)
        self._owns_http = http_client is None
        self._http = http_client if http_client is not None else httpx.Client(timeout=self._endpoint.timeout)
        self._retry = retry

    @property
    def user_id(self) -> str | None:
        return self._endpoint.scope.user_id

    def add(self, text: str, options: AddOptions | None = None) -> MemoryCreated:
        """Store ``text`` as a memory; ``event`` in the result says what happened to it."""
        return self._run(ops.add(self._endpoint.scope, text, options))

    def add_conversation(
        self, messages: Iterable[ChatMessage], options: ConversationOptions | None = None
    ) -> ConversationResult:
        """Distil a conversation into facts and store each one."""
        return self._run(ops.add_conversation(self._endpoint.scope, messages, options))

    def add_batch(
        self, memories: Iterable[str | BatchMemory] = (), conversations: Iterable[BatchConversation] = ()
    ) -> BatchResult:
        """*Extra.* Store many memories and conversations in one request and one transaction, in
        order (a later item is deduplicated against an earlier one); a result per item, in order."""
        return self._run(ops.add_batch(self._endpoint.scope, memories, conversations))

    def search(self, query: str, options: SearchOptions | None = None) -> SearchResults:
        """The memories that best match ``query``, best first."""
        return self._run(ops.search(self._endpoint.scope, query, options))

    def list(self, options: ListOptions | None = None) -> MemoryList:
        """One page of the user's memories, newest first."""
        return self._run(ops.list_memories(self._endpoint.scope, options))

    def get(self, memory_id: str) -> MemoryDetail | None:
        """One memory by id, or ``None`` when there is none (for this user)."""
        return self._run(ops.get(self._endpoint.scope, memory_id))

    def history(self, memory_id: str) -> MemoryHistory | None:
        """Every version of one memory, oldest first, or ``None`` when there is no such memory."""
        return self._run(ops.history(self._endpoint.scope, memory_id))

    def delete(self, memory_ids: Iterable[str]) -> str:
        """Delete memories by id; unknown ids are skipped. Returns the server's message."""
        return self._run(ops.delete(self._endpoint.scope, memory_ids))

    def reconcile(self, limit: int | None = None, types: Sequence[str] | None = None) -> ReconcileRun:
        """*Extra.* Start a reconciliation run in the background (or get the one already running):
        duplicate entities and stale facts; ``types`` any of ``entities``, ``facts``."""
        return self._run(reconcile_ops.start(self._endpoint.scope, limit, types))

    def reconcile_status(self, run_id: str | None = None) -> ReconcileStatus:
        """*Extra.* The latest reconciliation run (or the one named); ``idle`` when there is none."""
        return self._run(reconcile_ops.status(self._endpoint.scope, run_id))

    def cancel_reconcile_run(self, run_id: str) -> ReconcileRun:
        """*Extra.* Cancel a queued or running run; what it already applied stays (undo it
        suggestion by suggestion). A finished run answers 409."""
        return self._run(reconcile_ops.cancel(self._endpoint.scope, run_id))

    def list_merge_suggestions(self, status: str | None = None, offset: int = 0, limit: int = 50) -> MergeSuggestionList:
        """*Extra.* Reconciliation suggestions, newest first; ``status`` pending, approved or rejected."""
        return self._run(reconcile_ops.suggestions(self._endpoint.scope, status, offset, limit))

    def approve_suggestion(self, suggestion_id: str) -> MergeSuggestion:
        """*Extra.* Apply a pending suggestion (reversibly)."""
        return self._run(reconcile_ops.decide(self._endpoint.scope, suggestion_id, "approve"))

    def reject_suggestion(self, suggestion_id: str) -> MergeSuggestion:
        """*Extra.* Reject a pending suggestion; no later run suggests it again."""
        return self._run(reconcile_ops.decide(self._endpoint.scope, suggestion_id, "reject"))

    def undo_suggestion(self, suggestion_id: str) -> MergeSuggestion:
        """*Extra.* Undo an applied suggestion: the memories and entities are as they were before it."""
        return self._run(reconcile_ops.decide(self._endpoint.scope, suggestion_id, "undo"))

    def merge_entities(self, source: str, target: str) -> MergeSuggestion:
        """*Extra.* Merge entity ``source`` into ``target`` (canonical names), recorded as a
        suggestion approved by hand, undone like any other."""
        return self._run(reconcile_ops.merge(self._endpoint.scope, source, target))

    def add_media(
        self,
        name: str,
        *,
        text: str | None = None,
        data: bytes | None = None,
        media_type: str | None = None,
        caption: str | None = None,
        project: str | None = None,
        tags: Sequence[str] | None = None,
        session_id: str | None = None,
    ) -> MediaResult:
        """*Extra.* Remember a document (``text``: plain, Markdown or HTML; ``data``: the file's
        bytes, e.g. a PDF) as facts that keep their page and offset, or an image (``data``) by its
        ``caption`` (or one the server's vision model writes). The type comes from ``media_type``,
        else from ``name``."""
        return self._run(curation_ops.add_media(
            self._endpoint.scope, name, text=text, data=data, media_type=media_type, caption=caption,
            project=project, tags=tags, session_id=session_id,
        ))

    def communities(self, level: int | None = None) -> builtins.list[Community]:  # `list` is a method here
        """*Extra.* The user's communities of entities and facts (``level`` 0 or 1, default both),
        level 0 first, largest first."""
        return self._run(curation_ops.communities(self._endpoint.scope, level))

    def health(self) -> HealthResult:
        """The server's health report; a degraded server (503) is a result, not an error."""
        return self._run(ops.health())

    def close(self) -> None:
        """Close the connection pool, unless it belongs to a caller-supplied ``http_client``."""
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _run(self, call: ops.Call[T]) -> T:
        attempt = 1
        while True:
            try:
                return self._send(call)
            except CortadelError as error:
                delay = self._retry.delay_after(call, attempt, error) if self._retry else None
                if delay is None:
                    raise
            time.sleep(delay)
            attempt += 1

    def _send(self, call: ops.Call[T]) -> T:
        request = self._endpoint.request(self._http, call)
        with translated_transport_errors(request):
            response = self._http.send(request, follow_redirects=False)
        return finish(call, response)
