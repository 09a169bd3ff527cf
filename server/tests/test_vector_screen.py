"""A write's screened vector lookups give what a full scan gives at each lookup's turn.

A batch screens every query against the stored rows with one BLAS product per block of queries
(``UserVectors.screen``); each lookup then scores exactly only what the screen kept and the rows
the write appended since (``UserVectors.nearest_screened``). The hits must be those of
``UserVectors.nearest`` at that moment, ids, scores and order, while rows are appended, ended,
deleted and made current again between the lookups — with exact duplicates (ties) and
near-duplicates (scores a rounding apart) among the rows.
"""

from __future__ import annotations

import numpy as np
import pytest

from cortadel_server.storage.vector_cache import (
    SCREEN_MIN_ROWS,
    SCREEN_QUERIES,
    SORTED_ROWS,
    UserVectors,
    best_per_row,
    best_rows,
)

DIM = 64
LIMIT = 8


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def stored_rows(rng: np.random.Generator, count: int) -> np.ndarray:
    """Clusters of near-duplicates whose scores lie a few roundings apart, some rows exact copies of others."""
    centres = unit(rng.standard_normal((count // 4, DIM)))
    rows = unit(centres[rng.integers(0, len(centres), count)] + rng.standard_normal((count, DIM)).astype(np.float32) * 1e-6)
    rows[rng.integers(0, count, count // 40)] = rows[rng.integers(0, count, count // 40)]
    return rows


def hits(found: list) -> list[tuple[str, float]]:
    return [(hit.id, hit.score) for hit in found]


@pytest.mark.parametrize("ended", [0.0, 0.4], ids=["all rows current", "many ended: the current ones screened alone"])
def test_screened_lookups_give_the_full_scans_hits_while_the_write_changes_rows(ended: float) -> None:
    rng = np.random.default_rng(7)
    count = 1_200
    rows = stored_rows(rng, count)
    current = (rng.random(count) >= ended).tolist()
    entry = UserVectors(1, DIM, list(range(1, count + 1)), [f"m{i}" for i in range(count)], rows, current)
    queries = np.concatenate([rows[rng.integers(0, count, 60)], unit(rng.standard_normal((60, DIM)))])
    screen = entry.screen(queries, LIMIT)
    assert screen is not None
    assert (screen._held is not None) == (ended > 0)
    next_rowid, appended = count + 1, 0
    for at, query in enumerate(queries):
        assert hits(entry.nearest_screened(screen, at)) == hits(entry.nearest(query, LIMIT)), at
        # What a write does between two lookups: a new row (often a copy of a stored one), and it
        # ends or deletes rows the last lookup found.
        new = rows[rng.integers(0, count)] if at % 2 else unit(rng.standard_normal((1, DIM)))[0]
        entry.append(next_rowid, f"n{at}", new, True)
        next_rowid, appended = next_rowid + 1, appended + 1
        found = entry.nearest(query, LIMIT)
        if at % 3 == 0 and found:
            entry.set_current(found[0].id, False)
        if at % 7 == 0 and len(found) > 1:
            entry.remove([found[1].id])
    # The screen answered every lookup itself, ties at the last place included (the copies make them).
    assert screen.fallbacks == 0
    assert entry.n == count + appended


def test_rows_tied_at_the_last_place_are_taken_in_row_order() -> None:
    rng = np.random.default_rng(5)
    rows = unit(rng.standard_normal((SCREEN_MIN_ROWS, DIM)))
    same = rows[0].copy()
    for at in (900, 40, 700, 310, 5):  # five identical rows; the query finds them first, four places left
        rows[at] = same
    rows[0] = unit(same[None, :] + 1e-3 * rng.standard_normal((1, DIM)).astype(np.float32))[0]
    entry = UserVectors(1, DIM, list(range(1, len(rows) + 1)), [f"m{i}" for i in range(len(rows))], rows, [True] * len(rows))
    found = entry.nearest(same, 4)
    assert [hit.id for hit in found] == ["m5", "m40", "m310", "m700"]
    assert len({hit.score for hit in found}) == 1
    screen = entry.screen(np.stack([same, same]), 4)
    assert screen is not None
    entry.set_current("m40", False)  # the write ended one between the screen and the lookup
    assert hits(entry.nearest_screened(screen, 1)) == hits(entry.nearest(same, 4))
    assert [hit.id for hit in entry.nearest_screened(screen, 1)] == ["m5", "m310", "m700", "m900"]
    assert screen.fallbacks == 0


def test_a_row_current_again_or_another_entry_sends_the_lookups_to_the_full_scan() -> None:
    rng = np.random.default_rng(11)
    count = SCREEN_MIN_ROWS
    rows = unit(rng.standard_normal((count, DIM)))
    entry = UserVectors(1, DIM, list(range(1, count + 1)), [f"m{i}" for i in range(count)], rows, [True] * count)
    queries = rows[:SCREEN_QUERIES * 2]
    screen = entry.screen(queries, LIMIT)
    assert screen is not None
    assert hits(entry.nearest_screened(screen, 0)) == hits(entry.nearest(queries[0], LIMIT))
    assert screen.fallbacks == 0
    # Ended before the screen's next block, then current again: the screen left it out.
    entry.set_current("m20", False)
    other = entry.screen(queries, LIMIT)
    assert other is not None
    entry.set_current("m20", True)
    assert "m20" in {hit.id for hit in entry.nearest_screened(other, 20)}
    assert other.fallbacks == 1
    # A screen of one entry says nothing of another (a reload).
    reloaded = UserVectors(2, DIM, list(range(1, count + 1)), [f"m{i}" for i in range(count)], rows, [True] * count)
    assert hits(reloaded.nearest_screened(screen, 1)) == hits(reloaded.nearest(queries[1], LIMIT))
    assert screen.fallbacks == 1


def test_too_few_rows_are_scanned_whole() -> None:
    rng = np.random.default_rng(3)
    rows = unit(rng.standard_normal((SCREEN_MIN_ROWS - 1, DIM)))
    entry = UserVectors(1, DIM, list(range(1, len(rows) + 1)), [f"m{i}" for i in range(len(rows))], rows, [True] * len(rows))
    assert entry.screen(rows[:4], LIMIT) is None
    entry.append(len(rows) + 1, "last", rows[0], True)
    assert entry.screen(rows[:4], LIMIT) is not None


def test_best_rows_are_the_k_highest_best_first_ties_in_row_order_sorted_or_partitioned() -> None:
    """A few hundred scores (a screened lookup's) are sorted whole, a full scan's are partitioned:
    both give the k highest, best first, rows of equal score in row order, at the last place too."""
    rng = np.random.default_rng(3)
    for count in (1, 9, 300, SORTED_ROWS, SORTED_ROWS + 1, 3 * SORTED_ROWS):
        for values in (rng.random(count), rng.choice([0.25, 0.5, 0.5, 0.75, 0.75, 0.9, 0.0, -0.0], count)):
            scores = values.astype(np.float32)
            for k in {1, 8, 9, count}:
                k = min(k, count)
                expected = sorted(range(count), key=lambda row: (-float(scores[row]), row))[:k]
                assert best_rows(scores, k).tolist() == expected, (count, k)


def test_best_per_row_keeps_each_rows_highest_values_and_the_best_left_out() -> None:
    """The screen's selection: per row the ``keep`` highest values best first, equal values in
    column order, and the highest left out, whether the rows are cut into chunks (many columns)
    or sorted whole (few), with ties across chunk edges, rows ended (-inf) and a short last chunk."""
    rng = np.random.default_rng(13)
    checked = 0
    for columns in (5, 40, 271, 1_000, 4_099):
        for keep in sorted({min(k, columns) for k in (0, 1, 8, 32, columns)}):
            for values in (
                rng.random((6, columns)),
                rng.choice([0.1, 0.5, 0.5, 0.9, 0.9, 0.9], (6, columns)),  # ties everywhere
            ):
                values = values.astype(np.float32)
                values[1, :] = -np.inf  # a row whose columns were all ended
                values[2, rng.integers(0, columns, columns // 2)] = -np.inf
                values[3, -3:] = 2.0  # the best in the last, short, chunk
                for row, (top, scores, left_out) in zip(values, best_per_row(values, keep), strict=True):
                    expected = sorted(range(columns), key=lambda c: (-float(row[c]), c))
                    assert top.tolist() == expected[:keep]
                    assert scores.tolist() == row[expected[:keep]].tolist()
                    assert left_out == (float(row[expected[keep]]) if keep < columns else -np.inf)
                    checked += 1
    assert checked == (3 + 5 + 5 + 5 + 5) * 2 * 6
