"""MeClearPostprocessor on its own: results, metadata, inputs untouched, edge cases, errors."""

from __future__ import annotations

import copy

import pytest
from llama_index.core import Settings
from llama_index.core.response_synthesizers import get_response_synthesizer
from llama_index.core.schema import MetadataMode, NodeWithScore, TextNode

from meclear_integrations.core.config import ClearanceConfig
from meclear_integrations.core.errors import EvaluatorError
from meclear_integrations.judges import CallableJudge, ExactMatchJudge, MissingReferenceError
from meclear_integrations.llama_index import (
    MeClearPostprocessor,
    SimulatedLLM,
    query_reference,
)
from meclear_integrations.runtime.payloads import (
    DEFAULT_METADATA_KEY,
    EdgeCasePolicy,
    memory_metadata,
)

META_FIELDS = {
    "memory_id",
    "loo_effect",
    "loo_label",
    "shapley",
    "shapley_interval",
    "rank",
    "harmful",
    "cleared",
    "recovered",
    "early_exit",
    "status",
    "model_calls",
}


class Failing(SimulatedLLM):
    """Answers normally, then fails from the ``fail_after``-th call on."""

    fail_after: int = 5
    calls: int = 0

    def complete(self, prompt, formatted=False, **kwargs):
        self.calls += 1
        if self.calls > self.fail_after:
            raise ConnectionError("provider down")
        return super().complete(prompt, formatted=formatted, **kwargs)

    async def acomplete(self, prompt, formatted=False, **kwargs):
        return self.complete(prompt, formatted=formatted, **kwargs)


CLOSED = ClearanceConfig(failure={"mode": "closed"})
"""An engine config that raises evaluator failures to the integration."""


def ids(nodes: list[NodeWithScore]) -> list[str]:
    return [n.node.node_id for n in nodes]


def test_clears_the_redundant_faults_with_the_same_metadata_as_langchain(case, nodes, llm) -> None:
    pp = MeClearPostprocessor(llm=llm, reference=case.reference)
    result = pp.clear_nodes(nodes, case.query)
    assert result.report is not None and result.report.recovered
    assert sorted(result.report.cleared_ids) == ["f1", "f2"]
    assert ids(result.nodes) == ["g1", "b1", "b2", "b3"]  # original order, memory id = node id
    for out in result.nodes:
        meta = out.node.metadata[DEFAULT_METADATA_KEY]
        assert set(meta) == META_FIELDS
        assert meta == memory_metadata(result.report, out.node.node_id)
        assert meta["cleared"] is False and meta["recovered"] is True
        calls = meta["model_calls"]
        assert calls["total"] == calls["agent"] + calls["judge"] == result.report.cost.model_calls
        # hidden from the LLM and embedding views of the node
        assert DEFAULT_METADATA_KEY not in out.node.get_content(metadata_mode=MetadataMode.LLM)
        assert DEFAULT_METADATA_KEY not in out.node.get_content(metadata_mode=MetadataMode.EMBED)
        assert "session" in out.node.get_content(metadata_mode=MetadataMode.LLM)
    scores = {n.node.node_id: n.score for n in nodes}
    assert all(out.score == scores[out.node.node_id] for out in result.nodes)


def test_inputs_are_never_mutated(case, nodes, llm) -> None:
    before = copy.deepcopy([n.model_dump() for n in nodes])
    out = MeClearPostprocessor(llm=llm, reference=case.reference).postprocess_nodes(
        nodes, query_str=case.query
    )
    assert [n.model_dump() for n in nodes] == before
    originals = {id(n) for n in nodes} | {id(n.node) for n in nodes}
    assert not any(id(n) in originals or id(n.node) in originals for n in out)


def test_settings_llm_is_the_default_agent_and_judge(case, nodes, llm) -> None:
    Settings.llm = llm
    out = MeClearPostprocessor().postprocess_nodes(nodes, query_str=case.query)
    assert ids(out) == ids(nodes)  # reference-free: see the next test
    with query_reference(case.reference):
        out = MeClearPostprocessor().postprocess_nodes(nodes, query_str=case.query)
    assert ids(out) == ["g1", "b1", "b2", "b3"]


