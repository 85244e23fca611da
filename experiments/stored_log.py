"""A run's live log, kept in the artifact store while the run goes.

The sandbox's pump writes to a local file in the worker's own scratch folder;
every `EXPERIMENT_LOG_PUBLISH_SECONDS` (on a flush) and at the end the whole
file is written again to the run's log object, so the run's page, which reads
through the store, follows a run on a GPU host that shares no disk with it.
The log is capped (`EXPERIMENT_LOG_MAX_BYTES`), so each rewrite is bounded.
"""

import logging
import threading
import time
from pathlib import Path
from types import TracebackType

from django.conf import settings

from common.storage import object_save, storage_errors

logger = logging.getLogger(__name__)


class StoredLog:
    """A binary file-like the sandbox writes the log to (write, flush, close)."""

    def __init__(self, *, name: str, local: Path) -> None:
        self.name = name
        self._local = local
        self._handle = local.open("wb")
        self._published_at = 0.0
        self._dirty = False
        # The pump writes from its thread, the timer publishes from its own.
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    def write(self, data: bytes) -> int:
        with self._lock:
            self._dirty = True
            return self._handle.write(data)

    def flush(self) -> None:
        with self._lock:
            self._handle.flush()
            wait = settings.EXPERIMENT_LOG_PUBLISH_SECONDS - (time.monotonic() - self._published_at)
            if wait <= 0:
                self._publish(final=False)
            elif self._timer is None:
                # Output that came within the interval is published when it
                # ends, not at the next output: a run may then print nothing
                # for an hour.
                self._timer = threading.Timer(wait, self._publish_due)
                self._timer.daemon = True
                self._timer.start()

    def _publish_due(self) -> None:
        with self._lock:
            self._timer = None
            if not self._handle.closed:
                self._handle.flush()
                self._publish(final=False)

    def close(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if self._handle.closed:
                return
            self._handle.close()
            self._publish(final=True)

    def _publish(self, *, final: bool) -> None:
        if not self._dirty and not final:
            return
        self._published_at = time.monotonic()
        try:
            with self._local.open("rb") as handle:
                object_save(self.name, handle)
            self._dirty = False
        except storage_errors():
            if final:
                raise
            # The next flush tries again; the run goes on meanwhile.
            logger.warning("could not publish the log %s", self.name, exc_info=True)

    def __enter__(self) -> "StoredLog":
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
