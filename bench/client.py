"""A thin asynchronous client for the Cortadel REST operations the harnesses use.

    async with BenchClient(server.base_url) as api:
        created = await api.add("alice", "Alice: I moved to Lisbon.", infer=False, metadata={"dia_id": "D1:3"})
        hits, seconds = await api.search("alice", "where does Alice live", top_k=10, mode="hybrid")

Every call returns the decoded JSON body; a non-2xx answer raises :class:`bench.errors.ApiError`.
`search` also returns its wall-clock time in seconds, measured around the HTTP round trip.
Reads (search, get, list) that hit a dropped keep-alive connection are sent once more on a new
one; ``transport_retries`` counts those so the reports can say how often it happened.

It sends over aiohttp rather than httpx because its own cost is part of every latency it reports:
on one search at 10,000 memories, 1.0 ms of the client's CPU per request against httpx's 2.6 to
3.8 ms (and 0.7 ms for a blocking ``http.client``), 1.5 to 2.5 ms less wall clock (docs/performance.md).

    async with await SearchConnection.open(server.base_url) as connection:   # searches/s at many clients
        hits, seconds = await connection.search("alice", "where does Alice live", top_k=10)

A throughput run shares the machine's cores with the server it measures, so there every search is
sent by :class:`SearchConnection`: one kept-alive HTTP/1.1 connection on asyncio's streams, a
fraction of aiohttp's CPU a search, which checks each answer as ``BenchClient`` does.
"""

from __future__ import annotations

import asyncio
import functools
import json
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from functools import partial
from typing import Any, Protocol, Self
from urllib.parse import urlsplit

import aiohttp
import pydantic_core

from bench.errors import ApiError

MEMORIES = "/api/v1/memories"
SEARCH = f"{MEMORIES}/search"


def server_phase_seconds(results: Sequence[dict[str, Any]]) -> float | None:
    """The server's own timing of a search (embedding, arms, fusion, records, rerank: the phases of
    ``attributes.timings_ms``, each timed apart), in seconds."""
    if not results:
        return None
    timings = (results[0].get("attributes") or {}).get("timings_ms") or {}
    return sum(timings.values()) / 1000.0 if timings else None


class Searcher(Protocol):
    """What sends a harness's searches: ``BenchClient`` or a ``SearchConnection``."""

    async def search(self, user_id: str, query: str, *, top_k: int = 10, mode: str = "hybrid") -> tuple[list[dict[str, Any]], float]: ...


def search_body(user_id: str, query: str, top_k: int, mode: str, rerank: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"user_id": user_id, "query": query, "top_k": top_k, "mode": mode}
    if rerank is not None:
        body["rerank"] = rerank
    return body


