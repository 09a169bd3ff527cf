"""The systems compared side by side: one server configuration plus one way of asking it.

Modes are query-time options, so one server (one embedder) and one ingestion serve BM25, vector,
hybrid and hybrid + rerank. BM25 does not depend on the embedder and is asked of the first server only.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from bench.server import MINILM, WORDLLAMA, ServerConfig

TURNS = "turns"  # every turn added verbatim with infer: false, with the session_id / timestamp extensions
CONTRACT = "turns · contract"  # the same turns with the contract's fields only, as the published SDKs send them
FACTS = "facts"  # each session through from-conversation, facts mapped back to turns
INGEST_MODES = (TURNS, CONTRACT, FACTS)


@dataclass(frozen=True)
class Variant:
    """How a system asks: the search ``mode`` and the ``rerank`` strategy."""

    name: str
    mode: str
    rerank: str | None = None


BM25 = Variant("bm25", "text")
VECTOR = Variant("vector", "vector")
HYBRID = Variant("hybrid", "hybrid")
HYBRID_RERANK = Variant("hybrid+rerank", "hybrid", "cross_encoder")


@dataclass(frozen=True)
class ServerPlan:
    """One server to start, and the variants asked of it."""

    config: ServerConfig
    variants: tuple[Variant, ...]

    def label(self, variant: Variant) -> str:
        if variant is BM25:  # needs no embedder: named by its backend alone
            return "bm25" if self.config.backend == "sqlite" else f"bm25 · {self.config.backend}"
        return f"{variant.name} · {self.config.name}"


def with_reranker(config: ServerConfig, reranker_model: str | None) -> ServerConfig:
    if not reranker_model:
        return config
    return dataclasses.replace(config, env={**config.env, "CORTADEL_RERANKER": "onnx", "CORTADEL_RERANKER_MODEL": reranker_model})


def server_plans(reranker_model: str | None, source: Path, backend: str = "sqlite") -> list[ServerPlan]:
    """The Cortadel systems of one run, all on the server code in ``source``; hybrid + rerank only
    when a cross-encoder model is given. ``backend`` "both": each system on SQLite, then on
    PostgreSQL (named "… · postgres")."""
    rerank = (HYBRID_RERANK,) if reranker_model else ()
    plans = [
        ServerPlan(with_reranker(WORDLLAMA.from_source(source), reranker_model), (BM25, VECTOR, HYBRID, *rerank)),
        ServerPlan(with_reranker(MINILM.from_source(source), reranker_model), (VECTOR, HYBRID, *rerank)),
    ]
    backends = ["sqlite", "postgres"] if backend == "both" else [backend]
    return [
        dataclasses.replace(plan, config=dataclasses.replace(
            plan.config, backend=name, name=plan.config.name if name == "sqlite" else f"{plan.config.name} · {name}"))
        for name in backends for plan in plans
    ]
