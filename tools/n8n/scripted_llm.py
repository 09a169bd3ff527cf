"""The scripted OpenAI-compatible chat server of the server tests, run as a process for `make e2e-n8n`.

    scripted_llm.py PORT_FILE ANSWER

Binds a free loopback port (written to PORT_FILE once it listens) and answers
``POST /v1/chat/completions`` with the chat completion ``ANSWER``, unless replies were queued first:
``POST /script`` with a JSON list of ``{"tool_call": {"name": ..., "arguments": {...}}}`` queues
completions that call a tool, served one per request before falling back to ``ANSWER``.
``GET /requests`` returns the request log (method, path, body), so the e2e driver can read the
prompts n8n sent to the model. Runs until SIGTERM.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from pathlib import Path
from typing import Any

# The one scripted server, shared with the Python tests rather than copied.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "server" / "tests"))
from support.scripted_openai import RecordedRequest, Reply, ScriptedOpenAI


def tool_call(name: str, arguments: dict[str, Any]) -> Reply:
    """A chat completion whose only content is one call of the tool ``name``."""
    return Reply(body={
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "model": "scripted",
        "choices": [{
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [{
                    "id": f"call_{name}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(arguments)},
                }],
            },
            "finish_reason": "tool_calls",
        }],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    })


def main(port_file: str, answer: str) -> None:
    api = ScriptedOpenAI()
    api.handle("/v1/chat/completions", lambda _request: Reply.chat(answer, prompt_tokens=1, completion_tokens=1))

    def request_log(_request: RecordedRequest) -> Reply:
        # Only what n8n sent: the driver's own reads and scripts are recorded too.
        sent = [r for r in api.requests if r.path not in ("/requests", "/script")]
        return Reply(body=[{"method": r.method, "path": r.path, "body": r.body} for r in sent])

    def script(request: RecordedRequest) -> Reply:
        calls = [tool_call(entry["tool_call"]["name"], entry["tool_call"]["arguments"]) for entry in request.body]
        api.enqueue("/v1/chat/completions", *calls)
        return Reply(body={"queued": len(calls)})

    api.handle("/requests", request_log)
    api.handle("/script", script)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    with api:
        # Written last and renamed into place, so a reader never sees a partial port.
        partial = Path(port_file + ".partial")
        partial.write_text(str(api.port))
        partial.rename(port_file)
        stop.wait()


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
