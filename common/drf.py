"""The API's side of `common.errors`: the one exception handler
(`REST_FRAMEWORK["EXCEPTION_HANDLER"]`), the error body's serializers, and the
schema class that documents that body on every operation's 4xx answers. The
JSON parser is `common.parsers` (DRF's views import the parser setting when
they load, which this module imports)."""

from collections.abc import Iterator, Mapping
from typing import Any, Literal

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db import DataError
from django.http import Http404
from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from rest_framework import exceptions, serializers
from rest_framework.response import Response
from rest_framework.routers import DefaultRouter
from rest_framework.settings import api_settings
from rest_framework.views import exception_handler as drf_exception_handler
from rest_framework.views import set_rollback

from .errors import ApplicationError, ErrorItem, error_body


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Every API error, as `{"errors": [{"field", "code", "message"}, ...]}`.

    DRF's own handler still makes the response, so its headers stay
    (`WWW-Authenticate` on a 401, `Retry-After` on a 429); only the body is
    ours. Anything else (a bug) is left to Django: a 500.
    """
    if isinstance(exc, ApplicationError):
        set_rollback()
        answer = Response(exc.body(), status=exc.status_code)
        # An error that says when to come back (a 429 of the service's own).
        retry_after = getattr(exc, "retry_after", None)
        if retry_after is not None:
            answer["Retry-After"] = str(retry_after)
        return answer
    if isinstance(exc, DataError):
        # A value the database refuses (a NUL character, a number out of its
        # range) that no validation caught: the client's input, not a bug of ours.
        set_rollback()
        item = ErrorItem(
            code="invalid", message="a value is out of range or holds a character not allowed"
        )
        return Response(error_body([item]), status=400)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound(*exc.args)
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(*exc.args)
    response = drf_exception_handler(exc, context)
    if response is not None and isinstance(exc, exceptions.APIException):
        response.data = error_body(api_exception_items(exc))
        if response.status_code == 401 and "WWW-Authenticate" not in response:
            response["WWW-Authenticate"] = 'Token realm="api"'
    return response


def api_exception_items(exc: exceptions.APIException) -> list[ErrorItem]:
    return list(_detail_items(exc.detail, None, exc.default_code))


def serializer_error_items(errors: Mapping[str, Any]) -> list[ErrorItem]:
    """An input serializer's errors as items (a page that validates with one)."""
    return list(_detail_items(dict(errors), None, "invalid"))


def _detail_items(detail: Any, field: str | None, default_code: str) -> Iterator[ErrorItem]:
    """Serializer errors flattened: a nested field is `parent.child`, a list's
    member `parent.0`; non-field errors belong to the object that holds them."""
    if isinstance(detail, dict):
        for key, value in detail.items():
            yield from _detail_items(value, _field_join(field, str(key)), default_code)
    elif isinstance(detail, list):
        for index, value in enumerate(detail):
            nested = isinstance(value, dict | list)
            yield from _detail_items(
                value, _field_join(field, str(index)) if nested else field, default_code
            )
    else:
        code = getattr(detail, "code", None) or default_code
        yield ErrorItem(code=str(code), message=str(detail), field=field)


def _field_join(parent: str | None, key: str) -> str | None:
    if key == api_settings.NON_FIELD_ERRORS_KEY:
        return parent
    return f"{parent}.{key}" if parent else key


# ----------------------------------------------------------------- schema


class ErrorItemSerializer(serializers.Serializer[Any]):
    field = serializers.CharField(
        allow_null=True,
        help_text="the input the error is about (`parent.child` when nested); "
        "null: the request as a whole",
    )
    code = serializers.CharField(help_text="a stable machine-readable code, e.g. `invalid`")
    message = serializers.CharField(help_text="what is wrong, for a person")


class ErrorSerializer(serializers.Serializer[Any]):
    """The body of every API error. Some answers add data beside `errors`,
    documented where they do (a 409's existing `id`)."""

    errors = ErrorItemSerializer(many=True)  # type: ignore[assignment]  # a field, not .errors


ERROR_DESCRIPTION = (
    "An error: `errors` lists each problem with its `field` (null: the whole request), "
    "a machine `code` and a human `message`."
)


class AutoSchema(SpectacularAutoSchema):
    """drf-spectacular's schema, with the error body on every 4xx answer: the
    ones a view declares without a body, a `4XX` range for the rest, and a 429
    with `Retry-After` where the view is throttled."""

    def _get_response_bodies(
        self, direction: Literal["request", "response"] = "response"
    ) -> dict[str, Any]:
        responses = super()._get_response_bodies(direction)
        if direction != "response":
            return responses

        def error() -> dict[str, Any]:
            body: dict[str, Any] = self._get_response_for_code(  # type: ignore[no-untyped-call]
                ErrorSerializer, "400"
            )["content"]
            return body

        for code, response in responses.items():
            if code.startswith("4") and "content" not in response:
                response["content"] = error()
        if getattr(self.view, "throttle_classes", None):
            responses.setdefault(
                "429",
                {
                    "description": "Too many requests; wait `Retry-After` seconds.",
                    "headers": {
                        "Retry-After": {"schema": {"type": "integer"}, "description": "seconds"}
                    },
                    "content": error(),
                },
            )
        responses.setdefault("4XX", {"description": ERROR_DESCRIPTION, "content": error()})
        return responses


class AppRouter(DefaultRouter):
    """An app's API router: the `.json` suffixes of a DefaultRouter, without its
    root view, since the site's one API root lists every app's router."""

    include_root_view = False
