"""No flapping: once a question is answered right, the loop never serves it wrong again.

"Where does Sam work?" with two or three stale copies beside the current fact
(``tests.support.stale_employer``): removing any copy but the last leaves the answer on the
model's tie-break. Five passes, both frameworks, inline and background: the first right
answer is never followed by a wrong one, no stale copy is served beside the current fact
once the question is fixed, and no pass after the fix pays a full clearance again
(counted model calls; every later ledger run is ledger-guided).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableLambda

from meclear_integrations import ClearanceConfig
from meclear_integrations.langchain import ClearingRetriever, reference_config
from meclear_integrations.ledger import HarmLedger
from meclear_integrations.llama_index import MeClearPostprocessor, query_reference
from tests.support import stale_employer as sam

FAST = ClearanceConfig(failure={"retry": {"initial_backoff": 0.0, "jitter": 0.0}})
PASSES = 5


def _langchain(counter: sam.Counter, copies: int, loop: dict[str, Any], mode: str) -> Any:
    docs = sam.documents(copies)
    component = ClearingRetriever(
        retriever=RunnableLambda(lambda q: [d.model_copy(deep=True) for d in docs]),
        llm=counter.langchain_llm(),
        judge=counter.judge,
        clearance=FAST,
        mode=mode,
        loop=loop,
    )

    def ask(reference: str | None) -> list[tuple[str, str]]:
        config = reference_config(reference) if reference is not None else None
        out = component.invoke(sam.QUESTION, config=config)
        return [(str(d.id), d.page_content) for d in out]

    return component, ask


def _llama_index(counter: sam.Counter, copies: int, loop: dict[str, Any], mode: str) -> Any:
    component = MeClearPostprocessor(
        llm=counter.llama_llm(), judge=counter.judge, clearance=FAST, mode=mode, loop=loop
    )

    def ask(reference: str | None) -> list[tuple[str, str]]:
        if reference is None:
            out = component.clear_nodes(sam.nodes(copies), sam.QUESTION).nodes
        else:
            with query_reference(reference):
                out = component.clear_nodes(sam.nodes(copies), sam.QUESTION).nodes
        return [(n.node.node_id, n.node.get_content()) for n in out]

    return component, ask


BUILD = {"langchain": _langchain, "llama_index": _llama_index}


def _answer(served: list[tuple[str, str]]) -> str:
    return sam.majority_answer("".join(f"<memory>{text}</memory>" for _, text in served))


@pytest.mark.parametrize("reference", [sam.REFERENCE, None], ids=["reference", "reference_free"])
@pytest.mark.parametrize("mode", ["clear", "background"])
@pytest.mark.parametrize("framework", list(BUILD))
@pytest.mark.parametrize("copies", [2, 3])
def test_once_right_never_wrong_again_and_no_full_reclearance(
    tmp_path: Path, copies: int, framework: str, mode: str, reference: str | None
) -> None:
    counter = sam.Counter()
    with HarmLedger(tmp_path / "ledger.db") as ledger:
        loop: dict[str, Any] = {"ledger": ledger}
        if mode == "background":  # an audit per pass (the bounds are tested apart)
            loop.update(audit_workers=0, audit_backoff_seconds=0.0, audits_per_question_per_day=9)
        component, ask = BUILD[framework](counter, copies, loop, mode)
        answers, served, calls = [], [], []
        for _ in range(PASSES):
            before = counter.calls
            shown = ask(reference)
            if mode == "background":
                assert counter.calls == before  # no model call on the request path
                component.run_audits()
            answers.append(_answer(shown))
            served.append({mid for mid, _ in shown})
            calls.append(counter.calls - before)
        first_right = answers.index(sam.REFERENCE)
        assert first_right <= 1  # inline: at once; background: after the first audit
        assert answers[first_right:] == [sam.REFERENCE] * (PASSES - first_right)
        stale = {f"s{i + 1}" for i in range(copies)}
        for ids in served[first_right:]:
            assert "t1" in ids and not ids & stale  # no copy left beside the current fact
        full = calls[0]
        assert all(c * 3 < full for c in calls[1:])  # no full re-clearance after the fix
        runs = list(reversed(ledger.runs()))
        assert [r.mode for r in runs] == ["full"] + ["ledger_guided"] * (PASSES - 1)
        assert all(set(r.cleared_ids) == stale for r in runs[1:])  # every copy, together
        component.close()
