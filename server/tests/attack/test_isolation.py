"""Tenant isolation under a random mix of every REST operation and every MCP tool.

A victim B stores memories that carry a secret token; an attacker A then runs a seeded random
sequence of every operation, aimed at B's words, ids, project, tag, session and app, with auth off
(A's user_id) and with auth on (A's key). No response to A may contain B's secret or an id of B's
that A did not send itself; B's reads of its own data are identical before and after; with auth,
A's key on B's user id or B's MCP path is 403.
"""

from __future__ import annotations

import json
import random
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from mcp import Client

from attack import budget
from attack.sessions import bearer, mcp_session
from cortadel_server.testing import ServerProcess

pytestmark = pytest.mark.anyio

WORDS = ["vault", "code", "garden", "Lisbon", "password", "doctor", "salary", "passport", "allergy", "bank"]


@pytest.fixture()
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Tenant:
    user_id: str
    key: str | None
    secret: str  # a token only this tenant's memories contain; the attacker never sends it
    ids: list[str] = field(default_factory=list)

    @property
    def names(self) -> dict[str, str]:
        return {"project": f"proj-{self.user_id}", "tag": f"tag-{self.user_id}",
                "session_id": f"sess-{self.user_id}", "app": f"app-{self.user_id}"}


def _tenant(server: ServerProcess, role: str, auth: bool) -> Tenant:
    user_id = f"{role}-{uuid.uuid4().hex[:8]}"
    return Tenant(user_id, server.mint_key(user_id) if auth else None, f"S3cr{uuid.uuid4().hex[:12]}")


async def _seed(http: httpx.AsyncClient, server: ServerProcess, victim: Tenant) -> None:
    """B's memories through every write path, each carrying B's secret among common words."""
    auth = bearer(victim.key)
    names = victim.names
    for i, word in enumerate(WORDS[:6]):
        response = await http.post("/api/v1/memories", headers=auth, json={
            "user_id": victim.user_id, "text": f"My {word} {WORDS[i + 1]} is {victim.secret}-{i}.",
            "infer": i % 2 == 0, "app": names["app"], "project": names["project"], "tags": [names["tag"]],
            "session_id": names["session_id"], "metadata": {"secret": victim.secret},
        })
        assert response.status_code == 200, response.text
        victim.ids.append(response.json()["id"])
    response = await http.post("/api/v1/memories/from-conversation", headers=auth, json={
        "user_id": victim.user_id, "project": names["project"], "tags": [names["tag"]],
        "session_id": names["session_id"],
        "messages": [{"role": "user", "content": f"I moved to Lisbon and my bank pin is {victim.secret}."}],
    })
    assert response.status_code == 200, response.text
    victim.ids += [item["id"] for item in response.json().get("results", []) if item["id"]]
    async with mcp_session(f"{server.base_url}/mcp/{names['app']}/{victim.user_id}", bearer(victim.key)) as mcp:
        result = await mcp.call_tool("add_memories", {
            "memories": [f"Always deploy with the vault code {victim.secret} on Tuesdays."],
            "project": names["project"], "tags": [names["tag"]], "memory_type": "procedural"})
        assert not result.is_error, result.content[0].text
        victim.ids += [item["id"] for item in result.structured_content["results"] if item["id"]]
    assert len(set(victim.ids)) >= 7


async def _snapshot(http: httpx.AsyncClient, tenant: Tenant) -> dict[str, Any]:
    """Everything B can read about its own memories."""
    auth = bearer(tenant.key)
    listed = await http.get("/api/v1/memories", headers=auth,
                            params={"user_id": tenant.user_id, "include_superseded": "true", "size": 100})
    assert listed.status_code == 200, listed.text
    state: dict[str, Any] = {"list": listed.json()}
    for memory_id in tenant.ids:
        one = await http.get(f"/api/v1/memories/{memory_id}", headers=auth, params={"user_id": tenant.user_id})
        history = await http.get(f"/api/v1/memories/{memory_id}/history", headers=auth,
                                 params={"user_id": tenant.user_id})
        state[memory_id] = (one.status_code, one.json(), history.status_code, history.json())
    return state


