"""The text-reading stand-in served as an OpenAI-compatible Chat Completions endpoint.

It listens on 127.0.0.1 (standard library only; offline; not a real model).

``POST /v1/chat/completions`` answers with the stand-in model in text-reading mode
(:func:`~.text_reader.text_reading_model`) on the concatenated message contents. A request
with ``response_format`` gets a judge's verdict as the JSON object in the content, one with
``tools`` as the arguments of a call to the first tool, any other one the free-text reply.
``usage`` counts about 4 characters per token. ``fail(prompt, n) -> status | None`` injects
HTTP errors (429 and 5xx carry ``retry-after-ms: 1``), for tests of retries and of per-case
failures; ``rewrite(prompt, text) -> text`` replaces free-text replies (tests of unparsable
or empty replies); ``truncate(prompt, n) -> bool`` cuts a reply at half its length with
``finish_reason`` ``length`` (a provider's token limit); ``die_after=N`` drops the
connection of request N + 1 unanswered and stops listening (a server that dies mid-run).
"""

from __future__ import annotations

import atexit
import json
import math
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from meclear_integrations.simulation import StandInModel

from .text_reader import text_reading_model

__all__ = ["ReaderServer", "estimate_tokens", "serve_reader", "shared_reader_url"]

CHARS_PER_TOKEN = 4
"""The stand-in's token count: one token per 4 characters (rounded up)."""

Fail = Callable[[str, int], int | None]
Rewrite = Callable[[str, str], str]
Truncate = Callable[[str, int], bool]


def estimate_tokens(text: str) -> int:
    """ceil(len(text) / 4): the usual rule of thumb for English text.

    Args:
        text: The text.

    Returns:
        The token estimate.
    """
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _prompt(request: dict[str, Any]) -> str:
    parts: list[str] = []
    for message in request.get("messages", []):
        content = message.get("content", "")
        if isinstance(content, list):
            content = "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        parts.append(str(content or ""))
    return "\n".join(parts)


