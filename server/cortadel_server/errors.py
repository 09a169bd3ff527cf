"""The one exception tree of the server. Foreign errors are translated at their boundary.

    CortadelError
    ├── ConfigError            a bad setting; the server refuses to start
    ├── StorageError           the database failed (translated from apsw / psycopg)
    │   ├── DimensionMismatch  stored vectors have another dimension than the embedder
    │   └── StaleSnapshot      a search's snapshot is older than the caches: it runs again in a new one
    ├── ProviderError          an embedder, reranker or LLM failed or timed out
    │   ├── MissingDependency  an optional package for a provider is not installed
    │   └── ExtractionFailed   the LLM extracted no facts and no fallback extractor is configured
    ├── TransferError          an export, import or migration cannot go on (bad file, user already present)
    ├── RequestError           the caller's fault; carries the HTTP status and error code
    │   ├── NotFound           404 not_found
    │   ├── Unauthorized       401 unauthorized
    │   ├── Forbidden          403 forbidden
    │   ├── Conflict           409 conflict: the request no longer fits the stored state
    │   ├── ValidationFailed   400 validation_error, with per-field messages
    │   ├── PayloadTooLarge    413 payload_too_large
    │   │   └── BudgetExceeded 413: extracting facts would take longer than CORTADEL_WRITE_BUDGET
    │   └── UnsupportedMediaType 415 unsupported_media_type: a document or image of a type not taken
    └── RequestCancelled       the client went away: the request's remaining work is dropped
"""

from __future__ import annotations


class CortadelError(Exception):
    """Base of every error the server raises on purpose."""


class ConfigError(CortadelError):
    """A setting is missing or malformed. The message names the setting, on one line."""


class StorageError(CortadelError):
    """The database failed."""


class DimensionMismatch(StorageError):
    """Stored vectors do not have the configured embedder's dimension."""


class StaleSnapshot(StorageError):
    """A renewable search snapshot (``Storage.search_snapshot``) is older than what a cache of the
    backend holds, which another thread moved past it: the search runs again in a new snapshot
    rather than wait for the user's rows read whole."""


class TransferError(CortadelError):
    """An export, import or migration stopped: the message names the file line or user and what to do."""


class ProviderError(CortadelError):
    """An external or local model provider failed."""


class MissingDependency(ProviderError):
    """An optional dependency of a provider is not installed."""


class ExtractionFailed(ProviderError):
    """The LLM could not extract facts and no fallback extractor is configured."""


class RequestError(CortadelError):
    status: int = 400
    code: str = "bad_request"

    def __init__(self, message: str, *, detail: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail


class NotFound(RequestError):
    status = 404
    code = "not_found"


class Unauthorized(RequestError):
    status = 401
    code = "unauthorized"


class Forbidden(RequestError):
    status = 403
    code = "forbidden"


class Conflict(RequestError):
    status = 409
    code = "conflict"


class PayloadTooLarge(RequestError):
    status = 413
    code = "payload_too_large"


class UnsupportedMediaType(RequestError):
    status = 415
    code = "unsupported_media_type"


class BudgetExceeded(PayloadTooLarge):
    """The request needs more work than one request may spend; smaller parts would pass."""


class RequestCancelled(CortadelError):
    """The client stopped waiting; nothing answers it, so the work stops at the next safe point."""


class ValidationFailed(RequestError):
    status = 400
    code = "validation_error"

    def __init__(self, errors: dict[str, list[str]], message: str | None = None) -> None:
        super().__init__(message or "; ".join(f"{name}: {reasons[0]}" for name, reasons in errors.items()))
        self.errors = errors
