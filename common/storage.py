"""The artifact store, through Django's storage API only (`default_storage`):
the local file system (MEDIA_ROOT) or an S3-compatible bucket, so that web,
judge and GPU workers on different hosts share it. No code path asks the
store for a local file path.

Uploads are written under `STAGED_PREFIX` first and moved to their final
names only as the last step of the transaction that writes their rows; a
crash before that leaves staged objects no row points at, which
`manage.py storage_sweep` removes once they are a day old.
"""

import contextlib
import logging
import os
import posixpath
import sys
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO, TypeVar

from django.conf import settings
from django.core.files import File
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.utils import timezone

from .errors import ApplicationError

logger = logging.getLogger(__name__)
T = TypeVar("T")

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


# Up to this size an object goes to S3 in one PutObject (the storage's own
# upload starts a transfer manager for each; above it, multipart matters).
S3_PUT_MAX_BYTES = 8 * 1024 * 1024


def object_save(name: str, content: bytes | IO[bytes]) -> None:
    """Write one object under exactly `name` (replacing one already there)."""
    if _is_s3() and _size(content) <= S3_PUT_MAX_BYTES:
        _s3_put(name, content)
        return
    wrapped = ContentFile(content) if isinstance(content, bytes) else File(content)
    saved = default_storage.save(name, wrapped)
    if saved != name:
        raise StorageUnavailable(f"the store kept {name!r} as {saved!r}")


def _size(content: bytes | IO[bytes]) -> int:
    if isinstance(content, bytes):
        return len(content)
    try:
        return os.fstat(content.fileno()).st_size - content.tell()
    except (AttributeError, OSError, ValueError):  # not a file on disk
        return S3_PUT_MAX_BYTES + 1


def _s3_put(name: str, content: bytes | IO[bytes]) -> None:
    """One PutObject with the parameters the storage's own upload would send
    (type, encoding, `AWS_S3_OBJECT_PARAMETERS`), on the bucket's shared client."""
    from storages.utils import clean_name

    storage = default_storage
    key = storage._normalize_name(clean_name(name))  # type: ignore[attr-defined]
    parameters = storage._get_write_parameters(key, content)  # type: ignore[attr-defined]
    storage.bucket.meta.client.put_object(  # type: ignore[attr-defined]
        Bucket=storage.bucket_name,  # type: ignore[attr-defined]
        Key=key,
        Body=content,
        **parameters,
    )


def object_read(name: str | None, *, limit: int | None = None) -> bytes:
    """An object's bytes (its first `limit` bytes)."""
    if not name:
        raise FileNotFoundError("no object named")
    with default_storage.open(name, "rb") as handle:
        data: bytes = handle.read() if limit is None else handle.read(limit)
    return data


def object_copy(source: str, target: str) -> None:
    """Copy one object; inside an S3 bucket the server copies it (type and
    all), so the bytes do not travel twice."""
    if _is_s3():
        from storages.utils import clean_name

        storage = default_storage
        source_key, target_key = (
            storage._normalize_name(clean_name(name))  # type: ignore[attr-defined]
            for name in (source, target)
        )
        # The bucket's client, which the storage's own uploads share across
        # threads (a client is thread-safe; a resource of its own per thread
        # would cost each thread half a second to build).
        storage.bucket.meta.client.copy_object(  # type: ignore[attr-defined]
            Bucket=storage.bucket_name,  # type: ignore[attr-defined]
            Key=target_key,
            CopySource={"Bucket": storage.bucket_name, "Key": source_key},  # type: ignore[attr-defined]
        )
        return
    with default_storage.open(source, "rb") as handle:
        object_save(target, handle)


def _is_s3() -> bool:
    # A store in use has its module loaded: the disk's never loads boto3 here.
    if "storages.backends.s3" not in sys.modules:
        return False
    # An import, not the module's attribute: another thread may be loading it.
    from storages.backends.s3 import S3Storage

    return isinstance(default_storage, S3Storage)


_executor: ThreadPoolExecutor | None = None
_executor_key: tuple[int, int] = (0, 0)  # (process, threads) it was made for
_executor_lock = threading.Lock()


def _threads() -> ThreadPoolExecutor:
    """The process's threads for object requests, kept from one intake to the next."""
    global _executor, _executor_key
    key = (os.getpid(), settings.STORAGE_THREADS)
    with _executor_lock:
        if _executor is None or _executor_key != key:
            if _executor is not None and _executor_key[0] == key[0]:
                _executor.shutdown(wait=False)
            _executor = ThreadPoolExecutor(max_workers=key[1], thread_name_prefix="storage")
            _executor_key = key
        return _executor


