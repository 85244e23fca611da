"""Uploads go straight to a temporary file on disk, never whole into memory,
and are hashed while they arrive so the intake need not read them again.
An upload larger than INTAKE_MAX_ARCHIVE_BYTES is cut off while it is being
received (the Content-Length header is not trusted) and reported on the
request, so the form and the API can say why the file is missing."""

import hashlib

from django.conf import settings
from django.core.files.uploadhandler import SkipFile, TemporaryFileUploadHandler

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
