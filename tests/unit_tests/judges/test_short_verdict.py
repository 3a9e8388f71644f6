"""The one-word verdict call: what it reads, what it refuses, and how it is remembered."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from meclear_integrations import Memory
from meclear_integrations.judges import ReferenceFreeLLMJudge, ReferenceLLMJudge, VerdictParseError
from meclear_integrations.judges.model import ENDPOINT_FORMATS, SHORT_AFTER, ModelReply
from meclear_integrations.judges.protocol import carries_verdict_word, parse_short_verdict


@pytest.fixture(autouse=True)
def _fresh_endpoints() -> Iterator[None]:
    ENDPOINT_FORMATS.clear()
    yield
    ENDPOINT_FORMATS.clear()


@pytest.mark.parametrize(
    ("raw", "score"),
    [("CORRECT", 1.0), (" incorrect.\n", 0.0), ("**Correct**", 1.0), ('"INCORRECT"', 0.0)],
)
def test_exactly_one_verdict_word_is_read(raw: str, score: float) -> None:
    verdict = parse_short_verdict(raw)
    assert (verdict.score, verdict.parsed_by) == (score, "word")


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "   ",
        "CORRECT because it matches",
        "The answer is CORRECT",
        "Richtig",
        "CORRECT INCORRECT",
        "C" * 50,
        "correcto",
    ],
)
def test_anything_else_is_no_verdict(raw: str) -> None:
    with pytest.raises(VerdictParseError, match="one-word verdict"):
        parse_short_verdict(raw)


def test_verdict_words_in_the_data_are_found_as_words_only() -> None:
    assert carries_verdict_word(["That is correct."]) and carries_verdict_word(["x", "INCORRECT"])
    assert not carries_verdict_word(["corrected on Monday", "incorrectly", "Paris"])


class Endpoint:
    """A text model behind a named endpoint that never writes the nonce line."""

    endpoint = "http://tiny/v1|m"

    def __init__(self, word: str = "CORRECT", cut: bool = False) -> None:
        self.word, self.cut, self.prompts = word, cut, []

    def complete(self, prompt: str) -> str:
        self.prompts.append(prompt)
        reply = self.word if "exactly one word" in prompt else "Looks right.\nCORRECT"
        return ModelReply(reply[:3], finish_reason="length") if self.cut else reply

    async def acomplete(self, prompt: str) -> str:
        return self.complete(prompt)


def test_an_endpoint_rescued_twice_skips_the_nonce_line() -> None:
    model = Endpoint()
    judge = ReferenceLLMJudge(model)
    for _ in range(SHORT_AFTER):
        assert judge.score("q", "Paris", reference="Paris").score == 1.0
    assert len(model.prompts) == 2 * SHORT_AFTER
    assert judge.score("q", "Paris", reference="Paris").score == 1.0
    assert len(model.prompts) == 2 * SHORT_AFTER + 1  # one call per judgement now
    assert "exactly one word" in model.prompts[-1] and "VERDICT" not in model.prompts[-1]


def test_data_with_a_verdict_word_still_gets_the_nonce_line_when_short_only() -> None:
    model = Endpoint()
    for _ in range(SHORT_AFTER):
        ReferenceLLMJudge(model).score("q", "Paris", reference="Paris")
    with pytest.raises(VerdictParseError, match="hold a verdict word"):
        ReferenceLLMJudge(model).score("q", "Paris is correct", reference="Paris")
    assert "VERDICT" in model.prompts[-1]


def test_a_reply_cut_at_max_tokens_says_so() -> None:
    with pytest.raises(VerdictParseError, match="finish_reason=length"):
        ReferenceLLMJudge(Endpoint(cut=True)).score("q", "Paris", reference="Paris")


def test_a_reply_in_another_language_is_no_verdict_with_both_reasons() -> None:
    with pytest.raises(VerdictParseError, match=r"not this call's verdict line.*Richtig"):
        ReferenceLLMJudge(Endpoint(word="Richtig")).score("q", "Paris", reference="Paris")


def test_the_reference_free_one_word_prompt_keeps_the_fenced_memories() -> None:
    model = Endpoint()
    context = [Memory(id="g1", content="Ana lives in Berlin.")]
    assert ReferenceFreeLLMJudge(model).score("Where?", "Berlin", context=context).score == 1.0
    short = model.prompts[-1]
    assert '<memory id="g1">' in short and short.index("exactly one word") > short.index(
        "</candidate_answer>"
    )
