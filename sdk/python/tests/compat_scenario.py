"""One scenario written against the published ``cortadel`` 1.2.0 facade only.

Run it with the published package and with ours (see ``test_compat.py``): it prints, as JSON,
every result or error in order, so the two runs can be compared field by field.

    python compat_scenario.py BASE_URL USER_ID
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from cortadel import (
    AddOptions,
    ChatMessage,
    CortadelClient,
    CortadelError,
    ListOptions,
    SearchOptions,
    SyncCortadelClient,
)

FIRST = "Priya prefers window seats on long flights."
SECOND = "Priya's daughter starts school in September."
THIRD = "The team retro happens every other Thursday."
UNKNOWN = "00000000-0000-4000-8000-000000000000"


def outcome(call: Callable[[], Any]) -> dict[str, Any]:
    try:
        return {"ok": _plain(call())}
    except CortadelError as e:
        return {"error": {"type": "CortadelError", "status": e.status, "code": e.code, "message": e.message}}


async def async_outcome(call: Callable[[], Awaitable[Any]]) -> dict[str, Any]:
    try:
        return {"ok": _plain(await call())}
    except CortadelError as e:
        return {"error": {"type": "CortadelError", "status": e.status, "code": e.code, "message": e.message}}


def _plain(value: Any) -> Any:
    return dataclasses.asdict(value) if dataclasses.is_dataclass(value) and not isinstance(value, type) else value


async def run_async(base_url: str, user: str, steps: dict[str, Any]) -> str:
    async with CortadelClient(base_url, user) as c:
        steps["health"] = await async_outcome(c.health)
        steps["add_first"] = await async_outcome(
            lambda: c.add(FIRST, AddOptions(app="compat-app", metadata={"seat": "window"}, infer=False))
        )
        first_id: str = steps["add_first"]["ok"]["id"]
        steps["add_second"] = await async_outcome(lambda: c.add(SECOND, AddOptions(memory_type="episodic")))
        steps["add_duplicate"] = await async_outcome(lambda: c.add(FIRST))
        steps["get"] = await async_outcome(lambda: c.get(first_id))
        steps["get_unknown"] = await async_outcome(lambda: c.get(UNKNOWN))
        steps["get_not_uuid"] = await async_outcome(lambda: c.get("not-a-uuid"))
        steps["list"] = await async_outcome(c.list)
        steps["list_page_2"] = await async_outcome(lambda: c.list(ListOptions(page=2, size=1)))
        steps["search"] = await async_outcome(lambda: c.search("window seats on flights", SearchOptions(top_k=5)))
        steps["search_text"] = await async_outcome(lambda: c.search("daughter school", SearchOptions(mode="text")))
        steps["add_empty"] = await async_outcome(lambda: c.add(""))
        steps["search_top_k_51"] = await async_outcome(lambda: c.search("x", SearchOptions(top_k=51)))
        steps["conversation"] = await async_outcome(
            lambda: c.add_conversation([ChatMessage("user", "I just adopted a beagle named Pixel."), ChatMessage("assistant", "Congratulations!")])
        )
        return first_id


def run_sync(base_url: str, user: str, first_id: str, steps: dict[str, Any]) -> None:
    with SyncCortadelClient(base_url, user) as c:
        steps["sync_add"] = outcome(lambda: c.add(THIRD, AddOptions(app="compat-sync")))
        steps["sync_get"] = outcome(lambda: c.get(steps["sync_add"]["ok"]["id"]))
        steps["sync_delete"] = outcome(lambda: c.delete([first_id, UNKNOWN]))
        steps["sync_get_deleted"] = outcome(lambda: c.get(first_id))
        steps["sync_list"] = outcome(lambda: c.list(ListOptions(size=5)))
        steps["sync_health"] = outcome(c.health)


def main(base_url: str, user: str) -> None:
    steps: dict[str, Any] = {}
    first_id = asyncio.run(run_async(base_url, user, steps))
    run_sync(base_url, user, first_id, steps)
    print(json.dumps(steps))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
