"""A real HTTP server on loopback that speaks the OpenAI chat-completions
protocol, scripted per test: litellm calls it through a judge's `api_base`
exactly as it would call a provider or a self-hosted vLLM.

    server.script(answer(text), error(429), answer(text, delay=2.0), ...)

Each request takes the next scripted behaviour; when the script is empty the
`default` behaviour (a function of the request body, or a fixed behaviour) is
used. Every request is recorded with its JSON body and headers.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Behaviour:
    status: int = 200
    content: str = ""
    delay: float = 0.0
    message: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    prompt_tokens: int = 1200
    completion_tokens: int = 300


def answer(content: str, *, delay: float = 0.0) -> Behaviour:
    return Behaviour(content=content, delay=delay)


def error(status: int, message: str = "", *, delay: float = 0.0, headers=None) -> Behaviour:
    return Behaviour(
        status=status, message=message or f"error {status}", delay=delay, headers=headers or {}
    )


@dataclass
class RecordedRequest:
    path: str
    body: dict
    headers: dict[str, str]
    at: float

    @property
    def model(self) -> str:
        return self.body.get("model", "")

    @property
    def messages(self) -> list[dict]:
        return self.body.get("messages", [])


class _Server(ThreadingHTTPServer):
    # Many judge threads connect at once: the default backlog of 5 would refuse some.
    request_queue_size = 256
    daemon_threads = True


class FakeLLMServer:
    def __init__(self, default: Behaviour | Callable[[dict], Behaviour] | None = None):
        self._script: deque[Behaviour] = deque()
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self.default = default or error(500, "the test scripted no answer")
        self.requests: list[RecordedRequest] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # One segment per response: no 40 ms Nagle/delayed-ACK stall per call.
            disable_nagle_algorithm = True

            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = {}
                behaviour = fake._next(
                    body, self.path, {k.lower(): v for k, v in self.headers.items()}
                )
                if behaviour.delay and fake._closing.wait(behaviour.delay):
                    return
                if behaviour.status == 200:
                    payload = {
                        "id": f"chatcmpl-{len(fake.requests)}",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": body.get("model", "test"),
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": behaviour.content},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {
                            "prompt_tokens": behaviour.prompt_tokens,
                            "completion_tokens": behaviour.completion_tokens,
                            "total_tokens": behaviour.prompt_tokens + behaviour.completion_tokens,
                        },
                    }
                else:
                    payload = {"error": {"message": behaviour.message, "type": "test_error"}}
                data = json.dumps(payload).encode()
                try:
                    self.send_response(behaviour.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in behaviour.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        """The `api_base` a judge uses to reach this server."""
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, *behaviours: Behaviour) -> None:
        with self._lock:
            self._script.extend(behaviours)

    def _next(self, body: dict, path: str, headers: dict) -> Behaviour:
        with self._lock:
            self.requests.append(RecordedRequest(path, body, headers, time.monotonic()))
            if self._script:
                return self._script.popleft()
        return self.default(body) if callable(self.default) else self.default

    def wait_for_requests(self, n: int, timeout: float = 30.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.requests) >= n:
                return True
            time.sleep(0.05)
        return False

    def close(self) -> None:
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()
