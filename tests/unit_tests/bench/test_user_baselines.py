"""The baselines a user would try first: newest-wins, LOO at K + 1 calls, a one-call filter."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from meclear_bench import BenchSettings, run_benchmark
from meclear_bench.cases import BenchCase, CaseMemory
from meclear_bench.methods import (
    LlmFilterMethod,
    SimulatedFilter,
    newest_wins,
    prompt_keeper,
)
from meclear_bench.methods.llm_filter import filter_prompt, read_keep_list
from meclear_bench.methods.newest import memory_date
from meclear_bench.text_reader import reply
from meclear_integrations.simulation import Claim, EvidenceWorld

RIGHT, STALE, WRONG = "Acme Corp", "Globex", "Initech"


def case(fault_date: str, *, fault: str = STALE, case_id: str = "c1") -> BenchCase:
    """Gold statement dated 2023-06, a fault (stale or a later wrong correction), background."""
    memories = [
        CaseMemory(id="g", text=f"Ann works at {RIGHT}.", metadata={"date": "2023-06-01"}),
        CaseMemory(id="f", text=f"Ann works at {fault}.", metadata={"date": fault_date}),
        CaseMemory(id="w", text=f"Ann likes {RIGHT} a lot.", metadata={"date": "2024-01-01"}),
        CaseMemory(id="b", text="Ben rides a bike.", metadata={"date": "2024-02-01"}),
    ]
    world = EvidenceWorld(
        claims={
            "g": Claim(answer=RIGHT, weight=1.0),
            "f": Claim(answer=fault, weight=1.5),
            "w": Claim(answer=RIGHT, weight=0.2),  # too weak to be a statement alone
        },
        abstain_weight=0.5,
        ties="prompt",
    )
    return BenchCase(
        case_id=case_id,
        cluster="x",
        query_id=case_id,
        query="Where does Ann work?",
        reference=RIGHT,
        structure="direct",
        fault_type="stale" if fault_date < "2023-06-01" else "wrong_correction",
        memories=memories,
        targets=["f"],
        world=world,
    )


def run(cases: list[BenchCase], methods: tuple[str, ...]) -> dict[str, list]:
    settings = BenchSettings(methods=methods, bootstrap_replicates=0)
    return run_benchmark(cases, settings).outcomes


def test_newest_wins_rule() -> None:
    d = datetime.fromisoformat
    statements = {"a": "x", "b": "y", "c": "x"}
    dates = {"a": d("2020-01-01"), "b": d("2021-01-01"), "c": None}
    assert newest_wins(statements, dates) == ("y", ["a", "c"])
    assert newest_wins(statements, {}) == (None, [])  # nothing dated: nothing deleted
    tie = {"a": d("2021-01-01"), "b": d("2021-01-01")}
    assert newest_wins({"a": "x", "b": "y"}, tie) == (None, [])
    assert memory_date({"date": "2022-07-06T00:00:00Z"}) == d("2022-07-06")
    assert memory_date({"date": "not a date"}) is None and memory_date({}) is None


def test_newest_wins_fixes_a_stale_fact_and_follows_a_wrong_correction() -> None:
    stale, wrong = case("2021-01-01"), case("2024-03-01", fault=WRONG, case_id="c2")
    out = run([stale, wrong], ("newest", "none"))["newest"]
    assert out[0].cleared == ["f"] and out[0].recovered and out[0].model_calls == 0
    assert out[1].cleared == ["g"] and not out[1].recovered  # the later wrong claim wins
    assert out[1].details["newest_answer"] == WRONG.lower()


def test_newest_wins_agrees_with_llama_index_recency_postprocessor() -> None:
    pytest.importorskip("pandas")
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.postprocessor import EmbeddingRecencyPostprocessor
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

    c = case("2021-01-01")
    topical = {"g", "f"}  # the statements of the question (what the world reads)

    class Topic(BaseEmbedding):
        def _vector(self, text: str) -> list[float]:
            about = any(m.text in text for m in c.memories if m.id in topical)
            return [1.0, 0.0] if about else [0.0, 1.0 / (1 + len(text))]

        def _get_text_embedding(self, text: str) -> list[float]:
            return self._vector(text)

        def _get_query_embedding(self, query: str) -> list[float]:
            return self._vector(query)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._vector(query)

    # newest first: llama-index-core 0.14 embeds the nodes in input order but reads the
    # embeddings in date order, so only an input already in date order is read correctly
    newest_first = sorted(c.memories, key=lambda m: m.metadata["date"], reverse=True)
    nodes = [
        NodeWithScore(node=TextNode(id_=m.id, text=m.text, metadata=m.metadata))
        for m in newest_first
    ]
    kept = EmbeddingRecencyPostprocessor(embed_model=Topic(), similarity_cutoff=0.5)
    survivors = {n.node.node_id for n in kept.postprocess_nodes(nodes, QueryBundle("q"))}
    ours = run([c], ("newest",))["newest"][0]
    assert {m.id for m in c.memories} - set(ours.cleared) == survivors


def test_loo_once_costs_k_plus_one_evaluations() -> None:
    outcomes = run([case("2021-01-01")], ("loo-once", "loo"))
    once = outcomes["loo-once"][0]
    assert once.evaluator_calls == 1 + 4 and once.cleared == ["f"] and once.recovered
    assert once.model_calls <= 2 * 5  # one agent and at most one judge call per evaluation
    clean = run([case("2021-01-01").model_copy(update={"targets": []})], ("loo-once",))
    assert clean["loo-once"][0].evaluator_calls == 5  # still failing: no early exit


def test_llm_filter_is_one_call_played_from_the_prompt() -> None:
    c = case("2021-01-01")
    texts = [m.text for m in c.memories]
    prompt = filter_prompt(c.query, texts)
    played = SimulatedFilter(c.world, {m.id: m.text for m in c.memories}, case_id=c.case_id)
    # the fault's evidence dominates: the filter keeps it and drops the right statement
    assert json.loads(played.reply(prompt)) == [2, 3, 4]
    # only what the prompt shows counts: without the fault the right statement is kept
    assert json.loads(played.reply(filter_prompt(c.query, [texts[0], texts[2]]))) == [1, 2]
    out = run([c], ("llm-filter",))["llm-filter"][0]
    assert out.cleared == ["g"] and out.model_calls == 1 and not out.recovered
    with pytest.raises(ValueError):
        read_keep_list("keep them all", 4)
    with pytest.raises(ValueError):
        read_keep_list("[0, 5]", 4)


def test_llm_filter_with_a_model_and_through_the_text_reader() -> None:
    seen: list[str] = []

    def complete(prompt: str) -> str:
        seen.append(prompt)
        return reply(prompt).text

    keep = prompt_keeper(complete)
    texts = [
        "Ann works at Globex.",
        "Ann works at Acme Corp.",
        "Ann said again that she works at Acme Corp.",
        "Ben rides a bike.",
    ]
    assert list(keep("Where does Ann work?", texts)) == [1, 2, 3]
    assert len(seen) == 1 and "numbers of the memories to keep" in seen[0]
    method = LlmFilterMethod(keeper=lambda q, t: [0, 1, 2, 3])
    out = run_benchmark(
        [case("2021-01-01")],
        BenchSettings(methods=("llm-filter",), bootstrap_replicates=0),
        methods=[method],
    ).outcomes["llm-filter"][0]
    assert out.cleared == [] and out.model_calls == 1


def test_newest_wins_through_the_text_reader_asks_each_memory_alone() -> None:
    """Without the simulated world the statements come from K + 1 charged agent calls."""
    from meclear_bench.counting import CountingEvaluator
    from meclear_bench.methods import MethodContext, MethodNotRunError, NewestWinsMethod
    from meclear_bench.text_reader import ReadMemory, read_answer
    from meclear_integrations.core.answers import note_answer
    from meclear_integrations.core.memory import Memory
    from meclear_integrations.judges.task import answers_agree

    def reader(coalition: tuple[Memory, ...], trial: int) -> float:
        shown = [ReadMemory({"id": m.id, **m.metadata}, m.content) for m in coalition]
        answer = read_answer("Where does Ann work?", shown)
        note_answer(answer, same=answers_agree)
        return float(answer == RIGHT)

    settings = BenchSettings(methods=("newest",), bootstrap_replicates=0)
    outs = []
    for c in (case("2021-01-01"), case("2024-03-01", fault=WRONG, case_id="c2")):
        ctx = MethodContext(c, CountingEvaluator(reader), settings, simulated=False)
        outs.append((NewestWinsMethod().run(ctx), ctx.evaluate.calls))
    (stale, stale_calls), (wrong, _) = outs
    assert stale.cleared == ["f"] and stale_calls == len(case("x").memories) + 1
    # the later wrong correction wins by its date; "Ann likes Acme Corp a lot." agrees
    # with the right answer (the evaluator's answer equivalence) and goes with it
    assert wrong.cleared == ["w", "g"]  # newest first
    silent = MethodContext(case("2021-01-01"), CountingEvaluator(lambda c, t: 1.0), settings)
    silent.simulated = False
    with pytest.raises(MethodNotRunError):
        NewestWinsMethod().run(silent)


def test_newest_wins_asks_a_real_model_query_for_answers_only() -> None:
    """A real-model query gives its agent's answer: K + 1 agent calls, no judge call."""
    from meclear_bench.counting import CountingEvaluator
    from meclear_bench.methods import MethodContext, NewestWinsMethod
    from meclear_bench.text_reader import ReadMemory, read_answer
    from meclear_integrations.core.memory import Memory

    class Query:
        def __init__(self) -> None:
            self.answers: list[frozenset[str]] = []
            self.scored = 0

        def answer(self, coalition: tuple[Memory, ...], trial: int) -> str:
            self.answers.append(frozenset(m.id for m in coalition))
            shown = [ReadMemory({"id": m.id, **m.metadata}, m.content) for m in coalition]
            return read_answer("Where does Ann work?", shown)

        def __call__(self, coalition: tuple[Memory, ...], trial: int) -> float:
            self.scored += 1
            return 0.0

    query = Query()
    settings = BenchSettings(methods=("newest",), bootstrap_replicates=0)
    ctx = MethodContext(case("2021-01-01"), CountingEvaluator(query), settings, simulated=False)
    out = NewestWinsMethod().run(ctx)
    assert out.cleared == ["f"]
    assert query.scored == 0 and len(query.answers) == len(case("x").memories) + 1
    assert frozenset() in query.answers
