"""Write a LoCoMo run as JSON, a markdown report, PNG charts, and the headline table in docs/benchmarks.md."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.locomo.dataset import CATEGORIES
from bench.locomo.systems import INGEST_MODES
from bench.markdown import replace_section, table
from bench.provenance import busy_note

# Plain BM25 without an LLM, measured outside this project on the same questions.
REFERENCE = {"turn": {"recall@5": 0.53, "mrr": 0.44}, "session": {"hit@5": 0.92, "mrr": 0.81}}

CAVEAT = """\
In-sample: `locomo-dev.json` is the half of LoCoMo the server's retrieval defaults were tuned on
(see `server/cortadel_server/retrieval/search.py`); the other five conversations are not on this
machine, so these figures are not a held-out measurement. The last stages added (replies to
questions, speaker weighting) were chosen on conv-26, -30 and -41 alone; conv-42 and -43 were held
out for them (docs/benchmarks.md, "The last stretch").
"""

DEFINITIONS = """\
- **Questions**: every LoCoMo question with at least one valid evidence turn id, all five categories
  (adversarial included). Each is one `POST /api/v1/memories/search` with `top_k = 10` for the
  user that holds that conversation; the metrics use the 10 results in the order returned.
- **Ingestion**: *turns* adds every turn with the server's extensions `session_id` (the LoCoMo
  session) and `timestamp` (its date); *turns · contract* adds the same turns with the contract's
  fields only (`user_id`, `text`, `infer`, `metadata` without the session or its date), as the
  published SDKs and integrations do, so the server infers the episodes; both one turn at a time in
  conversation order. *facts* sends each session through `from-conversation`.
- **Result → turns**: in *turns* ingestion a result stands for the turn it was added from (a memory
  that deduplication merged stands for every turn that mapped to it); in *facts* ingestion a result
  stands for the turns listed in its `source_turn_uuids`. A result mapping to no turn counts as a miss.
- **Turn level**: gold = the evidence turns. **Session level**: every turn id `D<s>:<t>` is replaced
  by its session `S<s>`, both in the results and in the gold set.
- **recall@k** = (gold units covered by the top k results) / (number of gold units), averaged over
  questions. **hit@k** = 1 when the top k cover at least one gold unit, else 0, averaged.
- **MRR** = mean of 1 / rank of the first result covering a gold unit (0 when none of the 10 does).
- **nDCG@10**: binary gains; a position gains 1 when it covers a gold unit no earlier position
  covered, discounted by log2(rank + 1); normalised by the ideal DCG of min(|gold|, 10) gains.
- **Latency**: wall-clock time of each search request measured by the harness over loopback HTTP,
  one request at a time; p50 and p95 over all questions of that system. *server p50* is the median
  of the phase timings the server reports in `attributes.timings_ms` (query embedding, each arm,
  rerank): the part of the request spent retrieving. mem0 runs in-process, so its latency has no HTTP.