def objects_each(
    function: Callable[[T], object], items: Iterable[T]
) -> tuple[list[T], BaseException | None]:
    """`function(item)` for every item, `STORAGE_THREADS` at a time (an object
    store answers each request after a round trip; a disk does not mind).
    Returns the items done and the first error, once every request in flight
    has ended, so that the caller knows what to undo."""
    pending = list(items)
    if settings.STORAGE_THREADS <= 1 or len(pending) <= 1:
        done: list[T] = []
        for item in pending:
            try:
                function(item)
            except Exception as exc:
                return done, exc
            done.append(item)
        return done, None
    if _is_s3():
        # Built here, once: threads that all found no bucket yet would each
        # build an S3 resource of their own (half a second apiece).
        default_storage.bucket  # type: ignore[attr-defined]  # noqa: B018 - built and kept
    futures = {_threads().submit(function, item): item for item in pending}
    wait(futures)
    errors = [future.exception() for future in futures if future.exception() is not None]
    done = [item for future, item in futures.items() if future.exception() is None]
    return done, (errors[0] if errors else None)


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


S3_DELETE_BATCH = 1000  # the most keys one S3 DeleteObjects request takes


def objects_delete(names: Iterable[str]) -> None:
    pending = list(names)
    if _is_s3() and len(pending) > 1:
        # One request per thousand objects rather than one each.
        for start in range(0, len(pending), S3_DELETE_BATCH):
            _s3_delete(pending[start : start + S3_DELETE_BATCH])
        return
    _done, error = objects_each(default_storage.delete, pending)
    if error is not None:
        raise error


def _s3_delete(names: list[str]) -> None:
    from storages.utils import clean_name

    storage = default_storage
    keys = [storage._normalize_name(clean_name(name)) for name in names]  # type: ignore[attr-defined]
    answer = storage.bucket.meta.client.delete_objects(  # type: ignore[attr-defined]
        Bucket=storage.bucket_name,  # type: ignore[attr-defined]
        Delete={"Objects": [{"Key": key} for key in keys], "Quiet": True},
    )
    if answer.get("Errors"):
        first = answer["Errors"][0]
        raise OSError(
            f"the store kept {len(answer['Errors'])} of {len(keys)} objects it was asked to "
            f"remove ({first.get('Key')}: {first.get('Code')} {first.get('Message')})"
        )


def prefix_delete(prefix: str) -> None:
    """Remove every object under `prefix`, best effort: what cannot be removed
    now (the store is down) is left for the sweep or a later try."""
    try:
        objects_delete(list(objects_under(prefix)))
    except storage_errors():
        logger.warning("could not remove the objects under %s", prefix, exc_info=True)
    empty_folders_remove(prefix)


def empty_folders_remove(prefix: str) -> None:
    """On a disk, remove the folders left empty under `prefix` (and `prefix`
    itself): deleting a file keeps its folder, and every upload would leave
    `staged/<uuid>/run/` behind. An object store has no folders."""
    if _is_s3():
        return
    try:
        root = Path(default_storage.path(prefix))
    except NotImplementedError:  # a storage without local paths
        return
    if not root.is_dir():
        return
    for folder in sorted((p for p in root.rglob("*") if p.is_dir()), reverse=True):
        with contextlib.suppress(OSError):  # not empty: a file arrived meanwhile
            folder.rmdir()
    with contextlib.suppress(OSError):
        root.rmdir()


def staging_prefix_new() -> str:
    return f"{STAGED_PREFIX}/{uuid.uuid4().hex}"


def objects_move(moves: Iterable[tuple[str, str]], *, written: list[str]) -> None:
    """Copy each staged object to its final name, then drop the staged ones;
    adds each final name written to `written` (to remove them again on a
    rollback), also when a copy fails and its error is raised."""
    pairs = list(moves)
    copied, error = objects_each(lambda pair: object_copy(*pair), pairs)
    written.extend(target for _, target in copied)
    if error is not None:
        raise error
    objects_delete(source for source, _ in pairs)


def staged_sweep(*, older_than: timedelta, now: datetime | None = None) -> int:
    """Remove staged objects written more than `older_than` ago; returns how many."""
    cutoff = (now or timezone.now()) - older_than
    removed = 0
    for name in list(objects_under(STAGED_PREFIX)):
        if default_storage.get_modified_time(name) < cutoff:
            default_storage.delete(name)
            removed += 1
    return removed
