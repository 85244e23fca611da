"""How many database queries a page costs."""

from __future__ import annotations

from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext


def count_queries(client, url, params=None) -> int:
    """The queries of one GET of `url` (with `params`) from a cold cache; the
    page must answer 200."""
    cache.clear()
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url, params or {})
    assert response.status_code == 200
    return len(queries)