"""

MEM0_NOTE = """\
mem0ai 2.2.1 runs offline here with `infer=False`, a local on-disk Qdrant collection and the same
embedder class as the Cortadel server it sits next to. Its search then ranks by vector similarity
alone: the keyword (BM25) arm needs fastembed's `Qdrant/bm25` model, which fastembed downloads at
first use (it fails with "Could not load model Qdrant/bm25 from any source" without network, and
mem0 then switches the arm off), and the lemmatiser and entity boost need spaCy's
`en_core_web_sm`, which is not on PyPI and is also downloaded at first use. Identical figures for
`mem0 · X` and `vector · X` are therefore expected: both are exact cosine top-10 over the same vectors.
"""


def _label(system: dict[str, Any]) -> str:
    return f"{system['label']} ({system['ingest']})"


def _ok(systems: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [s for s in systems if s["status"] == "ok"]


def _phases(metrics: dict[str, Any]) -> str:
    phases = metrics.get("server_phases") or {}
    return f"{phases['p50_ms']:.1f}" if phases.get("n") else "n/a"


def headline_table(systems: list[dict[str, Any]]) -> str:
    rows: list[list[object]] = []
    for s in _ok(systems):
        t, se, lat = s["metrics"]["turn"]["overall"], s["metrics"]["session"]["overall"], s["metrics"]["latency"]
        rows.append([s["label"], s["ingest"], t["recall@1"], t["recall@5"], t["recall@10"], t["hit@5"], t["mrr"], t["ndcg@10"],
                     se["hit@1"], se["hit@5"], se["recall@10"], se["mrr"], f"{lat['p50_ms']:.1f}", f"{lat['p95_ms']:.1f}", _phases(s["metrics"])])
    ref_t, ref_s = REFERENCE["turn"], REFERENCE["session"]
    rows.append(["reference: plain BM25 (external)", "turns", "", ref_t["recall@5"], "", "", ref_t["mrr"], "", "", ref_s["hit@5"], "", ref_s["mrr"], "", "", ""])
    headers = ["system", "ingest", "turn R@1", "turn R@5", "turn R@10", "turn hit@5", "turn MRR", "turn nDCG@10",
               "sess hit@1", "sess hit@5", "sess R@10", "sess MRR", "p50 ms", "p95 ms", "server p50 ms"]
    return table(headers, rows)


def category_table(systems: list[dict[str, Any]], level: str, metric: str) -> str:
    names = [f"{c} {n}" for c, n in CATEGORIES.items()]
    rows = []
    for s in _ok(systems):
        by = s["metrics"][level]["by_category"]
        rows.append([s["label"], s["ingest"], *[by[n][metric] if n in by else "" for n in names], s["metrics"][level]["overall"][metric]])
    counts: dict[str, dict[str, float]] = next((s["metrics"][level]["by_category"] for s in _ok(systems)), {})
    headers = ["system", "ingest", *[f"{n} (n={counts[n]['n']})" if n in counts else n for n in names], "overall"]
    return table(headers, rows)


def ingestion_table(systems: list[dict[str, Any]]) -> str:
    seen = set()
    rows = []
    for s in systems:
        key = (s["engine"], s["embedder"], s["ingest"])
        if s["status"] != "ok" or key in seen:
            continue
        seen.add(key)
        ing = s["ingestion"]
        events = ", ".join(f"{k} {v}" for k, v in sorted(ing.get("events", {}).items()))
        notes = ", ".join(f"{k} {v}" for k, v in sorted(ing.get("notes", {}).items()) if not isinstance(v, list))
        rows.append([s["engine"], s["embedder"], s["ingest"], ing.get("memories", ""), ing.get("memories_with_turns", ""), events, ing.get("seconds", ""), notes])
    return table(["engine", "embedder", "ingest", "memories", "memories with turns", "events", "seconds", "notes"], rows)


def markdown(run: dict[str, Any]) -> str:
    meta = run["meta"]
    systems = run["systems"]
    not_ok = [s for s in systems if s["status"] != "ok"]
    parts = [
        "# LoCoMo retrieval benchmark",
        (f"Run {meta['started_at']} · data `{meta['data']}` (sha256 {meta['data_sha256'][:12]}) · "
         f"{meta['conversations']} conversations, {meta['questions']} questions · git {meta['git_commit']} (server code sha256 {meta.get('server_code_sha256', '?')}) · `{meta['command']}`"),
        busy_note(*meta["load_average"]),
        "## All questions",
        headline_table(systems),
        CAVEAT,
        "![recall@k per system](locomo-recall-at-k.png)",
        "## Turn-level recall@10 by category",
        category_table(systems, "turn", "recall@10"),
        "## Session-level hit@5 by category",
        category_table(systems, "session", "hit@5"),
        "![recall@10 by category](locomo-recall-by-category.png)",
        "## Ingestion",
        ingestion_table(systems),
        "## Definitions",
        DEFINITIONS,
        "## Text stored per turn",
        run["turn_text"],
    ]
    if not_ok:
        parts += ["## Systems that did not run", "\n".join(f"- **{_label(s)}** — {s['status']}: {s['reason']}" for s in not_ok)]
    mem0_notes = [w for s in systems if s["engine"] == "mem0" for w in s.get("ingestion", {}).get("notes", {}).get("warnings", [])]
    if mem0_notes:
        parts += ["## mem0 offline", MEM0_NOTE, "What mem0 logged:", "\n".join(f"- `{w}`" for w in sorted(set(mem0_notes)))]
    return "\n\n".join(parts) + "\n"


def charts(systems: list[dict[str, Any]], out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = _ok(systems)
    ingests = [mode for mode in INGEST_MODES if any(s["ingest"] == mode for s in ok)]
    paths = []

    fig, axes = plt.subplots(2, len(ingests), figsize=(7 * len(ingests), 8), squeeze=False)
    for col, ingest in enumerate(ingests):
        group = [s for s in ok if s["ingest"] == ingest]
        for row, level in enumerate(("turn", "session")):
            ax = axes[row][col]
            width = 0.8 / max(1, len(group))
            for i, s in enumerate(group):
                values = [s["metrics"][level]["overall"][f"recall@{k}"] for k in (1, 5, 10)]
                ax.bar([x + i * width for x in range(3)], values, width, label=s["label"])
            ax.set_xticks([x + width * (len(group) - 1) / 2 for x in range(3)], ["@1", "@5", "@10"])
            ax.set_ylim(0, 1)
            ax.set_title(f"{level}-level recall@k — {ingest} ingestion")
            ax.grid(axis="y", alpha=0.3)
        axes[0][col].legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    paths.append(out_dir / "locomo-recall-at-k.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)

    names = [f"{c} {n}" for c, n in CATEGORIES.items()]
    fig, axes = plt.subplots(1, len(ingests), figsize=(8 * len(ingests), 4.5), squeeze=False)
    for col, ingest in enumerate(ingests):
        ax = axes[0][col]
        group = [s for s in ok if s["ingest"] == ingest]
        width = 0.8 / max(1, len(group))
        for i, s in enumerate(group):
            by = s["metrics"]["turn"]["by_category"]
            ax.bar([x + i * width for x in range(len(names))], [by.get(n, {}).get("recall@10", 0) for n in names], width, label=s["label"])
        ax.set_xticks([x + width * (len(group) - 1) / 2 for x in range(len(names))], [n.split(" ", 1)[1] for n in names])
        ax.set_ylim(0, 1)
        ax.set_title(f"turn-level recall@10 by category — {ingest} ingestion")
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=4)
    fig.tight_layout()
    paths.append(out_dir / "locomo-recall-by-category.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    return paths


DOC_INTRO = """# Benchmarks

