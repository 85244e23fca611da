"""Untrusted documents (large markdown, PDFs) are parsed in a child process
under a time budget, so that a document made to loop or to balloon costs a
refusal, not the web or import process that took it.

The children are one small pool per process, started on first use and kept:
a process per document cost a Python start (a fifth of a second, more on a
busy machine) for each one. The pool is spawned, never forked (the parent
holds database connections and threads), and each child is replaced after
`CHILD_TASKS` documents. A document past its budget, or a child that dies
under one, takes the whole pool down (its child is killed) and the next call
starts a fresh one, so nothing a document did outlives it.

A function run here takes and returns plain picklable values and imports
nothing of Django (the child has no settings).
"""

import atexit
import multiprocessing
import os
import threading
from collections.abc import Callable
from multiprocessing.pool import Pool
from typing import Any, TypeVar

T = TypeVar("T")

CHILD_TASKS = 200
# Starting a child is not part of any document's budget.
START_SECONDS = 120.0


class ChildTimeout(Exception):
    """The function ran past its budget (or its child died); the pool was replaced."""


class ChildFailed(Exception):
    """The function raised in the child; the message is the child's error."""


_lock = threading.Lock()
_pool: Pool | None = None
_pool_pid = 0


def _ready() -> bool:
    return True


def _children_allowed() -> None:
    """A Celery prefork child is marked daemonic, and multiprocessing refuses
    children to a daemonic process (now and each time the pool replaces one).
    The flag only guards against orphans: the pool's children leave when their
    parent's pipe closes, and `pool_close` stops them at exit, so it is lifted
    for this process."""
    current = multiprocessing.current_process()
    if current.daemon:
        current._config["daemon"] = False  # type: ignore[attr-defined]
    # Celery's billiard leaves its own key type here, which the spawn refuses
    # to pickle; the same bytes as multiprocessing's own type.
    key = current._config.get("authkey")  # type: ignore[attr-defined]
    key_type: Any = getattr(multiprocessing.process, "AuthenticationString")  # noqa: B009
    if key is not None and not isinstance(key, key_type):
        current._config["authkey"] = key_type(bytes(key))  # type: ignore[attr-defined]


def _pool_get() -> Pool:
    global _pool, _pool_pid
    with _lock:
        # A forked copy of this process (a web worker forked after first use)
        # starts its own pool: the parent's children are not its own.
        if _pool is None or _pool_pid != os.getpid():
            _children_allowed()
            pool = multiprocessing.get_context("spawn").Pool(
                processes=1, maxtasksperchild=CHILD_TASKS
            )
            try:
                pool.apply_async(_ready).get(START_SECONDS)
            except BaseException:
                pool.terminate()
                raise
            _pool, _pool_pid = pool, os.getpid()
        return _pool


def _pool_discard(pool: Pool) -> None:
    global _pool
    with _lock:
        if _pool is pool:
            _pool = None
    pool.terminate()


def pool_close() -> None:
    """Stop the children (at exit; a test that wants a fresh pool)."""
    with _lock:
        pool = _pool if _pool_pid == os.getpid() else None
    if pool is not None:
        _pool_discard(pool)


atexit.register(pool_close)


def child_run(function: Callable[..., T], *args: Any, timeout: float) -> T:
    """`function(*args)` in a child within `timeout` seconds: ChildTimeout past
    it, ChildFailed when it raised."""
    pool = _pool_get()
    pending = pool.apply_async(function, args)
    try:
        return pending.get(timeout)
    except multiprocessing.TimeoutError:
        _pool_discard(pool)
        raise ChildTimeout(f"no answer within {timeout:g} s") from None
    except Exception as exc:  # raised in the child and sent back
        raise ChildFailed(f"{type(exc).__name__}: {exc}") from None
