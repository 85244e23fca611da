"""The artifact store, through Django's storage API only (`default_storage`):
the local file system (MEDIA_ROOT) or an S3-compatible bucket, so that web,
judge and GPU workers on different hosts share it. No code path asks the
store for a local file path.

Uploads are written under `STAGED_PREFIX` first and moved to their final
names only as the last step of the transaction that writes their rows; a
crash before that leaves staged objects no row points at, which
`manage.py storage_sweep` removes once they are a day old.
"""

import logging
import posixpath
import uuid
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta
from typing import IO

from django.core.files import File
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.utils import timezone

from .errors import ApplicationError

logger = logging.getLogger(__name__)

STAGED_PREFIX = "staged"
COPY_CHUNK_BYTES = 1024 * 1024


class StorageUnavailable(ApplicationError):
    """The artifact store could not be written or read; nothing was kept."""

    status_code = 503
    default_code = "storage_unavailable"
    default_message = "The artifact store is unavailable; nothing was stored. Try again shortly."


def storage_errors() -> tuple[type[BaseException], ...]:
    """What a store raises when it cannot be reached or refuses a request."""
    from botocore.exceptions import BotoCoreError, ClientError

    return (OSError, BotoCoreError, ClientError)


def object_save(name: str, content: bytes | IO[bytes]) -> None:
    """Write one object under exactly `name` (replacing one already there)."""
    wrapped = ContentFile(content) if isinstance(content, bytes) else File(content)
    saved = default_storage.save(name, wrapped)
    if saved != name:
        raise StorageUnavailable(f"the store kept {name!r} as {saved!r}")


def object_read(name: str | None, *, limit: int | None = None) -> bytes:
    """An object's bytes (its first `limit` bytes)."""
    if not name:
        raise FileNotFoundError("no object named")
    with default_storage.open(name, "rb") as handle:
        data: bytes = handle.read() if limit is None else handle.read(limit)
    return data


def object_copy(source: str, target: str) -> None:
    with default_storage.open(source, "rb") as handle:
        object_save(target, handle)


def objects_under(prefix: str) -> Iterator[str]:
    """The name of every object under `prefix` (a folder), depth first."""
    try:
        folders, files = default_storage.listdir(prefix)
    except FileNotFoundError:
        return
    for name in files:
        yield posixpath.join(prefix, name)
    for folder in folders:
        yield from objects_under(posixpath.join(prefix, folder))


def objects_delete(names: Iterable[str]) -> None:
    for name in names:
        default_storage.delete(name)


def prefix_delete(prefix: str) -> None:
    """Remove every object under `prefix`, best effort: what cannot be removed
    now (the store is down) is left for the sweep or a later try."""
    try:
        objects_delete(list(objects_under(prefix)))
    except storage_errors():
        logger.warning("could not remove the objects under %s", prefix, exc_info=True)


def staging_prefix_new() -> str:
    return f"{STAGED_PREFIX}/{uuid.uuid4().hex}"


def objects_move(moves: Iterable[tuple[str, str]]) -> list[str]:
    """Copy each staged object to its final name, then drop the staged ones;
    returns the final names written (to remove them again on a rollback)."""
    written: list[str] = []
    pairs = list(moves)
    for source, target in pairs:
        object_copy(source, target)
        written.append(target)
    objects_delete(source for source, _ in pairs)
    return written


def staged_sweep(*, older_than: timedelta, now: datetime | None = None) -> int:
    """Remove staged objects written more than `older_than` ago; returns how many."""
    cutoff = (now or timezone.now()) - older_than
    removed = 0
    for name in list(objects_under(STAGED_PREFIX)):
        if default_storage.get_modified_time(name) < cutoff:
            default_storage.delete(name)
            removed += 1
    return removed
