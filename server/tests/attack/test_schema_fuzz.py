"""Schema fuzzing of every REST operation in spec/openapi.json with schemathesis, against real servers.

Schemathesis generates valid (positive) and invalid (negative) requests from the committed spec,
including its coverage phase's boundary values. Every response must be a non-5xx that the spec
documents, with the documented content type, headers and body schema, and invalid input must be
refused with a 4xx. With auth on, each case carries a key drawn by Hypothesis: one minted for the
case's own user (so the request reaches the handler), one for another user, keys signed with
another secret, tampered, garbage or none at all, sent in each of the three accepted ways.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import requests
import schemathesis
from hypothesis import HealthCheck, note, settings
from hypothesis import strategies as st
from schemathesis import Case, GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from attack import budget
from attack.conftest import AUTH_SECRET
from cortadel_server.auth import mint_key
from cortadel_server.testing import ServerProcess

SPEC = Path(__file__).resolve().parents[3] / "spec" / "openapi.json"
CONFORMANCE = [not_a_server_error, status_code_conformance, content_type_conformance, response_headers_conformance,
               response_schema_conformance]
CHECKS = [*CONFORMANCE, negative_data_rejection]
FIXED_USER = "attack-fixed-user"

schema = schemathesis.openapi.from_path(SPEC)
# Keys are drawn below, so the generator must not fill the security parameters itself.
schema.config.generation.update(
    modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE],
    max_examples=budget.current().schema_examples,
    with_security_parameters=False,
    database="none",
)
schema.config.output.sanitization.update(enabled=False)  # test keys only; reproducers must show them
SETTINGS = settings(deadline=None, database=None, suppress_health_check=list(HealthCheck),
                    max_examples=budget.current().schema_examples)


@dataclass(frozen=True)
class KeyAttempt:
    """How a case presents (or fails to present) an API key."""

    kind: str  # matching | fixed | other_secret | tampered | garbage | none
    way: str  # bearer | header | query
    garbage: str

    def key_for(self, case: Case) -> str | None:
        if self.kind == "none":
            return None
        if self.kind == "garbage":
            return self.garbage
        user = _case_user(case) if self.kind in ("matching", "tampered") else FIXED_USER
        secret = "some-other-secret" if self.kind == "other_secret" else AUTH_SECRET
        key = mint_key(secret, user or FIXED_USER)
        return key[:-1] + ("0" if key[-1] != "0" else "1") if self.kind == "tampered" else key

    @property
    def fills_user(self) -> bool:
        """A valid key stands in for a missing user_id (wire notes), which the spec still marks required."""
        return self.kind in ("matching", "fixed")

    def request_parts(self, case: Case) -> tuple[dict[str, str], dict[str, str]]:
        """Extra (headers, query params) that carry the key."""
        key = self.key_for(case)
        if key is None:
            return {}, {}
        if self.way == "bearer":
            return {"Authorization": f"Bearer {key}"}, {}
        if self.way == "header":
            return {"API_KEY": key}, {}
        return {}, {"api_key": key}


def _case_user(case: Case) -> str | None:
    """The user id the case asks for, when it is one a key can be minted for."""
    for part in (case.body, case.query):
        if isinstance(part, dict) and isinstance(part.get("user_id"), str) and part["user_id"]:
            try:
                part["user_id"].encode("utf-8")
            except UnicodeEncodeError:
                return None
            return part["user_id"]
    return None


# Headers travel as latin-1: garbage keys stay in that range (non-ASCII included) and avoid CR/LF.
_header_text = st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f"), max_size=80)
key_attempts = st.builds(
    KeyAttempt,
    kind=st.sampled_from(["matching"] * 6 + ["fixed", "other_secret", "tampered", "garbage", "none"]),
    way=st.sampled_from(["bearer", "header", "query"]),
    garbage=st.one_of(_header_text, st.just("ck_"), st.just("ck_."), st.just("ck_\u00e9t\u00e9.abc"),
                      _header_text.map(lambda s: "ck_" + s)),
)


def _without_user(case: Case) -> bool:
    return not any(isinstance(part, dict) and part.get("user_id") for part in (case.body, case.query))


def _checks_for(case: Case, checks: list) -> list:
    """The batch operation validates each item on its own, by design: a bad item is that item's
    ERROR result in a 200, never a 400 that sinks the good ones. So a request whose only flaw is
    inside an item is rightly accepted; every other check still applies to it."""
    if case.operation.path == "/api/v1/memories/batch":
        return [check for check in checks if check is not negative_data_rejection]
    return checks


def _run(case: Case, target: ServerProcess, tally: Counter[str], label: str, checks: list = CHECKS,
         headers: dict[str, str] | None = None, params: dict[str, str] | None = None) -> None:
    checks = _checks_for(case, checks)
    with requests.Session() as session:
        response = case.call(base_url=target.base_url, session=session, headers=headers, params=params, timeout=60)
    tally[f"schema fuzz {label}: cases"] += 1
    tally[f"schema fuzz {label}: {response.status_code // 100}xx"] += 1
    case.validate_response(response, checks=checks, headers=headers)


@schema.parametrize()
@SETTINGS
def test_every_operation_without_auth(case: Case, open_target: ServerProcess, tally: Counter[str]) -> None:
    _run(case, open_target, tally, "open")


@schema.parametrize()
@schema.given(attempt=key_attempts)
@SETTINGS
def test_every_operation_with_auth(case: Case, attempt: KeyAttempt, auth_target: ServerProcess,
                                   tally: Counter[str]) -> None:
    note(f"key attempt: {attempt}")
    headers, params = attempt.request_parts(case)
    checks = CONFORMANCE if attempt.fills_user and _without_user(case) else CHECKS
    _run(case, auth_target, tally, "auth", checks, headers, params)
