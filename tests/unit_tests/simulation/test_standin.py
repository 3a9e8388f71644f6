"""The one offline stand-in model: world mode, judge replies, the script, faults, the adapters."""

from __future__ import annotations

import asyncio
import json

import pytest

from meclear_integrations.admission import prompts as P
from meclear_integrations.admission.scripted import AdmissionScript, ScriptedAdmissionModel
from meclear_integrations.judges.answer_prompts import format_answer_prompt
from meclear_integrations.judges.model import TextModel
from meclear_integrations.judges.protocol import (
    new_nonce,
    parse_verdict,
    reference_free_prompt,
    reference_prompt,
)
from meclear_integrations.simulation import (
    SimulatedEvaluator,
    StandInModel,
    TextReader,
    redundant_harm_example,
)
from meclear_integrations.simulation.faults import (
    FAULT_KINDS,
    GARBAGE,
    RandomFaults,
    ScriptedFaults,
    SimulatedHTTPError,
)

CASE = redundant_harm_example()
GOOD = [m for m in CASE.memories if m.id not in CASE.targets]


def _model(**kwargs: object) -> StandInModel:
    return StandInModel.from_case(CASE, **kwargs)  # type: ignore[arg-type]


def test_world_mode_answers_from_the_memories_in_the_prompt() -> None:
    model = _model()
    assert model.reply(format_answer_prompt(CASE.query, GOOD)) == CASE.reference
    faulty = model.reply(format_answer_prompt(CASE.query, CASE.memories))
    assert faulty != CASE.reference
    expected = CASE.world.answer([m.id for m in CASE.memories], case_id=CASE.case_id, trial=0)
    assert faulty == expected
    assert model.calls == 2 and model.faults_injected == 0


def test_world_mode_answers_on_memory_ids_without_a_prompt() -> None:
    model = _model()
    ids = [m.id for m in CASE.memories]
    for trial in range(3):
        assert model.read(ids, trial) == CASE.world.answer(ids, case_id=CASE.case_id, trial=trial)
    assert model.calls == 0  # no prompt was answered
    evaluate = SimulatedEvaluator(CASE.world, CASE.reference, case_id=CASE.case_id)
    assert evaluate(tuple(GOOD), 0) == 1.0 and evaluate(tuple(CASE.memories), 0) == 0.0


def test_a_judge_prompt_gets_a_verdict_in_the_protocol_or_as_json() -> None:
    model = _model()
    nonce = new_nonce()
    right = model.reply(
        reference_prompt(CASE.query, CASE.reference, CASE.reference, structured=False, nonce=nonce)
    )
    assert parse_verdict(right, nonce).score == 1.0
    wrong = model.respond(reference_prompt(CASE.query, "May 2021", CASE.reference, structured=True))
    assert wrong.verdict is False
    assert json.loads(wrong.text) == {"reason": wrong.reason, "correct": False}
    assert json.loads(wrong.structured())["correct"] is False


def test_a_reference_free_judge_compares_with_the_world_on_the_memories_shown() -> None:
    model = _model()
    shown_good = model.respond(
        reference_free_prompt(CASE.query, CASE.reference, GOOD, structured=True)
    )
    assert shown_good.verdict is True
    world_says = CASE.world.answer([m.id for m in CASE.memories], case_id=CASE.case_id, trial=0)
    fooled = model.respond(
        reference_free_prompt(CASE.query, world_says, CASE.memories, structured=True)
    )
    assert fooled.verdict is True  # the judge shown the faults believes them
    assert (
        model.respond(
            reference_free_prompt(CASE.query, CASE.reference, CASE.memories, structured=True)
        ).verdict
        is False
    )


def test_async_reply_matches_sync_and_the_model_is_a_text_model() -> None:
    prompt = format_answer_prompt(CASE.query, GOOD)
    model = _model()
    assert isinstance(model, TextModel)
    assert asyncio.run(model.areply(prompt)) == model.reply(prompt) == model.complete(prompt)
    assert asyncio.run(model.acomplete(prompt)) == CASE.reference
    assert model.calls == 4


def test_the_script_answers_its_prompts_first_and_the_reader_the_rest() -> None:
    reader = TextReader(CASE.world, CASE.texts, case_id=CASE.case_id)
    model = StandInModel(reader, script=AdmissionScript())
    respond = P.response_prompt("What should I cook tonight?", None)
    assert respond.startswith(P.TASK_RESPOND) and AdmissionScript.handles(respond)
    assert model.reply(respond) == ScriptedAdmissionModel().complete(respond)
    assert model.reply(format_answer_prompt(CASE.query, GOOD)) == CASE.reference
    assert not AdmissionScript.handles(format_answer_prompt(CASE.query, GOOD))


