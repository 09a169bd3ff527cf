"""Print the public facade of whichever ``cortadel`` is importable, as JSON.

Run once with the published package on PYTHONPATH and once with ours, so the two can be
compared name by name: exported names, dataclass fields with defaults, method signatures.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
from typing import Any

import cortadel

REQUIRED = "<required>"


def field_default(f: dataclasses.Field[Any]) -> str:
    if f.default is not dataclasses.MISSING:
        return repr(f.default)
    if f.default_factory is not dataclasses.MISSING:
        return repr(f.default_factory())
    return REQUIRED


def signature(fn: Any) -> dict[str, Any]:
    params = [
        [p.name, p.kind.name, REQUIRED if p.default is inspect.Parameter.empty else repr(p.default)]
        for p in inspect.signature(fn).parameters.values()
    ]
    return {"params": params, "async": inspect.iscoroutinefunction(fn)}


def describe(obj: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(obj):
        return {"kind": "dataclass", "fields": [[f.name, field_default(f)] for f in dataclasses.fields(obj)]}
    if inspect.isclass(obj):
        methods = {
            name: signature(member)
            for name, member in inspect.getmembers(obj, inspect.isfunction)
            if not name.startswith("_") or name == "__init__"
        }
        return {"kind": "class", "bases": [b.__name__ for b in obj.__mro__], "methods": methods}
    return {"kind": "value", "repr": repr(obj)}


print(json.dumps({name: describe(getattr(cortadel, name)) for name in cortadel.__all__}))
