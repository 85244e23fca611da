"""The callables a setting names by dotted path (settings/wiring.py): how a lower
app calls code of a higher one without importing it."""

from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string


@cache
def _imported(paths: tuple[str, ...]) -> list[Callable[..., Any]]:
    return [import_string(path) for path in paths]


def setting_callables(name: str) -> list[Callable[..., Any]]:
    """The callables named by the setting `name` (a list of dotted paths; none
    when unset), each imported once."""
    paths: Sequence[str] = getattr(settings, name, ())
    return _imported(tuple(paths))
