"""What the message broker may have lost, found out instead of waited for.

A Redis broker that keeps nothing on disk (the site's default, and what a
restarted container or a failover gives) comes back empty: every queued message
is gone, and work waiting on them would wait for the reaper's resend interval
(minutes). So the broker carries a marker: whoever finds it missing knows the
broker's memory is new and sends again what the database says is queued, at
once, then sets it. One process at a time does (a lock that expires, so that
one that dies half-way is followed by another). Sending twice is harmless:
every task claims its row.

RabbitMQ's quorum queues keep their messages across a restart (celery.py):
nothing is lost there, and this says so.
"""

from __future__ import annotations

from typing import Any

import redis
from django.utils import timezone
from kombu.transport import redis as kombu_redis

BROKER_MEMORY_KEY = "mlrbench:broker-memory"
BROKER_RESEND_LOCK_KEY = "mlrbench:broker-resend"
BROKER_RESEND_LOCK_SECONDS = 60
BROKER_TIMEOUT_SECONDS = 5.0


def broker_keeps_nothing(url: str) -> bool:
    return url.startswith(("redis://", "rediss://"))


def _client(url: str) -> redis.Redis:
    return redis.Redis.from_url(
        url, socket_connect_timeout=BROKER_TIMEOUT_SECONDS, socket_timeout=BROKER_TIMEOUT_SECONDS
    )


def broker_memory_lost(url: str) -> bool:
    """True when the broker at `url` came back without its messages (or is asked
    for the first time) and this process is the one to send them again: the
    caller sends, then calls `broker_memory_restored`. A caller that dies before
    that leaves the broker unmarked, and after BROKER_RESEND_LOCK_SECONDS the
    next look is told again. False for a broker that keeps its messages. Raises
    the client's error when the broker cannot be reached."""
    if not broker_keeps_nothing(url):
        return False
    client = _client(url)
    try:
        if client.exists(BROKER_MEMORY_KEY):
            return False
        # One process at a time sends everything again, not every worker at once.
        return bool(client.set(BROKER_RESEND_LOCK_KEY, "1", nx=True, ex=BROKER_RESEND_LOCK_SECONDS))
    finally:
        client.close()


def broker_memory_restored(url: str) -> None:
    """Everything queued was sent again: the broker's memory is whole."""
    client = _client(url)
    try:
        client.set(BROKER_MEMORY_KEY, timezone.now().isoformat())
        client.delete(BROKER_RESEND_LOCK_KEY)
    finally:
        client.close()


def broker_memory_forget(url: str) -> None:
    """Drop the marker, best effort: the next look sends everything queued again
    (after a send that failed, whose messages nobody else will know are missing)."""
    if not broker_keeps_nothing(url):
        return
    client = _client(url)
    try:
        client.delete(BROKER_MEMORY_KEY)
    except redis.RedisError:
        pass  # the broker is away: when it comes back empty, the marker is gone anyway
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
