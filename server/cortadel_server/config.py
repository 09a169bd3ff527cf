"""Settings, read once from ``CORTADEL_*`` environment variables (and CLI overrides).

Every setting is declared once in ``SETTINGS``; docs/configuration.md documents each of them and a
test fails when the two drift apart. A bad value fails at start with a one-line message naming it.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cortadel_server.errors import ConfigError

ENV_PREFIX = "CORTADEL_"
POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def _choice(*allowed: str) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        value = raw.strip().lower()
        if value not in allowed:
            raise ValueError(f"must be one of {', '.join(allowed)}")
        return value

    return parse


def _int_range(lo: int, hi: int) -> Callable[[str], int]:
    def parse(raw: str) -> int:
        try:
            value = int(raw)
        except ValueError:
            raise ValueError("must be a whole number") from None
        if not lo <= value <= hi:
            raise ValueError(f"must be between {lo} and {hi}")
        return value

    return parse


def _float_range(lo: float, hi: float) -> Callable[[str], float]:
    def parse(raw: str) -> float:
        try:
            value = float(raw)
        except ValueError:
            raise ValueError("must be a number") from None
        if not lo <= value <= hi:
            raise ValueError(f"must be between {lo} and {hi}")
        return value

    return parse


def _bool(raw: str) -> bool:
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off", ""):
        return False
    raise ValueError("must be true or false")


def _text(raw: str) -> str:
    return raw


def _optional_text(raw: str) -> str | None:
    return raw or None


@dataclass(frozen=True)
class Setting:
    """One configuration knob: its field name, parser and one-line description. Its default is the
    ``Settings`` field's, written once there."""

    name: str
    parse: Callable[[str], Any]
    help: str

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.name.upper()

    @property
    def default(self) -> Any:
        return Settings.__dataclass_fields__[self.name].default


