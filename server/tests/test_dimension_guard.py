"""Changing the embedder: the server refuses mismatched vectors until they are re-embedded (the
refusal and `cortadel reindex` on both backends)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
from support.minilm import minilm_dir

from cortadel_server.testing import ServerProcess, database_for

ONNX_ENV = {"CORTADEL_EMBEDDER": "onnx", "CORTADEL_EMBEDDER_MODEL": str(minilm_dir())}


def cortadel(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cortadel_server", *args], check=False, env={**os.environ, **env},
                          capture_output=True, text=True, timeout=300)


def test_mismatch_refuses_start_until_reindexed(tmp_path: Path, backend: str) -> None:
    data = tmp_path / "guard.db"
    url = database_for(backend)
    store = {"CORTADEL_DATABASE_URL": url} if url else {}
    first = ServerProcess(data, database_url=url)
    first.start()
    with httpx.Client(base_url=first.base_url) as client:
        created = client.post("/api/v1/memories", json={"user_id": "g", "text": "Gus keeps bees on the roof.", "infer": False}).json()
    first.stop()

    refused = cortadel("serve", "--port", "0", "--data", str(data), env={**ONNX_ENV, **store})
    assert refused.returncode == 2
    message = refused.stderr.strip().splitlines()[-1]
    assert "dimension 256" in message and "384" in message
    assert "cortadel reindex" in message and "CORTADEL_ALLOW_DIM_MISMATCH" in message

    reindexed = cortadel("reindex", "--data", str(data), env={**ONNX_ENV, **store})
    assert reindexed.returncode == 0, reindexed.stderr
    assert "Re-embedded 1 memories with onnx/" in reindexed.stdout and "(dimension 384)" in reindexed.stdout

    second = ServerProcess(data, env=ONNX_ENV, database_url=url)
    second.start()
    try:
        with httpx.Client(base_url=second.base_url) as client:
            health = client.get("/api/health").json()
            assert health["checks"]["embeddings"]["dim"] == 384 and health["checks"]["indexes"]["ok"] is True
            hits = client.post("/api/v1/memories/search", json={"user_id": "g", "query": "beekeeping", "mode": "vector"}).json()
            assert hits["results"][0]["id"] == created["id"]
    finally:
        second.stop()


def test_http_reindex_heals_a_degraded_server(tmp_path: Path, backend: str) -> None:
    data = tmp_path / "heal.db"
    url = database_for(backend)
    first = ServerProcess(data, database_url=url)
    first.start()
    with httpx.Client(base_url=first.base_url) as client:
        client.post("/api/v1/memories", json={"user_id": "h", "text": "Hana bakes sourdough every Sunday.", "infer": False})
    first.stop()

    degraded = ServerProcess(data, env={**ONNX_ENV, "CORTADEL_ALLOW_DIM_MISMATCH": "true"}, database_url=url)
    degraded.start()
    try:
        with httpx.Client(base_url=degraded.base_url, timeout=120) as client:
            sick = client.get("/api/health")
            assert sick.status_code == 503
            assert sick.json()["status"] == "degraded"
            index = {"sqlite": "memories.embedding[256] cosine", "postgres": "memories.embedding[256] cosine (pgvector, exact)"}[backend]
            assert sick.json()["checks"]["indexes"]["mismatches"] == [f"{index}: dimension 256 != embedder 384"]
            healed = client.post("/api/v1/debug/reindex-vectors")
            assert healed.status_code == 200
            assert healed.json()["reindexed"] == 1 and healed.json()["dim"] == 384
            assert client.get("/api/health").status_code == 200
            hits = client.post("/api/v1/memories/search", json={"user_id": "h", "query": "bread baking", "mode": "vector"}).json()
            assert hits["results"][0]["content"] == "Hana bakes sourdough every Sunday."
    finally:
        degraded.stop()
