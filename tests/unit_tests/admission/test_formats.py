"""ConMem's calls on an endpoint that rejects json_schema (llama.cpp): JSON mode, once."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from meclear_integrations.admission import ConMemAdmitter
from meclear_integrations.judges.model import ENDPOINT_FORMATS
from tests.support.stage_models import Script, StageModel

CANDIDATE = "User is strictly vegetarian."
CONTEXT = "user: can you suggest a fine-dining spot? My co-worker doesn't eat meat."


class HTTP500(Exception):
    status_code = 500

    def __init__(self) -> None:
        super().__init__("'loc': ('body', 'response_format', 'type'), 'input': 'json_schema'")


class LlamaCppStageModel(StageModel):
    """The scripted ConMem model behind a llama.cpp-like endpoint."""

    endpoint = "http://local/v1|smollm2"

    def __init__(self, *, ignore_json_mode: bool = False) -> None:
        super().__init__(Script())
        self.ignore_json_mode = ignore_json_mode
        self.formats: list[str] = []

    def complete_json(self, prompt: str, schema: Mapping[str, Any]) -> Any:
        self.formats.append("json_schema")
        raise HTTP500()

    async def acomplete_json(self, prompt: str, schema: Mapping[str, Any]) -> Any:
        return self.complete_json(prompt, schema)

    def complete_json_object(self, prompt: str, schema: Mapping[str, Any]) -> str:
        self.formats.append("json_object")
        return "Sure, here you go." if self.ignore_json_mode else self.complete(prompt)

    async def acomplete_json_object(self, prompt: str, schema: Mapping[str, Any]) -> str:
        return self.complete_json_object(prompt, schema)


@pytest.fixture(autouse=True)
def _fresh_endpoints() -> Iterator[None]:
    ENDPOINT_FORMATS.clear()
    yield
    ENDPOINT_FORMATS.clear()


def test_a_rejected_json_schema_is_asked_once_then_json_mode() -> None:
    model = LlamaCppStageModel()
    decision = ConMemAdmitter(model).decide(CANDIDATE, CONTEXT)
    assert decision.decision is not None and decision.cost.failed_attempts == 0
    assert model.formats.count("json_schema") == 1
    assert model.formats.count("json_object") >= 5
    assert ENDPOINT_FORMATS.rejected(model.endpoint) == {"json_schema"}


async def test_json_mode_ignored_falls_to_text_on_the_async_path() -> None:
    model = LlamaCppStageModel(ignore_json_mode=True)
    decision = await ConMemAdmitter(model).adecide(CANDIDATE, CONTEXT)
    assert decision.decision is not None and decision.cost.failed_attempts == 0
    assert model.formats == ["json_schema", "json_object"]  # both remembered after one call
    assert len(model.calls) > 2  # the text calls answered