SETTINGS: tuple[Setting, ...] = (
    Setting("host", _text, "Interface to bind. Anything beyond loopback without an auth secret logs a warning."),
    Setting("port", _int_range(0, 65535), "TCP port for REST and MCP."),
    Setting("data", _text, "SQLite database file (created with its folder if missing)."),
    Setting("database_url", _optional_text, "A database URL; when set it wins over `data`: `sqlite:///path/file.db`, or `postgresql://user:password@host:5432/db` for PostgreSQL with pgvector (docs/scaling.md)."),
    Setting("auth_secret", _optional_text, "HMAC secret for API keys. Unset: every endpoint is open."),
    Setting("admin_key", _optional_text, "The admin credential, for operations on every user (reindex) or any user (delete-user); user keys never pass. Unset with an auth secret: admin operations are refused."),
    Setting("embedder", _choice("wordllama", "onnx", "openai"), "Embedding provider."),
    Setting("embedder_model", _optional_text, "Model for the embedder: wordllama config name (default l2_supercat), the ONNX model directory, or the remote model name."),
    Setting("embedder_url", _optional_text, "Base URL of an OpenAI-compatible embeddings API (e.g. http://localhost:11434/v1)."),
    Setting("embedder_api_key", _optional_text, "API key sent to the embeddings API."),
    Setting("embedder_dim", _int_range(0, 65536), "Truncate/ask the remote embedder for this dimension (0 = the model's own)."),
    Setting("reranker", _choice("none", "onnx", "http"), "Cross-encoder used by `rerank: \"cross_encoder\"`."),
    Setting("reranker_model", _optional_text, "ONNX cross-encoder directory, or the model name sent to the HTTP reranker."),
    Setting("reranker_url", _optional_text, "Base URL of a rerank API (TEI, llama.cpp, Jina- or Cohere-compatible)."),
    Setting("reranker_api_key", _optional_text, "API key sent to the rerank API."),
    Setting("extractor", _choice("rules", "llm"), "Fact extractor of the write pipeline."),
    Setting("llm_url", _optional_text, "Base URL of an OpenAI-compatible chat API (OpenAI, Ollama, vLLM, LM Studio, llama.cpp, LiteLLM)."),
    Setting("llm_model", _optional_text, "Chat model name for the `llm` extractor."),
    Setting("llm_api_key", _optional_text, "API key sent to the chat API."),
    Setting("llm_timeout", _float_range(0.1, 600), "Seconds the LLM calls of one write request may take together (extraction, repair, every verdict), reading whole answers and retries included."),
    Setting("llm_fallback", _choice("rules", "error"), "On an LLM outage: fall back to the rules extractor, or report `ERROR` items."),
    Setting("categories", _optional_text, "Comma-separated category taxonomy replacing the built-in one."),
    Setting("max_conversation_bytes", _int_range(64 * 1024, 1024**3), "Largest body of a from-conversation request or an MCP message, in bytes (413 beyond)."),
    Setting("max_batch_items", _int_range(1, 100_000), "Most memories and conversations one batch request (`POST /api/v1/memories/batch`) may hold together (413 beyond)."),
    Setting("max_batch_bytes", _int_range(64 * 1024, 1024**3), "Largest body of a batch request, in bytes (413 beyond)."),
    Setting("mcp_max_sessions", _int_range(1, 1_000_000), "MCP sessions open at once over HTTP; a new one beyond is refused until one closes or idles out."),
    Setting("mcp_session_idle_timeout", _float_range(1, 86400), "Seconds after which an idle MCP session is closed."),
    Setting("query_timeout", _float_range(0.01, 600), "Seconds after which one database query is interrupted; on SQLite also how long a write waits for the file's write lock (another process's write) before it fails as locked."),
    Setting("episode_gap", _float_range(0, 365 * 86400), "Seconds of statement time between two memories written without a session id that end the episode the first belongs to (the session arm and the context column group by episodes; docs/retrieval.md). 0: every such memory is an episode of its own."),
    Setting("write_budget", _float_range(0.1, 3600), "Seconds of work one write request may spend (extraction, LLM calls, storing facts); beyond, the rest is refused (see docs/pipeline.md)."),
    Setting("write_workers", _int_range(1, 64), "REST write requests processed at once; more wait their turn without holding a thread."),
    Setting("read_workers", _int_range(1, 256), "REST searches processed at once, apart from the writes so waiting writes never slow them."),
    Setting("workers", _int_range(1, 64), "Server processes serving the one port (`cortadel serve --workers`); 1 serves from the process itself. More use more cores (docs/deploy.md)."),
    Setting("log_level", _choice("debug", "info", "warning", "error"), "Log level."),
    Setting("log_format", _choice("plain", "json"), "Log line format."),
    Setting("reconcile_auto_approve", _float_range(0, 1.01), "Reconciliation findings at or above this confidence are applied at once (approved by the run); the rest wait for review. Above 1: none are (docs/curation.md)."),
    Setting("reconcile_every", _float_range(0, 365 * 86400), "Seconds between scheduled reconciliation runs of each user who wrote since their last run; 0 = only on demand."),
    Setting("allow_dim_mismatch", _bool, "Start even when stored vectors have another dimension than the embedder (vector search is then degraded until `cortadel reindex`)."),
    Setting("fade_half_life_days", _float_range(0, 36500), "Fading (docs/curation.md): a memory neither written, touched nor recalled for this many days counts half in search, twice as long a quarter. 0 (the default) turns fading off: search results are exactly those without it."),
    Setting("fade_hidden_below", _float_range(0, 1), "With fading on, a memory whose weight fell below this is left out of search results unless the request sets `include_faded` (0: never left out)."),
    Setting("clock_offset_days", _float_range(-36500, 36500), "Days added to the server's clock for the times it writes and fades by: replays history, and tests fading. Leave 0 in production."),
    Setting("max_media_bytes", _int_range(1024, 1024**3), "Largest document or image `POST /api/v1/media` and the `add_media` tool take, in bytes once decoded (413 beyond)."),
    Setting("vision_model", _optional_text, "A vision-capable chat model at CORTADEL_LLM_URL that writes the caption of an image sent without one. Unset: such an image is refused with a 400 that says so."),
)


