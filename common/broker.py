"""What the message broker may have lost, found out instead of waited for.

A Redis broker that keeps nothing on disk (the site's default, and what a
restarted container or a failover gives) comes back empty: every queued message
is gone, and work waiting on them would wait for the reaper's resend interval
(minutes). So the broker carries a marker: whoever finds it missing knows the
broker's memory is new and sends again what the database says is queued, at
once. Exactly one of the processes that look finds it missing (SET NX), so one
resend follows each loss. Sending twice is harmless: every task claims its row.

RabbitMQ's quorum queues keep their messages across a restart (celery.py):
nothing is lost there, and this says so.
"""

from __future__ import annotations

from typing import Any

import redis
from django.utils import timezone
from kombu.transport import redis as kombu_redis

BROKER_MEMORY_KEY = "mlrbench:broker-memory"
BROKER_TIMEOUT_SECONDS = 5.0


def broker_keeps_nothing(url: str) -> bool:
    return url.startswith(("redis://", "rediss://"))


def broker_memory_lost(url: str) -> bool:
    """True once for each time the broker at `url` came back without its messages
    (and the first time it is asked at all); False for a broker that keeps them.
    Raises the client's error when the broker cannot be reached."""
    if not broker_keeps_nothing(url):
        return False
    client = redis.Redis.from_url(
        url, socket_connect_timeout=BROKER_TIMEOUT_SECONDS, socket_timeout=BROKER_TIMEOUT_SECONDS
    )
    try:
        return bool(client.set(BROKER_MEMORY_KEY, timezone.now().isoformat(), nx=True))
    finally:
        client.close()


class _RedisChannel(kombu_redis.Channel):
    """kombu's Redis channel, able to close after its connection has.

    A worker whose broker restarts closes its old connection (the transport
    forgets the connection's address) and then the old channels; a channel that
    still holds unacknowledged messages (tasks in flight, acknowledged late)
    restores them on close through a new pool, built from that address:
    `AttributeError: 'NoneType' object has no attribute 'hostname'`, raised in the
    consumer's restart, where Celery reports an unrecoverable error and the worker
    exits. The same happens to a task finishing after the restart, whose late
    acknowledgement needs a pool. This channel keeps the address it connected
    with, so the restore and the acknowledgement reach the broker that came back.
    """

    def _connparams(self, asynchronous: bool = False) -> dict[str, Any]:
        saved: dict[bool, dict[str, Any]] = self.__dict__.setdefault("_saved_connparams", {})
        if self.connection.client is None and asynchronous in saved:
            return dict(saved[asynchronous])
        params: dict[str, Any] = super()._connparams(asynchronous=asynchronous)  # type: ignore[no-untyped-call]
        saved[asynchronous] = dict(params)
        return params


class RedisTransport(kombu_redis.Transport):
    """The broker transport for `redis://` (settings CELERY_BROKER_TRANSPORT)."""

    Channel = _RedisChannel
