"""Output-format negotiation (json_schema -> json_object -> text), with scripted models."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from meclear_integrations.core.failures.faults import is_transient
from meclear_integrations.core.failures.kind import failure_kind
from meclear_integrations.judges import ReferenceLLMJudge, VerdictParseError
from meclear_integrations.judges.model import (
    ENDPOINT_FORMATS,
    UnsupportedFormatError,
    format_rejection,
)
from meclear_integrations.judges.parsing import GRAMMAR_VERDICT_SCHEMA, VERDICT_SCHEMA

LLAMA_CPP_500 = (
    "1 validation error: {'type': 'literal_error', 'loc': ('body', 'response_format', "
    "'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}"
)


class HTTPError(Exception):
    """An SDK error with an HTTP status (duck-typed like openai's)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"Error code: {status} - {message}")
        self.status_code = status


class FormatModel:
    """A scripted endpoint: each format either answers or raises (records the calls)."""

    def __init__(
        self,
        *,
        json_schema: Any = None,
        json_object: Any = '{"reason": "same", "correct": true}',
        text: str = "They match.\nCORRECT",
        word: str = "CORRECT",
        endpoint: str | None = "http://stub/v1|tiny",
    ) -> None:
        self.replies = {"json_schema": json_schema, "json_object": json_object}
        self.text, self.word = text, word
        self.endpoint = endpoint
        self.calls: list[str] = []
        self.schemas: list[Mapping[str, Any]] = []

    def _answer(self, fmt: str, schema: Mapping[str, Any]) -> Any:
        self.calls.append(fmt)
        self.schemas.append(schema)
        reply = self.replies[fmt]
        if isinstance(reply, BaseException):
            raise reply
        return reply

    def complete_json(self, prompt: str, schema: Mapping[str, Any]) -> Any:
        return self._answer("json_schema", schema)

    async def acomplete_json(self, prompt: str, schema: Mapping[str, Any]) -> Any:
        return self.complete_json(prompt, schema)

    def complete_json_object(self, prompt: str, schema: Mapping[str, Any]) -> Any:
        return self._answer("json_object", schema)

    async def acomplete_json_object(self, prompt: str, schema: Mapping[str, Any]) -> Any:
        return self.complete_json_object(prompt, schema)

    def complete(self, prompt: str) -> str:
        short = "exactly one word" in prompt
        self.calls.append("word" if short else "text")
        return self.word if short else self.text

    async def acomplete(self, prompt: str) -> str:
        await asyncio.sleep(0)
        return self.complete(prompt)


@pytest.fixture(autouse=True)
def _fresh_endpoints() -> Iterator[None]:
    ENDPOINT_FORMATS.clear()
    yield
    ENDPOINT_FORMATS.clear()


def _score(judge: ReferenceLLMJudge, answer: str = "December 2023") -> float:
    return judge.score("When?", answer, reference="December 2023").score


def test_a_rejected_json_schema_falls_to_json_mode_once_per_endpoint() -> None:
    model = FormatModel(json_schema=HTTPError(500, LLAMA_CPP_500))
    judge = ReferenceLLMJudge(model)
    assert judge.output_formats() == ["json_schema", "json_object", "text"]
    assert _score(judge) == 1.0
    assert model.calls == ["json_schema", "json_object"]
    assert model.schemas == [VERDICT_SCHEMA, GRAMMAR_VERDICT_SCHEMA]
    assert _score(ReferenceLLMJudge(model)) == 1.0  # a new judge, the same endpoint
    assert model.calls == ["json_schema", "json_object", "json_object"]
    assert ENDPOINT_FORMATS.rejected(model.endpoint) == {"json_schema"}


def test_the_rejection_is_permanent_and_never_transient() -> None:
    error = HTTPError(500, LLAMA_CPP_500)
    assert is_transient(error)  # a bare 500 is transient...
    rejection = format_rejection(error, "json_schema", "e")
    assert rejection is not None and rejection.confirmed
    try:
        raise rejection from error
    except UnsupportedFormatError as raised:
        assert not is_transient(raised)  # ...but not once it is known to be the format
        assert failure_kind(raised) == "permanent"


def test_a_bare_500_is_suspected_and_committed_only_when_a_lower_format_answers() -> None:
    model = FormatModel(json_schema=HTTPError(500, "boom"))
    assert _score(ReferenceLLMJudge(model)) == 1.0
    assert ENDPOINT_FORMATS.rejected(model.endpoint) == {"json_schema"}
    down = FormatModel(
        json_schema=HTTPError(500, "boom"), json_object=HTTPError(503, "down"), endpoint="x|y"
    )
    with pytest.raises(HTTPError, match="503"):  # the outage decides, transient as ever
        _score(ReferenceLLMJudge(down))
    assert ENDPOINT_FORMATS.rejected("x|y") == frozenset()


def test_a_500_on_a_format_the_endpoint_answered_is_a_server_error() -> None:
    ENDPOINT_FORMATS.answer("e|m", "json_schema")
    assert format_rejection(HTTPError(500, "boom"), "json_schema", "e|m") is None
    assert format_rejection(HTTPError(500, "bad response_format"), "json_schema", "e|m")
    for status in (401, 404, 429, 503):
        assert format_rejection(HTTPError(status, "response_format"), "json_schema", "e") is None


def test_a_format_answered_with_prose_is_ignored_by_the_endpoint() -> None:
    model = FormatModel(json_schema="Sure! The answer is right.", json_object="Yes it is.")
    assert _score(ReferenceLLMJudge(model)) == 1.0
    assert model.calls == ["json_schema", "json_object", "text", "word"]
    assert ENDPOINT_FORMATS.rejected(model.endpoint) == {"json_schema", "json_object"}


def test_a_broken_object_is_the_model_s_fault_not_the_format_s() -> None:
    model = FormatModel(json_schema='{"reason": "cut', json_object=None)
    with pytest.raises(VerdictParseError):
        _score(ReferenceLLMJudge(model))
    assert ENDPOINT_FORMATS.rejected(model.endpoint) == frozenset()


def test_structured_output_required_never_falls_to_text() -> None:
    model = FormatModel(
        json_schema=HTTPError(400, "response_format unsupported"),
        json_object=HTTPError(400, "response_format unsupported"),
    )
    judge = ReferenceLLMJudge(model, structured_output=True)
    with pytest.raises(UnsupportedFormatError, match="json_object"):
        _score(judge)
    assert "text" not in model.calls
    with pytest.raises(UnsupportedFormatError, match="rejected every structured"):
        _score(judge)  # remembered: no call at all
    assert model.calls == ["json_schema", "json_object"]


def test_text_only_models_and_endpoints_without_a_key_are_unchanged() -> None:
    model = FormatModel(json_schema=HTTPError(500, LLAMA_CPP_500), endpoint=None)
    judge = ReferenceLLMJudge(model)
    assert _score(judge) == 1.0 and _score(judge) == 1.0
    assert model.calls.count("json_schema") == 2  # nothing remembered without a key
    judge = ReferenceLLMJudge(model, structured_output=False)
    assert judge.output_formats() == ["text"]


async def test_the_async_path_negotiates_the_same_way() -> None:
    model = FormatModel(json_schema=HTTPError(422, "json_schema is not supported"))
    verdict = await ReferenceLLMJudge(model).ascore("q", "Paris", reference="Paris")
    assert verdict.score == 1.0 and verdict.parsed_by == "json"
    assert model.calls == ["json_schema", "json_object"]
