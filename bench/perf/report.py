"""Write a performance run as perf.json, perf.md, and the results table in docs/performance.md."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.markdown import replace_section, table
from bench.provenance import busy_note

#: the targets by backend, over HTTP with the default embedder: issue #16's for SQLite (one user of
#: 10,000 memories, and the many-users ratio), issue #14's for PostgreSQL (it sets none for one
#: server's searches/s, and measures its many-users ratio at 1,000 users: ``bench.perf.scale``)
TARGETS: dict[str, dict[str, float]] = {
    "sqlite": {"search_p50_ms": 5.0, "search_p95_ms": 12.0, "searches_per_second": 400.0, "add_p50_ms": 10.0, "many_users_ratio": 1.5},
    "postgres": {"search_p50_ms": 15.0, "search_p95_ms": 40.0, "add_p50_ms": 20.0},
}
#: where ``bench.perf`` writes its results section by default, by backend: the section's name, the
#: doc (in docs/) and the section's heading
DOC_SECTIONS = {
    "sqlite": ("perf", "performance.md", "## Results"),
    "postgres": ("perf-postgres", "scaling.md", "### `bench.perf` on PostgreSQL"),
}


def verdicts(run: dict[str, Any]) -> list[list[str]]:
    """The backend's targets against the run's figures, for the scenarios it ran."""
    targets = TARGETS[run["meta"].get("backend", "sqlite")]
    single, many = run.get("single_user"), run.get("many_users")
    rows: list[tuple[str, str, str, bool]] = []
    if single is not None:
        at = f"at {single['footprint']['memories']:,} memories / user"
        if "search_p50_ms" in targets:
            rows.append((f"search p50 {at}", f"≤ {targets['search_p50_ms']:.0f} ms", f"{single['search']['p50_ms']:.2f} ms",
                         single["search"]["p50_ms"] <= targets["search_p50_ms"]))
        if "search_p95_ms" in targets:
            rows.append((f"search p95 {at}", f"≤ {targets['search_p95_ms']:.0f} ms", f"{single['search']['p95_ms']:.2f} ms",
                         single["search"]["p95_ms"] <= targets["search_p95_ms"]))
        if "searches_per_second" in targets:
            rows.append((f"searches/s, {single['throughput']['clients']} clients, {at}", f"≥ {targets['searches_per_second']:.0f}",
                         f"{single['throughput']['searches_per_second']:.0f}", single["throughput"]["searches_per_second"] >= targets["searches_per_second"]))
        if "add_p50_ms" in targets:
            rows.append(("add p50 (single user store)", f"≤ {targets['add_p50_ms']:.0f} ms", f"{single['add']['p50_ms']:.2f} ms",
                         single["add"]["p50_ms"] <= targets["add_p50_ms"]))
    if many is not None and "add_p50_ms" in targets:
        rows.append(("add p50 (many users store)", f"≤ {targets['add_p50_ms']:.0f} ms", f"{many['add']['p50_ms']:.2f} ms",
                     many["add"]["p50_ms"] <= targets["add_p50_ms"]))
    if single is not None and many is not None and "many_users_ratio" in targets:
        ratio_p50 = many["search"]["p50_ms"] / single["baseline_search"]["p50_ms"]
        ratio_p95 = many["search"]["p95_ms"] / single["baseline_search"]["p95_ms"]
        rows.append((f"search p50, {run['sizes']['users']} users × {run['sizes']['per_user']:,} vs 1 user × {run['sizes']['per_user']:,} alone",
                     f"≤ {targets['many_users_ratio']}×", f"{ratio_p50:.2f}× (p95 {ratio_p95:.2f}×)", ratio_p50 <= targets["many_users_ratio"]))
    return [[what, target, got, "met" if ok else "**missed**"] for what, target, got, ok in rows]


def _phases(search: dict[str, Any]) -> str:
    phases = search.get("server_phases") or {}
    return f"{phases['p50_ms']:.2f} / {phases['p95_ms']:.2f}" if phases.get("n") else "n/a"


def results_table(run: dict[str, Any]) -> str:
    single, many = run.get("single_user"), run.get("many_users")
    sizes = run["sizes"]

    def col(s: dict[str, Any]) -> list[object]:
        f = s["footprint"]
        return [f"{s['search']['p50_ms']:.2f} / {s['search']['p95_ms']:.2f}", _phases(s["search"]), f"{s['throughput']['searches_per_second']:.0f}",
                f"{s['throughput']['latency']['p50_ms']:.1f} / {s['throughput']['latency']['p95_ms']:.1f}",
                f"{s['add']['p50_ms']:.2f} / {s['add']['p95_ms']:.2f}", f"{s['load']['adds_per_second']:.0f}",
                f"{s['load']['add_latency_under_load']['p50_ms']:.1f} / {s['load']['add_latency_under_load']['p95_ms']:.1f}",
                # 0 bytes in the data folder: the rows are in PostgreSQL, whose files are not counted
                f"{f['disk_bytes_per_memory']:,.0f}" if f["disk_bytes_per_memory"] else "n/a", f"{f['rss_mib']:.0f} (peak {f['peak_rss_mib']:.0f})"]

    rows: list[list[object]] = []
    if single is not None:
        base = single["baseline_search"]
        rows += [
            [f"1 user × {sizes['per_user']:,} (baseline)", f"{sizes['per_user']:,}", f"{base['p50_ms']:.2f} / {base['p95_ms']:.2f}", _phases(base), "", "", "", "", "", "", ""],
            [f"1 user × {single['footprint']['memories']:,}", f"{single['footprint']['memories']:,}", *col(single)],
        ]
    if many is not None:
        rows.append([f"{sizes['users']} users × {sizes['per_user']:,}", f"{many['footprint']['memories']:,}", *col(many)])
    headers = ["store", "memories", "search p50 / p95 ms", "server phases p50 / p95 ms", f"searches/s ({sizes['clients']} clients)", "search p50 / p95 ms under load",
               "add p50 / p95 ms", "load adds/s", "add p50 / p95 ms while loading", "bytes on disk / memory", "server RSS MiB"]
    return table(headers, rows)


def markdown(run: dict[str, Any]) -> str:
    meta = run["meta"]
    return "\n\n".join([
        "# Performance bench",
        f"Run {meta['started_at']} · git {meta['git_commit']} (server code sha256 {meta.get('server_code_sha256', '?')}) · embedder `{meta['embedder']}` · {meta['cpus']} CPUs · `{meta['command']}`",
        busy_note(*meta["load_average"]),
        "## Targets", table(["what", "target", "measured", "verdict"], verdicts(run)),
        "## Results", results_table(run),
        "## How it is measured",
        HOW,
    ]) + "\n"


HOW = """\
- Each store is a fresh server (`python -m cortadel_server serve`, default settings but the embedder
  named above) on a loopback port with a new SQLite file, driven over HTTP by the harness on the same
  2-core machine, so the client's own CPU use is part of every figure.
