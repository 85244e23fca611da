"""The storage of every limiter of the site (the `limits` library): Redis at
an address, or this process's memory where there is none. No Django here, so
a bare process (a test's subprocess) can count in the same windows."""

import threading
from typing import cast

from limits.storage import MemoryStorage, Storage, storage_from_string

_storages: dict[tuple[str, str], Storage] = {}
_lock = threading.Lock()


def limits_storage(url: str, *, key_prefix: str) -> Storage:
    """Redis at `url`, or memory for ""; one per address and prefix (the suite
    points REDIS_URL elsewhere per run)."""
    storage = _storages.get((url, key_prefix))
    if storage is None:
        with _lock:
            storage = _storages.get((url, key_prefix))
            if storage is None:
                storage = _storages[(url, key_prefix)] = (
                    cast(Storage, storage_from_string(url, key_prefix=key_prefix))
                    if url
                    else MemoryStorage()
                )
    return storage
