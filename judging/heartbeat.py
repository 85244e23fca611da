"""A running judgment's sign of life: its worker process's heartbeat.

Each process that runs judgments keeps the runs it holds (token, judgment,
deadline) and one daemon thread writes `heartbeat_at = now` for all of them
every JUDGE_HEARTBEAT_SECONDS, in one UPDATE. When the process dies (SIGKILL,
out of memory, a prefork child past its hard limit) the thread dies with it,
the heartbeats stop, and the reaper queues the judgments again once they are
JUDGE_LEASE_STALE_SECONDS old: minutes, not the judge task's hard limit.

A run is only vouched for until its own deadline (the judge task's soft limit,
by which the run gives up by itself) plus one stale interval: a run stuck past
that (a call that never returns) stops being heartbeated, so a live process
can never keep a lost run's judgment away from the reaper forever.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid

from django.conf import settings
from django.db import DatabaseError, connection
from django.utils import timezone

logger = logging.getLogger(__name__)

_lock = threading.Lock()
# token -> (judgment id, time.monotonic() after which the run is no longer vouched for)
_runs: dict[uuid.UUID, tuple[int, float]] = {}
_thread: threading.Thread | None = None
_thread_pid: int | None = None


def heartbeat_hold(*, judgment_id: int, token: uuid.UUID, deadline: float) -> None:
    """This process runs the judgment under `token` until `deadline` (monotonic)."""
    vouched_until = deadline + settings.JUDGE_LEASE_STALE_SECONDS
    with _lock:
        _runs[token] = (judgment_id, vouched_until)
        _thread_ensure()


def heartbeat_drop(*, token: uuid.UUID) -> None:
    with _lock:
        _runs.pop(token, None)


def heartbeat_write() -> int:
    """One heartbeat for the runs this process vouches for now; the number written."""
    from .models import Judgment, JudgmentStatus

    now = time.monotonic()
    with _lock:
        tokens = [token for token, (_, until) in _runs.items() if until > now]
    if not tokens:
        return 0
    return Judgment.objects.filter(run_token__in=tokens, status=JudgmentStatus.RUNNING).update(
        heartbeat_at=timezone.now()
    )


def _thread_ensure() -> None:
    # Under _lock. A forked child (prefork pool) has the parent's registry but
    # not its thread: it starts its own.
    global _thread, _thread_pid
    if _thread is not None and _thread_pid == os.getpid() and _thread.is_alive():
        return
    _thread_pid = os.getpid()
    _thread = threading.Thread(target=_beat_forever, name="judgment-heartbeat", daemon=True)
    _thread.start()


def _beat_forever() -> None:
    while True:
        time.sleep(settings.JUDGE_HEARTBEAT_SECONDS)
        try:
            heartbeat_write()
        except DatabaseError as exc:
            # The database is away (a restart, a terminated connection): the next
            # beat tries again on a new connection.
            logger.warning("judgment heartbeat not written: %s", exc)
        finally:
            # The thread's own connection: closed between beats, never left broken.
            connection.close()
