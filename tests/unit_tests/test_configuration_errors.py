"""Configuration errors of the integrations, judges and prompts are the package's own.

Each is a ``ConfigurationError`` (a ``MeClearError``) and still the ``ValueError`` or
``TypeError`` it was, so ``except ValueError`` / ``except TypeError`` code keeps working.
"""

from __future__ import annotations

import pytest

from meclear_integrations.core.errors import (
    ConfigurationError,
    ConfigurationTypeError,
    MeClearError,
)
from meclear_integrations.judges import CallableJudge, ExactMatchJudge, TokenF1Judge
from meclear_integrations.judges.answer_prompts import fence
from meclear_integrations.judges.model import as_text_model as neutral_text_model
from meclear_integrations.judges.task import task_evaluator


def test_configuration_type_error_is_both() -> None:
    error = ConfigurationTypeError("x")
    assert isinstance(error, ConfigurationError)
    assert isinstance(error, MeClearError)
    assert isinstance(error, TypeError)
    assert isinstance(error, ValueError)


@pytest.mark.parametrize(
    ("call", "kind"),
    [
        (lambda: TokenF1Judge(threshold=1.5), ValueError),
        (lambda: CallableJudge(lambda question: 1.0), TypeError),
        (lambda: neutral_text_model(42), TypeError),  # type: ignore[arg-type]
        (lambda: fence("memory", "text", **{"bad name": 1}), ValueError),
        (
            lambda: task_evaluator(
                lambda c: "x", ExactMatchJudge(), question="q", reference="x", judge_context="full"
            ),
            ValueError,
        ),
        (lambda: task_evaluator(lambda c: "x", lambda answer: 1.0, question="q"), ValueError),
    ],
    ids=["threshold", "judge-signature", "text-model", "fence", "full-context", "no-reference"],
)
def test_neutral_configuration_errors(call, kind) -> None:
    with pytest.raises(ConfigurationError) as raised:
        call()
    assert isinstance(raised.value, kind)


def test_langchain_configuration_errors() -> None:
    from meclear_integrations.langchain import SimulatedChatModel
    from meclear_integrations.langchain.judges import resolve_judge
    from meclear_integrations.langchain.reference import reference_from_metadata
    from meclear_integrations.simulation import redundant_harm_example

    llm = SimulatedChatModel.from_case(redundant_harm_example())
    with pytest.raises(ConfigurationError, match="no judge"):
        resolve_judge(None, None, None)
    with pytest.raises(ConfigurationTypeError, match="as a judge"):
        resolve_judge(42, llm, None)
    with pytest.raises(ConfigurationTypeError, match="must be a string"):
        reference_from_metadata({"meclear_reference": 1})


def test_llama_index_configuration_errors() -> None:
    from llama_index.core.schema import NodeWithScore, TextNode

    from meclear_integrations.llama_index import (
        MeClearPostprocessor,
        SimulatedLLM,
        as_text_model,
        query_reference,
    )
    from meclear_integrations.llama_index.judges import resolve_judge
    from meclear_integrations.simulation import redundant_harm_example

    llm = SimulatedLLM.from_case(redundant_harm_example())
    with pytest.raises(ConfigurationTypeError):
        as_text_model(object())  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="function-calling"):
        as_text_model(llm, structured_output=True)
    with pytest.raises(ConfigurationTypeError), query_reference(1):  # type: ignore[arg-type]
        pass
    with pytest.raises(ConfigurationTypeError, match="as a judge"):
        resolve_judge(42, llm, None)
    node = NodeWithScore(node=TextNode(id_="n1", text="John was in Italy."))
    with pytest.raises(ConfigurationError, match="needs the query"):
        MeClearPostprocessor(llm=llm).postprocess_nodes([node])