class BenchClient:
    def __init__(self, base_url: str, *, timeout: float = 100.0, max_connections: int = 16) -> None:
        """Made inside a running event loop (aiohttp's session belongs to one)."""
        self._http = aiohttp.ClientSession(
            base_url,
            connector=aiohttp.TCPConnector(limit=max_connections),
            timeout=aiohttp.ClientTimeout(total=timeout),
            json_serialize=partial(json.dumps, separators=(",", ":"), ensure_ascii=False),  # httpx's compact bodies
        )
        self.transport_retries = 0

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._http.close()

    async def _call(self, method: str, path: str, *, json: Any = None, params: Mapping[str, Any] | None = None, read: bool = False) -> Any:
        try:
            return await self._send(method, path, json, params)
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError):
            if not read:
                raise
            self.transport_retries += 1
            return await self._send(method, path, json, params)

    async def _send(self, method: str, path: str, json: Any, params: Mapping[str, Any] | None) -> Any:
        async with self._http.request(method, path, json=json, params=params) as response:
            if response.status >= 300:
                raise ApiError(method, path, response.status, await response.text())
            return await response.json()

    async def health(self) -> dict[str, Any]:
        async with self._http.get("/api/health") as response:
            return await response.json()

    async def add(self, user_id: str, text: str, *, infer: bool = False, metadata: Mapping[str, Any] | None = None, app: str | None = None,
                  session_id: str | None = None, timestamp: str | None = None) -> dict[str, Any]:
        """``session_id`` and ``timestamp`` are Cortadel extensions of the add body; None leaves a field out."""
        optional = {"metadata": dict(metadata) if metadata is not None else None, "app": app, "session_id": session_id, "timestamp": timestamp}
        body: dict[str, Any] = {"user_id": user_id, "text": text, "infer": infer, **{k: v for k, v in optional.items() if v is not None}}
        return await self._call("POST", MEMORIES, json=body)

    async def add_conversation(self, user_id: str, messages: Sequence[Mapping[str, Any]], *, session_id: str | None = None,
                               is_agent_memory: bool | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"user_id": user_id, "messages": list(messages)}
        if session_id is not None:
            body["session_id"] = session_id
        if is_agent_memory is not None:
            body["is_agent_memory"] = is_agent_memory
        return await self._call("POST", f"{MEMORIES}/from-conversation", json=body)

    async def add_batch(self, user_id: str, memories: Sequence[Mapping[str, Any]] = (), *,
                        conversations: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
        """A Cortadel extension: many memories and conversations of one user in one request."""
        body = {"user_id": user_id, "memories": list(memories), "conversations": list(conversations)}
        return await self._call("POST", f"{MEMORIES}/batch", json=body)

    async def search(self, user_id: str, query: str, *, top_k: int = 10, mode: str = "hybrid", rerank: str | None = None) -> tuple[list[dict[str, Any]], float]:
        started = time.perf_counter()
        payload = await self._call("POST", SEARCH, json=search_body(user_id, query, top_k, mode, rerank), read=True)
        return payload["results"], time.perf_counter() - started

    async def get(self, user_id: str, memory_id: str) -> dict[str, Any]:
        return await self._call("GET", f"{MEMORIES}/{memory_id}", params={"user_id": user_id}, read=True)

    async def delete(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, Any]:
        return await self._call("DELETE", MEMORIES, json={"user_id": user_id, "memory_ids": list(memory_ids)})

    async def communities(self, user_id: str, *, level: int | None = None) -> tuple[list[dict[str, Any]], float]:
        """The user's communities (a Cortadel extension), and the wall-clock seconds of the request."""
        params: dict[str, Any] = {"user_id": user_id} if level is None else {"user_id": user_id, "level": level}
        started = time.perf_counter()
        payload = await self._call("GET", "/api/v1/communities", params=params, read=True)
        return payload["communities"], time.perf_counter() - started

    async def count(self, user_id: str, *, include_superseded: bool = False) -> int:
        """The user's memories (current ones; with ``include_superseded`` every one stored), as the listing totals them."""
        params = {"user_id": user_id, "size": 1, **({"include_superseded": "true"} if include_superseded else {})}
        return int((await self._call("GET", MEMORIES, params=params, read=True))["total"])

    async def pending_jobs(self) -> int:
        """Background jobs queued or running (enrichment among them), from the server's metrics."""
        async with self._http.get("/metrics") as response:
            if response.status >= 300:
                raise ApiError("GET", "/metrics", response.status, await response.text())
            text = await response.text()
        return next(int(float(line.split()[-1])) for line in text.splitlines() if line.startswith("cortadel_jobs_pending "))

    async def list_all(self, user_id: str, *, size: int = 100) -> AsyncIterator[dict[str, Any]]:
        """Every current memory of a user, newest first, walking the pages."""
        page = 1
        while True:
            payload = await self._call("GET", MEMORIES, params={"user_id": user_id, "page": page, "size": size}, read=True)
            items = payload.get("items") or []
            for item in items:
                yield item
            if page >= (payload.get("pages") or 0) or not items:
                return
            page += 1


class SearchConnection:
    """Searches over one kept-alive HTTP/1.1 connection, one at a time, on asyncio's streams.

    What aiohttp does for a request, cut to what a search over loopback needs: the request written
    as bytes (encoded once for each search sent), the answer's status line and ``Content-Length``
    read, its body decoded by pydantic-core. Every answer is checked as ``BenchClient`` checks it: any status but 200 raises
    :class:`ApiError`, and the answer's hits must be as many as its ``total`` says. It takes no
    chunked answers (Cortadel's carry a length) and reconnects never: a dropped connection raises.
    """

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str) -> None:
        self._reader = reader
        self._writer = writer
        self._host = host

    @classmethod
    async def open(cls, base_url: str) -> SearchConnection:
        url = urlsplit(base_url)
        if url.scheme != "http" or url.hostname is None or url.port is None:
            raise ValueError(f"SearchConnection speaks plain HTTP to a host and port: {base_url!r}")
        reader, writer = await asyncio.open_connection(url.hostname, url.port)
        return cls(reader, writer, url.netloc)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        self._writer.close()
        await self._writer.wait_closed()

    async def search(self, user_id: str, query: str, *, top_k: int = 10, mode: str = "hybrid") -> tuple[list[dict[str, Any]], float]:
        """The hits, and the wall-clock seconds from the request's first byte written to the answer's last read."""
        request = _search_request(self._host, user_id, query, top_k, mode)
        started = time.perf_counter()
        self._writer.write(request)
        status, payload = await self._answer()
        elapsed = time.perf_counter() - started
        if status != 200:
            raise ApiError("POST", SEARCH, status, payload.decode("utf-8", "replace"))
        answer = pydantic_core.from_json(payload)  # the same values as json.loads, in half its time
        results: list[dict[str, Any]] = answer["results"]
        if len(results) != answer["total"]:
            raise ApiError("POST", SEARCH, status, f"{len(results)} hits in an answer whose total is {answer['total']}")
        return results, elapsed

    async def _answer(self) -> tuple[int, bytes]:
        """The status and body of the next answer on the connection."""
        head = await self._reader.readuntil(b"\r\n\r\n")
        status_line, *headers = head[:-4].split(b"\r\n")
        length = None
        for header in headers:
            name, _, value = header.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        if length is None:
            raise ApiError("POST", SEARCH, int(status_line.split()[1]), "an answer without Content-Length")
        return int(status_line.split()[1]), await self._reader.readexactly(length)


@functools.lru_cache(maxsize=4096)
def _search_request(host: str, user_id: str, query: str, top_k: int, mode: str) -> bytes:
    """A search's HTTP request, whole: a throughput run sends the same few hundred again and again."""
    body = json.dumps(search_body(user_id, query, top_k, mode), separators=(",", ":"), ensure_ascii=False).encode()
    head = f"POST {SEARCH} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    return head.encode() + body