- Memories are synthetic one- or two-clause personal facts (templates × small vocabularies, fixed
  seed, ~87 characters on average), added with `infer: false` through `POST /api/v1/memories`, 8
  requests in flight. Deduplication may answer `SKIP_DUPLICATE`; loading continues until the
  number of `ADD` events per user reaches the target.
- Search: `POST /api/v1/memories/search` with `mode: hybrid`, `top_k: 10`; questions from the same
  vocabulary; sequential requests after 20 warm-up queries, users taken in turn. Throughput: 8
  concurrent clients for a fixed time; searches completed per second.
- Server phases: the sum of the phase timings the server reports in each hit's
  `attributes.timings_ms` (query embedding, each arm, fusion, reading the fused head's records,
  rerank) for the same sequential searches; the rest of the wall-clock time is HTTP, JSON,
  scheduling and the bench's own client (aiohttp, about 1 ms of its CPU a request).
- Add latency: sequential adds of fresh sentences into the loaded store, after the search runs.
- Bytes on disk: all files in the data folder after the server stopped (WAL checkpointed), divided
  by the current memories (versions replaced by `SUPERSEDE` stay on disk as history and are
  included in the bytes). RSS: `VmRSS` (and `VmHWM`, the peak) of the server process from
  `/proc/<pid>/status`, read after the search runs.
"""

DOC_INTRO = """# Performance

Latency, throughput, memory and disk use of a Cortadel server, measured over its REST API.

    python -m bench.perf            # 10,000 memories for one user, 100 users × 1,000
    python -m bench.perf --quick    # small sizes, as a smoke test

The full report is written to `bench/reports/perf.md` (and `perf.json`).
"""


def report_name(meta: dict[str, Any]) -> str:
    """perf, perf-quick, perf-postgres, perf-postgres-quick …: a run of one backend or size never
    overwrites another's report."""
    backend = meta.get("backend", "sqlite")
    return "perf" + ("" if backend == "sqlite" else f"-{backend}") + ("-quick" if meta["quick"] else "")


def write(run: dict[str, Any], out_dir: Path, doc: Path | None) -> list[Path]:
    """The run's report (``report_name`` .json and .md in ``out_dir``) and, unless quick, its
    results section in ``doc`` (the backend's section, ``DOC_SECTIONS``)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    prefix = report_name(run["meta"])
    json_path, md_path = out_dir / f"{prefix}.json", out_dir / f"{prefix}.md"
    json_path.write_text(json.dumps(run, indent=2) + "\n")
    md_path.write_text(markdown(run))
    written = [json_path, md_path]
    if doc is not None and not run["meta"]["quick"]:
        meta = run["meta"]
        section, _, heading = DOC_SECTIONS[meta.get("backend", "sqlite")]
        body = "\n\n".join([
            f"{heading} (embedder `{meta['embedder']}`, {meta['cpus']} CPUs)",
            (f"Measured {meta['started_at']} at git {meta['git_commit']} (server code sha256 {meta.get('server_code_sha256', '?')}) "
             f"with `{meta['command']}`; details in [bench/reports/{prefix}.md](../bench/reports/{prefix}.md)."),
            busy_note(*meta["load_average"]),
            table(["what", "target", "measured", "verdict"], verdicts(run)),
            results_table(run),
        ])
        replace_section(doc, section, body, new_doc_intro=DOC_INTRO)
        written.append(doc)
    return written