class Attack:
    """One attacker's random walk over every operation, checking every response for the victim's data."""

    def __init__(self, http: httpx.AsyncClient, mcp: Client, attacker: Tenant, victim: Tenant,
                 rng: random.Random, tally: Counter[str], label: str) -> None:
        self.http, self.mcp, self.attacker, self.victim = http, mcp, attacker, victim
        self.rng, self.tally, self.label = rng, tally, label

    # -- the checks --------------------------------------------------------------------------
    def check(self, op: str, sent: Any, status: int | None, text: str) -> None:
        self.tally[f"isolation {self.label}: ops"] += 1
        sent_text = json.dumps(sent)
        assert status is None or status < 500, (op, sent, status, text)
        assert self.victim.secret not in text, ("victim's secret leaked", op, sent, text)
        leaked = [i for i in self.victim.ids if i in text and i not in sent_text]
        assert not leaked, ("victim's ids leaked", op, sent, text)

    # -- draws -------------------------------------------------------------------------------
    def phrase(self) -> str:
        return " ".join(self.rng.sample(WORDS, self.rng.randint(1, 4)))

    def victim_name(self, kind: str) -> str | None:
        return self.rng.choice([None, self.victim.names[kind], self.attacker.names[kind]])

    def some_ids(self) -> list[str]:
        pool = self.victim.ids + self.attacker.ids + [str(uuid.uuid4())]
        return self.rng.sample(pool, self.rng.randint(1, min(4, len(pool))))

    def who(self, body: dict[str, Any]) -> dict[str, Any]:
        """A's user id, or with a key sometimes none at all (the key's user fills it)."""
        if self.attacker.key is None or self.rng.random() < 0.8:
            return {"user_id": self.attacker.user_id, **body}
        return body

    # -- REST --------------------------------------------------------------------------------
    async def rest(self, op: str, method: str, path: str, *, json_body: Any = None,
                   params: dict[str, Any] | None = None, for_user: str | None = None) -> httpx.Response:
        response = await self.http.request(method, path, json=json_body, params=params,
                                           headers=bearer(self.attacker.key))
        self.check(op, [path, json_body, params], response.status_code, response.text)
        if for_user == self.victim.user_id and self.attacker.key:
            assert response.status_code == 403 and response.json()["code"] == "forbidden", (op, response.text)
        return response

    async def create(self) -> None:
        body = self.who({"text": f"I keep my {self.phrase()} notes near {self.attacker.secret}.",
                         "infer": self.rng.random() < 0.5, "app": self.victim_name("app"),
                         "project": self.victim_name("project"),
                         "tags": [t for t in [self.victim_name("tag")] if t],
                         "session_id": self.victim_name("session_id")})
        response = await self.rest("create", "POST", "/api/v1/memories", json_body=body)
        if response.status_code == 200 and response.json()["id"]:
            self.attacker.ids.append(response.json()["id"])

    async def converse(self) -> None:
        body = self.who({"messages": [{"role": "user", "content": f"My {self.phrase()} is in {self.attacker.secret}."},
                                      {"role": "assistant", "content": "Noted."}],
                         "project": self.victim_name("project"), "session_id": self.victim_name("session_id")})
        response = await self.rest("from-conversation", "POST", "/api/v1/memories/from-conversation", json_body=body)
        if response.status_code == 200:
            self.attacker.ids += [i["id"] for i in response.json().get("results", []) if i["id"]]

    async def search(self) -> None:
        body = self.who({"query": self.phrase(), "top_k": self.rng.randint(1, 50),
                         "mode": self.rng.choice(["hybrid", "text", "vector"]), "project": self.victim_name("project"),
                         "tag": self.victim_name("tag"), "session_id": self.victim_name("session_id"),
                         "include_superseded": self.rng.random() < 0.3, "app_name": self.victim_name("app")})
        await self.rest("search", "POST", "/api/v1/memories/search", json_body=body)

    async def list(self) -> None:
        params = self.who({"search_query": self.rng.choice([None, self.phrase()]), "app_id": self.victim_name("app"),
                           "include_superseded": self.rng.choice(["true", "false"]), "page": self.rng.randint(1, 3),
                           "size": self.rng.randint(1, 100)})
        await self.rest("list", "GET", "/api/v1/memories", params={k: v for k, v in params.items() if v is not None})

    async def get(self) -> None:
        memory_id = self.rng.choice(self.some_ids())
        sub = self.rng.choice(["", "/history"])
        response = await self.rest("get" + sub, "GET", f"/api/v1/memories/{memory_id}{sub}",
                                   params=self.who({}))
        if memory_id in self.victim.ids:
            assert response.status_code == 404 and response.json()["code"] == "not_found", response.text

    async def delete(self) -> None:
        ids = self.some_ids()
        response = await self.rest("delete", "DELETE", "/api/v1/memories", json_body=self.who({"memory_ids": ids}))
        if response.status_code == 200:
            self.attacker.ids = [i for i in self.attacker.ids if i not in ids]

    async def as_victim(self) -> None:
        """A's key (or, with auth off, nothing) on B's user id: 403 with auth; B's data stays B's."""
        if self.attacker.key is None:
            return
        victim = self.victim.user_id
        memory_id = self.rng.choice(self.victim.ids)
        await self.rng.choice([
            lambda: self.rest("create as B", "POST", "/api/v1/memories", for_user=victim,
                              json_body={"user_id": victim, "text": "I am B now."}),
            lambda: self.rest("search as B", "POST", "/api/v1/memories/search", for_user=victim,
                              json_body={"user_id": victim, "query": self.phrase()}),
            lambda: self.rest("list as B", "GET", "/api/v1/memories", for_user=victim, params={"user_id": victim}),
            lambda: self.rest("get as B", "GET", f"/api/v1/memories/{memory_id}", for_user=victim,
                              params={"user_id": victim}),
            lambda: self.rest("history as B", "GET", f"/api/v1/memories/{memory_id}/history", for_user=victim,
                              params={"user_id": victim}),
            lambda: self.rest("delete as B", "DELETE", "/api/v1/memories", for_user=victim,
                              json_body={"user_id": victim, "memory_ids": [memory_id]}),
            lambda: self.rest("conversation as B", "POST", "/api/v1/memories/from-conversation", for_user=victim,
                              json_body={"user_id": victim, "messages": [{"role": "user", "content": "I am B."}]}),
            lambda: self.rest("mcp as B", "POST", f"/mcp/{self.victim.names['app']}/{victim}", for_user=victim,
                              json_body={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        ])()

    # -- MCP ---------------------------------------------------------------------------------
    async def tool(self, name: str, arguments: dict[str, Any]) -> None:
        result = await self.mcp.call_tool(name, arguments)
        text = "\n".join(getattr(c, "text", "") for c in result.content) + json.dumps(result.structured_content)
        self.check(f"mcp {name}", arguments, None, text)
        assert "internal error" not in text, (name, arguments, text)
        if name in ("add_memories", "add_conversation") and not result.is_error:
            self.attacker.ids += [i["id"] for i in result.structured_content["results"] if i["id"]]

    async def mcp_add(self) -> None:
        await self.tool("add_memories", {"memories": [f"My {self.phrase()} is {self.attacker.secret}."],
                                         "project": self.victim_name("project"),
                                         "tags": [t for t in [self.victim_name("tag")] if t]})

    async def mcp_conversation(self) -> None:
        await self.tool("add_conversation", {"messages": [{"role": "user", "content": f"I like {self.phrase()}."}],
                                             "session_id": self.victim_name("session_id"),
                                             "project": self.victim_name("project")})

    async def mcp_search(self) -> None:
        arguments: dict[str, Any] = self.rng.choice([
            {"query": self.phrase(), "topK": self.rng.randint(1, 50), "include_superseded": True},
            {"limit": self.rng.randint(1, 100), "offset": self.rng.randint(0, 5)},
            {"ids": self.some_ids(), "detail": self.rng.choice(["full", "headline"])},
        ])
        for kind in ("project", "tag"):
            if self.rng.random() < 0.5:
                arguments[kind] = self.victim_name(kind)
        await self.tool("search_memory", arguments)

    async def mcp_skill(self) -> None:
        await self.tool("get_skill", {"task": f"deploy with the {self.phrase()}"})

    async def step(self) -> None:
        await self.rng.choice([self.create, self.converse, self.search, self.list, self.get, self.delete,
                               self.as_victim, self.mcp_add, self.mcp_conversation, self.mcp_search, self.mcp_skill])()


@pytest.mark.parametrize("auth", [False, True], ids=["open", "auth"])
async def test_attacker_never_sees_or_changes_victim_data(auth: bool, open_target: ServerProcess,
                                                          auth_target: ServerProcess, tally: Counter[str]) -> None:
    server = auth_target if auth else open_target
    victim, attacker = _tenant(server, "victim", auth), _tenant(server, "attacker", auth)
    seed = random.randrange(2**32)
    ops = budget.current().isolation_ops // 2
    deadline = time.monotonic() + budget.current().seconds
    async with httpx.AsyncClient(base_url=server.base_url, timeout=60) as http:
        await _seed(http, server, victim)
        before = await _snapshot(http, victim)
        mcp_url = f"{server.base_url}/mcp/{attacker.names['app']}/{attacker.user_id}"
        async with mcp_session(mcp_url, bearer(attacker.key)) as mcp:
            attack = Attack(http, mcp, attacker, victim, random.Random(seed), tally, "auth" if auth else "open")
            for done in range(ops):
                if time.monotonic() > deadline:
                    break
                try:
                    await attack.step()
                except AssertionError as exc:
                    raise AssertionError(f"op {done} of seed {seed}: {exc}") from None
        assert await _snapshot(http, victim) == before, f"seed {seed}"
