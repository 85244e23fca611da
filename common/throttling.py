"""Throttles for anonymous clients (signed-in users are not throttled): the
API's, by scope, and one for every HTML page (`PageThrottleMiddleware`).
Rates come from `REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]` and are read on
each request, so a settings change applies without a restart.

Counting is atomic: one `cache.add` and one `cache.incr` per request on a key
of the current window (a fixed window of the rate's duration), so concurrent
requests from one client can never each read the same history and all pass,
as DRF's read-modify-write list of timestamps lets them.

Who a client is comes from `client_ip`: the address the last of `NUM_PROXIES`
trusted proxies saw (`X-Forwarded-For`), or the socket's own address when
there are none (the default), so a made-up header never buys a fresh budget.
"""

import time
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


class _AtomicWindow:
    """A counter in the cache that lives one rate duration from the client's
    first request (`add`, which only sets a missing key, so a concurrent first
    request cannot reset a count another already raised) and is raised by the
    backend's own atomic increment (Redis INCR), once per request. Mixed into
    DRF's throttles in place of their timestamp history."""

    cache: Any
    num_requests: int | None
    duration: int | None
    rate: str | None
    get_cache_key: Callable[[Any, Any], str | None]
    _started: float | None = None

    def allow_request(self, request: Any, view: Any) -> bool:
        if self.rate is None or not self.num_requests or not self.duration:
            return True
        key = self.get_cache_key(request, view)
        if key is None:
            return True
        counter = f"{key}:n"
        if self.cache.add(counter, 1, timeout=self.duration):
            self.cache.set(f"{key}:t", time.time(), timeout=self.duration)
            return True
        try:
            count = self.cache.incr(counter)
        except ValueError:  # expired between `add` and `incr`: a fresh window
            self.cache.add(counter, 1, timeout=self.duration)
            return True
        if count <= self.num_requests:
            return True
        self._started = self.cache.get(f"{key}:t")
        return False

    def wait(self) -> float | None:
        if self._started is None or not self.duration:
            return None
        return max(self._started + self.duration - time.time(), 0.0)


class PublicAnonThrottle(_AtomicWindow, AnonRateThrottle):
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


class _PageRate(_AtomicWindow, SimpleRateThrottle):
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
