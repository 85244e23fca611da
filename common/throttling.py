"""Throttles for anonymous clients (signed-in users are not throttled): the
API's, by scope, and one for every HTML page (`PageThrottleMiddleware`).
Rates come from `REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]` and are read on
each request, so a settings change applies without a restart.

Who a client is comes from `client_ip`: the address the last of `NUM_PROXIES`
trusted proxies saw (`X-Forwarded-For`), or the socket's own address when
there are none (the default), so a made-up header never buys a fresh budget.
"""

from collections.abc import Callable
from typing import Any, cast

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from rest_framework.request import Request
from rest_framework.settings import api_settings
from rest_framework.throttling import AnonRateThrottle, SimpleRateThrottle


def client_ip(request: HttpRequest) -> str:
    """The client's address, trusting `NUM_PROXIES` proxies in front of the site."""
    remote = str(request.META.get("REMOTE_ADDR", ""))
    proxies = int(settings.NUM_PROXIES)
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR")
    if proxies <= 0 or not forwarded:
        return remote
    addresses = [part.strip() for part in str(forwarded).split(",") if part.strip()]
    if not addresses:
        return remote
    return addresses[-min(proxies, len(addresses))]


class PublicAnonThrottle(AnonRateThrottle):
    scope = "public_api"

    def get_rate(self) -> str | None:
        # The stubs type the rates as numbers; they are strings such as "100/hour".
        rates = cast(dict[str, str | None], api_settings.DEFAULT_THROTTLE_RATES)
        return rates.get(self.scope) if self.scope else None

    def get_ident(self, request: Request) -> str:
        return client_ip(request)


class ExportAnonThrottle(PublicAnonThrottle):
    """The full export is large: a tighter budget of its own."""

    scope = "export"


class _PageRate(SimpleRateThrottle):
    scope = "pages"

    def get_rate(self) -> str | None:
        rates = cast(dict[str, str | None], api_settings.DEFAULT_THROTTLE_RATES)
        return rates.get(self.scope)

    def get_cache_key(self, request: Any, view: Any) -> str | None:
        return self.cache_format % {"scope": self.scope, "ident": client_ip(request)}


# Not throttled: static files (WhiteNoise serves them before this runs, in any
# case), the health check a load balancer polls, and the API (its own throttles).
_UNTHROTTLED_PREFIXES = ("/static/", "/healthz", "/api/")


class PageThrottleMiddleware:
    """Anonymous requests for pages, per client address, at the `pages` rate."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        user = getattr(request, "user", None)
        signed_in = user is not None and user.is_authenticated
        if not signed_in and not request.path.startswith(_UNTHROTTLED_PREFIXES):
            rate = _PageRate()
            rate.cache = cache
            # DRF's throttle reads only META from the request, whatever its type.
            if rate.rate is not None and not rate.allow_request(
                cast(Any, request), cast(Any, None)
            ):
                wait = rate.wait()
                response = HttpResponse(
                    "Too many requests; try again in a minute.\n",
                    status=429,
                    content_type="text/plain; charset=utf-8",
                )
                if wait is not None:
                    response["Retry-After"] = str(int(wait) + 1)
                return response
        return self.get_response(request)
