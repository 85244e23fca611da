"""A few JSON calls and one streamed multipart upload, with urllib alone."""

# S310: every address starts with the site's URL, checked to be http(s) in Site.
# ruff: noqa: S310

from __future__ import annotations

import contextlib
import json
import os
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any
from urllib.error import HTTPError, URLError
from urllib.parse import urlencode
from urllib.request import Request, urlopen

DEFAULT_URL = "http://127.0.0.1:8000"
TIMEOUT_SECONDS = 60.0


class ClientError(Exception):
    """Something the user should read; `status` is the HTTP status (0: no answer)."""

    def __init__(self, message: str, *, status: int = 0, body: Any = None):
        super().__init__(message)
        self.status = status
        self.body = body


@dataclass(frozen=True)
class Site:
    url: str
    token: str

    @classmethod
    def from_environment(cls) -> Site:
        url = os.environ.get("MLRBENCH_URL", DEFAULT_URL).rstrip("/")
        # Only the web: urllib would also open file: and ftp: addresses.
        if not url.startswith(("http://", "https://")):
            raise ClientError(f"MLRBENCH_URL must start with http:// or https://, not {url!r}")
        return cls(url=url, token=os.environ.get("MLRBENCH_TOKEN", ""))

    def headers(self, *, auth: bool) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": "mlrbench-client"}
        if auth:
            if not self.token:
                raise ClientError(
                    "set MLRBENCH_TOKEN to an API token (made on the site's /account/)"
                )
            headers["Authorization"] = f"Token {self.token}"
        return headers


def _error_message(status: int, body: Any) -> str:
    # The site's one error shape: {"errors": [{"field", "code", "message"}]}.
    if isinstance(body, dict) and isinstance(body.get("errors"), list):
        parts = [
            (f"{e.get('field')}: " if e.get("field") else "") + str(e.get("message", ""))
            for e in body["errors"]
            if isinstance(e, dict)
        ]
        if parts:
            return "; ".join(parts)
    return f"HTTP {status}"


def _send(request: Request) -> tuple[int, bytes, str]:
    try:
        with urlopen(request, timeout=TIMEOUT_SECONDS) as response:
            return response.status, response.read(), response.headers.get("Content-Type", "")
    except HTTPError as exc:
        return exc.code, exc.read(), exc.headers.get("Content-Type", "")
    except URLError as exc:
        raise ClientError(f"cannot reach {request.full_url}: {exc.reason}") from None


def _decode(status: int, raw: bytes, content_type: str) -> Any:
    body: Any = raw.decode("utf-8", "replace")
    if "json" in content_type:
        with contextlib.suppress(ValueError):
            body = json.loads(raw)
    if status >= 400:
        raise ClientError(_error_message(status, body), status=status, body=body)
    return body


def get(
    site: Site,
    path: str,
    params: dict[str, str] | None = None,
    *,
    auth: bool = False,
    accept: str = "application/json",
) -> Any:
    query = f"?{urlencode(params)}" if params else ""
    headers = {**site.headers(auth=auth or bool(site.token)), "Accept": accept}
    request = Request(f"{site.url}{path}{query}", headers=headers)
    return _decode(*_send(request))


def download(site: Site, path: str, dest: Path) -> int:
    """Stream `path` into `dest`; returns the bytes written."""
    headers = {**site.headers(auth=bool(site.token)), "Accept": "*/*"}
    request = Request(f"{site.url}{path}", headers=headers)
    written = 0
    try:
        with urlopen(request, timeout=TIMEOUT_SECONDS) as response, dest.open("wb") as out:
            while chunk := response.read(1024 * 1024):
                out.write(chunk)
                written += len(chunk)
    except HTTPError as exc:
        _decode(exc.code, exc.read(), exc.headers.get("Content-Type", ""))
    except URLError as exc:
        raise ClientError(f"cannot reach {site.url}: {exc.reason}") from None
    return written


class _MultipartBody:
    """Form fields, then one file, read in blocks by http.client, with a
    callback after each block (the progress bar)."""

    def __init__(
        self,
        fields: dict[str, str],
        file_field: str,
        path: Path,
        progress: Callable[[int, int], None],
    ):
        self.boundary = uuid.uuid4().hex
        head = b"".join(
            f'--{self.boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'
            f"{value}\r\n".encode()
            for name, value in fields.items()
        )
        head += (
            f'--{self.boundary}\r\nContent-Disposition: form-data; name="{file_field}"; '
            f'filename="{path.name}"\r\nContent-Type: application/octet-stream\r\n\r\n'
        ).encode()
        self.parts: list[bytes | IO[bytes]] = [
            head,
            path.open("rb"),
            f"\r\n--{self.boundary}--\r\n".encode(),
        ]
        self.length = len(head) + path.stat().st_size + len(self.parts[2])  # type: ignore[arg-type]
        self.sent = 0
        self.progress = progress

    def read(self, size: int = -1) -> bytes:
        while self.parts:
            part = self.parts[0]
            chunk = (
                part[: size if size > 0 else None] if isinstance(part, bytes) else part.read(size)
            )
            if isinstance(part, bytes):
                self.parts[0] = part[len(chunk) :]
            if chunk:
                self.sent += len(chunk)
                self.progress(self.sent, self.length)
                return chunk
            if not isinstance(part, bytes):
                part.close()
            self.parts.pop(0)
        return b""


def upload(
    site: Site,
    path: str,
    fields: dict[str, str],
    file_path: Path,
    progress: Callable[[int, int], None],
) -> Any:
    body = _MultipartBody(fields, "archive", file_path, progress)
    headers = {
        **site.headers(auth=True),
        "Content-Type": f"multipart/form-data; boundary={body.boundary}",
        "Content-Length": str(body.length),
    }
    request = Request(f"{site.url}{path}", data=body, headers=headers, method="POST")
    return _decode(*_send(request))


def progress_bar(sent: int, total: int) -> None:
    width = 30
    done = int(width * sent / total) if total else width
    sys.stderr.write(
        f"\r  uploading [{'#' * done}{'.' * (width - done)}] {100 * sent // max(total, 1):3d}%"
    )
    if sent >= total:
        sys.stderr.write("\n")
    sys.stderr.flush()
