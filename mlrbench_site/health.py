"""Checks behind /healthz: each returns None when the part is up, or what is wrong."""

import redis
from django.conf import settings
from django.db import connection
from kombu import Connection

BROKER_TIMEOUT_SECONDS = 2.0


def database_check() -> str | None:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # noqa: BLE001 - any failure means "down"
        return f"{type(exc).__name__}: {exc}"
    return None


def broker_check(url: str) -> str | None:
    try:
        if url.startswith(("redis://", "rediss://")):
            # kombu's Redis transport connects lazily; a PING proves the broker answers.
            client = redis.Redis.from_url(
                url,
                socket_connect_timeout=BROKER_TIMEOUT_SECONDS,
                socket_timeout=BROKER_TIMEOUT_SECONDS,
            )
            try:
                client.ping()
            finally:
                client.close()
        else:
            with Connection(url, connect_timeout=BROKER_TIMEOUT_SECONDS) as conn:
                conn.ensure_connection(max_retries=0, timeout=BROKER_TIMEOUT_SECONDS)
    except Exception as exc:  # noqa: BLE001 - any failure means "down"
        return f"{type(exc).__name__}: {exc}"
    return None


def health_report() -> tuple[bool, dict[str, dict[str, object]]]:
    checks: dict[str, dict[str, object]] = {}
    error = database_check()
    checks["database"] = {"ok": error is None, **({"error": error} if error else {})}
    if settings.CELERY_BROKER_URL:
        error = broker_check(settings.CELERY_BROKER_URL)
        checks["broker"] = {"ok": error is None, **({"error": error} if error else {})}
    else:
        checks["broker"] = {"ok": True, "configured": False, "mode": "eager"}
    return all(check["ok"] for check in checks.values()), checks
