"""Room made ahead in a user's vector matrix (``UserVectors.make_room``): once a change leaves the
entry seven eighths full, the cache hands its ``make_room`` to the backend's loader thread, which
grows the arrays off the write; the appends that follow fill them in place instead of growing
them inside a write (2 to 32 ms at 10,000 × 256, the largest pause of a single add)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from cortadel_server.storage.vector_cache import UserVectors, VectorCache

DIM = 8


def unit(rng: np.random.Generator) -> np.ndarray:
    vector = rng.standard_normal(DIM).astype(np.float32)
    return vector / np.linalg.norm(vector)


def test_room_is_made_off_the_write_once_and_the_appends_after_fill_it_in_place() -> None:
    rng = np.random.default_rng(3)
    vectors = np.stack([unit(rng) for _ in range(40)])
    entry = UserVectors(1, DIM, list(range(1, 41)), [f"m{i}" for i in range(40)], vectors, [True] * 40)
    asked: list[Callable[[], None]] = []
    cache = VectorCache(incremental=True, make_room=asked.append)
    cache.put("u1", entry)
    assert len(entry.rowids) == 50  # a quarter more than the rows read

    version = 1
    def add(i: int) -> None:
        nonlocal version
        version += 1
        vector = unit(rng)
        cache.advance("u1", version, lambda held: held.append(100 + i, f"n{i}", vector, i % 3 != 0))

    for i in range(3):  # 41, 42, 43 rows: under seven eighths of 50
        add(i)
    assert asked == []
    add(3)  # 44 rows: seven eighths
    add(4)
    assert asked == [entry.make_room]  # asked once, not by every change after
    probe = unit(rng)
    before = entry.nearest(probe, 10)

    asked.pop()()  # the loader thread's turn
    assert (len(entry.rowids), entry.n, entry.room_asked) == (62, 45, False)
    assert entry.nearest(probe, 10) == before  # the same rows, scores and order
    matrix = entry.matrix
    for i in range(5, 12):  # to 52 rows: past the old 50, within the room made
        add(i)
    assert entry.matrix is matrix  # filled in place: no growth inside these writes
    assert entry.n == 52 and int(entry.current[:52].sum()) == 40 + sum(i % 3 != 0 for i in range(12))
    assert entry.rowids[50:52].tolist() == [110, 111] and entry.rowids[52:].tolist() == [-1] * 10
    assert asked == []  # 52 of 62: not yet seven eighths


def test_room_asked_for_and_no_longer_needed_is_not_made() -> None:
    """A batch that appends past the arrays grows them itself before the loader's turn: the room
    asked for is not made on top of that growth."""
    rng = np.random.default_rng(4)
    entry = UserVectors(1, DIM, list(range(1, 15)), [f"m{i}" for i in range(14)], np.stack([unit(rng) for _ in range(14)]), [True] * 14)
    entry.append(100, "n0", unit(rng), True)
    assert (entry.n, len(entry.rowids), entry.needs_room()) == (15, 17, True)  # seven eighths
    for i in range(1, 4):  # the third goes past 17 rows: the append grows the arrays itself
        entry.append(100 + i, f"n{i}", unit(rng), True)
    grown = entry.matrix
    assert (entry.n, len(entry.rowids)) == (18, 22)  # a quarter more than the rows it holds
    entry.make_room()  # asked before that growth, run after it
    assert entry.matrix is grown and len(entry.rowids) == 22 and not entry.room_asked