@dataclass(frozen=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 3001
    data: str = "./data/cortadel.db"
    database_url: str | None = None
    auth_secret: str | None = None
    admin_key: str | None = None
    embedder: str = "wordllama"
    embedder_model: str | None = None
    embedder_url: str | None = None
    embedder_api_key: str | None = None
    embedder_dim: int = 0
    reranker: str = "none"
    reranker_model: str | None = None
    reranker_url: str | None = None
    reranker_api_key: str | None = None
    extractor: str = "rules"
    llm_url: str | None = None
    llm_model: str | None = None
    llm_api_key: str | None = None
    llm_timeout: float = 30.0
    llm_fallback: str = "rules"
    categories: str | None = None
    max_conversation_bytes: int = 4 * 1024**2
    max_batch_items: int = 1000
    max_batch_bytes: int = 32 * 1024**2
    mcp_max_sessions: int = 1000
    mcp_session_idle_timeout: float = 600.0
    query_timeout: float = 10.0
    episode_gap: float = 1800.0
    write_budget: float = 60.0
    write_workers: int = 4
    read_workers: int = 16
    workers: int = 1
    log_level: str = "info"
    log_format: str = "plain"
    reconcile_auto_approve: float = 0.9
    reconcile_every: float = 0.0
    allow_dim_mismatch: bool = False
    fade_half_life_days: float = 0.0
    fade_hidden_below: float = 0.1
    clock_offset_days: float = 0.0
    max_media_bytes: int = 20 * 1024**2
    vision_model: str | None = None

    @property
    def postgres_url(self) -> str | None:
        """The PostgreSQL database this server uses, or None for SQLite."""
        url = self.database_url
        return url if url and url.startswith(POSTGRES_SCHEMES) else None

    @property
    def database_path(self) -> Path:
        """The SQLite file this server uses (when ``postgres_url`` is None)."""
        url = self.database_url
        if url and not self.postgres_url:
            if not url.startswith("sqlite:///"):
                raise ConfigError(
                    f"CORTADEL_DATABASE_URL: unsupported scheme in {url.split('://')[0]!r} "
                    "(expected sqlite:///path or postgresql://…)"
                )
            return Path(url.removeprefix("sqlite:///"))
        return Path(self.data)

    @property
    def database_location(self) -> str:
        """Where the data lives, for the log: the SQLite file, or the PostgreSQL host and database."""
        url = self.postgres_url
        if url is None:
            return str(self.database_path)
        return url.rpartition("@")[2] if "@" in url else url.partition("://")[2]

    def now(self) -> float:
        """The server's clock: wall-clock time moved by ``clock_offset_days``."""
        return time.time() + self.clock_offset_days * 86400

    def replace(self, **changes: Any) -> Settings:
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Read every ``CORTADEL_*`` variable; ``overrides`` (CLI flags) win when not None."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for setting in SETTINGS:
            raw = env.get(setting.env)
            if raw is None:
                continue
            try:
                values[setting.name] = setting.parse(raw)
            except ValueError as exc:
                raise ConfigError(f"{setting.env}={raw!r}: {exc}") from None
        values.update({k: v for k, v in overrides.items() if v is not None})
        settings = cls(**values)
        settings.check()
        return settings

    def check(self) -> None:
        """Cross-field rules that a single parser cannot see."""
        if self.embedder == "openai" and not self.embedder_url:
            raise ConfigError("CORTADEL_EMBEDDER_URL: required when CORTADEL_EMBEDDER=openai")
        if self.embedder == "onnx" and not self.embedder_model:
            raise ConfigError("CORTADEL_EMBEDDER_MODEL: required when CORTADEL_EMBEDDER=onnx (a directory with model.onnx and tokenizer.json)")
        if self.reranker == "onnx" and not self.reranker_model:
            raise ConfigError("CORTADEL_RERANKER_MODEL: required when CORTADEL_RERANKER=onnx")
        if self.reranker == "http" and not self.reranker_url:
            raise ConfigError("CORTADEL_RERANKER_URL: required when CORTADEL_RERANKER=http")
        if self.vision_model and not self.llm_url:
            raise ConfigError("CORTADEL_LLM_URL: required when CORTADEL_VISION_MODEL is set (the vision model is served there)")
        if self.extractor == "llm" and not (self.llm_url and self.llm_model):
            raise ConfigError("CORTADEL_LLM_URL: CORTADEL_LLM_URL and CORTADEL_LLM_MODEL are required when CORTADEL_EXTRACTOR=llm")
        path = self.database_path  # also validates the URL scheme
        if self.postgres_url is None and path.is_dir():  # SQLite would only say "unable to open database file"
            setting = "CORTADEL_DATABASE_URL" if self.database_url else "CORTADEL_DATA (--data)"
            raise ConfigError(f"{setting}: {path} is a directory; it wants the database file's path, e.g. {path / 'cortadel.db'}")
