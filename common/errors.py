"""The site's one error type.

Services raise an `ApplicationError` subclass; it carries the HTTP status an
API answers with and one or more items, each a machine `code`, a human
`message` and the input `field` it is about (None: the request as a whole).
The API's exception handler (`common.drf`) answers every error with

    {"errors": [{"field": "archive" | null, "code": "...", "message": "..."}]}

plus the error's `extra` data as top-level keys where clients need more (the
existing submission's `id` beside a 409), and the HTML views put the same
items on their forms with `form_add_errors`, so a user reads the same words
in the browser and from the API.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS
from django.forms.utils import ErrorDict


@dataclass(frozen=True)
class ErrorItem:
    code: str
    message: str
    field: str | None = None

    def as_dict(self) -> dict[str, str | None]:
        return {"field": self.field, "code": self.code, "message": self.message}


class ApplicationError(Exception):
    """A request that cannot be done; each item says why, for the user."""

    status_code: ClassVar[int] = 400
    default_code: ClassVar[str] = "error"
    default_message: ClassVar[str] = "The request cannot be done."

    def __init__(
        self,
        message: str | None = None,
        *,
        code: str | None = None,
        field: str | None = None,
        items: Iterable[ErrorItem] = (),
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        listed = list(items)
        if message is not None or not listed:
            first = ErrorItem(
                code=code or self.default_code,
                message=self.default_message if message is None else message,
                field=field,
            )
            listed.insert(0, first)
        self.items: tuple[ErrorItem, ...] = tuple(listed)
        self.extra: dict[str, Any] = dict(extra or {})
        super().__init__(self.message)

    @property
    def message(self) -> str:
        """Every item's message in one line (what a log or a CLI prints)."""
        return "; ".join(item.message for item in self.items)

    @property
    def code(self) -> str:
        return self.items[0].code

    @property
    def field(self) -> str | None:
        return self.items[0].field

    def body(self) -> dict[str, Any]:
        """The JSON body an API answers with."""
        return error_body(self.items, extra=self.extra)


class ValidationFailed(ApplicationError):
    status_code = 400
    default_code = "invalid"
    default_message = "The input is not valid."


class PermissionDenied(ApplicationError):
    status_code = 403
    default_code = "permission_denied"
    default_message = "You may not do this."


class NotFound(ApplicationError):
    status_code = 404
    default_code = "not_found"
    default_message = "Not found."


class Conflict(ApplicationError):
    """The request clashes with the current state (it was done already, or is closed)."""

    status_code = 409
    default_code = "conflict"
    default_message = "This conflicts with the current state."


def error_body(
    items: Iterable[ErrorItem], *, extra: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    return {"errors": [item.as_dict() for item in items], **(extra or {})}


def form_error_items(errors: ErrorDict) -> list[ErrorItem]:
    """A Django form's errors as items; the form's non-field errors have field None."""
    return [
        ErrorItem(
            code=error.code or "invalid",
            message=str(message),
            field=None if name == NON_FIELD_ERRORS else name,
        )
        for name, field_errors in errors.as_data().items()
        for error in field_errors
        for message in error
    ]


def form_add_errors(form: forms.BaseForm, error: ApplicationError) -> None:
    """Show a service's error on the form: each item at its field (or at the top
    when the form has no such field), once, even if the form found it too."""
    for item in error.items:
        # A list member's error (`input.1`) goes beside the list's field.
        name = (item.field or "").split(".")[0]
        field = name if name in form.fields else None
        shown = list(form.errors.get(field or NON_FIELD_ERRORS, []))
        if item.message not in shown:
            form.add_error(field, forms.ValidationError(item.message, code=item.code))
