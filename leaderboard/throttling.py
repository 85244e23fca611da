"""Throttles for anonymous clients of the public API (signed-in users are not
throttled). Rates come from `REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]` and
are read on each request, so a settings change applies without a restart."""

from rest_framework.settings import api_settings
from rest_framework.throttling import AnonRateThrottle


class PublicAnonThrottle(AnonRateThrottle):
    scope = "public_api"

    def get_rate(self) -> str | None:
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)


class ExportAnonThrottle(PublicAnonThrottle):
    """The full export is large: a tighter budget of its own."""

    scope = "export"
