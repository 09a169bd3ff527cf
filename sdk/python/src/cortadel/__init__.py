"""Python client for the Cortadel long-term memory server.

``CortadelClient`` (async) and ``SyncCortadelClient`` (blocking) offer the same calls: ``add``,
``add_conversation``, ``add_batch``, ``search``, ``list``, ``get``, ``history``, ``delete``, ``health``. The
names below are the whole public surface; the underscore modules are private.
"""

from ._client import CortadelClient
from ._curation import Community, MediaFact, MediaResult
from ._errors import (
    AuthenticationError,
    CortadelError,
    NotFoundError,
    PermissionDeniedError,
    RequestTimeoutError,
    ServerError,
    TransportError,
    ValidationError,
)
from ._http import DEFAULT_BASE_URL, DEFAULT_TIMEOUT, Retry
from ._models import (
    DEFAULT_LIST_SIZE,
    AddOptions,
    BatchConversation,
    BatchMemory,
    BatchResult,
    ChatMessage,
    ConversationIngestItem,
    ConversationOptions,
    ConversationResult,
    HealthResult,
    HistoryEvent,
    Instant,
    ListOptions,
    MemoryCreated,
    MemoryDetail,
    MemoryHistory,
    MemoryList,
    MemoryListItem,
    SearchHit,
    SearchOptions,
    SearchResults,
)
from ._reconcile import MergeSuggestion, MergeSuggestionList, ReconcileRun, ReconcileStatus
from ._sync_client import SyncCortadelClient
from ._version import __version__

__all__ = [
    "AddOptions",
    "AuthenticationError",
    "BatchConversation",
    "BatchMemory",
    "BatchResult",
    "ChatMessage",
    "Community",
    "ConversationIngestItem",
    "ConversationOptions",
    "ConversationResult",
    "CortadelClient",
    "CortadelError",
    "DEFAULT_BASE_URL",
    "DEFAULT_LIST_SIZE",
    "DEFAULT_TIMEOUT",
    "HealthResult",
    "HistoryEvent",
    "Instant",
    "ListOptions",
    "MediaFact",
    "MediaResult",
    "MemoryCreated",
    "MemoryDetail",
    "MemoryHistory",
    "MemoryList",
    "MemoryListItem",
    "MergeSuggestion",
    "MergeSuggestionList",
    "NotFoundError",
    "PermissionDeniedError",
    "ReconcileRun",
    "ReconcileStatus",
    "RequestTimeoutError",
    "Retry",
    "SearchHit",
    "SearchOptions",
    "SearchResults",
    "ServerError",
    "SyncCortadelClient",
    "TransportError",
    "ValidationError",
    "__version__",
]
