"""The API's JSON parser (`REST_FRAMEWORK["DEFAULT_PARSER_CLASSES"]`): DRF's,
refusing JSON nested past a depth with a 400 in the one error shape."""

import codecs
import json
import re
from collections.abc import Mapping
from typing import IO, Any

from rest_framework import exceptions, parsers
from rest_framework.utils.json import strict_constant

# No API input nests anywhere near this deep; Python's JSON reader and writer
# recurse, and past about a thousand levels they raise RecursionError (issue
# 40: 5,000 nested objects, 30 KB, answered 500).
JSON_MAX_DEPTH = 64
# A string (escapes and all) or one bracket: strings are skipped whole, so a
# bracket inside one is not counted.
_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


def json_too_deep(text: str, limit: int = JSON_MAX_DEPTH) -> bool:
    """Whether `text` nests arrays and objects more than `limit` deep (linear,
    without parsing it)."""
    depth = 0
    for match in _JSON_TOKENS.finditer(text):
        bracket = match.group()
        if bracket in "[{":
            depth += 1
            if depth > limit:
                return True
        elif bracket in "]}":
            depth -= 1
    return False


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, answering 400 (`parse_error`) to JSON nested more than
    `JSON_MAX_DEPTH` deep instead of failing with a RecursionError."""

    def parse(
        self,
        stream: IO[Any],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        encoding = parsers.get_encoding(parser_context or {})  # type: ignore[attr-defined]
        try:
            text = codecs.getreader(encoding)(stream).read()
        except ValueError as exc:  # not text in that encoding
            raise exceptions.ParseError(f"JSON parse error - {exc}") from None
        if json_too_deep(text):
            raise exceptions.ParseError(
                f"JSON parse error - nested more than {JSON_MAX_DEPTH} levels deep"
            )
        parse_constant = strict_constant if self.strict else None
        try:
            return json.loads(text, parse_constant=parse_constant)
        except ValueError as exc:
            raise exceptions.ParseError(f"JSON parse error - {exc}") from None