Retrieval quality of Cortadel on LoCoMo, measured against a live server over its REST API.

    python -m bench.locomo            # all systems, /work/shared/data/locomo-dev.json
    python -m bench.locomo --quick    # one conversation, as a smoke test

The full report (per-category tables, definitions, charts) is written to `bench/reports/locomo.md`.
"""


def write(run: dict[str, Any], out_dir: Path, doc: Path | None) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    # A run on both backends is a comparison of its own (docs/scaling.md): it leaves the SQLite
    # report, its charts and the headline of docs/benchmarks.md alone.
    both = run["meta"].get("backend") == "both"
    prefix = ("locomo-quick" if run["meta"]["quick"] else "locomo") + ("-backends" if both else "")
    json_path = out_dir / f"{prefix}.json"
    md_path = out_dir / f"{prefix}.md"
    json_path.write_text(json.dumps(run, indent=2) + "\n")
    md_path.write_text(markdown(run))
    written = [json_path, md_path]
    if not run["meta"]["quick"] and not both:
        written += charts(run["systems"], out_dir)
        if doc is not None:
            meta = run["meta"]
            body = "\n\n".join([
                f"## LoCoMo headline ({meta['conversations']} conversations, {meta['questions']} questions, top_k = 10)",
                f"Measured {meta['started_at']} at git {meta['git_commit']} (server code sha256 {meta.get('server_code_sha256', '?')}); the full report with definitions is "
                "[bench/reports/locomo.md](../bench/reports/locomo.md). Latency columns: " + busy_note(*meta["load_average"]) + ".",
                headline_table(run["systems"]),
                CAVEAT,
            ])
            replace_section(doc, "locomo", body, new_doc_intro=DOC_INTRO)
            written.append(doc)
    return written
