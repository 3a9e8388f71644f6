"""A judge that never gives a verdict opens the users' shared circuit breaker, and no model
is called while it is open. (One hostile memory's slow calls, timing out on the real clock,
cannot deny clearance to other users: ``integration_tests/security/test_shared_breaker.py``.)"""

from __future__ import annotations

from langchain_core.runnables import RunnableLambda

from meclear_integrations.langchain import LangChainReferenceFreeJudge
from tests.support.breaker_users import FAST, ask_quietly, shared_breaker_retriever
from tests.support.honest_judge import GOLD


async def test_a_judge_that_never_gives_a_verdict_opens_the_breaker() -> None:
    calls = {"judge": 0}

    def judge_model(prompt: object) -> str:
        calls["judge"] += 1
        return "Hmm, hard to say. Both readings have merit."  # never a verdict line

    judge = LangChainReferenceFreeJudge(RunnableLambda(judge_model))

    async def agent(inputs: dict) -> str:
        return GOLD

    # Nothing here is slow: a wall budget as generous as a loaded machine needs, so every
    # failure is the judge's unreadable reply (under load 0.3 s ran out first: kind "budget").
    roomy = {**FAST, "budget": {"max_wall_seconds": 30.0}}
    retriever = shared_breaker_retriever(agent, judge=judge, clearance=roomy)
    for i in range(3):
        out = await ask_quietly(retriever, f"B asks question {i}")
        assert out[0].metadata["meclear"]["status"] == "failed"
        assert out[0].metadata["meclear"]["failure"]["kind"] == "unreadable"
    spent = calls["judge"]
    out = await ask_quietly(retriever, "B asks question 3")
    assert {d.metadata["meclear"].get("status_reason") for d in out} == {"circuit_open"}
    assert calls["judge"] == spent  # no model call while open
