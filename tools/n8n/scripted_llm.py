"""The scripted OpenAI-compatible chat server of the server tests, run as a process for `make e2e-n8n`.

    scripted_llm.py PORT_FILE ANSWER

Binds a free loopback port (written to PORT_FILE once it listens) and answers every
``POST /v1/chat/completions`` with the chat completion ``ANSWER``. ``GET /requests`` returns the
request log (method, path, body), so the e2e driver can read the prompts n8n sent to the model.
Runs until SIGTERM.
"""

from __future__ import annotations

import dataclasses
import signal
import sys
import threading
from pathlib import Path

# The one scripted server, shared with the Python tests rather than copied.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "server" / "tests"))
from support.scripted_openai import RecordedRequest, Reply, ScriptedOpenAI  # noqa: E402


def main(port_file: str, answer: str) -> None:
    api = ScriptedOpenAI()
    api.handle("/v1/chat/completions", lambda _request: Reply.chat(answer, prompt_tokens=1, completion_tokens=1))

    def request_log(_request: RecordedRequest) -> Reply:
        # Excludes the log's own reads, which are recorded too.
        return Reply(body=[
            {"method": r.method, "path": r.path, "body": r.body} for r in api.requests if r.path != "/requests"
        ])

    api.handle("/requests", request_log)
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