def test_the_scripted_admission_model_is_the_stand_in_with_only_the_script() -> None:
    model = ScriptedAdmissionModel()
    assert isinstance(model, StandInModel) and model.reader is None
    with pytest.raises(ValueError, match="unknown task line"):
        model.complete("# Task: something else\nhello")
    with pytest.raises(TypeError, match="world-mode"):
        model.read(["g1"], 0)
    assert model.calls == 1
    with pytest.raises(ValueError, match="a reader or a script"):
        StandInModel()


def test_acomplete_goes_through_an_overridden_complete() -> None:
    seen: list[str] = []

    class Logged(ScriptedAdmissionModel):
        def complete(self, prompt: str) -> str:
            seen.append(prompt)
            return super().complete(prompt)

    prompt = P.response_prompt("Any plans?", None)
    assert asyncio.run(Logged().acomplete(prompt)).startswith("General answer")
    assert seen == [prompt]


def test_scripted_faults_raise_or_replace_chosen_calls() -> None:
    boom = ConnectionError("reset")
    model = _model(faults=ScriptedFaults({2: boom, 3: "%%% ??? %%%"}))
    prompt = format_answer_prompt(CASE.query, GOOD)
    assert model.reply(prompt) == CASE.reference
    with pytest.raises(ConnectionError, match="reset"):
        model.reply(prompt)
    assert model.reply(prompt) == "%%% ??? %%%"
    assert model.reply(prompt) == CASE.reference
    assert (model.calls, model.faults_injected) == (4, 2)
    dead = _model(faults=ScriptedFaults(every=TimeoutError("down")))
    with pytest.raises(TimeoutError):
        asyncio.run(dead.areply(prompt))


def test_random_faults_are_seeded_and_an_outage_always_faults() -> None:
    prompts = [f"prompt {i}" for i in range(200)]

    def run(seed: int) -> list[str]:
        faults = RandomFaults(0.3, seed=seed)
        drawn = (faults.draw(p, n) for n, p in enumerate(prompts, 1))
        return [type(f).__name__ if isinstance(f, BaseException) else str(f) for f in drawn]

    first = run(7)
    assert first == run(7) and first != run(8)
    share = sum(f != "None" for f in first) / len(first)
    assert 0.15 < share < 0.45
    assert {"TimeoutError", "SimulatedHTTPError", "ConnectionError", GARBAGE} <= set(first)
    assert all(f is None for f in (RandomFaults(0.0).draw(p, 1) for p in prompts))
    outage = RandomFaults(0.0, outage_marker="OUTAGE")
    assert all(outage.draw(f"x OUTAGE {i}", i) is not None for i in range(50))
    with pytest.raises(ValueError, match="unknown fault kinds"):
        RandomFaults(kinds=("timeout", "meteor"))
    http = [RandomFaults(1.0, seed=s, kinds=("429",)).draw("p", 1) for s in range(3)]
    assert all(isinstance(e, SimulatedHTTPError) and e.status_code == 429 for e in http)
    assert all(e.response.headers == {"retry-after-ms": "1"} for e in http)  # type: ignore[union-attr]
    assert len(FAULT_KINDS) == 6


def test_the_framework_adapters_reply_what_the_stand_in_replies() -> None:
    from langchain_core.messages import HumanMessage

    from meclear_integrations.langchain import SimulatedChatModel
    from meclear_integrations.llama_index import SimulatedLLM

    prompts = [
        format_answer_prompt(CASE.query, GOOD),
        format_answer_prompt(CASE.query, CASE.memories),
        reference_prompt(CASE.query, "December 2023", CASE.reference, structured=True),
    ]
    expected = [_model().reply(p) for p in prompts]
    chat = SimulatedChatModel.from_case(CASE)
    llm = SimulatedLLM.from_case(CASE)
    assert [chat.invoke([HumanMessage(p)]).text for p in prompts] == expected
    assert [llm.complete(p).text for p in prompts] == expected
    assert chat.stand_in.calls == llm.stand_in.calls == len(prompts)
    faulty = SimulatedChatModel.from_case(CASE, faults=ScriptedFaults(every=GARBAGE))
    assert faulty.invoke([HumanMessage(prompts[0])]).text == GARBAGE
    assert faulty.stand_in.faults_injected == 1


def test_the_admission_reader_is_the_stand_in_with_the_reading_script() -> None:
    from meclear_integrations.admission.reader import AdmissionReader, AdmissionReading

    model = AdmissionReader()
    assert isinstance(model, StandInModel) and isinstance(model.script, AdmissionReading)
    prompt = P.response_prompt("Any plans?", None)
    assert model.complete(prompt) == AdmissionReading().reply(prompt)
    assert model.calls == 1
    with pytest.raises(ValueError, match="unknown task line"):
        model.complete(format_answer_prompt(CASE.query, GOOD))