def test_reference_free_simulated_judge_cannot_see_this_harm(case, nodes, llm) -> None:
    """Without a reference the simulated judge agrees with the majority of the memories it
    is shown (the documented limit of reference-free judging): nothing is cleared."""
    out = MeClearPostprocessor(llm=llm).postprocess_nodes(nodes, query_str=case.query)
    assert ids(out) == ids(nodes)
    assert all(n.node.metadata["meclear"]["early_exit"] for n in out)


def test_query_reference_overrides_the_field(case, nodes, llm) -> None:
    pp = MeClearPostprocessor(llm=llm, reference="January 2023")
    assert ids(pp.postprocess_nodes(nodes, query_str=case.query)) == ids(nodes)
    with query_reference(case.reference):
        assert ids(pp.postprocess_nodes(nodes, query_str=case.query)) == ["g1", "b1", "b2", "b3"]


@pytest.mark.parametrize(
    "judge",
    [
        ExactMatchJudge(),
        CallableJudge(lambda answer, reference: answer.strip() == reference),
        lambda answer, reference: float(answer.strip() == reference),
    ],
    ids=["rule", "callable-judge", "function"],
)
def test_any_neutral_judge(case, nodes, llm, judge) -> None:
    pp = MeClearPostprocessor(llm=llm, judge=judge, reference=case.reference)
    assert ids(pp.postprocess_nodes(nodes, query_str=case.query)) == ["g1", "b1", "b2", "b3"]


def test_a_response_synthesizer_as_the_task_agent(case, nodes, llm) -> None:
    calls: list[int] = []

    class Counting(SimulatedLLM):
        def complete(self, prompt, formatted=False, **kwargs):
            calls.append(1)
            return super().complete(prompt, formatted=formatted, **kwargs)

    agent_llm = Counting.from_case(case)
    synth = get_response_synthesizer(llm=agent_llm, response_mode="compact")
    pp = MeClearPostprocessor(
        response_synthesizer=synth, judge=ExactMatchJudge(), reference=case.reference
    )
    result = pp.clear_nodes(nodes, case.query)
    assert ids(result.nodes) == ["g1", "b1", "b2", "b3"]
    assert calls, "the synthesizer's LLM answered"
    # one LLM call per evaluation, except the empty coalition ("Empty Response", no call)
    evaluations = result.report.cost.evaluator_calls
    assert evaluations - pp.clearance.trials <= len(calls) < evaluations


def test_no_nodes_returns_empty_without_any_model_call(case) -> None:
    pp = MeClearPostprocessor(llm=Failing.from_case(case, fail_after=0))
    result = pp.clear_nodes([], case.query)
    assert result.nodes == [] and result.report is None


def test_all_cleared_policy(case, nodes, llm) -> None:
    """A judge that only accepts answers given no memories makes the verified clearance
    remove everything; the policy decides what is returned."""
    judge = CallableJudge(lambda answer, context: float(len(context) == 0))
    pp = MeClearPostprocessor(
        llm=llm, judge=judge, documents={"judge_context": "coalition"}
    )  # opt-in
    result = pp.clear_nodes(nodes, case.query)
    assert result.report is not None and sorted(result.report.cleared_ids) == sorted(ids(nodes))
    assert result.nodes == []
    documents = pp.documents.model_copy(
        update={"edge_cases": EdgeCasePolicy(all_cleared="keep_all")}
    )
    keep = pp.model_copy(update={"documents": documents})
    kept = keep.postprocess_nodes(nodes, query_str=case.query)
    assert ids(kept) == ids(nodes)
    assert all(n.node.metadata["meclear"]["kept_by_policy"] for n in kept)
    assert all(n.node.metadata["meclear"]["cleared"] for n in kept)


def test_identical_texts_are_separate_memories(case, llm) -> None:
    fault = "John's trip to Italy took place in January 2023."
    gold = case.memories[0].content
    nodes = [
        NodeWithScore(node=TextNode(id_="g", text=gold), score=0.9),
        NodeWithScore(node=TextNode(id_="a", text=fault), score=0.8),
        NodeWithScore(node=TextNode(id_="b", text=fault), score=0.7),
    ]
    same = NodeWithScore(node=nodes[1].node, score=0.6)  # the same node retrieved twice
    pp = MeClearPostprocessor(llm=llm, judge=ExactMatchJudge(), reference=case.reference)
    result = pp.clear_nodes([*nodes, same], case.query)
    assert [a.memory_id for a in result.report.attributions] == ["g", "a", "b", "a#2"]
    assert ids(result.nodes) == ["g"]


