"""Local HTTP stubs on 127.0.0.1: a LangSmith recorder and an OpenAI-compatible server."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Handler = Callable[[str, str, bytes], tuple[int, dict[str, str], bytes]]


class _QuietServer(ThreadingHTTPServer):
    """A stub server that does not print a client hanging up mid-reply.

    A cancelled or timed-out request (a deadline, a cancelled batch) closes its connection
    while the stub still writes: expected in these tests, not an error of the stub. It
    queues 128 connections (the standard library's backlog is 5): on a busy machine the
    accept loop falls behind, and a refused connection is an attempt the stub never sees.
    """

    request_queue_size = 128

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


@contextmanager
def serve(handle: Handler, *, keep_alive: bool = False) -> Iterator[str]:
    """Serve ``handle(method, path, body) -> (status, headers, body)``; yields the base URL.

    ``keep_alive``: HTTP/1.1 with persistent connections (clients pool them), as real
    providers do; by default each reply closes its connection (HTTP/1.0).
    """

    class _Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1" if keep_alive else "HTTP/1.0"

        def _reply(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            status, headers, payload = handle(self.command, self.path, body)
            self.send_response(status)
            for key, value in {"content-type": "application/json", **headers}.items():
                self.send_header(key, value)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = do_PATCH = _reply

        def log_message(self, *args: Any) -> None:
            pass

    server = _QuietServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


LANGSMITH_INFO = {
    "version": "0.0.0-recorder",
    "instance_flags": {},
    "batch_ingest_config": {
        "size_limit": 100,
        "size_limit_bytes": 20_000_000,
        "scale_up_nthreads_limit": 1,
        "scale_up_qsize_trigger": 1000,
        "scale_down_nempty_trigger": 4,
    },
}
"""What the recorder answers to ``GET /info`` (every batch-ingest key, no zstd)."""


class LangSmithRecorder:
    """Answers ``GET /info`` and records every other request body."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, bytes]] = []
        self._lock = threading.Lock()

    def __call__(self, method: str, path: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
        if method == "GET" and path.startswith("/info"):
            return 200, {}, json.dumps(LANGSMITH_INFO).encode()
        with self._lock:
            self.requests.append((method, path, body))
        return 200, {}, b"{}"

    @property
    def body(self) -> bytes:
        with self._lock:
            return b"\n".join(body for _, _, body in self.requests)


class OpenAIStub:
    """Chat Completions over the simulated world: ``reply(prompt) -> text``.

    Requests with ``response_format`` get the reply (the simulated judge's JSON verdict
    object) as the content; requests with ``tools`` get it as the arguments of a call to
    the first tool.
    The first ``fail_first`` requests get a 429 with ``retry-after-ms: 1``.
    """

    def __init__(self, reply: Callable[[str], str], *, fail_first: int = 0) -> None:
        self.reply = reply
        self.fail_first = fail_first
        self.requests: list[dict[str, Any]] = []
        self.statuses: list[int] = []
        self._lock = threading.Lock()

    def __call__(self, method: str, path: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
        request = json.loads(body or b"{}")
        with self._lock:
            self.requests.append(request)
            throttled = len(self.requests) <= self.fail_first
            self.statuses.append(429 if throttled else 200)
        if throttled:
            error = {"error": {"message": "rate limited", "type": "rate_limit", "code": "429"}}
            return 429, {"retry-after-ms": "1"}, json.dumps(error).encode()
        prompt = "\n".join(str(m.get("content", "")) for m in request.get("messages", []))
        text = self.reply(prompt)
        message: dict[str, Any] = {"role": "assistant", "content": text}
        # A structured request's prompt carries no verdict nonce: the simulated judge then
        # replies with the JSON object, which goes to the content or a tool call.
        if "response_format" in request:
            message["content"] = text
        elif request.get("tools"):  # a required tool call carries the verdict
            arguments = json.loads(text)
            message["content"] = None
            message["tool_calls"] = [
                {
                    "id": f"call-{len(self.requests)}",
                    "type": "function",
                    "function": {
                        "name": request["tools"][0]["function"]["name"],
                        "arguments": json.dumps(arguments),
                    },
                }
            ]
        completion = {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": request.get("model", "stub"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if "tool_calls" in message else "stop",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        return 200, {}, json.dumps(completion).encode()

    @classmethod
    def for_case(cls, case: Any, **kwargs: Any) -> OpenAIStub:
        """A stub answering from ``case``'s simulated world (SIMULATED, offline)."""
        from meclear_integrations.simulation import StandInModel

        return cls(StandInModel.from_case(case).reply, **kwargs)

    def structured_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if "response_format" in r]

    def tool_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r.get("tools")]


def candidate(prompt: str) -> str | None:
    from meclear_integrations.simulation.reader import fenced_block

    return fenced_block("candidate_answer", prompt)
