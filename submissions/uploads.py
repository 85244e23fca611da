"""Uploads go straight to a temporary file on disk, never whole into memory,
and are hashed while they arrive so the intake need not read them again.
An upload larger than INTAKE_MAX_ARCHIVE_BYTES is cut off while it is being
received (the Content-Length header is not trusted) and reported on the
request, so the form and the API can say why the file is missing."""

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from django.conf import settings
from django.core.cache import cache
from django.core.files.uploadhandler import SkipFile, TemporaryFileUploadHandler

from common.errors import ApplicationError

from .archives import human_size

# Set on the request: {form field: why its upload was cut off}.
REFUSALS_ATTRIBUTE = "upload_refusals"
# Set on the uploaded file: its SHA-256, hex.
SHA256_ATTRIBUTE = "sha256"


class ArchiveUploadHandler(TemporaryFileUploadHandler):
    def new_file(self, *args, **kwargs):
        super().new_file(*args, **kwargs)
        self.hasher = hashlib.sha256()
        self.received = 0

    def receive_data_chunk(self, raw_data, start):
        self.received += len(raw_data)
        limit = settings.INTAKE_MAX_ARCHIVE_BYTES
        if self.received > limit:
            refused = getattr(self.request, REFUSALS_ATTRIBUTE, {})
            refused[self.field_name] = (
                f"the file is larger than {human_size(limit)}; that is the limit"
            )
            setattr(self.request, REFUSALS_ATTRIBUTE, refused)
            self.file.close()
            raise SkipFile()
        self.hasher.update(raw_data)
        return super().receive_data_chunk(raw_data, start)

    def file_complete(self, file_size):
        uploaded = super().file_complete(file_size)
        setattr(uploaded, SHA256_ATTRIBUTE, self.hasher.hexdigest())
        return uploaded


def upload_refusal(request, field_name: str) -> str | None:
    """Why the upload in `field_name` was cut off, if it was."""
    request = getattr(request, "_request", request)  # DRF wraps Django's request
    return getattr(request, "upload_refusals", {}).get(field_name)


class UploadsBusy(ApplicationError):
    """The account already has as many intakes running as it may; answered 429
    with `Retry-After` (`retry_after` seconds)."""

    status_code = 429
    default_code = "uploads_busy"

    def __init__(self, running: int):
        self.retry_after = UPLOAD_RETRY_AFTER_SECONDS
        super().__init__(
            f"{running} of your uploads are being processed; at most "
            f"{settings.INTAKE_MAX_CONCURRENT_UPLOADS} at once. Try again when one is done.",
            field="archive",
        )


UPLOAD_RETRY_AFTER_SECONDS = 10
# A slot a killed web worker never gave back lapses after this long (the count is
# extended while uploads keep arriving): more than an intake's whole budget.
_SLOT_SECONDS = 600


@contextmanager
def upload_slot(*, user_id: int) -> Iterator[None]:
    """One of the account's `INTAKE_MAX_CONCURRENT_UPLOADS` intakes at once (issue
    40: one account's parallel uploads held every web worker); UploadsBusy past
    it. Counted in the cache (Redis in production: across workers and hosts) and
    given back when the intake ends, however it ends."""
    key = f"intake:running:{user_id}"
    cache.add(key, 0, timeout=_SLOT_SECONDS)
    try:
        running = cache.incr(key)
    except ValueError:  # lapsed between the two calls
        cache.add(key, 1, timeout=_SLOT_SECONDS)
        running = 1
    cache.touch(key, _SLOT_SECONDS)
    try:
        if running > settings.INTAKE_MAX_CONCURRENT_UPLOADS:
            raise UploadsBusy(running - 1)
        yield
    finally:
        with suppress(ValueError):  # lapsed meanwhile: nothing left to give back
            cache.decr(key)