def test_needs_the_query(nodes, llm) -> None:
    with pytest.raises(ValueError, match="needs the query"):
        MeClearPostprocessor(llm=llm).postprocess_nodes(nodes)


def test_reference_judge_without_reference_always_raises(case, nodes, llm) -> None:
    pp = MeClearPostprocessor(llm=llm, judge=ExactMatchJudge(), on_failure="open")
    with pytest.raises(MissingReferenceError):
        pp.postprocess_nodes(nodes, query_str=case.query)


def test_agent_failure_raises_or_fails_open(case, nodes) -> None:
    """``on_failure`` on the component overrides ``clearance.on_failure``."""
    failing = Failing.from_case(case, fail_after=3)
    pp = MeClearPostprocessor(llm=failing, reference=case.reference, on_failure="closed")
    with pytest.raises(EvaluatorError, match="provider down"):
        pp.postprocess_nodes(nodes, query_str=case.query)
    failing = Failing.from_case(case, fail_after=3)
    pp = pp.model_copy(update={"llm": failing, "on_failure": "open", "clearance": CLOSED})
    result = pp.clear_nodes(nodes, case.query)
    assert result.report is not None and result.report.status == "failed"
    assert "provider down" in (result.error or "")
    assert ids(result.nodes) == ids(nodes)
    assert not any(n.node.metadata["meclear"]["cleared"] for n in result.nodes)


def test_engine_failing_open_keeps_every_node(case, nodes) -> None:
    failing = Failing.from_case(case, fail_after=3)
    pp = MeClearPostprocessor(llm=failing, reference=case.reference)
    result = pp.clear_nodes(nodes, case.query)
    assert result.report is not None and result.report.status == "failed"
    assert "provider down" in result.error
    assert ids(result.nodes) == ids(nodes)
    assert not any(n.node.metadata["meclear"]["cleared"] for n in result.nodes)


async def test_async_agent_failure_fails_open(case, nodes) -> None:
    failing = Failing.from_case(case, fail_after=3)
    pp = MeClearPostprocessor(
        llm=failing, reference=case.reference, on_failure="open", clearance=CLOSED
    )
    out = await pp.apostprocess_nodes(nodes, query_str=case.query)
    assert ids(out) == ids(nodes)
    assert all("provider down" in n.node.metadata["meclear"]["error"] for n in out)


def test_missing_default_model_always_raises(case, nodes) -> None:
    """No llm and no Settings.llm: LlamaIndex's own error, never swallowed by fail-open."""
    Settings._llm = None  # unset: resolving it asks for the OpenAI integration / key
    with pytest.raises((ImportError, ValueError)):
        MeClearPostprocessor(on_failure="open").postprocess_nodes(nodes, query_str=case.query)


async def test_chat_models_are_called_through_achat(case, nodes) -> None:
    from llama_index.core.base.llms.types import ChatResponse, LLMMetadata
    from llama_index.core.llms import ChatMessage

    chats: list[int] = []

    class Chat(SimulatedLLM):
        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(is_chat_model=True)

        async def acomplete(self, prompt, formatted=False, **kwargs):
            raise AssertionError("a chat model must be called through achat")

        async def achat(self, messages, **kwargs):
            chats.append(len(messages))
            text = await self.stand_in.areply(messages[-1].content)
            return ChatResponse(message=ChatMessage(role="assistant", content=text))

    pp = MeClearPostprocessor(llm=Chat.from_case(case), reference=case.reference)
    out = await pp.apostprocess_nodes(nodes, query_str=case.query)
    assert ids(out) == ["g1", "b1", "b2", "b3"]
    assert chats and set(chats) == {1}


def test_custom_answer_prompt(case, nodes, llm) -> None:
    template = "Notes:\n{memories}\n\nQ: {question}\nA:"
    pp = MeClearPostprocessor(llm=llm, reference=case.reference, answer_prompt=template)
    assert ids(pp.postprocess_nodes(nodes, query_str=case.query)) == ["g1", "b1", "b2", "b3"]
    with pytest.raises(ValueError, match="question"):
        MeClearPostprocessor(llm=llm, answer_prompt="Notes: {memories}")