class ReaderServer:
    """Request handler state: the replies, the requests seen and the injected failures.

    Args:
        fail: ``fail(prompt, n) -> status | None`` injects HTTP errors.
        rewrite: ``rewrite(prompt, text) -> text`` replaces the free-text replies.
        model: The stand-in that replies (None: the text-reading mode; a world-mode
            ``StandInModel.from_case(case)`` serves a simulated case).
        truncate: ``truncate(prompt, n) -> bool`` cuts reply ``n`` (``finish_reason``
            ``length``).
        die_after: Answer this many requests, then die (None: never).
    """

    def __init__(
        self,
        *,
        fail: Fail | None = None,
        rewrite: Rewrite | None = None,
        model: StandInModel | None = None,
        truncate: Truncate | None = None,
        die_after: int | None = None,
    ) -> None:
        self.fail = fail
        self.rewrite = rewrite
        self.truncate = truncate
        self.die_after = die_after
        self.dead = threading.Event()
        self.model = model if model is not None else text_reading_model()
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    @property
    def calls(self) -> int:
        """Requests received (failed ones included)."""
        with self._lock:
            return len(self.requests)

    def handle(self, body: bytes) -> tuple[int, dict[str, str], bytes]:
        """Answer one HTTP request body.

        Args:
            body: The JSON request body of a Chat Completions call.

        Returns:
            (HTTP status, extra headers, response body); an injected failure carries an error body.
        """
        request = json.loads(body or b"{}")
        prompt = _prompt(request)
        with self._lock:
            self.requests.append(request)
            number = len(self.requests)
        status = self.fail(prompt, number) if self.fail is not None else None
        if status is not None:
            message = f"injected HTTP {status}"
            error = {"error": {"message": message, "type": "stub", "code": status}}
            headers = {"retry-after-ms": "1"} if status == 429 or status >= 500 else {}
            return status, headers, json.dumps(error).encode()
        return 200, {}, json.dumps(self.completion(request, prompt, number)).encode()

    def completion(self, request: dict[str, Any], prompt: str, number: int) -> dict[str, Any]:
        """The Chat Completions response for one request.

        Args:
            request: The parsed request (``response_format`` and ``tools`` select the reply form).
            prompt: The concatenated message contents.
            number: The request's number (its id).

        Returns:
            The response object, with a ``usage`` of about 4 characters per token.
        """
        answer = self.model.respond(prompt)
        text = answer.text if self.rewrite is None else self.rewrite(prompt, answer.text)
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if answer.verdict is not None and "response_format" in request:
            message["content"] = answer.structured()
        elif answer.verdict is not None and request.get("tools"):
            message["content"] = None
            message["tool_calls"] = [
                {
                    "id": f"call-{number}",
                    "type": "function",
                    "function": {
                        "name": request["tools"][0]["function"]["name"],
                        "arguments": answer.structured(),
                    },
                }
            ]
        finish = "tool_calls" if "tool_calls" in message else "stop"
        if self.truncate is not None and self.truncate(prompt, number):
            if message["content"] is not None:
                message["content"] = message["content"][: len(message["content"]) // 2]
            finish = "length"
        completion_text = message["content"] or (
            message["tool_calls"][0]["function"]["arguments"] if "tool_calls" in message else ""
        )
        prompt_tokens, completion_tokens = estimate_tokens(prompt), estimate_tokens(completion_text)
        return {
            "id": f"chatcmpl-{number}",
            "object": "chat.completion",
            "created": 0,
            "model": request.get("model", "stub"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": finish,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }


def _die(server: ThreadingHTTPServer) -> None:
    """Stop serving and close the listening socket (new connections are refused)."""
    server.shutdown()
    server.server_close()


def _http_server(state: ReaderServer) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            headers: dict[str, str] = {}
            if state.dead.is_set():
                self.close_connection = True
                return
            if state.die_after is not None and state.calls >= state.die_after:
                state.dead.set()  # die: this request unanswered, the socket closed
                self.close_connection = True
                threading.Thread(target=_die, args=(self.server,), daemon=True).start()
                return
            if not self.path.rstrip("/").endswith("/chat/completions"):
                status, payload = 404, b'{"error": {"message": "not found"}}'
            else:
                status, headers, payload = state.handle(body)
            self.send_response(status)
            for key, value in {"content-type": "application/json", **headers}.items():
                self.send_header(key, value)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self) -> None:
            if state.dead.is_set() or not self.path.rstrip("/").endswith("/models"):
                self.send_error(404)
                return
            payload = json.dumps(
                {"object": "list", "data": [{"id": "text-reader", "object": "model"}]}
            ).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    return server


@contextmanager
def serve_reader(
    *,
    fail: Fail | None = None,
    rewrite: Rewrite | None = None,
    model: StandInModel | None = None,
    truncate: Truncate | None = None,
    die_after: int | None = None,
) -> Iterator[tuple[str, ReaderServer]]:
    """Serve the stand-in on 127.0.0.1 (a free port).

    Yields (base URL ending in ``/v1``, the server state).

    Args:
        fail: ``fail(prompt, n) -> status | None`` injects HTTP errors.
        rewrite: ``rewrite(prompt, text) -> text`` replaces the free-text replies.
        model: The stand-in that replies (None: the text-reading mode).
        truncate: ``truncate(prompt, n) -> bool`` cuts reply ``n`` at its token limit.
        die_after: Answer this many requests, then die (None: never).
    """
    state = ReaderServer(
        fail=fail, rewrite=rewrite, model=model, truncate=truncate, die_after=die_after
    )
    server = _http_server(state)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", state
    finally:
        server.shutdown()
        server.server_close()


_SHARED: dict[str, Any] = {}
_SHARED_LOCK = threading.Lock()


def shared_reader_url() -> str:
    """The base URL of this process's stand-in server (started on first use, stopped at exit)."""
    with _SHARED_LOCK:
        if "url" not in _SHARED:
            manager = serve_reader()
            url, state = manager.__enter__()
            _SHARED.update(url=url, state=state)
            atexit.register(manager.__exit__, None, None, None)
        return str(_SHARED["url"])
