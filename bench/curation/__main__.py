"""python -m bench.curation [--facts N]

Scores the reconciliation detectors on the labeled set (server/tests/data/reconcile_labeled.json)
at several auto-approve confidences, then times one full run over a user of N facts (in process,
on a fresh SQLite file, with the default embedder). Prints a Markdown report and writes it to
bench/reports/curation.md.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from cortadel_server.config import Settings
from cortadel_server.curation.reconcile_labeled import HELDOUT_PATH, LABELED_PATH, load, score
from cortadel_server.providers import build_embedder
from cortadel_server.service import MemoryService

from bench.provenance import git_commit, load_average
from bench.server import REPO_ROOT

THRESHOLDS = (0.8, 0.85, 0.9, 0.95)
PEOPLE = ["Dana Lee", "Dan Lee", "Priya Sharma", "Jonathan Reyes", "Jonathon Reyes", "Tomas Novak", "Ana Ruiz", "Carl Gomez"]
CITIES = ["Berlin", "Lisbon", "Porto", "Madrid", "Rome", "Vienna", "Prague", "Oslo"]
TEMPLATES = ["User met {p} in {c}.", "{p} sent User a book about {c}.", "User lives in {c}.", "User's dentist is {p}.",
             "User plans a trip to {c} with {p}.", "User works at {c} Labs."]


def labeled_section() -> list[str]:
    embed = build_embedder(Settings()).embed
    lines = ["## Labeled sets", "",
             ("Precision and recall over every finding kept (confidence ≥ 0.5); auto precision over those applied without "
              "review. The rules were tuned on the development set; the held-out set was written afterwards and scored once."),
             ""]
    for title, path in (("development", LABELED_PATH), ("held out", HELDOUT_PATH)):
        cases = load(path)
        lines += [(f"### {title} ({path.name}: {len(cases['entities'])} entity, {len(cases['roles'])} role, "
                   f"{len(cases['facts'])} fact cases)"), "",
                  "| kind | auto-approve at | precision | recall | auto precision | found | auto-applied |",
                  "|---|---|---|---|---|---|---|"]
        for threshold in THRESHOLDS:
            for kind, result in score(cases, embed, threshold).items():
                lines.append(f"| {kind} | {threshold} | {result.precision:.2f} | {result.recall:.2f} | "
                             f"{result.auto_precision:.2f} | {result.found} | {result.auto_found} |")
        lines.append("")
    return lines


def timing_section(facts: int) -> list[str]:
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as folder:
        service = MemoryService.open(Settings(data=str(Path(folder) / "bench.db")))
        try:
            started = time.perf_counter()
            for n in range(facts):
                text = rng.choice(TEMPLATES).format(p=rng.choice(PEOPLE), c=rng.choice(CITIES))
                service.add("bench", f"{text[:-1]} (note {n}).", infer=False)
            while service.writer.enricher.run_once():
                pass
            ingest = time.perf_counter() - started
            run = service.reconciler.start("bench", limit=facts)
            started = time.perf_counter()
            while service.writer.enricher.run_once():
                pass
            took = time.perf_counter() - started
            done = service.reconciler.status("bench", run.id)
            assert done is not None
        finally:
            service.close()
    return ["## One run", "", f"A user of {facts} facts (stored with `infer: false`, enriched: {ingest:.1f} s), one run over all of them:", "",
            "| facts | run time | suggestions | applied at once | status |", "|---|---|---|---|---|",
            f"| {facts} | {took:.2f} s | {done.suggested} | {done.auto_approved} | {done.status} |"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.curation", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--facts", type=int, default=1000, help="facts of the timed user (default 1000)")
    args = parser.parse_args(argv)
    report = ["# Reconciliation", "", f"commit {git_commit()}, load average {load_average()}", "",
              *labeled_section(), "", *timing_section(args.facts), ""]
    text = "\n".join(report)
    print(text)
    out = REPO_ROOT / "bench" / "reports" / "curation.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
