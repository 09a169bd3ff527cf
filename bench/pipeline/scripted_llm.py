"""A scripted model for the `llm` extractor: the tests' OpenAI-compatible stand-in, answering valid JSON.

    with ScriptedOpenAI() as endpoint:
        endpoint.handle(CHAT, answer)            # extraction and verdict requests, answered in process
        ...                                      # run a server with CORTADEL_LLM_URL=endpoint.v1_url
        usage_of(endpoint.requests_to(CHAT))     # calls and prompt sizes, from the request log
        reported_usage(server_log_text)          # tokens the server read from the answers' usage

The stand-in is ``server/tests/support/scripted_openai.py`` (loaded from its file: the tests import
it as ``support.scripted_openai``). Its answers are worked out from the request alone:

- an extraction request (schema ``facts``) gets the facts the rules extractor finds in the
  transcript of the request, in the extraction JSON the server asked for;
- a verdict request (schema ``verdict``) gets ``{"verdict": "new", "existing_id": null}``.

The ``usage`` of each answer counts tokens as characters / 4 (rounded up) of the message texts
sent, and of the answer's content. Nothing here says how well a real model extracts facts: it
counts calls and prompt sizes.
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
import sys
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from types import ModuleType
from typing import Any

from cortadel_server.language.timeexpr import find_time
from cortadel_server.pipeline.model import Turn
from cortadel_server.pipeline.rules import RulesExtractor

from bench.server import REPO_ROOT

CHAT = "/v1/chat/completions"
SCRIPTED_PATH = REPO_ROOT / "server" / "tests" / "support" / "scripted_openai.py"
_TURN = re.compile(r"^\[(\d+)\] (user|assistant|system|tool): ?(.*)$")
_EXTRACTOR = RulesExtractor()


def _load_scripted() -> ModuleType:
    name = "cortadel_scripted_openai"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, SCRIPTED_PATH)
    assert spec is not None and spec.loader is not None, SCRIPTED_PATH
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


scripted = _load_scripted()
ScriptedOpenAI = scripted.ScriptedOpenAI
Reply = scripted.Reply


def tokens(text: str) -> int:
    """A rough token count: characters / 4, rounded up."""
    return math.ceil(len(text) / 4)


def parse_transcript(text: str) -> list[tuple[str, str]]:
    """(role, content) per message of the extractor's numbered transcript ("[1] user: ..."); lines
    that do not start a message continue the one before."""
    turns: list[tuple[str, str]] = []
    for line in text.splitlines():
        match = _TURN.match(line)
        if match and int(match.group(1)) == len(turns) + 1:
            turns.append((match.group(2), match.group(3)))
        elif turns:
            role, content = turns[-1]
            turns[-1] = (role, content + "\n" + line)
    return turns


def extraction_answer(system: str, transcript: str, at: datetime) -> dict[str, Any]:
    """The facts the rules extractor finds in ``transcript``, as the extraction JSON."""
    turns = [Turn(role, content, str(i), at) for i, (role, content) in enumerate(parse_transcript(transcript), start=1)]
    candidates = _EXTRACTOR.extract(turns, is_agent_memory="about the assistant" in system, explicit="asked for this text to be remembered" in system)
    facts = []
    for c in candidates:
        span = find_time(c.text, at)
        facts.append({
            "text": c.text, "turn": int(c.source_turn_uuids[0]) if c.source_turn_uuids else 1, "intent": c.intent.value,
            "target": c.target, "reconfirm": c.reconfirm, "time_expression": span.text if span else None,
            "memory_type": c.memory_type.value, "categories": list(c.categories),
        })
    return {"facts": facts}


def schema_name(body: Any) -> str:
    return str(((body or {}).get("response_format") or {}).get("json_schema", {}).get("name", "?"))


def answer(request: Any) -> Any:
    """The handler for CHAT: a Reply with valid JSON for the schema the request names."""
    messages = request.body.get("messages") or []
    sent = "".join(str(m.get("content") or "") for m in messages)
    if schema_name(request.body) == "facts":
        system = next((m["content"] for m in messages if m.get("role") == "system"), "")
        content: dict[str, Any] = extraction_answer(system, messages[-1]["content"], datetime.now(UTC))
    else:
        content = {"verdict": "new", "existing_id": None}
    return Reply.chat(content, prompt_tokens=tokens(sent), completion_tokens=tokens(json.dumps(content)))


def usage_of(requests: Sequence[Any]) -> dict[str, Any]:
    """Calls by schema and prompt sizes (characters / 4) of the recorded requests: of the message
    texts, and of the whole JSON body (which adds the response schema)."""
    calls: Counter[str] = Counter(schema_name(r.body) for r in requests)
    messages = sum(tokens("".join(str(m.get("content") or "") for m in r.body.get("messages") or [])) for r in requests)
    bodies = sum(tokens(json.dumps(r.body)) for r in requests)
    return {"calls": len(requests), "calls_by_schema": dict(calls), "message_tokens": messages, "request_body_tokens": bodies}


_LOGGED = re.compile(r"llm (extraction|verdict): .*?prompt_tokens=(\d+) completion_tokens=(\d+) calls=(\d+)")


def reported_usage(log: str) -> dict[str, int]:
    """The usage the server read from the answers, summed over its "llm extraction" / "llm verdict"
    log lines (log level info)."""
    totals = {"prompt_tokens": 0, "completion_tokens": 0, "calls": 0, "lines": 0}
    for match in _LOGGED.finditer(log):
        totals["prompt_tokens"] += int(match.group(2))
        totals["completion_tokens"] += int(match.group(3))
        totals["calls"] += int(match.group(4))
        totals["lines"] += 1
    return totals
