"""The site's one request limiter, for anonymous clients (signed-in users are
not limited): the API's throttles, by scope, and one for every HTML page
(`PageThrottleMiddleware`). Counting is the `limits` library's fixed window,
kept in Redis (`REDIS_URL`; one atomic INCR per request, so concurrent
requests from one client never each read the same count and all pass) or, on
a bare machine without Redis, in the process's memory.

Rates come from `REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]` ("600/minute") and
are read on each request, so a settings change applies without a restart.
Each scope has its own budget, sized for its readers: `release_files` lets a
researcher load a release (croissant.json and every table, with the range
requests pandas, `datasets` and `mlcroissant` make) many times an hour without
touching `export`, the live full export's tighter budget.

Who a client is comes from `client_ip`: the address the last of `NUM_PROXIES`
trusted proxies saw (`X-Forwarded-For`), or the socket's own address when
there are none (the default), so a made-up header never buys a fresh budget.

The judges' requests-per-minute limit on provider calls (judging/ratelimit.py)
counts on the same library and storage (common/limits_storage.py), as a moving window;
it waits for a slot instead of refusing, across workers.
"""

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from limits import RateLimitItem, parse
from limits.strategies import FixedWindowRateLimiter
from rest_framework import exceptions
from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle

from common.limits_storage import limits_storage

_KEY_PREFIX = "mlrbench-limit"


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


_limiters: dict[str, FixedWindowRateLimiter] = {}
_limiters_lock = threading.Lock()


def _limiter() -> FixedWindowRateLimiter:
    """The requests' limiter, on the storage of REDIS_URL."""
    url = str(getattr(settings, "REDIS_URL", "") or "")
    limiter = _limiters.get(url)
    if limiter is None:
        storage = limits_storage(url, key_prefix=_KEY_PREFIX)
        with _limiters_lock:
            limiter = _limiters.setdefault(url, FixedWindowRateLimiter(storage))
    return limiter


def scope_rate(scope: str) -> RateLimitItem | None:
    rates = cast(dict[str, str | None], api_settings.DEFAULT_THROTTLE_RATES)
    rate = rates.get(scope)
    return parse(rate) if rate else None


@dataclass(frozen=True)
class Decision:
    allowed: bool
    retry_after: int  # seconds until the window frees a request; 0 when allowed
    rate: RateLimitItem | None

    @property
    def rate_text(self) -> str:
        if self.rate is None:
            return ""
        unit = self.rate.GRANULARITY.name
        per = f"{self.rate.multiples} {unit}s" if self.rate.multiples != 1 else unit
        return f"{self.rate.amount} per {per}"


def rate_hit(*, scope: str, ident: str) -> Decision:
    """Counts one request of `ident` against `scope`'s rate; whether it may go."""
    rate = scope_rate(scope)
    if rate is None:
        return Decision(allowed=True, retry_after=0, rate=None)
    limiter = _limiter()
    if limiter.hit(rate, scope, ident):
        return Decision(allowed=True, retry_after=0, rate=rate)
    reset = limiter.get_window_stats(rate, scope, ident).reset_time
    return Decision(allowed=False, retry_after=max(1, math.ceil(reset - time.time())), rate=rate)


def limited_message(decision: Decision, what: str) -> str:
    return (
        f"Too many requests for {what} from your address (at most {decision.rate_text}); "
        f"try again in {decision.retry_after} s (Retry-After)."
    )


class PublicAnonThrottle(BaseThrottle):
    """The API's anonymous budget for `scope`; a refusal is a 429 with
    `Retry-After` and a message that names the limit."""

    scope = "public_api"
    what = "the API"

    def allow_request(self, request: Any, view: Any) -> bool:
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            return True
        decision = rate_hit(scope=self.scope, ident=client_ip(request))
        if not decision.allowed:
            raise exceptions.Throttled(
                wait=decision.retry_after, detail=limited_message(decision, self.what)
            )
        return True


class ExportAnonThrottle(PublicAnonThrottle):
    """The live full export is large: a tighter budget of its own."""

    scope = "export"
    what = "the full export"


class ReleaseFileAnonThrottle(PublicAnonThrottle):
    """A release's stored files (its JSON, export.zip, Parquet tables, card and
    Croissant file): static bytes, cacheable forever, with a budget of their
    own sized for loading a release many times an hour."""

    scope = "release_files"
    what = "release files"


# Not limited: static files (WhiteNoise serves them before this runs, in any
# case), the health check a load balancer polls, and the API (its own throttles).
_UNLIMITED_PREFIXES = ("/static/", "/healthz", "/api/")


class PageThrottleMiddleware:
    """Anonymous requests for pages, per client address, at the `pages` rate."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        user = getattr(request, "user", None)
        signed_in = user is not None and user.is_authenticated
        if not signed_in and not request.path.startswith(_UNLIMITED_PREFIXES):
            decision = rate_hit(scope="pages", ident=client_ip(request))
            if not decision.allowed:
                response = HttpResponse(
                    limited_message(decision, "pages") + "\n",
                    status=429,
                    content_type="text/plain; charset=utf-8",
                )
                response["Retry-After"] = str(decision.retry_after)
                return response
        return self.get_response(request)
