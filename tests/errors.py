"""Reading the site's one error shape in tests:
`{"errors": [{"field": ..., "code": ..., "message": ...}], ...extra}`."""

from typing import Any


def error_items(response: Any) -> list[dict]:
    """The answer's error items, after checking the body has the one shape."""
    items = response.json()["errors"]
    assert isinstance(items, list) and items, items
    for item in items:
        assert set(item) == {"field", "code", "message"}, item
        assert isinstance(item["code"], str) and item["code"], item
        assert isinstance(item["message"], str) and item["message"], item
    return items


def error_messages(response: Any) -> dict[str | None, list[str]]:
    """The messages by field (None: the request as a whole)."""
    by_field: dict[str | None, list[str]] = {}
    for item in error_items(response):
        by_field.setdefault(item["field"], []).append(item["message"])
    return by_field
