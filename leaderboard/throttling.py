"""Throttles for anonymous clients of the public API (signed-in users are not
throttled). Rates come from `REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]` and
are read on each request, so a settings change applies without a restart."""

from typing import cast

from rest_framework.settings import api_settings
from rest_framework.throttling import AnonRateThrottle


class PublicAnonThrottle(AnonRateThrottle):
    scope = "public_api"

    def get_rate(self) -> str | None:
        # The stubs type the rates as numbers; they are strings such as "100/hour".
        rates = cast(dict[str, str | None], api_settings.DEFAULT_THROTTLE_RATES)
        return rates.get(self.scope) if self.scope else None


class ExportAnonThrottle(PublicAnonThrottle):
    """The full export is large: a tighter budget of its own."""

    scope = "export"
