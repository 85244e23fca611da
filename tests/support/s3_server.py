"""A real S3-compatible server on loopback for the suite: moto's standalone
server, spoken to over HTTP by boto3 exactly as a deployment speaks to MinIO.

`S3Server` starts moto on a free loopback port and creates the bucket;
`storage_cut` puts a TCP relay in front of it that can be cut (every
connection closed, new ones refused) and restored, which is how the fault
tests stop the storage server mid-upload without losing what it holds.

Used by tests/conftest.py (the session server when the suite runs with
STORAGE_BACKEND=s3, and the `s3_storage` fixture) and by perf scripts.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tests.support.waiting import port_listening, wait_until

if TYPE_CHECKING:
    from moto.server import ThreadedMotoServer

BUCKET = "mlrbench-test"
ACCESS_KEY = "testing-access-key"
SECRET_KEY = "testing-secret-key"
REGION = "us-east-1"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_listening(port: int, *, seconds: float = 20.0) -> None:
    wait_until(
        lambda: port_listening(port),
        timeout=seconds,
        interval=0.05,
        message=f"the S3 server to listen on 127.0.0.1:{port}",
    )


class S3Server:
    """moto's threaded standalone server on 127.0.0.1, with one bucket."""

    def __init__(self, *, bucket: str = BUCKET, port: int | None = None) -> None:
        self.bucket = bucket
        self.port = port or _free_port()
        self._server: ThreadedMotoServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self, *, url: str | None = None) -> dict[str, str]:
        """The environment a site process needs to use this server."""
        return {
            "STORAGE_BACKEND": "s3",
            "AWS_S3_ENDPOINT_URL": url or self.url,
            "AWS_STORAGE_BUCKET_NAME": self.bucket,
            "AWS_S3_REGION_NAME": REGION,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_S3_ADDRESSING_STYLE": "path",
        }

    def client(self, *, url: str | None = None):
        import boto3
        from botocore.config import Config

        return boto3.client(
            "s3",
            endpoint_url=url or self.url,
            region_name=REGION,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 2}),
        )

    def start(self) -> S3Server:
        from moto.server import ThreadedMotoServer

        # One access-log line per request would bury the test output.
        logging.getLogger("werkzeug").setLevel(logging.WARNING)

        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)
        self._server.start()
        _wait_listening(self.port)
        self.client().create_bucket(Bucket=self.bucket)
        return self

    def stop(self) -> None:
        if self._server is not None:
            wsgi = self._server._server
            self._server.stop()
            # stop() leaves the socket bound; close it so the port is free again.
            if wsgi is not None:
                wsgi.server_close()
            self._server = None

    def keys(self, prefix: str = "") -> list[str]:
        """Every object's key under `prefix`, sorted."""
        paginator = self.client().get_paginator("list_objects_v2")
        keys: list[str] = []
        for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix):
            keys.extend(item["Key"] for item in page.get("Contents", []))
        return sorted(keys)

    def __enter__(self) -> S3Server:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


@dataclass
class StorageCut:
    """A TCP relay 127.0.0.1:port -> the S3 server that can be cut.

    `cut_after_bytes` cuts it by itself once that many bytes have gone from
    the site to the server (a point in the middle of an upload); `cut()` and
    `restore()` do it by hand. Cut means every open connection is closed and
    new ones are refused, as when the server process dies.
    """

    upstream_port: int
    cut_after_bytes: int | None = None
    port: int = field(default_factory=_free_port)
    sent_bytes: int = 0
    _listener: socket.socket | None = None
    _connections: list[socket.socket] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _threads: list[threading.Thread] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def is_cut(self) -> bool:
        return self._listener is None

    def restore(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        thread = threading.Thread(target=self._accept, args=(listener,), daemon=True)
        thread.start()
        self._threads.append(thread)

    def arm(self, cut_after_bytes: int) -> None:
        """Cut by itself once `cut_after_bytes` more bytes went to the server."""
        with self._lock:
            self.sent_bytes = 0
            self.cut_after_bytes = cut_after_bytes

    def cut(self) -> None:
        with self._lock:
            self.cut_after_bytes = None
            listener, self._listener = self._listener, None
            connections, self._connections = self._connections, []
        if listener is not None:
            # shutdown() wakes the thread blocked in accept().
            for action in (lambda: listener.shutdown(socket.SHUT_RDWR), listener.close):
                with contextlib.suppress(OSError):
                    action()
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            with self._lock:
                if self._listener is not listener:
                    client.close()
                    upstream.close()
                    return
                self._connections += [client, upstream]
            for source, target, counted in ((client, upstream, True), (upstream, client, False)):
                threading.Thread(
                    target=self._pump, args=(source, target, counted), daemon=True
                ).start()

    def _pump(self, source: socket.socket, target: socket.socket, counted: bool) -> None:
        while True:
            try:
                data = source.recv(65536)
            except OSError:
                return
            if not data:
                with contextlib.suppress(OSError):
                    target.shutdown(socket.SHUT_WR)
                return
            if counted and self.cut_after_bytes is not None:
                with self._lock:
                    self.sent_bytes += len(data)
                    over = self.sent_bytes >= self.cut_after_bytes
                if over:
                    self.cut()
                    return
            try:
                target.sendall(data)
            except OSError:
                return

    def __enter__(self) -> StorageCut:
        self.restore()
        return self

    def __exit__(self, *exc) -> None:
        self.cut()
