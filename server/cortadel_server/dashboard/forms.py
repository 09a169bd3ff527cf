"""Form and query values as the dashboard reads them: text in, typed values out, or ValidationFailed.

The limits are the API's (api/schemas.py), so a value the page refuses is one the API refuses too.
"""

from __future__ import annotations

from cortadel_server.errors import ValidationFailed
from cortadel_server.inputs import check_json_value

#: the longest statement the API stores (CreateMemoryRequest.text)
MAX_STATEMENT = 50_000
#: the longest search query the API runs (SearchMemoriesRequest.query)
MAX_QUERY = 5_000
#: the longest filter value the page passes on
MAX_FILTER = 500


def text(value: str | None, field: str, *, max_length: int = MAX_FILTER, required: bool = False) -> str | None:
    """The trimmed value, or None when empty (and not required)."""
    value = (value or "").strip()
    if not value:
        if required:
            raise ValidationFailed({field: ["This field is required"]})
        return None
    if len(value) > max_length:
        raise ValidationFailed({field: [f"At most {max_length} characters"]})
    problem = check_json_value(value)
    if problem:
        raise ValidationFailed({field: [problem]})
    return value


def statement(value: str | None, field: str = "text") -> str:
    result = text(value, field, max_length=MAX_STATEMENT, required=True)
    assert result is not None  # required
    return result


def whole_number(value: str | None, field: str, *, low: int, high: int, default: int) -> int:
    value = (value or "").strip()
    if not value:
        return default
    if not value.isdigit() or not low <= int(value) <= high:
        raise ValidationFailed({field: [f"Must be a whole number from {low} to {high}"]})
    return int(value)


def choice(value: str | None, field: str, options: tuple[str, ...], *, default: str | None = None) -> str | None:
    value = (value or "").strip()
    if not value:
        return default
    if value not in options:
        raise ValidationFailed({field: [f"Must be one of {', '.join(options)}"]})
    return value
