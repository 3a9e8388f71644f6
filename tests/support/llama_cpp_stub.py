"""A stub of llama.cpp's OpenAI-compatible server (llama-cpp-python 0.3), on 127.0.0.1.

It mimics what a small local model behind that server does to the judges:

- ``response_format: json_schema`` -> HTTP 500 (the server's request type only knows
  ``text`` and ``json_object``; the message is the server's own);
- ``response_format: json_object`` (with ``schema``) -> one JSON object (the server
  constrains decoding with a grammar), built by ``judge(prompt) -> bool``;
- ``tools`` with ``tool_choice: "required"`` -> ignored: a plain text reply (only a
  ``tool_choice`` naming one function gets a grammar);
- ``/v1/completions`` (no ``response_format`` there) and plain chat -> the small model's
  prose ending in a bare ``CORRECT`` (never the nonce line), or exactly one word when the
  prompt asks for one word.

``mode`` switches the structured behaviours off to mimic other servers: ``"text_only"``
rejects every ``response_format`` with HTTP 400 naming it; ``"dead_after"`` (with
``dead_after=N``) answers HTTP 503 after N requests. Usage fields are llama.cpp's.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

JSON_SCHEMA_ERROR = (
    "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', "
    "'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}"
)
"""The message llama-cpp-python 0.3.36's server returns (HTTP 500) for a json_schema
response_format (measured on the real server)."""


def _candidate(prompt: str) -> str:
    start = prompt.find("<candidate_answer>\n")
    end = prompt.find("\n</candidate_answer>", start)
    return prompt[start + len("<candidate_answer>\n") : end] if start >= 0 else ""


def _reference(prompt: str) -> str | None:
    start = prompt.find("<reference_answer>\n")
    if start < 0:
        return None
    end = prompt.find("\n</reference_answer>", start)
    return prompt[start + len("<reference_answer>\n") : end]


def reference_match(prompt: str) -> bool:
    """A judge that calls the candidate correct when it holds the reference (or no ref)."""
    reference = _reference(prompt)
    return reference is None or reference.strip().lower() in _candidate(prompt).lower()


class LlamaCppStub:
    """``serve()`` handler mimicking llama-cpp-python's server (module docstring).

    Args:
        judge: Decides a judge prompt's verdict.
        answer: Answers a non-judge prompt (the agent's).
        mode: ``"llama_cpp"`` (default), ``"text_only"`` or ``"dead_after"``.
        dead_after: Requests served before a ``"dead_after"`` stub answers 503.
        finish_length: Text replies are cut (``finish_reason: length``).
        word: The one-word call's reply (e.g. ``"Richtig"`` for a model in another language).
    """

    def __init__(
        self,
        *,
        judge: Callable[[str], bool] = reference_match,
        answer: Callable[[str], str] = lambda prompt: "December 2023",
        mode: str = "llama_cpp",
        dead_after: int = 0,
        finish_length: bool = False,
        word: str | None = None,
    ) -> None:
        self.judge = judge
        self.answer = answer
        self.mode = mode
        self.dead_after = dead_after
        self.finish_length = finish_length
        self.word = word
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def kinds(self) -> list[str]:
        """The kind of each request: ``json_schema``, ``json_object``, ``tools`` or ``text``."""
        out = []
        for request in self.requests:
            fmt = (request.get("response_format") or {}).get("type")
            out.append(fmt or ("tools" if request.get("tools") else "text"))
        return out

    def _error(self, status: int, message: str) -> tuple[int, dict[str, str], bytes]:
        body = {"error": {"message": message, "type": "internal_server_error", "param": None}}
        return status, {}, json.dumps(body).encode()

    def _text(self, prompt: str) -> str:
        if "candidate_answer" not in prompt:
            return self.answer(prompt)
        label = "CORRECT" if self.judge(prompt) else "INCORRECT"
        if "exactly one word" in prompt:
            return self.word if self.word is not None else label
        return f"The candidate answer is compared with the reference.\n\n{label}"

    def __call__(self, method: str, path: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
        request = json.loads(body or b"{}")
        with self._lock:
            self.requests.append(request)
            served = len(self.requests)
        if self.mode == "dead_after" and served > self.dead_after:
            return self._error(503, "the server is shutting down")
        chat = "chat/completions" in path
        prompt = (
            "\n".join(str(m.get("content", "")) for m in request.get("messages", []))
            if chat
            else str(request.get("prompt", ""))
        )
        fmt = (request.get("response_format") or {}).get("type")
        finish = "stop"
        if fmt and self.mode == "text_only":
            return self._error(400, f"response_format of type {fmt!r} is not supported")
        if fmt == "json_schema":
            return self._error(500, JSON_SCHEMA_ERROR)
        if fmt == "json_object":
            reason = "The candidate is compared with the reference."
            content = json.dumps({"reason": reason, "correct": self.judge(prompt)})
        else:
            content = self._text(prompt)
            if self.finish_length:
                content, finish = content[: max(1, len(content) // 2)], "length"
        completion = {
            "id": f"chatcmpl-{served}",
            "object": "chat.completion" if chat else "text_completion",
            "created": 0,
            "model": request.get("model", "smollm2"),
            "choices": [
                {
                    "index": 0,
                    **(
                        {"message": {"role": "assistant", "content": content}}
                        if chat
                        else {"text": content}
                    ),
                    "logprobs": None,
                    "finish_reason": finish,
                }
            ],
            "usage": {
                "prompt_tokens": len(prompt) // 4,
                "completion_tokens": max(1, len(content) // 4),
                "total_tokens": len(prompt) // 4 + max(1, len(content) // 4),
            },
        }
        return 200, {}, json.dumps(completion).encode()
