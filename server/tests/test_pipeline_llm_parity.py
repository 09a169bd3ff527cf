"""LLM path parity: a model that answers each held-out conversation the way its labels say must
lead the pipeline to the labeled events, as the rules extractor does.

The scripted OpenAI-compatible endpoint plays the model. For each held-out conversation it answers
with the labeled facts, in the schema the prompt asks for: a fact to keep is "remember" (with
`reconfirm` for a TOUCH, and `target` naming the replaced fact for a SUPERSEDE), a retraction
"retract", a closed item "resolve", a forgotten person "forget_entity" with the name. What is tested
is our handling of model output (targets, duplicates, supersession), not a model.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.scripted_openai import RecordedRequest, Reply, ScriptedOpenAI

from cortadel_server.config import Settings
from cortadel_server.language.entities import find_entities
from cortadel_server.pipeline.labeled import replay, score
from cortadel_server.pipeline.llm import LlmExtractor
from cortadel_server.providers import build_embedder
from cortadel_server.providers._http import RetryPolicy
from cortadel_server.providers.llm import OpenAIChatClient
from cortadel_server.testing import running_server

CHAT = "/v1/chat/completions"
HELDOUT = json.loads((Path(__file__).parent / "data" / "pipeline_heldout.json").read_text())
CASES = HELDOUT["conversations"]
SAID_AT = datetime.fromisoformat(HELDOUT["said_at"])
_INTENTS = {"INVALIDATE": "retract", "RESOLVE": "resolve", "DELETE_ENTITY": "forget_entity"}


def transcript(case: dict[str, Any]) -> str:
    """The transcript exactly as the LLM extractor writes it into its request."""
    return "\n".join(f"[{i}] {m['role']}: {m['content']}" for i, m in enumerate(case["messages"], start=1))


def answer(case: dict[str, Any]) -> dict[str, Any]:
    """The labeled facts of `case` as a model following the prompt would give them."""
    speaker = "assistant" if case.get("is_agent_memory") else "user"
    turn = max(i for i, m in enumerate(case["messages"], start=1) if m["role"] == speaker)
    facts = []
    for label in case["expect"]:
        targets = label.get("targets", [])
        target = None
        if label["event"] in ("SUPERSEDE", "INVALIDATE", "RESOLVE"):
            target = targets[0]
        elif label["event"] == "DELETE_ENTITY":
            names = [e.name for e in find_entities(label["memory"]) if all(e.name in t for t in targets)]
            target = names[0]
        facts.append({
            "text": label["memory"], "turn": turn, "intent": _INTENTS.get(label["event"], "remember"), "target": target,
            "reconfirm": label["event"] == "TOUCH", "time_expression": None, "memory_type": "semantic", "categories": [],
        })
    return {"facts": facts}


ANSWERS = {transcript(case): answer(case) for case in CASES}


def from_labels(request: RecordedRequest) -> Reply:
    return Reply.chat(ANSWERS[request.body["messages"][1]["content"]])


@pytest.fixture(scope="module")
def llm_api() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI() as server:
        server.handle(CHAT, from_labels)
        yield server


def test_model_answers_from_the_heldout_labels_become_the_labeled_events(llm_api: ScriptedOpenAI, capsys: pytest.CaptureFixture[str]) -> None:
    chat = OpenAIChatClient(llm_api.v1_url, model="scripted", timeout=5, policy=RetryPolicy(base_delay=0.01))
    try:
        extractor, embedder = LlmExtractor(chat), build_embedder(Settings.from_env({}))
        runs = [(replay(case, extractor, SAID_AT, embedder), case["expect"]) for case in CASES]
    finally:
        chat.close()
    result = score(runs)
    wrong = [case["name"] for case, (produced, expected) in zip(CASES, runs, strict=True)
             if [(p["event"], p["memory"], p["targets"]) for p in produced]
             != [(e["event"], e["memory"], e.get("targets", [])) for e in expected]]
    with capsys.disabled():
        print(f"\nLLM path on the held-out part: precision {result.precision:.3f} recall {result.recall:.3f} "
              f"event accuracy {result.event_accuracy:.3f}; {len(wrong)} conversations differ: {wrong}")
    assert len(llm_api.requests_to(CHAT)) == len(CASES)  # one call per conversation
    assert (result.precision, result.recall) == (1.0, 1.0)
    assert result.event_accuracy >= 0.95
    prompt = llm_api.requests_to(CHAT)[0].body["messages"][0]["content"]
    assert 'For "remember", target names what the statement replaces' in prompt


def test_a_correction_from_the_model_supersedes_over_http(llm_api: ScriptedOpenAI) -> None:
    env = {
        "CORTADEL_EXTRACTOR": "llm", "CORTADEL_LLM_URL": llm_api.v1_url, "CORTADEL_LLM_MODEL": "scripted",
        "CORTADEL_LLM_FALLBACK": "error", "CORTADEL_LLM_TIMEOUT": "5",
    }
    [case] = [c for c in CASES if c["name"] == "correction: the city, not the other"]
    with running_server(env=env) as server, httpx.Client(base_url=server.base_url, timeout=30) as http:
        old = http.post("/api/v1/memories", json={"user_id": "parity", "text": "User lives in Lisbon.", "infer": False}).json()
        assert old["event"] == "ADD"
        body = http.post("/api/v1/memories/from-conversation", json={"user_id": "parity", "messages": case["messages"]}).json()
        [stored] = body["results"]
        assert (stored["event"], stored["memory"]) == ("SUPERSEDE", "User lives in Porto.")
        before = http.get(f"/api/v1/memories/{old['id']}", params={"user_id": "parity"}).json()
        assert (before["state"], before["is_current"]) == ("superseded", False)
        listed = http.get("/api/v1/memories", params={"user_id": "parity"}).json()["items"]
        assert [m["content"] for m in listed] == ["User lives in Porto."]
