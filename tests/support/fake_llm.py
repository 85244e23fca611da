"""A real HTTP server on loopback that speaks the OpenAI chat-completions
protocol, scripted per test: litellm calls it through a judge's `api_base`
exactly as it would call a provider or a self-hosted vLLM.

    server.script(answer(text), error(429), answer(text, delay=2.0), ...)

Each request takes the next scripted behaviour; when the script is empty the
`default` behaviour (a function of the request body, or a fixed behaviour) is
used. Every request is recorded with its JSON body and headers.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus


@dataclass
class Behaviour:
    status: int = 200
    content: str = ""
    delay: float = 0.0
    message: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    prompt_tokens: int = 1200
    completion_tokens: int = 300
    # Function calls of the answer (OpenAI tool calling): (name, arguments as JSON text).
    tool_calls: list[tuple[str, str]] = field(default_factory=list)


def answer(content: str, *, delay: float = 0.0) -> Behaviour:
    return Behaviour(content=content, delay=delay)


def tool_call(name: str, arguments: dict | str, *, content: str = "", delay: float = 0.0):
    """An answer that calls one tool; `arguments` as a dict, or raw (invalid) JSON text."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return Behaviour(content=content, delay=delay, tool_calls=[(name, text)])


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


def _message(behaviour: Behaviour, request_number: int) -> dict:
    message: dict = {"role": "assistant", "content": behaviour.content}
    if behaviour.tool_calls:
        message["tool_calls"] = [
            {
                "id": f"call_{request_number}_{index}",
                "type": "function",
                "function": {"name": name, "arguments": arguments},
            }
            for index, (name, arguments) in enumerate(behaviour.tool_calls)
        ]
    return message


class FakeLLMServer:
    """One event loop on a thread of its own serves every connection (HTTP/1.1,
    keep-alive), so that dozens of judge threads waiting on answers cost the
    process that runs the server no thread each (perf/judge_throughput.py runs
    it beside the workers it measures)."""

    def __init__(self, default: Behaviour | Callable[[dict], Behaviour] | None = None):
        self._script: deque[Behaviour] = deque()
        self._lock = threading.Lock()
        self.default = default or error(500, "the test scripted no answer")
        self.requests: list[RecordedRequest] = []
        # Requests received and not yet answered, and the most there were at once
        # (what a provider's concurrency limit counts); the loop's thread alone writes them.
        self.in_flight = 0
        self.most_in_flight = 0
        # A provider's rate limit (`rate_limit`): requests past `limit` in any window
        # of `window` seconds are answered 429. The server counts every request it
        # receives, and keeps the most it saw in any window.
        self._limit: int | None = None
        self._window = 60.0
        self._received: deque[float] = deque()
        self._admitted: deque[float] = deque()
        self.most_in_window = 0
        self.refused = 0
        self._loop = asyncio.new_event_loop()
        self._handlers: set[asyncio.Task] = set()
        started = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(started,), daemon=True)
        self._thread.start()
        started.wait()

    def _serve(self, started: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        # Many judge threads connect at once: the default backlog would refuse some.
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._connection, "127.0.0.1", 0, backlog=256)
        )
        started.set()
        self._loop.run_forever()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        handler = asyncio.current_task()
        assert handler is not None  # a connection is always served by a task
        self._handlers.add(handler)
        sock = writer.get_extra_info("socket")
        if sock is not None:  # one segment per response: no Nagle/delayed-ACK stall
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while await self._exchange(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass  # the client gave up (a timeout test) or closed its connection
        except asyncio.CancelledError:
            pass  # the server is closing: answers still waiting on their delay give up
        finally:
            self._handlers.discard(handler)
            writer.close()

    async def _exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """One request and its answer; False when the connection is over."""
        head = await reader.readuntil(b"\r\n\r\n")
        request_line, *header_lines = head.decode("latin-1").split("\r\n")
        if not request_line:
            return False
        path = request_line.split(" ")[1] if " " in request_line else "/"
        headers = {}
        for line in header_lines:
            if ":" in line:
                name, value = line.split(":", 1)
                headers[name.strip().lower()] = value.strip()
        raw = await reader.readexactly(int(headers.get("content-length") or 0))
        # The answer goes out `delay` after the request arrived, whatever this server
        # spent on it meanwhile: a perf run measures the client against that delay.
        arrived = self._loop.time()
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            return await self._answer(raw, path, headers, writer, arrived)
        finally:
            self.in_flight -= 1

    async def _answer(self, raw: bytes, path: str, headers: dict, writer, arrived: float) -> bool:
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {}
        behaviour = self._next(body, path, headers)
        if behaviour.status == 200:
            payload = {
                "id": f"chatcmpl-{len(self.requests)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "test"),
                "choices": [
                    {
                        "index": 0,
                        "message": _message(behaviour, len(self.requests)),
                        "finish_reason": "tool_calls" if behaviour.tool_calls else "stop",
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
        reason = HTTPStatus(behaviour.status).phrase
        lines = [
            f"HTTP/1.1 {behaviour.status} {reason}",
            "Content-Type: application/json",
            f"Content-Length: {len(data)}",
            *(f"{name}: {value}" for name, value in behaviour.headers.items()),
        ]
        response = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + data
        if behaviour.delay:
            await asyncio.sleep(max(0.0, arrived + behaviour.delay - self._loop.time()))
        writer.write(response)
        await writer.drain()
        return headers.get("connection", "").lower() != "close"

    @property
    def port(self) -> int:
        return self._server.sockets[0].getsockname()[1]

    @property
    def url(self) -> str:
        """The `api_base` a judge uses to reach this server."""
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, *behaviours: Behaviour) -> None:
        with self._lock:
            self._script.extend(behaviours)

    def rate_limit(self, limit: int | None, window: float = 60.0) -> None:
        """At most `limit` requests in any `window` seconds (None: no limit); the
        counts start again."""
        with self._lock:
            self._limit, self._window = limit, window
            self._received.clear()
            self._admitted.clear()
            self.most_in_window = self.refused = 0

    def _admit(self, now: float) -> bool:
        # Sliding windows, as judging/ratelimit.py keeps them: a request counts for
        # `window` seconds after it arrived.
        for times in (self._received, self._admitted):
            while times and times[0] <= now - self._window:
                times.popleft()
        self._received.append(now)
        self.most_in_window = max(self.most_in_window, len(self._received))
        if self._limit is not None and len(self._admitted) >= self._limit:
            self.refused += 1
            return False
        self._admitted.append(now)
        return True

    def _next(self, body: dict, path: str, headers: dict) -> Behaviour:
        with self._lock:
            now = time.monotonic()
            self.requests.append(RecordedRequest(path, body, headers, now))
            if self._limit is not None and not self._admit(now):
                return error(429, "rate limit reached")
            if self._script:
                return self._script.popleft()
        return self.default(body) if callable(self.default) else self.default

    def wait_for_requests(self, n: int, timeout: float = 120.0) -> bool:
        """True once `n` requests have come, False after `timeout` seconds. Generous:
        a fresh worker process imports litellm before its first call, slowly on a
        loaded machine (a parallel run's other workers)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.requests) >= n:
                return True
            time.sleep(0.05)
        return False

    def close(self) -> None:
        async def stop() -> None:
            self._server.close()
            for handler in list(self._handlers):
                handler.cancel()
            await self._server.wait_closed()

        if self._loop.is_closed():
            return
        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()
