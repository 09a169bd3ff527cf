"""Every shell, Python and TypeScript block of README.md, docs/*.md and the package READMEs runs as
written against a real server, and where a page shows output, the real output matches it.

Each page gets a fresh server on a free loopback port (its examples assume an empty store). The
blocks say ``localhost:3001`` as a reader's server would; the test rewrites that address to its
own server's, the only change made to a block, and also sets ``CORTADEL_BASE_URL`` for the clients
that read it. Shell blocks run in bash with ``.venv/bin`` first on PATH; the blocks of one page share
their shell variables, in order. A page's TypeScript blocks form one module, as the SDK's type check
reads them, transpiled with the workspace's ``typescript`` and run by node against the built SDK
(``make test`` builds it first). Blocks marked ``<!-- docs-test: skip (why) -->`` do not run; every
``json`` block, skipped or not, must parse.

    .venv/bin/python -m pytest docs/tests        # after `npm run build -w sdk/typescript`
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cortadel_server.testing import ServerProcess, running_server

sys.path.insert(0, str(Path(__file__).parent))
from doc_blocks import PYTHON, SHELL, TYPESCRIPT, Block, blocks, matches, transcript  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PAGES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "sdk" / "python" / "README.md",
    ROOT / "sdk" / "typescript" / "README.md",
    ROOT / "integrations" / "mastra" / "README.md",
    ROOT / "integrations" / "n8n-nodes-cortadel" / "README.md",
]
DOCUMENTED_ADDRESS = re.compile(r"\b(?:localhost|127\.0\.0\.1):3001\b")
BLOCK_TIMEOUT = 60
TRANSPILE = (
    "const ts = require('typescript');"
    "const source = require('fs').readFileSync(0, 'utf8');"
    "const options = { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 };"
    "process.stdout.write(ts.transpileModule(source, { compilerOptions: options }).outputText);"
)


def page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


def working_dir(page: Path) -> Path:
    """A package README speaks from its package's folder; the top README and docs/ from the root."""
    return page.parent if page.name == "README.md" else ROOT


@pytest.fixture(scope="module")
def sdk_built() -> None:
    if not (ROOT / "sdk" / "typescript" / "dist" / "esm" / "index.js").exists():
        pytest.fail("the TypeScript SDK is not built: run `npm run build -w sdk/typescript` first")


class PageRun:
    """Runs one page's blocks against one server, collecting every mismatch."""

    def __init__(self, page: Path, server: ServerProcess, tmp: Path) -> None:
        self.page = page
        self.server = server
        self.tmp = tmp
        self.state = tmp / "shell-state"
        self.state.write_text("")
        self.failures: list[str] = []
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("CORTADEL_")}
        self.env["PATH"] = f"{ROOT / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}"
        self.env["CORTADEL_BASE_URL"] = server.base_url

    def local(self, text: str) -> str:
        return DOCUMENTED_ADDRESS.sub(f"127.0.0.1:{self.server.port}", text)

    def run(
        self, argv: list[str], where: str, stdin: str | None = None, cwd: Path | None = None, shows_failure: bool = False
    ) -> str | None:
        """stdout, or None after recording a failure. With ``shows_failure`` (a transcript step whose
        shown output is an error message) stderr is part of the output and the exit status is not checked."""
        # Its own process group, so a block that leaves a child behind (a server, `&`) is ended with it.
        process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT if shows_failure else subprocess.PIPE,
            cwd=cwd or working_dir(self.page), env=self.env, text=True, start_new_session=True,
        )
        try:
            stdout, stderr = process.communicate(stdin, timeout=BLOCK_TIMEOUT)
            stderr = stderr or ""
        except subprocess.TimeoutExpired:
            stdout, stderr = "", f"still running after {BLOCK_TIMEOUT} s"
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        if process.returncode != 0 and not shows_failure:
            self.failures.append(f"{where}: exit {process.returncode}\n{stdout}{stderr}")
            return None
        return stdout

    def compare(self, where: str, shown: str | None, real: str | None) -> None:
        if shown is not None and real is not None and not matches(shown, real):
            self.failures.append(f"{where}: output differs\n--- shown\n{shown}--- real\n{real}")

    def shell(self, block: Block) -> None:
        steps = transcript(block)
        for step in steps.steps:
            # set -a: the page's variables (BEFORE=…) reach its later blocks through the state file.
            script = f"set -a; . {self.state}\nset -eo pipefail\n{self.local(step.command)}\nexport -p > {self.state}\n"
            shows_failure = steps.is_transcript and bool(step.output)
            self.compare(block.where, step.output, self.run(["bash", "-c", script], block.where, shows_failure=shows_failure))

    def python(self, block: Block) -> None:
        python = str(ROOT / ".venv" / "bin" / "python")
        self.compare(block.where, block.output, self.run([python, "-c", self.local(block.text)], block.where))

    def typescript(self, ts_blocks: list[Block]) -> None:
        where = f"{self.page.name} TypeScript blocks"
        source = "\n".join(self.local(b.text) for b in ts_blocks)
        module = self.run(["node", "-e", TRANSPILE], where, stdin=source, cwd=ROOT)
        if module is None:
            return
        # The module imports @cortadel/sdk by name: resolve it through the workspace's node_modules.
        (self.tmp / "node_modules").symlink_to(ROOT / "node_modules")
        (self.tmp / "blocks.mjs").write_text(module)
        shown = [b.output for b in ts_blocks if b.output is not None]
        real = self.run(["node", str(self.tmp / "blocks.mjs")], where)
        self.compare(where, "".join(shown) if shown else None, real)


def runnable(page: Path) -> Iterator[Block]:
    return (b for b in blocks(page) if b.skip is None and b.lang in SHELL | PYTHON | TYPESCRIPT)


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_block_runs_and_shows_its_real_output(page: Path, tmp_path: Path, sdk_built: None) -> None:
    with running_server() as server:
        run = PageRun(page, server, tmp_path)
        ts_blocks: list[Block] = []
        for block in runnable(page):
            if block.lang in SHELL:
                run.shell(block)
            elif block.lang in PYTHON:
                run.python(block)
            else:
                ts_blocks.append(block)
        if ts_blocks:
            run.typescript(ts_blocks)
    assert not run.failures, "\n\n".join(run.failures)


def parses_as_json(text: str) -> bool:
    """One JSON document, or JSON lines (what `jq -c` prints)."""
    for candidate in ([text], [line for line in text.splitlines() if line.strip()]):
        try:
            for item in candidate:
                json.loads(item)
            return True
        except json.JSONDecodeError:
            continue
    return False


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_json_block_parses(page: Path) -> None:
    unparsed = [b.where for b in blocks(page) if b.lang == "json" and not parses_as_json(b.text)]
    unparsed += [f"{b.where} (output)" for b in blocks(page) if b.output_lang == "json" and not parses_as_json(b.output or "")]
    assert unparsed == []


def test_every_skip_marker_sits_on_a_block() -> None:
    """A marker that is not right before a fence (or whose reason holds a ")") would skip nothing.
    Run with -rP to list every block left unexecuted."""
    for page in PAGES:
        skipped = [b for b in blocks(page) if b.skip is not None]
        for block in skipped:
            print(f"not run: {page_id(block.page)}:{block.line}: {block.skip}")
        assert len(skipped) == page.read_text(encoding="utf-8").count("<!-- docs-test: skip"), page_id(page)
