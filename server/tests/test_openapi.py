"""spec/openapi.json is generated, current, and compatible with the public Cortadel contract."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cortadel_server.openapi import generate_openapi

REPO = Path(__file__).resolve().parents[2]
COMMITTED = REPO / "spec" / "openapi.json"
REFERENCE = REPO.parent / "shared" / "spec" / "cortadel-openapi.json"
LIMITS = ("minLength", "maxLength", "minimum", "maximum", "minItems", "maxItems")


def test_committed_spec_is_current() -> None:
    generated = json.dumps(generate_openapi(), indent=2, sort_keys=True) + "\n"
    assert COMMITTED.read_text(encoding="utf-8") == generated, "run: cortadel openapi -o spec/openapi.json"


@pytest.fixture(scope="module")
def ours() -> dict[str, Any]:
    return json.loads(COMMITTED.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def reference() -> dict[str, Any]:
    if not REFERENCE.exists():
        pytest.skip(f"reference contract not found at {REFERENCE}")
    return json.loads(REFERENCE.read_text(encoding="utf-8"))


def resolve(spec: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def shape(spec: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Type and limits of a schema, with 3.1 `anyOf [X, null]` and 3.0 `nullable` folded away."""
    schema = resolve(spec, schema)
    variants = [resolve(spec, s) for s in schema.get("anyOf", [schema])]
    concrete = [v for v in variants if v.get("type") != "null"] or variants
    main = {**concrete[0], **{k: v for k, v in schema.items() if k in LIMITS}}
    kind = main.get("type")
    if kind == "number" and main.get("format") in ("int32", "int64"):
        kind = "integer"
    return {"type": kind, **{k: float(main[k]) for k in LIMITS if k in main}}


def body_schema(spec: dict[str, Any], operation: dict[str, Any]) -> dict[str, Any]:
    content = operation["requestBody"]["content"]
    return resolve(spec, content["application/json"]["schema"])


def response_schema(spec: dict[str, Any], operation: dict[str, Any]) -> dict[str, Any]:
    return resolve(spec, operation["responses"]["200"]["content"]["application/json"]["schema"])


def operations(spec: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(path, method): op for path, methods in spec["paths"].items() for method, op in methods.items()}


def test_every_reference_operation_exists(ours: dict, reference: dict) -> None:
    missing = set(operations(reference)) - set(operations(ours))
    assert not missing
    for key, op in operations(reference).items():
        assert operations(ours)[key]["operationId"] == op["operationId"]


def test_request_bodies_match(ours: dict, reference: dict) -> None:
    mine = operations(ours)
    for key, op in operations(reference).items():
        if "requestBody" not in op:
            continue
        ref_body, our_body = body_schema(reference, op), body_schema(ours, mine[key])
        assert set(ref_body["properties"]) <= set(our_body["properties"]), key
        assert set(ref_body.get("required", [])) == set(our_body.get("required", [])), key
        for name, prop in ref_body["properties"].items():
            assert shape(ours, our_body["properties"][name]) == shape(reference, prop), (key, name)
            if shape(reference, prop)["type"] == "array" and "$ref" in prop.get("items", {}):
                ref_item = resolve(reference, prop["items"])
                our_item = resolve(ours, resolve(ours, our_body["properties"][name])["items"])
                assert set(ref_item.get("required", [])) == set(our_item.get("required", [])), (key, name)
                for item_name, item_prop in ref_item["properties"].items():
                    assert shape(ours, our_item["properties"][item_name]) == shape(reference, item_prop), (key, name, item_name)


def test_query_parameters_match(ours: dict, reference: dict) -> None:
    mine = operations(ours)
    for key, op in operations(reference).items():
        our_params = {p["name"]: p for p in mine[key].get("parameters", [])}
        for param in op.get("parameters", []):
            assert param["name"] in our_params, (key, param["name"])
            ours_p = our_params[param["name"]]
            assert ours_p["in"] == param["in"]
            assert shape(ours, ours_p["schema"])["type"] == shape(reference, param["schema"])["type"], (key, param["name"])
            assert bool(ours_p.get("required")) == bool(param.get("required")), (key, param["name"])


def test_response_fields_cover_the_reference(ours: dict, reference: dict) -> None:
    mine = operations(ours)

    def fields(spec: dict, schema: dict, prefix: str = "") -> set[str]:
        names = set()
        for name, prop in schema.get("properties", {}).items():
            names.add(prefix + name)
            target = resolve(spec, prop)
            variants = [resolve(spec, v) for v in target.get("anyOf", [target])]
            for variant in variants:
                if variant.get("type") == "array" and variant.get("items"):
                    variant = resolve(spec, variant["items"])
                if variant.get("properties"):
                    names |= fields(spec, variant, prefix + name + ".")
        return names

    for key, op in operations(reference).items():
        ref_fields = fields(reference, response_schema(reference, op))
        our_fields = fields(ours, response_schema(ours, mine[key]))
        assert ref_fields <= our_fields, (key, sorted(ref_fields - our_fields))


def test_security_schemes_cover_the_reference(ours: dict, reference: dict) -> None:
    assert set(reference["components"]["securitySchemes"]) <= set(ours["components"]["securitySchemes"])
