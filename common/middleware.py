"""Middleware of the whole site.

- Refuse, up front, requests whose parameters carry a NUL character: no text
  column stores one (PostgreSQL refuses it, a 500 wherever a raw parameter
  reaches a query), and no honest client sends one.
- Say when an answer rests on a cached value older than the data
  (`common.cache_generation`): `X-Data-Stale: true`.
"""

from collections.abc import Callable
from urllib.parse import unquote_to_bytes

from django.http import HttpRequest, HttpResponse

from .cache_generation import staleness
from .errors import ValidationFailed
from .http import json_error

STALE_HEADER = "X-Data-Stale"

_MESSAGE = "the request contains a NUL character"


class NulRefusalMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        query = request.META.get("QUERY_STRING", "")
        if b"\x00" in unquote_to_bytes(str(query)) or "\x00" in request.path:
            if request.path.startswith("/api/"):
                return json_error(ValidationFailed(_MESSAGE))
            return HttpResponse(_MESSAGE + "\n", status=400, content_type="text/plain")
        return self.get_response(request)


class StalenessMiddleware:
    """Each request is its own staleness scope; a stale answer carries
    `X-Data-Stale` and is never stored by a shared cache for longer than now."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        with staleness() as scope:
            response = self.get_response(request)
        if scope.stale:
            response[STALE_HEADER] = "true"
            response["Cache-Control"] = "no-store"
        return response
