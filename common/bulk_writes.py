"""A bulk write (an import of thousands of rows) invalidates caches once, at
its end, rather than once per saved row.

Receivers that invalidate something on every save ask `deferred(key, callback)`
first: inside `writes_deferred()` the callback is kept (once per key) and the
receiver does nothing more; outside one it answers False and the receiver does
its usual work. When the block ends, normally or not, each kept callback runs
once, unless `deferred_done(key)` said that what it would do is done already
(the import's last part recomputes every board after all the writes).
"""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_pending: ContextVar[dict[str, Callable[[], None]] | None] = ContextVar(
    "bulk_writes_pending", default=None
)


@contextmanager
def writes_deferred() -> Iterator[None]:
    """Per-row invalidations inside the block run once, at its end."""
    if _pending.get() is not None:  # nested: the outer block runs them
        yield
        return
    pending: dict[str, Callable[[], None]] = {}
    token = _pending.set(pending)
    try:
        yield
    finally:
        _pending.reset(token)
        for callback in pending.values():
            callback()


def deferred(key: str, callback: Callable[[], None]) -> bool:
    """Keep `callback` for the end of the current `writes_deferred()` block (the
    first one given for `key`); False outside one (the caller does its work now)."""
    pending = _pending.get()
    if pending is None:
        return False
    pending.setdefault(key, callback)
    return True


def deferred_done(key: str) -> None:
    """What `key`'s callback would do is done, after every write so far: drop it
    (a later write in the block keeps a new one)."""
    pending = _pending.get()
    if pending is not None:
        pending.pop(key, None)


def pending() -> bool:
    """Whether a `writes_deferred()` block is running (a receiver that would
    compute what a row changes can skip that work: the end of the block redoes it all)."""
    return _pending.get() is not None
